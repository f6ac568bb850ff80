"""Programmatic dependent launch (Hopper): a kernel launched with cuLaunchKernelEx and the attribute
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION may start before the kernel ahead of it on the
stream has finished; it waits where it needs that kernel's results (``griddepcontrol.wait``), and the
kernel ahead may let it start early (``griddepcontrol.launch_dependents``).

gemmgen launches kernels so in :class:`.launch.Launch`: the reduce kernel of a workspace split-K
config after the main one (it waits at its start, so only its launch overlaps the main kernel's tail:
on the H100 workspace plans of random shapes ran 1.1-6.3% faster), and a Hopper GEMM
kernel behind matmul's operand copies or behind an atomic split's scale kernel (it waits at its start;
the kernels ahead never trigger early, so its blocks are placed as theirs exit: 48 such plans of random
shapes ran 1.8% faster on the H100, none slower). Triggering early instead, the scale kernel at its start
and the main kernel waiting only before its first atomicAdd, lost up to 24% on some plans.

``cuLaunchKernelEx`` is called through ctypes on libcuda (CuPy's driver module does not wrap it); the
structures follow cuda.h (CUDA 12+). Without the entry point (an older driver) or below sm_90 the
kernels are launched one after the other as before, and ``griddepcontrol.wait`` returns at once.

>>> ctypes.sizeof(LaunchConfig), ctypes.sizeof(LaunchAttribute)
(56, 72)
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

PROGRAMMATIC_STREAM_SERIALIZATION = 6   # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


class LaunchAttribute(ctypes.Structure):
    """cuda.h's CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union (8-byte aligned)."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint64 * 8)]


class LaunchConfig(ctypes.Structure):
    """cuda.h's CUlaunchConfig."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


@lru_cache(maxsize=1)
def _launch_ex():
    """libcuda's cuLaunchKernelEx, or None where the driver lacks it."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return fn


def supported(arch: str) -> bool:
    """Whether kernels built for ``arch`` (sm_XX, sm_XXa) are launched as programmatic dependents here."""
    return int("".join(ch for ch in arch.split("_")[1] if ch.isdigit())) >= 90 and _launch_ex() is not None


class Dependent:
    """One kernel's launch as the programmatic dependent of the work ahead of it on its stream, for a
    fixed grid, block and shared memory; a call names the stream and the kernel's parameters and says
    whether the kernel went out. Where the driver refuses the launch (a stream capture it cannot record,
    say) the call returns False, and from then on without trying: the caller launches the kernel plainly,
    one after the other. Used by one thread (it owns its launch structure)."""

    __slots__ = ("config", "attr", "fn", "refused")

    def __init__(self, grid: tuple, block: tuple, smem: int):
        self.refused = 0   # the driver's CUresult where it refused the launch (kept for a look in a debugger)
        self.attr = LaunchAttribute()
        self.attr.id = PROGRAMMATIC_STREAM_SERIALIZATION
        self.attr.value[0] = 1   # programmaticStreamSerializationAllowed
        self.config = LaunchConfig(*grid, *block, smem, None, ctypes.pointer(self.attr), 1)
        self.fn = _launch_ex()

    def __call__(self, function: int, stream: int, argv_ptr: int) -> bool:
        if self.fn is None:
            return False
        self.config.hStream = stream or None
        err = self.fn(ctypes.addressof(self.config), function, argv_ptr, None)
        if err:
            self.fn, self.refused = None, err   # plain launches from now on
            return False
        return True
