"""GPU limits: read off the present GPU, or taken from a table of known GPUs for offline targets; and
what this machine lacks for a command (:class:`NoGpu`, :class:`MissingDependency`), said in one line.

>>> spec = known("h100")
>>> spec.arch, spec.sm_count
('sm_90', 132)
>>> resolve_alias("rtx3090")
'rtx3090'
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from .version import __version__


@dataclass(frozen=True)
class DeviceSpec:
    """What validation and benchmarking need to know about a GPU."""

    key: str                     # short name in gemmgen's table ("h100"), or "detected"
    name: str                    # marketing name as the driver reports it
    cc: tuple[int, int]          # compute capability
    sm_count: int
    smem_per_block_optin: int    # bytes of shared memory one block may use after opting in
    smem_per_sm: int             # bytes of shared memory per SM
    regs_per_block: int = 65536
    regs_per_sm: int = 65536
    max_threads_per_block: int = 1024
    max_threads_per_sm: int = 2048
    l2_bytes: int = 0
    clock_mhz: int = 0           # boost clock used for the FP32 ceiling
    mem_gbs: float = 0.0         # DRAM bandwidth, GB/s

    @property
    def arch(self) -> str:
        """The nvcc/NVRTC target for this GPU, e.g. sm_90."""
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def fma_lanes(self) -> int:
        """FP32 FMAs an SM issues per clock: 128 on sm_86 and newer (GA10x, Ada, Hopper: two FP32 paths
        a partition), 64 on sm_80 (A100) and sm_7x (Volta, Turing). Older GPUs, outside gemmgen's targets,
        count as sm_7x.

        >>> known("h100").fma_lanes, known("rtx3090").fma_lanes, known("a100").fma_lanes
        (128, 128, 64)
        """
        return 64 if tuple(self.cc) <= (8, 0) else 128

    @property
    def fp32_tflops(self) -> float:
        """FMA ceiling: SMs x FP32 lanes (:attr:`fma_lanes`) x 2 FLOP x clock.

        >>> round(known("h100").fp32_tflops, 1), round(known("a100").fp32_tflops, 1)
        (66.9, 19.5)
        """
        return self.sm_count * self.fma_lanes * 2 * self.clock_mhz * 1e6 / 1e12

    def to_dict(self) -> dict:
        return asdict(self)


_KB = 1024
# Limits from the CUDA programming guide's compute-capability tables and vendor datasheets.
KNOWN: dict[str, DeviceSpec] = {
    d.key: d
    for d in (
        DeviceSpec("rtx3090", "NVIDIA GeForce RTX 3090", (8, 6), 82, 99 * _KB, 100 * _KB,
                   max_threads_per_sm=1536, l2_bytes=6 * 2**20, clock_mhz=1695, mem_gbs=936),
        DeviceSpec("a10", "NVIDIA A10", (8, 6), 72, 99 * _KB, 100 * _KB,
                   max_threads_per_sm=1536, l2_bytes=6 * 2**20, clock_mhz=1695, mem_gbs=600),
        DeviceSpec("a100", "NVIDIA A100-SXM4-80GB", (8, 0), 108, 163 * _KB, 164 * _KB,
                   l2_bytes=40 * 2**20, clock_mhz=1410, mem_gbs=2039),
        DeviceSpec("l4", "NVIDIA L4", (8, 9), 58, 99 * _KB, 100 * _KB,
                   max_threads_per_sm=1536, l2_bytes=48 * 2**20, clock_mhz=2040, mem_gbs=300),
        DeviceSpec("rtx4090", "NVIDIA GeForce RTX 4090", (8, 9), 128, 99 * _KB, 100 * _KB,
                   max_threads_per_sm=1536, l2_bytes=72 * 2**20, clock_mhz=2520, mem_gbs=1008),
        DeviceSpec("4070ti-super", "NVIDIA GeForce RTX 4070 Ti SUPER", (8, 9), 66, 99 * _KB, 100 * _KB,
                   max_threads_per_sm=1536, l2_bytes=48 * 2**20, clock_mhz=2610, mem_gbs=672),
        DeviceSpec("h100", "NVIDIA H100 80GB HBM3", (9, 0), 132, 227 * _KB, 228 * _KB,
                   l2_bytes=50 * 2**20, clock_mhz=1980, mem_gbs=3350),
        DeviceSpec("h200", "NVIDIA H200", (9, 0), 132, 227 * _KB, 228 * _KB,
                   l2_bytes=60 * 2**20, clock_mhz=1980, mem_gbs=4800),
    )
}

# Names the driver reports, per table key (several parts share one entry's limits).
ALIASES: dict[str, tuple[str, ...]] = {
    "rtx3090": ("NVIDIA GeForce RTX 3090",),
    "a10": ("NVIDIA A10",),
    "a100": ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe"),
    "l4": ("NVIDIA L4",),
    "rtx4090": ("NVIDIA GeForce RTX 4090",),
    "4070ti-super": ("NVIDIA GeForce RTX 4070 Ti SUPER",),
    "h100": ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H100"),
    "h200": ("NVIDIA H200", "NVIDIA H200 NVL"),
}

ARCHS = {"sm_80": (8, 0), "sm_86": (8, 6), "sm_89": (8, 9), "sm_90": (9, 0)}


class UnknownDevice(ValueError):
    """A GPU or architecture name that gemmgen's table does not know."""


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def resolve_alias(name: str) -> str:
    """Map a user's GPU name ("rtx3090", "H100", "NVIDIA H100 80GB HBM3") to a table key."""
    wanted = _norm(name)
    for key, names in ALIASES.items():
        if wanted == _norm(key) or any(wanted == _norm(n) for n in names):
            return key
    raise UnknownDevice(f"unknown GPU {name!r}; known: {', '.join(KNOWN)}")


def known(name: str) -> DeviceSpec:
    """The table entry for a GPU name or alias."""
    return KNOWN[resolve_alias(name)]


def for_arch(arch: str) -> DeviceSpec:
    """A representative device for an architecture (sm_80, sm_86, sm_89, sm_90) or GPU name."""
    if arch in ARCHS:
        cc = ARCHS[arch]
        return next(d for d in KNOWN.values() if d.cc == cc)
    try:
        return known(arch)
    except UnknownDevice:
        raise UnknownDevice(f"unknown target {arch!r}; valid: {', '.join(ARCHS)} or a GPU name "
                            f"({', '.join(KNOWN)})") from None


class NoGpu(RuntimeError):
    """CuPy, the CUDA driver or a GPU is missing: one line that says which, and what to install."""


class MissingDependency(ImportError):
    """An optional package a command needs is not installed; the message says how to install it."""


INSTALL_CUPY = "pip install 'gemmgen[cuda13]' (or 'gemmgen[cuda12]' for a CUDA 12 driver)"


def require_gpu(device_id: int = 0) -> None:
    """Raise :class:`NoGpu` unless CuPy is installed and CUDA device ``device_id`` is usable.

    The driver is looked for before CuPy is imported (importing it writes ~/.cupy), so a machine
    without a GPU is told so, with no side effect.
    """
    import ctypes
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        raise NoGpu(f"CuPy is not installed, and the GPU commands need it: {INSTALL_CUPY}")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise NoGpu("no CUDA GPU found: the NVIDIA driver (libcuda.so.1) is not installed on this machine") from None
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        raise NoGpu(f"no usable CUDA GPU: {err}; for a CUDA 12 driver: pip install 'gemmgen[cuda12]'") from None
    if not 0 <= device_id < count:
        raise NoGpu(f"no CUDA device {device_id}: this machine has {count} (valid: 0..{count - 1})"
                    if count else "no CUDA GPU found: the driver sees no device")


def detect(device_id: int = 0) -> DeviceSpec:
    """Limits of a present GPU, read through CuPy (raises :class:`NoGpu` without one)."""
    require_gpu(device_id)
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device_id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        key = resolve_alias(name)
        table = KNOWN[key]
    except UnknownDevice:
        key, table = "detected", None
    clock_khz = props.get("clockRate", 0) or (table.clock_mhz * 1000 if table else 0)
    return DeviceSpec(
        key=key, name=name, cc=(props["major"], props["minor"]),
        sm_count=props["multiProcessorCount"],
        smem_per_block_optin=props.get("sharedMemPerBlockOptin", props["sharedMemPerBlock"]),
        smem_per_sm=props["sharedMemPerMultiprocessor"],
        regs_per_block=props["regsPerBlock"], regs_per_sm=props.get("regsPerMultiprocessor", 65536),
        max_threads_per_block=props["maxThreadsPerBlock"],
        max_threads_per_sm=props["maxThreadsPerMultiProcessor"],
        l2_bytes=props["l2CacheSize"],
        clock_mhz=table.clock_mhz if table else clock_khz // 1000,
        mem_gbs=table.mem_gbs if table else 0.0,
    )


def fingerprint(device_id: int = 0) -> dict:
    """Identity of the present GPU and software, as stored beside tuned results."""
    import cupy

    spec = detect(device_id)
    return {
        "name": spec.name,
        "cc": f"{spec.cc[0]}.{spec.cc[1]}",
        "sm_count": spec.sm_count,
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "cuda": cupy.cuda.runtime.runtimeGetVersion(),
        "gemmgen": __version__,
    }
