"""The preset progression v0..v13 (seed 001's table), then the tensor-core presets, all points of
the one config space.

>>> [p for p in names()][:3]
['v0', 'v1', 'v2']
>>> preset("v8").stages
2
"""
from __future__ import annotations

from ..base.devices import ARCHS, for_arch
from .config import KernelConfig
from .rules.registry import explain

# Each step adds one idea to the one before it; comments say what and why.
_V2 = KernelConfig(family="simt", BM=32, BN=32, BK=32, WM=1, WN=32, TM=1, TN=1, vec=1, a_kmajor=False)
_V5 = KernelConfig(family="simt", BM=128, BN=128, BK=8, WM=16, WN=128, TM=8, TN=8, vec=1, a_kmajor=False)
_V6 = _V5.replace(vec=4, a_kmajor=True, pad_a=4)
_V10 = _V6.replace(BK=8, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4, raster=8, stages=2, prefetch=True)

_PRESETS: dict[str, tuple[KernelConfig, str]] = {
    "v0": (KernelConfig(family="naive", BM=32, BN=32, coalesced=False),
           "naive: one thread per element of C, threads walk rows (uncoalesced)"),
    "v1": (KernelConfig(family="naive", BM=32, BN=32, coalesced=True),
           "global-memory coalescing: consecutive threads walk columns of C"),
    "v2": (_V2, "shared-memory tiling: 32x32 tiles of A and B staged in shared memory"),
    "v3": (_V2.replace(a_kmajor=True, pad_a=1),
           "bank-conflict padding: A stored transposed, rows padded by one float"),
    "v4": (KernelConfig(family="simt", BM=64, BN=64, BK=8, WM=8, WN=32, TM=8, TN=1, vec=1, a_kmajor=False),
           "1D blocktiling: each thread computes a column of 8 results"),
    "v5": (_V5, "2D blocktiling: each thread computes an 8x8 tile of C"),
    "v6": (_V6, "vectorized float4 global loads, A transposed in shared memory for LDS.128"),
    "v7": (_V6.replace(raster=8), "thread-block swizzle: 8 tile rows walked together for L2 reuse"),
    "v8": (_V6.replace(raster=8, stages=2), "shared-memory double buffering: next tile loaded during compute"),
    "v9": (_V6.replace(raster=8, stages=2, prefetch=True),
           "register prefetch: next k's fragments read while this k's FMAs run"),
    "v10": (_V10, "warptiling: 64x32 warp tiles of 2x2 sub-tiles, 4x4 per thread"),
    "v11": (_V10.replace(frag="shfl"), "warp shuffles: fragments exchanged with __shfl_sync"),
    "v12": (_V10.replace(split_k=4), "split-K: 4 slices of K reduced with atomics"),
}

# v13's built-in fallback per architecture family, used until a search has stored a better one.
# sm_90: the fastest of 48 candidates around v10 on an H200 at 4096^3 (46.3 TFLOP/s, 90% of
# cuBLAS): 256x128 tiles, 8x16 results per thread, register-staged double buffering with BK=16.
_BUILTIN_BEST = {
    "sm_80": _V10.replace(BK=16),
    "sm_90": _V10.replace(BM=256, BN=128, BK=16, WM=64, WN=64, WMITER=2, WNITER=4, TM=4, TN=4),
}
# Tensor cores (sm_80+), 16-deep K steps in a 4-stage cp.async ring, the 128-byte XOR swizzle instead
# of padding (a stage of 128x128 is 16 KB). Fastest spill-free tiles of an H100 sweep at 4096^3:
# tf32x3 takes 8 warps of 64x32 (64 accumulators per thread; 64x64 spills with big/small fragments);
# tf32 takes 8 warps of 64x64 over a 256x128 tile (half the fragment loads per mma of 64x32).
_TC = KernelConfig(family="tf32x3", mainloop="mma_sync", BM=128, BN=128, BK=16, WM=64, WN=32, swz_a=8, swz_b=8, raster=8,
                   stages=4, async_copy=True)
_WG = KernelConfig(family="tf32x3", mainloop="wgmma", BM=128, BN=128, BK=64, WM=128, WN=64, swz_a=8, pad_b=8,
                   raster=8, stages=2, async_copy=True)
_TENSOR_CORE_PRESETS: dict[str, tuple[KernelConfig, str]] = {
    "tf32": (_TC.replace(family="tf32", BM=256, WN=64),
             "TF32 tensor cores: mma.sync m16n8k8 on operands rounded to TF32 (about 1e-3 relative error)"),
    "tf32x3": (_TC, "3xTF32: each operand split into big + small TF32 parts, three mma.sync per tile, fp32 accuracy"),
    # Hopper (sm_90a only, layout NN): wgmma.m64nBMk8 from a warpgroup, A read by the tensor cores from
    # 128-byte-swizzled shared memory, B from registers. 3xTF32: 2 warpgroups over a 128x128 tile, BK = 64
    # halves the per-stage barriers and partial-sum additions of BK = 32 (H100, 8192^3: 87.1 TFLOP/s,
    # 1.67x cuBLAS SGEMM). TF32 has no partial sums, so its registers allow 256x128 (161 TFLOP/s).
    "tf32x3-wgmma": (_WG, "3xTF32 on Hopper wgmma: warpgroup-wide async MMA, fp32 accuracy (sm_90a only)"),
    "tf32-wgmma": (_WG.replace(family="tf32", BM=256, WM=256, BK=32, stages=4),
                   "TF32 on Hopper wgmma: operands rounded to TF32 (sm_90a only)"),
}

# The half family (fp16/bf16 A and B, fp32 accumulation and C), 16x16x16 wmma tiles. `wmma` is seed
# 004's kernel: 128x128x32 block tiles, 16 warps of 32x32, one shared-memory buffer, with 16-byte loads
# and rows padded by 8 halves (16 bytes) so the ldmatrix phases of a fragment load hit 8 bank groups.
# `wmma-db` adds a cp.async double buffer. `wmma-fast` is the classic Ampere tensor-core design:
# 128x256 tiles of 8 warps of 64x64 (4 loads of A and 4 of B feed 16 mma tiles per k16 step), 3
# cp.async stages (81 KB, so it fits 99 KB GPUs too; try stages=4 on an H100), thread-block raster 8.
# Warp-specialized TMA kernels: a producer warpgroup (TMA into mbarrier stages, and for the
# 3xTF32 3 warps that split each stage; for TF32 the copy engine rounds to TF32 itself), consumer warpgroups of 64 rows x BN on wgmma.
# Layout NT (both operands K-major); sm_90a only.
_TMA = KernelConfig(family="tf32x3", layout="NT", mainloop="ws_tma", BM=128, BN=176, BK=32, WM=64, WN=176,
                    swz_a=8, swz_b=8, stages=3, raster=8)
_TMA_HALF = _TMA.replace(family="wmma", dtype="f16", BN=256, BK=64, WN=256, vec=8, stages=4, partials=False)
_TMA_PRESETS: dict[str, tuple[KernelConfig, str]] = {
    "tf32x3-tma": (_TMA, "3xTF32 on a warp-specialized TMA pipeline: A split in the consumers' registers, "
                         "B's small parts by producer warps, fp32 accuracy (NT, sm_90a only)"),
    "tf32x3-ws": (_TMA.replace(layout="NN", mainloop="ws_cpasync", BN=128, WN=128, stages=4),
                  "tf32x3-tma with cp.async instead of TMA in the producer: any layout (m- or n-contiguous tiles "
                  "transposed on the way) and any row alignment, no copies before it (sm_90a only)"),
    "tf32x3-ws-pp": (_TMA.replace(layout="NN", mainloop="ws_cpasync", BM=64, WM=64, BN=128, WN=128, stages=3,
                                  scheduler="pingpong", persistent_blocks=132),
                     "tf32x3-ws on a persistent grid whose two consumer warpgroups take 64-row tiles of C in turn: "
                     "one stores its tile while the other multiplies (shallow K, sm_90a only)"),
    "tf32x3-ws-m": (_TMA.replace(layout="NN", mainloop="ws_cpasync", BN=32, WN=32, stages=6, swap=True),
                    "tf32x3-ws on C^T = op(B)^T op(A)^T, C stored transposed: few rows of C (M <= 32) fill a "
                    "128x32 tile of C^T instead of a mostly empty 64-row one (sm_90a only)"),
    "tf32-tma": (_TMA.replace(family="tf32", BN=256, WN=256, stages=4),
                 "TF32 on the TMA pipeline: the copy engine rounds fp32 to TF32 on the way in (NT, sm_90a only)"),
    "f16-tma": (_TMA_HALF, "fp16 on the TMA pipeline, accumulating on the tensor cores like cuBLAS (NT, sm_90a only)"),
    "bf16-tma": (_TMA_HALF.replace(dtype="bf16"), "bf16 on the TMA pipeline (NT, sm_90a only)"),
}

_WMMA = KernelConfig(family="wmma", dtype="f16", BM=128, BN=128, BK=32, WM=32, WN=32, vec=8, pad_a=8, pad_b=8)
_WMMA_FAST = _WMMA.replace(BN=256, WM=64, WN=64, stages=3, async_copy=True, raster=8)
_HALF_PRESETS: dict[str, tuple[KernelConfig, str]] = {
    "wmma": (_WMMA, "WMMA fp16 (seed 004): 16x16x16 tensor-core tiles, fp32 accumulation, 16 warps of 32x32"),
    "wmma-db": (_WMMA.replace(stages=2, async_copy=True),
                "WMMA fp16 with a cp.async double buffer: the next tile lands while this one is used"),
    "wmma-fast": (_WMMA_FAST, "WMMA fp16, 128x256 tiles of 8 warps of 64x64, 3 cp.async stages, raster 8"),
    "wmma-bf16": (_WMMA_FAST.replace(dtype="bf16"), "WMMA bf16: wmma-fast on bfloat16 inputs (fp32's range, 8-bit mantissa)"),
    # Accumulating straight on the tensor cores, like cuBLAS: 32 independent HMMA chains per warp and no
    # FADDs, where the partial sums hold ~4 chains in 255 registers (wmma-fast ran at 31% of cuBLAS HGEMM
    # on an H100); the error grows with K like cuBLAS's own.
    "wmma-direct": (_WMMA_FAST.replace(partials=False),
                    "WMMA fp16, wmma-fast accumulating straight on the tensor cores like cuBLAS (faster, error grows with K)"),
}

# The skinny family: C with at most BN columns, where A (M x K) is the traffic. A lane per row of C and
# all BN columns, four warps splitting K, each warp's tiles in a two-buffer cp.async ring. The split-K
# preset adds four K slices through a workspace, for few rows and deep K; skinny-m swaps the operands'
# roles for C with few rows (swap: B is read once and C stored transposed).
_SKINNY = KernelConfig(family="skinny", BM=64, BN=32, BK=16, TM=2, warps_k=4, stages=2)
_SKINNY_PRESETS: dict[str, tuple[KernelConfig, str]] = {
    "skinny": (_SKINNY, "N <= 32: a lane per row of C, warps splitting K, per-warp cp.async ring (fp32 FMA)"),
    "skinny-split": (_SKINNY.replace(BN=16, TM=1, BM=32, split_k=4, reduce="workspace", stages=3),
                     "N <= 16, four K slices summed by a reduce kernel: few rows, deep K"),
    "skinny-m": (_SKINNY.replace(swap=True),
                 "M <= 32: the skinny kernel on C^T = op(B)^T op(A)^T, B read once, C stored transposed"),
}

V13_DOC = "autotuned: the fastest measured at 4096^3 NN on the GPU, else built in (gemmgen presets --help)"


class UnknownPreset(KeyError):
    def __str__(self) -> str:
        return self.args[0]


def names() -> list[str]:
    """Preset names in progression order, then the tensor-core presets, the half family's, the TMA ones, the skinny ones."""
    return [*_PRESETS, "v13", *_TENSOR_CORE_PRESETS, *_HALF_PRESETS, *_TMA_PRESETS, *_SKINNY_PRESETS]


def describe(name: str) -> str:
    """One line on what the preset adds."""
    if name == "v13":
        return V13_DOC
    return _lookup(name)[1]


def preset(name: str, arch: str = "sm_90", tuned: KernelConfig | None = None) -> KernelConfig:
    """The preset's config; v13 takes ``tuned`` (a stored search winner) or the built-in best for ``arch``.

    Entry points do not call this for v13 themselves: gemmgen.records.best.resolve_preset finds the
    target GPU's stored winner and passes it as ``tuned``. ``arch`` is an architecture of gemmgen's device
    table or a GPU name (its architecture is taken); anything else raises UnknownDevice listing them.

    >>> preset("v13", "rtx3090") == preset("v13", "sm_86")
    True
    """
    if not isinstance(arch, str):
        raise TypeError(f"arch = {arch!r}: give an architecture ({', '.join(ARCHS)}) or a GPU name such as 'h100'")
    if arch not in ARCHS:
        arch = for_arch(arch).arch
    if name == "v13":
        base = tuned or _BUILTIN_BEST.get(arch) or _BUILTIN_BEST["sm_80"]
        return base.replace(label="v13")
    return _lookup(name)[0].replace(label=name)


def _lookup(name: str) -> tuple[KernelConfig, str]:
    try:
        return {**_PRESETS, **_TENSOR_CORE_PRESETS, **_HALF_PRESETS, **_TMA_PRESETS, **_SKINNY_PRESETS}[name]
    except KeyError:
        raise UnknownPreset(f"unknown preset {name!r}; valid: {', '.join(names())}") from None


def runs_on(name: str, arch: str) -> bool:
    """Whether a preset exists on an architecture: it breaks no rule on the architecture's GPU
    (``devices.for_arch``), so the wgmma and TMA presets need sm_90 (compiled as sm_90a), the
    tensor-core and skinny ones sm_80 (cp.async, mma.sync .tf32), and one that does not fit its shared
    memory is left out.

    >>> runs_on("tf32x3-wgmma", "sm_80"), runs_on("tf32x3-wgmma", "sm_90"), runs_on("v5", "sm_86")
    (False, True, True)
    >>> runs_on("tf32x3", "sm_75"), runs_on("wmma", "sm_75"), runs_on("tf32x3", "sm_100"), runs_on("tf32x3-wgmma", "sm_100")
    (False, True, True, False)
    """
    return not explain(preset(name, arch), arch)


def all_presets(arch: str = "sm_90") -> list[KernelConfig]:
    """Every preset (v0..v13, the tensor-core and the half presets) that exists on an architecture."""
    return [preset(n, arch) for n in names() if runs_on(n, arch)]


def representatives(arch: str) -> dict[tuple[str, str], str]:
    """The first preset of each kind of kernel (family, mainloop: one template path each) that runs on
    an architecture: what a compile check of every architecture builds, where every preset is too many.

    >>> representatives("sm_75")
    {('naive', 'simt'): 'v0', ('simt', 'simt'): 'v2', ('wmma', 'mma_sync'): 'wmma'}
    >>> sorted(k[0] for k in representatives("sm_100"))
    ['naive', 'simt', 'skinny', 'tf32', 'tf32x3', 'wmma']
    """
    out: dict[tuple[str, str], str] = {}
    for name in names():
        c = preset(name, arch)
        if (c.family, c.mainloop) not in out and runs_on(name, arch):
            out[(c.family, c.mainloop)] = name
    return out
