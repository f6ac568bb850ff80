"""The hardware side of ``gemmgen doctor``: the CUDA driver and the GPUs, asked through ``libcuda.so.1``
directly (so a missing or too old CuPy does not hide the GPU), the results file that serves each GPU,
and gemmgen's folders.

>>> driver_text(13000), check_gpus(None, None)[0][0].status
('13.0', 'missing')
"""
from __future__ import annotations

import ctypes
import shlex
from pathlib import Path

from ..base.devices import ARCHS, INSTALL_CUPY, UnknownDevice, resolve_alias
from ..base.paths import cache_dir, user_results_dir
from .doctor_software import INFO, MISSING, OK, Finding, cuda_major, loaded_from

INSTALL_DRIVER = "install the NVIDIA driver (https://www.nvidia.com/drivers); without it nothing runs on a GPU"
# The oldest driver (cuDriverGetVersion) that runs each CUDA major's runtime and libraries.
DRIVER_FOR = {12: 12000, 13: 13000}
CU_ATTRIBUTES = {"sm_count": 16, "cc_major": 75, "cc_minor": 76}   # CUdevice_attribute values (cuda.h)


class Driver:
    """The CUDA driver API through ctypes: enough to name the GPUs without CuPy or a runtime."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib

    def call(self, name: str, *args) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(status, ctypes.byref(text))
            raise OSError(f"{name}: {(text.value or b'CUDA error %d' % status).decode()}")

    def version(self) -> int:
        value = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(value))
        return value.value

    def devices(self) -> list[dict]:
        self.call("cuInit", 0)
        count = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(count))
        return [self.device(i) for i in range(count.value)]

    def device(self, index: int) -> dict:
        handle, name, memory = ctypes.c_int(), ctypes.create_string_buffer(256), ctypes.c_size_t()
        self.call("cuDeviceGet", ctypes.byref(handle), index)
        self.call("cuDeviceGetName", name, len(name), handle)
        self.call("cuDeviceTotalMem_v2", ctypes.byref(memory), handle)
        values = {}
        for key, attribute in CU_ATTRIBUTES.items():
            value = ctypes.c_int()
            self.call("cuDeviceGetAttribute", ctypes.byref(value), attribute, handle)
            values[key] = value.value
        return {"index": index, "name": name.value.decode(), "cc": f"{values['cc_major']}.{values['cc_minor']}",
                "arch": f"sm_{values['cc_major']}{values['cc_minor']}", "sm_count": values["sm_count"],
                "memory_gib": round(memory.value / 2**30, 1)}


def open_driver() -> Driver | None:
    """The driver library, or None where it is not installed."""
    try:
        return Driver(ctypes.CDLL("libcuda.so.1"))
    except OSError:
        return None


def driver_text(version: int) -> str:
    """cuDriverGetVersion's number as CUDA's version.

    >>> driver_text(12040)
    '12.4'
    """
    return f"{version // 1000}.{version % 1000 // 10}"


def check_driver(driver: Driver | None, distribution: str | None) -> list[Finding]:
    """The driver's CUDA version, and whether it runs the CUDA of the installed CuPy."""
    if driver is None:
        return [Finding("CUDA driver", MISSING, "not installed (libcuda.so.1 not found): no GPU can be used",
                        INSTALL_DRIVER)]
    version, major = driver.version(), cuda_major(distribution)
    details = {"version": driver_text(version), "path": loaded_from("libcuda.so")}
    if distribution and version < DRIVER_FOR.get(major, 0):
        older = max((m for m, v in DRIVER_FOR.items() if v <= version), default=None)
        fix = f"pip install 'gemmgen[cuda{older}]'  (or update the NVIDIA driver)" if older else INSTALL_DRIVER
        return [Finding("CUDA driver", MISSING, f"CUDA {driver_text(version)}: too old for {distribution} "
                        f"(CUDA {major})", fix, details)]
    return [Finding("CUDA driver", OK, f"CUDA {driver_text(version)} ({details['path'] or 'libcuda.so.1'})", details=details)]


def check_gpus(driver: Driver | None, distribution: str | None) -> tuple[list[Finding], list[dict]]:
    """One finding per GPU (name, compute capability, arch, SMs, gemmgen's table), and the GPUs."""
    if driver is None:
        return [Finding("GPU", MISSING, "none: there is no CUDA driver to ask", "the CUDA driver's fix, above")], []
    try:
        gpus = driver.devices()
    except OSError as err:
        return [Finding("GPU", MISSING, f"the driver found none ({err})", INSTALL_DRIVER)], []
    if not gpus:
        return [Finding("GPU", MISSING, "the driver sees no device", "check `nvidia-smi` and CUDA_VISIBLE_DEVICES")], []
    found = [_gpu_finding(gpu) for gpu in gpus]
    return found + _cupy_sees_gpu(distribution), gpus


def _gpu_finding(gpu: dict) -> Finding:
    try:
        gpu["table"] = resolve_alias(gpu["name"])
        table = f"gemmgen's table: {gpu['table']}"
    except UnknownDevice:
        gpu["table"] = None
        table = "not in gemmgen's table: its limits are read from the driver"
    targets = "" if gpu["arch"] in ARCHS else f"; {gpu['arch']} is not one of gemmgen's targets ({', '.join(ARCHS)})"
    text = (f"{gpu['name']}, compute capability {gpu['cc']} ({gpu['arch']}), {gpu['sm_count']} SMs, "
            f"{gpu['memory_gib']} GiB; {table}{targets}")
    return Finding(f"GPU {gpu['index']}", OK if not targets else INFO, text, details=dict(gpu))


def _cupy_sees_gpu(distribution: str | None) -> list[Finding]:
    """Whether CuPy, which runs every kernel, can use GPU 0 (the driver may see a GPU that CuPy's CUDA cannot)."""
    if distribution is None:
        return []
    from ..base.devices import NoGpu, require_gpu

    try:
        require_gpu(0)
    except NoGpu as err:
        return [Finding("CuPy on GPU 0", MISSING, str(err).split(";")[0], INSTALL_CUPY)]
    return [Finding("CuPy on GPU 0", OK, "CuPy runs on it")]


def check_results(gpus: list[dict]) -> list[Finding]:
    """Which results file serves each GPU (shipped, or the user's folder), else what has results."""
    from ..records.lookup import result_dirs
    from ..records.store import shipped_dir, slug

    folders, shipped = result_dirs(), shipped_dir()
    kind = lambda folder: "shipped" if shipped is not None and folder == shipped else "user"
    if not gpus:
        files = sorted({p.stem for d in folders if d.is_dir() for p in d.glob("*.json")})
        return [Finding("results", INFO, f"no GPU to match; results files for: {', '.join(files) or 'none'} "
                        f"(in {', '.join(map(str, folders))})")]
    out = []
    for gpu in gpus:
        files = [(kind(d), str(p)) for d in folders if (p := d / f"{slug(gpu['name'])}.json").is_file()]
        if files:
            out.append(Finding(f"results GPU {gpu['index']}", OK, " and ".join(f"{k}: {p}" for k, p in files),
                               details={"files": dict(files)}))
        else:
            out.append(Finding(f"results GPU {gpu['index']}", MISSING,
                               f"no tuned kernels for {gpu['name']} ({slug(gpu['name'])}.json): matmul runs the presets",
                               f"gemmgen search --gpu {gpu.get('table') or shlex.quote(gpu['name'])} --trials 200"))
    return out


def check_folders() -> list[Finding]:
    """The compile cache, the user's results folder and the shipped one, with the variables that move them."""
    from ..records.store import shipped_dir

    cache, user, shipped = cache_dir(), user_results_dir(), shipped_dir()

    def state(path: Path) -> str:
        return f"{sum(1 for _ in path.rglob('*'))} files" if path.is_dir() else "not created yet"

    return [
        Finding("cache folder", INFO, f"{cache} ({state(cache)}; $GEMMGEN_CACHE moves it)", details={"path": str(cache)}),
        Finding("results folder", INFO, f"{user} ({state(user)}; searches write here; $GEMMGEN_RESULTS moves it)",
                details={"path": str(user)}),
        Finding("shipped results", INFO, f"{shipped} (read only)" if shipped else "absent from this install",
                details={"path": str(shipped) if shipped else None}),
    ]
