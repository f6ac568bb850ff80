"""SM clock readings through NVML (libnvidia-ml, via ctypes), 0 where NVML is unavailable.

Clocks drift with temperature and power; recording them at the start and end of a measurement
shows whether two numbers were taken at the same speed.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

_NVML_CLOCK_SM = 1


@lru_cache(maxsize=1)
def _lib():
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        return lib if lib.nvmlInit_v2() == 0 else None
    except OSError:
        return None


def available() -> bool:
    """True where NVML loads and initializes (a machine with an NVIDIA driver).

    >>> isinstance(available(), bool)
    True
    """
    return _lib() is not None


def sm_clock_mhz(pci_bus_id: str) -> int:
    """Current SM clock of the GPU at ``pci_bus_id`` (as cudaDeviceGetPCIBusId reports it)."""
    lib = _lib()
    if lib is None:
        return 0
    handle = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle)) != 0:
        return 0
    clock = ctypes.c_uint()
    if lib.nvmlDeviceGetClockInfo(handle, _NVML_CLOCK_SM, ctypes.byref(clock)) != 0:
        return 0
    return int(clock.value)
