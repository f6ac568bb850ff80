"""GPU limits: read off the present GPU, or taken from a table of known GPUs for offline targets; and
what this machine lacks for a command (:class:`NoGpu`, :class:`MissingDependency`), said in one line.

Every architecture CUDA 13 builds for is a target (:data:`ARCHS`, sm_75 to sm_121), with a table entry
for the common GPUs of each; a present GPU that is not in the table is described by the driver's own
properties (:func:`spec_from_properties`).

>>> spec = known("h100")
>>> spec.arch, spec.sm_count
('sm_90', 132)
>>> resolve_alias("rtx3090"), resolve_alias("NVIDIA GeForce RTX 5090")
('rtx3090', 'rtx5090')
>>> for_arch("sm_120").key, for_arch("sm_75").key
('rtx5090', 't4')
"""
from __future__ import annotations

import re
import sys
from dataclasses import asdict, dataclass
from typing import Callable, Mapping, Optional

from .version import __version__

_KB = 1024
_MB = 2**20

# The architectures CUDA 13's nvcc and NVRTC build for, their compute capability and the GPU that stands
# for each when a target is named by architecture (the first of the table's entries is not always the
# most common one: sm_80's is the A100, not the A30).
ARCHS = {"sm_75": (7, 5), "sm_80": (8, 0), "sm_86": (8, 6), "sm_87": (8, 7), "sm_89": (8, 9), "sm_90": (9, 0),
         "sm_100": (10, 0), "sm_103": (10, 3), "sm_110": (11, 0), "sm_120": (12, 0), "sm_121": (12, 1)}
REPRESENTATIVE = {"sm_75": "t4", "sm_80": "a100", "sm_86": "rtx3090", "sm_87": "orin", "sm_89": "l4",
                  "sm_90": "h100", "sm_100": "b200", "sm_103": "b300", "sm_110": "thor", "sm_120": "rtx5090",
                  "sm_121": "gb10"}
DEFAULT_ARCH = "sm_90"   # the target of emit, explain and presets where no GPU is present and none is named


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits every GPU of one compute capability shares (the CUDA programming guide's table)."""

    smem_per_block_optin: int   # bytes one block may use after opting in: the SM's less the 1 KB the driver keeps (sm_80+)
    smem_per_sm: int
    max_threads_per_sm: int


# From the CUDA programming guide's "Technical Specifications per Compute Capability" table.
ARCH_LIMITS = {
    "sm_75": ArchLimits(64 * _KB, 64 * _KB, 1024),
    "sm_80": ArchLimits(163 * _KB, 164 * _KB, 2048),
    "sm_86": ArchLimits(99 * _KB, 100 * _KB, 1536),
    "sm_87": ArchLimits(163 * _KB, 164 * _KB, 1536),
    "sm_89": ArchLimits(99 * _KB, 100 * _KB, 1536),
    "sm_90": ArchLimits(227 * _KB, 228 * _KB, 2048),
    "sm_100": ArchLimits(227 * _KB, 228 * _KB, 2048),
    "sm_103": ArchLimits(227 * _KB, 228 * _KB, 2048),
    "sm_110": ArchLimits(227 * _KB, 228 * _KB, 1536),
    "sm_120": ArchLimits(99 * _KB, 100 * _KB, 1536),
    "sm_121": ArchLimits(99 * _KB, 100 * _KB, 1536),
}

# Dense peak rates per SM per clock, from the vendor whitepapers (A100, GA102, AD102, H100, Blackwell).
# FP32 FMAs an SM issues a clock: 64 on sm_75 and sm_80, 128 from sm_86 on (two FP32 paths a partition).
FMA_LANES = {"sm_75": 64, "sm_80": 64}
# TF32 FLOP of mma.sync m16n8k8 an SM completes a clock (the tf32 and tf32x3 families' instruction): the
# datacenter Ampere SM 1024, GA10x and the GeForce/RTX parts of Ada and Blackwell 256, Orin and Thor 512.
# Hopper's mma.sync reaches half its wgmma rate (WGMMA_TF32_FLOP_PER_CLK_SM); datacenter Blackwell runs the
# legacy mma.sync at Hopper's mma.sync rate (its tcgen05 instructions reach more, and gemmgen has no
# tcgen05 family). Turing has no TF32. Some parts of one architecture run at twice the rate (A10, L4, L40S:
# 512, as their datasheets say): their entries carry it in DeviceSpec.tf32_flop_per_clk_sm.
MMA_TF32_FLOP_PER_CLK_SM = {"sm_75": 0, "sm_80": 1024, "sm_86": 256, "sm_87": 512, "sm_89": 256, "sm_90": 1024,
                            "sm_100": 1024, "sm_103": 1024, "sm_110": 512, "sm_120": 256, "sm_121": 256}
WGMMA_TF32_FLOP_PER_CLK_SM = {"sm_90": 2048}   # wgmma.mma_async exists on sm_90a only


def arch_of(cc: tuple[int, int]) -> str:
    """The nvcc/NVRTC target name of a compute capability.

    >>> arch_of((12, 0)), arch_of((9, 0))
    ('sm_120', 'sm_90')
    """
    return f"sm_{cc[0]}{cc[1]}"


def _nearest(table: Mapping[str, int], cc: tuple[int, int]):
    """The table's value for the architecture of ``cc``, else for the newest one before it (a GPU newer
    than the table is counted as the last architecture it knows of the same or an older kind)."""
    older = [a for a, c in ARCHS.items() if tuple(c) <= tuple(cc) and a in table]
    return table[older[-1]] if older else next(iter(table.values()))


@dataclass(frozen=True)
class DeviceSpec:
    """What validation, benchmarking and a time model need to know about a GPU."""

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
    clock_mhz: int = 0           # boost clock used for the peak rates
    mem_gbs: float = 0.0         # DRAM bandwidth, GB/s
    tf32_flop_per_clk_sm: int = 0   # this part's mma.sync TF32 rate where it differs from its architecture's; 0: the architecture's

    @property
    def arch(self) -> str:
        """The nvcc/NVRTC target for this GPU, e.g. sm_90."""
        return arch_of(self.cc)

    @property
    def fma_lanes(self) -> int:
        """FP32 FMAs an SM issues per clock (:data:`FMA_LANES`): 64 on sm_75 and sm_80 (A100), 128 on
        sm_86 and newer (GA10x, Orin, Ada, Hopper, Blackwell: two FP32 paths a partition). Older GPUs,
        outside gemmgen's targets, count as 64.

        >>> known("h100").fma_lanes, known("rtx3090").fma_lanes, known("a100").fma_lanes, known("t4").fma_lanes
        (128, 128, 64, 64)
        >>> known("b200").fma_lanes, known("rtx5090").fma_lanes, known("thor").fma_lanes
        (128, 128, 128)
        """
        return FMA_LANES.get(self.arch, 64 if tuple(self.cc) <= (8, 0) else 128)

    @property
    def fp32_tflops(self) -> float:
        """FMA ceiling: SMs x FP32 lanes (:attr:`fma_lanes`) x 2 FLOP x clock.

        >>> round(known("h100").fp32_tflops, 1), round(known("a100").fp32_tflops, 1), round(known("rtx5090").fp32_tflops, 1)
        (66.9, 19.5, 104.8)
        """
        return self._tflops(self.fma_lanes * 2)

    @property
    def tf32_flop_per_clk(self) -> int:
        """Dense TF32 FLOP an SM completes a clock with mma.sync m16n8k8: the part's own rate where its
        entry has one, else its architecture's (:data:`MMA_TF32_FLOP_PER_CLK_SM`).

        >>> known("a100").tf32_flop_per_clk, known("rtx3090").tf32_flop_per_clk, known("a10").tf32_flop_per_clk
        (1024, 256, 512)
        """
        return self.tf32_flop_per_clk_sm or _nearest(MMA_TF32_FLOP_PER_CLK_SM, self.cc)

    @property
    def tf32_mma_tflops(self) -> float:
        """Dense TF32 tensor-core ceiling through mma.sync (the tf32 and tf32x3 families): SMs x
        :attr:`tf32_flop_per_clk` x clock; 0 where there is no TF32 (sm_75).

        >>> round(known("a100").tf32_mma_tflops, 1), round(known("rtx3090").tf32_mma_tflops, 1), known("t4").tf32_mma_tflops
        (155.9, 35.6, 0.0)
        >>> round(known("h100").tf32_mma_tflops, 1), round(known("b200").tf32_mma_tflops, 1)
        (267.6, 297.8)
        """
        return self._tflops(self.tf32_flop_per_clk)

    @property
    def wgmma_tf32_tflops(self) -> float:
        """Dense TF32 ceiling through Hopper's wgmma (the wgmma and TMA kernels): SMs x 2048 FLOP x clock
        on sm_90; 0 elsewhere (no wgmma).

        >>> round(known("h100").wgmma_tf32_tflops, 1), known("b200").wgmma_tf32_tflops
        (535.3, 0.0)
        """
        return self._tflops(WGMMA_TF32_FLOP_PER_CLK_SM.get(self.arch, 0))

    def _tflops(self, flop_per_clk_sm: int) -> float:
        return self.sm_count * flop_per_clk_sm * self.clock_mhz * 1e6 / 1e12

    def to_dict(self) -> dict:
        return asdict(self)


def _gpu(key: str, name: str, arch: str, sms: int, l2_mb: float, clock_mhz: int, mem_gbs: float,
         **more) -> DeviceSpec:
    """A table entry: the part's own numbers, its architecture's per-SM limits (:data:`ARCH_LIMITS`)."""
    lim = ARCH_LIMITS[arch]
    return DeviceSpec(key, name, ARCHS[arch], sms, lim.smem_per_block_optin, lim.smem_per_sm,
                      max_threads_per_sm=lim.max_threads_per_sm, l2_bytes=int(l2_mb * _MB), clock_mhz=clock_mhz,
                      mem_gbs=mem_gbs, **more)


# SMs, L2, boost clock and DRAM bandwidth from the vendors' datasheets and whitepapers (where a datasheet
# is silent, the L2 and SM count the driver reports); per-SM limits from the programming guide (ARCH_LIMITS).
KNOWN: dict[str, DeviceSpec] = {
    d.key: d
    for d in (
        _gpu("t4", "Tesla T4", "sm_75", 40, 4, 1590, 320),
        _gpu("rtx2080ti", "NVIDIA GeForce RTX 2080 Ti", "sm_75", 68, 5.5, 1545, 616),
        _gpu("a100", "NVIDIA A100-SXM4-80GB", "sm_80", 108, 40, 1410, 2039),
        _gpu("a30", "NVIDIA A30", "sm_80", 56, 24, 1440, 933),
        _gpu("rtx3090", "NVIDIA GeForce RTX 3090", "sm_86", 82, 6, 1695, 936),
        _gpu("a10", "NVIDIA A10", "sm_86", 72, 6, 1695, 600, tf32_flop_per_clk_sm=512),
        _gpu("orin", "Orin", "sm_87", 16, 4, 1300, 204.8),
        _gpu("l4", "NVIDIA L4", "sm_89", 58, 48, 2040, 300, tf32_flop_per_clk_sm=512),
        _gpu("rtx4090", "NVIDIA GeForce RTX 4090", "sm_89", 128, 72, 2520, 1008),
        _gpu("4070ti-super", "NVIDIA GeForce RTX 4070 Ti SUPER", "sm_89", 66, 48, 2610, 672),
        _gpu("l40s", "NVIDIA L40S", "sm_89", 142, 96, 2520, 864, tf32_flop_per_clk_sm=512),
        _gpu("h100", "NVIDIA H100 80GB HBM3", "sm_90", 132, 50, 1980, 3350),
        _gpu("h200", "NVIDIA H200", "sm_90", 132, 50, 1980, 4800),
        _gpu("gh200", "NVIDIA GH200 480GB", "sm_90", 132, 50, 1980, 4000),
        _gpu("h20", "NVIDIA H20", "sm_90", 78, 60, 1980, 4000),
        _gpu("b200", "NVIDIA B200", "sm_100", 148, 126.5, 1965, 8000),
        _gpu("gb200", "NVIDIA GB200", "sm_100", 152, 129.25, 2062, 8000),
        _gpu("b300", "NVIDIA B300 SXM6 AC", "sm_103", 158, 129.25, 1965, 8000),
        _gpu("thor", "NVIDIA Thor", "sm_110", 20, 0, 1575, 273),
        _gpu("rtx5090", "NVIDIA GeForce RTX 5090", "sm_120", 170, 96, 2407, 1792),
        _gpu("rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "sm_120", 188, 128, 2617, 1792),
        _gpu("gb10", "NVIDIA GB10", "sm_121", 48, 24, 2418, 273),
    )
}

# Names the driver reports, per table key (several parts share one entry's limits).
ALIASES: dict[str, tuple[str, ...]] = {
    "t4": ("Tesla T4", "NVIDIA T4"),
    "rtx2080ti": ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"),
    "a100": ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe"),
    "a30": ("NVIDIA A30",),
    "rtx3090": ("NVIDIA GeForce RTX 3090",),
    "a10": ("NVIDIA A10",),
    "orin": ("Orin", "NVIDIA Jetson AGX Orin", "jetson-orin"),
    "l4": ("NVIDIA L4",),
    "rtx4090": ("NVIDIA GeForce RTX 4090",),
    "4070ti-super": ("NVIDIA GeForce RTX 4070 Ti SUPER",),
    "l40s": ("NVIDIA L40S",),
    "h100": ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H100"),
    "h200": ("NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA H200 141GB HBM3e"),
    "gh200": ("NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e", "NVIDIA GH200"),
    "h20": ("NVIDIA H20",),
    "b200": ("NVIDIA B200",),
    "gb200": ("NVIDIA GB200",),
    "b300": ("NVIDIA B300 SXM6 AC", "NVIDIA B300", "NVIDIA GB300"),
    "thor": ("NVIDIA Thor", "Thor", "jetson-thor"),
    "rtx5090": ("NVIDIA GeForce RTX 5090",),
    "rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                     "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell",
                     "rtx-pro-6000-blackwell"),
    "gb10": ("NVIDIA GB10",),
}


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
    """A representative device for an architecture (sm_75 ... sm_121, :data:`REPRESENTATIVE`) or GPU name.

    >>> for_arch("sm_100").name, for_arch("GB10").arch
    ('NVIDIA B200', 'sm_121')
    """
    if arch in ARCHS:
        return KNOWN[REPRESENTATIVE[arch]]
    try:
        return known(arch)
    except UnknownDevice:
        raise UnknownDevice(f"unknown target {arch!r}; valid: {', '.join(ARCHS)} or a GPU name "
                            f"({', '.join(KNOWN)})") from None


# ---- the present GPU ------------------------------------------------------------------------------
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


def spec_from_properties(props: Mapping) -> DeviceSpec:
    """A DeviceSpec from the driver's properties of a GPU (``cudaGetDeviceProperties``' names, with
    ``clockRate`` and ``memoryClockRate`` in kHz, which CUDA 13 gives as device attributes only).

    The limits are the driver's (an H100 PCIe has 114 SMs, not the SXM's 132). A GPU in the table
    (:data:`ALIASES`) keeps its key and its datasheet boost clock and bandwidth; any other is usable
    as it is, key "detected", its clock and bandwidth (memory clock x bus width x 2, double data rate)
    read off the driver too.

    >>> t4 = {"name": b"Tesla T4", "major": 7, "minor": 5, "multiProcessorCount": 40,
    ...       "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 65536, "sharedMemPerMultiprocessor": 65536,
    ...       "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "maxThreadsPerBlock": 1024,
    ...       "maxThreadsPerMultiProcessor": 1024, "l2CacheSize": 4194304, "clockRate": 1590000,
    ...       "memoryClockRate": 5001000, "memoryBusWidth": 256}
    >>> spec = spec_from_properties(t4)
    >>> spec.key, spec.arch, spec.clock_mhz, spec.mem_gbs
    ('t4', 'sm_75', 1590, 320)
    >>> spec = spec_from_properties({**t4, "name": "NVIDIA T4G"})   # not in the table: the driver's numbers
    >>> spec.key, spec.mem_gbs, spec.smem_per_block_optin
    ('detected', 320.064, 65536)
    """
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        table: Optional[DeviceSpec] = KNOWN[resolve_alias(name)]
    except UnknownDevice:
        table = None
    bandwidth = props.get("memoryClockRate", 0) * 1e3 * props.get("memoryBusWidth", 0) / 8 * 2 / 1e9   # GB/s
    return DeviceSpec(
        key=table.key if table else "detected", name=name, cc=(props["major"], props["minor"]),
        sm_count=props["multiProcessorCount"],
        smem_per_block_optin=props.get("sharedMemPerBlockOptin") or props["sharedMemPerBlock"],
        smem_per_sm=props["sharedMemPerMultiprocessor"],
        regs_per_block=props["regsPerBlock"], regs_per_sm=props.get("regsPerMultiprocessor", 65536),
        max_threads_per_block=props["maxThreadsPerBlock"],
        max_threads_per_sm=props["maxThreadsPerMultiProcessor"],
        l2_bytes=props["l2CacheSize"],
        clock_mhz=table.clock_mhz if table else props.get("clockRate", 0) // 1000,
        mem_gbs=table.mem_gbs if table else round(bandwidth, 3),
        tf32_flop_per_clk_sm=table.tf32_flop_per_clk_sm if table else 0,
    )


def detect(device_id: int = 0) -> DeviceSpec:
    """Limits of a present GPU, read through CuPy (raises :class:`NoGpu` without one); see
    :func:`spec_from_properties`."""
    require_gpu(device_id)
    import cupy

    rt = cupy.cuda.runtime
    props = dict(rt.getDeviceProperties(device_id))
    # CUDA 13 dropped the clocks from cudaDeviceProp; the device attributes still have them (kHz).
    for key, attr in (("clockRate", 13), ("memoryClockRate", 36)):   # cudaDevAttrClockRate, ...MemoryClockRate
        if not props.get(key):
            props[key] = rt.deviceGetAttribute(attr, device_id)
    return spec_from_properties(props)


def default_notice(spec: DeviceSpec) -> str:
    """The line that says a command targets :data:`DEFAULT_ARCH`'s GPU because no GPU is present.

    >>> default_notice(for_arch(DEFAULT_ARCH))
    'no GPU found: targeting sm_90 (h100); pass --arch to choose'
    """
    return f"no GPU found: targeting {spec.arch} ({spec.key}); pass --arch to choose"


def target(arch: Optional[str], say: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
           find: Callable[[], DeviceSpec] = detect) -> DeviceSpec:
    """The target a command's ``--arch`` names; with none, the GPU present (``find``), else the H100,
    which ``say`` tells in one line (:func:`default_notice`).

    >>> def absent():
    ...     raise NoGpu("no CUDA GPU found")
    >>> target(None, say=print, find=absent).key
    no GPU found: targeting sm_90 (h100); pass --arch to choose
    'h100'
    >>> target("sm_120", say=print, find=absent).key
    'rtx5090'
    """
    if arch:
        return for_arch(arch)
    try:
        return find()
    except NoGpu:
        spec = for_arch(DEFAULT_ARCH)
        say(default_notice(spec))
        return spec


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
