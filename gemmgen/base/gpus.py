"""The table of GPUs gemmgen knows: every architecture CUDA 13 builds for (:data:`ARCHS`, sm_75 to sm_121)
with its per-SM limits, the peak rates a time model needs, and an entry for the common GPUs of each.
:mod:`.devices` looks names up in it and describes a present GPU.

>>> KNOWN["h100"].arch, KNOWN["h100"].sm_count, KNOWN[REPRESENTATIVE["sm_120"]].name
('sm_90', 132, 'NVIDIA GeForce RTX 5090')
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

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


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM limits every GPU of one compute capability shares (the CUDA programming guide's table)."""

    smem_per_block_optin: int   # bytes one block may use after opting in: the SM's less the 1 KB the driver keeps (sm_80+)
    smem_per_sm: int
    max_threads_per_sm: int


# From the CUDA programming guide's "Technical Specifications per Compute Capability" table.
GRID_Y_LIMIT = 65535   # gridDim.y's limit, the same on every architecture
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
    wgmma_flop_per_clk_sm: int = 0  # ... and its wgmma rate (the H20's tensor cores run at a quarter of the H100's)

    @property
    def arch(self) -> str:
        """The nvcc/NVRTC target for this GPU, e.g. sm_90."""
        return arch_of(self.cc)

    @property
    def fma_lanes(self) -> int:
        """FP32 FMAs an SM issues per clock (:data:`FMA_LANES`): 64 on sm_75 and sm_80 (A100), 128 on
        sm_86 and newer (GA10x, Orin, Ada, Hopper, Blackwell: two FP32 paths a partition). Older GPUs,
        outside gemmgen's targets, count as 64.

        >>> KNOWN["h100"].fma_lanes, KNOWN["rtx3090"].fma_lanes, KNOWN["a100"].fma_lanes, KNOWN["t4"].fma_lanes
        (128, 128, 64, 64)
        >>> KNOWN["b200"].fma_lanes, KNOWN["rtx5090"].fma_lanes, KNOWN["thor"].fma_lanes
        (128, 128, 128)
        """
        return FMA_LANES.get(self.arch, 64 if tuple(self.cc) <= (8, 0) else 128)

    @property
    def fp32_tflops(self) -> float:
        """FMA ceiling: SMs x FP32 lanes (:attr:`fma_lanes`) x 2 FLOP x clock.

        >>> round(KNOWN["h100"].fp32_tflops, 1), round(KNOWN["a100"].fp32_tflops, 1), round(KNOWN["rtx5090"].fp32_tflops, 1)
        (66.9, 19.5, 104.8)
        """
        return self._tflops(self.fma_lanes * 2)

    @property
    def tf32_flop_per_clk(self) -> int:
        """Dense TF32 FLOP an SM completes a clock with mma.sync m16n8k8: the part's own rate where its
        entry has one, else its architecture's (:data:`MMA_TF32_FLOP_PER_CLK_SM`).

        >>> KNOWN["a100"].tf32_flop_per_clk, KNOWN["rtx3090"].tf32_flop_per_clk, KNOWN["a10"].tf32_flop_per_clk
        (1024, 256, 512)
        """
        return self.tf32_flop_per_clk_sm or _nearest(MMA_TF32_FLOP_PER_CLK_SM, self.cc)

    @property
    def tf32_mma_tflops(self) -> float:
        """Dense TF32 tensor-core ceiling through mma.sync (the tf32 and tf32x3 families): SMs x
        :attr:`tf32_flop_per_clk` x clock; 0 where there is no TF32 (sm_75).

        >>> round(KNOWN["a100"].tf32_mma_tflops, 1), round(KNOWN["rtx3090"].tf32_mma_tflops, 1), KNOWN["t4"].tf32_mma_tflops
        (155.9, 35.6, 0.0)
        >>> round(KNOWN["h100"].tf32_mma_tflops, 1), round(KNOWN["b200"].tf32_mma_tflops, 1)
        (267.6, 297.8)
        """
        return self._tflops(self.tf32_flop_per_clk)

    @property
    def wgmma_tf32_tflops(self) -> float:
        """Dense TF32 ceiling through Hopper's wgmma (the wgmma and TMA kernels): SMs x 2048 FLOP x clock
        on sm_90; 0 elsewhere (no wgmma).

        >>> round(KNOWN["h100"].wgmma_tf32_tflops, 1), KNOWN["b200"].wgmma_tf32_tflops
        (535.3, 0.0)
        """
        return self._tflops(WGMMA_TF32_FLOP_PER_CLK_SM.get(self.arch, 0) and (self.wgmma_flop_per_clk_sm
                                                                              or WGMMA_TF32_FLOP_PER_CLK_SM[self.arch]))

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
        _gpu("h20", "NVIDIA H20", "sm_90", 78, 60, 1980, 4000, tf32_flop_per_clk_sm=256, wgmma_flop_per_clk_sm=512),
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
