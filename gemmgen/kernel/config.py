"""KernelConfig: one point of gemmgen's kernel space, and everything derived from it.

A config is a frozen value. Its :attr:`KernelConfig.name` is the one procedural name used as the
CUDA symbol, the compile-cache key and the results key, so two configs with the same name are the
same kernel. What code and templates would otherwise branch on (layout letters, the split-K
reduction, shared-memory tile shapes, the kernels one GEMM launches) are properties.

>>> cfg = KernelConfig(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=4)
>>> cfg.threads
256
>>> KernelConfig.from_dict(cfg.to_dict()) == cfg
True
>>> cfg.replace(layout="TN", split_k=2).a_transposed, cfg.replace(split_k=2).kernel_names[0].endswith("_scale")
(True, True)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from .accepts import refusal
from .coerce import ConfigError, coerced, typed  # noqa: F401  (ConfigError: re-exported)
from .families import (BOUNDS, DTYPES, FAMILIES, FAMILY_MAINLOOP, FRAGMENT_LOADS, HALF, HALF_DTYPES,  # noqa: F401
                       LAYOUTS, MAINLOOPS, PRECISION, REDUCTIONS, SCHEDULERS, TENSOR_CORE, WARP_SPECIALIZED,
                       WGMMA_MAINLOOPS)   # (re-exported: every stage imports them from here)
from .memory import EPILOGUE_LD, SharedMemory  # noqa: F401
from .naming import kernel_name
from .old_keys import upgraded


@dataclass(frozen=True)
class KernelConfig(SharedMemory):
    """Every template parameter of one GEMM kernel (C = alpha*op(A)@op(B) + beta*C, C in fp32; A and B
    of ``dtype``: fp32, or fp16/bf16 for the half family ``wmma``).

    Layout letters follow BLAS: ``layout[0]`` is A, ``layout[1]`` is B; ``N`` means the operand is
    stored row-major as written (A is MxK with lda >= K, B is KxN with ldb >= N), ``T`` means it is
    stored transposed (A as KxM row-major, i.e. column-major MxK, lda >= M; B as NxK, ldb >= K).
    C is always row-major MxN with ldc >= N.
    """

    family: str = "simt"          # naive (v0/v1), simt (shared-memory tiled), tf32/tf32x3/wmma (tensor cores),
                                  # skinny (C with N <= BN, or M <= BN with swap: templates/skinny.cu.j2)
    layout: str = "NN"            # storage of A and B, A's letter first: N row-major as written, T transposed
    BM: int = 128                 # block tile rows of C
    BN: int = 128                 # block tile columns of C
    BK: int = 8                   # depth of one K step staged in shared memory
    WM: int = 64                  # warp tile rows
    WN: int = 32                  # warp tile columns
    WMITER: int = 1               # warp sub-tiles along M (each thread owns WMITER*TM rows)
    WNITER: int = 1               # warp sub-tiles along N
    TM: int = 8                   # thread tile rows per warp sub-tile
    TN: int = 8                   # thread tile columns per warp sub-tile
    vec: int = 4                  # width of global loads, in elements (floats 1, 2, 4; halves 1..8)
    a_kmajor: bool = True         # store A transposed ([BK][BM]) so fragments are contiguous
    pad_a: int = 0                # elements appended to each shared row of A
    pad_b: int = 0                # elements appended to each shared row of B
    swz_a: int = 1                # XOR swizzle period of A's 16-byte chunks (1 = off)
    swz_b: int = 1                # XOR swizzle period of B's 16-byte chunks (1 = off)
    raster: int = 1               # thread-block swizzle: tile rows walked together (1 = off)
    stages: int = 1               # shared-memory buffers: 1 single, 2 double, 3+ cp.async ring
    async_copy: bool = False      # global->shared copies by cp.async (sm_80+) in the simt, mma_sync and wgmma
                                  # mainloops; the warp-specialized ones name their copies (ws_cpasync: true)
    prefetch: bool = False        # overlap: simt fragments of k+1 / wgmma split of stage k+1
    frag: str = "lds"             # fragment loads: lds from shared, or shfl within the warp
    interleave: bool = False      # simt: copies, stores, fragment loads ride on FMA rows (16-byte rows)
    split_k: int = 1              # K slices computed by separate blocks
    reduce: str = "atomic"        # how split-K partial sums meet: atomic or workspace
    bounds: str = "checked"       # checked edges (any shape) or none (tile-divisible shapes only)
    coalesced: bool = True        # naive family only: consecutive threads walk columns of C
    min_blocks: int = 1           # __launch_bounds__ minimum resident blocks per SM
    dtype: str = "f32"            # element type of A and B (f32; f16/bf16 for the half families)
    mainloop: str = ""            # how the K loop copies and multiplies: simt (FMA: naive, simt, skinny), mma_sync
                                  # (mma.sync/wmma: tf32, tf32x3, wmma), wgmma (Hopper's, on a cp.async ring, sm_90a),
                                  # ws_cpasync or ws_tma (warp-specialized: a producer warpgroup fills mbarrier stages
                                  # by cp.async, any layout and row alignment, or by TMA, beside BM/WM wgmma consumer
                                  # warpgroups: templates/ws_*.cu.j2); "" takes the family's own (simt, mma_sync)
    scheduler: str = "plain"      # tiles of C to blocks: plain (a block per tile), persistent (persistent_blocks
                                  # blocks walking tiles that far apart), pingpong (persistent, two consumer warpgroups
                                  # taking the block's tiles in turn, one's epilogue beside the other's main loop)
    persistent_blocks: int = 0    # the persistent or pingpong scheduler's grid: its blocks (0 with plain)
    partials: bool = True         # wmma: k16 steps summed in pairs into fresh partials, added to C's
                                  # accumulators in round-to-nearest fp32 (false: straight on the tensor
                                  # cores, as cuBLAS does: faster, and the truncation error grows with K)
    warps_k: int = 1              # skinny only: warps of a block splitting its K range (summed in shared memory)
    swap: bool = False            # skinny and the warp-specialized kernels: C^T = op(B)^T op(A)^T
                                  # is computed (the kernel's rows are N's), C stored transposed
    label: str = field(default="", compare=False)  # free text (preset name); not part of the kernel

    def __post_init__(self) -> None:   # every parameter of its field's type, or one ConfigError (coerce.typed)
        for name, value in typed(self).items():
            object.__setattr__(self, name, value)   # a NumPy integer or bool from a sampler, as Python's
        if not self.mainloop:   # the family's own
            object.__setattr__(self, "mainloop", FAMILY_MAINLOOP.get(self.family, ""))
        if self.mainloop in WARP_SPECIALIZED:   # the producer's copies are the mainloop's: async_copy says them
            if self.async_copy and self.mainloop == "ws_tma":
                raise ConfigError("async_copy = true with mainloop = 'ws_tma', whose producer copies by TMA; "
                                  "mainloop = 'ws_cpasync' is the one copying by cp.async")
            object.__setattr__(self, "async_copy", self.mainloop == "ws_cpasync")

    # ---- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The procedural name: CUDA symbol, cache key and results key (see kernel.naming)."""
        return kernel_name(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary of every parameter (label included; scheduler, persistent_blocks, interleave,
        warps_k and swap only where set, so the configs, sources and results written before they existed read the
        same; async_copy not for the warp-specialized mainloops, whose copies the mainloop names).

        >>> d = KernelConfig(family="tf32x3", mainloop="ws_cpasync").to_dict()
        >>> d["mainloop"], "async_copy" in d, KernelConfig.from_dict(d).async_copy
        ('ws_cpasync', False, True)
        """
        unset = {"scheduler": "plain", "persistent_blocks": 0, "interleave": False, "warps_k": 1, "swap": False}
        out = {k: v for k, v in dataclasses.asdict(self).items() if k not in unset or v != unset[k]}
        if self.warp_specialized:
            del out["async_copy"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KernelConfig":
        """Build a config from a dictionary, rejecting unknown keys and wrong types by name; the old keys
        (mma, tma, persistent, pingpong) are read into mainloop and scheduler (kernel.old_keys)."""
        data = upgraded(data)
        if data.get("mainloop") in WARP_SPECIALIZED and "async_copy" in data:   # the mainloop names the copies
            if coerced(cls, {"async_copy": data["async_copy"]})["async_copy"] != (data["mainloop"] == "ws_cpasync"):
                raise ConfigError(f"async_copy = {str(data['async_copy']).lower()} with mainloop = "
                                  f"{data['mainloop']!r}: a warp-specialized kernel's copies are its mainloop's "
                                  "(ws_cpasync: cp.async, ws_tma: TMA); leave async_copy out")
        return cls(**coerced(cls, data))

    def replace(self, **changes: Any) -> "KernelConfig":
        """A copy with some parameters changed (validated only when explained or rendered)."""
        return self.from_dict({**self.to_dict(), **changes})

    def in_layout(self, layout: str, **changes: Any) -> "KernelConfig":
        """This kernel moved to another layout (``changes`` made too); a choice that layout does not offer
        returns to its default: a TMA kernel's a_kmajor = False (A transposed by the producer) exists only where A could be staged
        as it lies, elsewhere it is the a_kmajor = True kernel.

        >>> from gemmgen.kernel.presets import preset
        >>> preset("tf32x3-ws").replace(layout="TN", a_kmajor=False).in_layout("NT").a_kmajor
        True
        """
        moved = self.replace(layout=layout, **changes)
        if moved.warp_specialized and not moved.a_kmajor and not moved.a_mmajor_choice:
            return moved.replace(a_kmajor=True)
        return moved

    # ---- derived geometry -----------------------------------------------------------------
    @property
    def threads(self) -> int:
        """Threads per block."""
        if self.family == "naive":
            return self.BM * self.BN
        if self.family == "skinny":   # a warp per part of the block's K range
            return 32 * self.warps_k
        # wgmma is issued by warpgroups of 4 warps: a "warp tile" of the wgmma variant is a warpgroup's
        if self.warp_specialized:   # consumer warpgroups, each WM rows by all BN columns, and one producer
            return self.consumers * 128 + 128
        return (self.BM // self.WM) * (self.BN // self.WN) * (128 if self.uses_wgmma else 32)

    @property
    def consumers(self) -> int:
        """A warp-specialized kernel's consumer warpgroups: BM/WM sharing each tile of C, or with the pingpong
        scheduler two taking whole tiles (BM = WM rows) in turn.

        >>> from gemmgen.kernel.presets import preset
        >>> preset("tf32x3-ws").consumers, preset("tf32x3-ws-pp").consumers, preset("tf32x3-ws-pp").threads
        (2, 2, 384)
        """
        return 2 if self.scheduler == "pingpong" else self.BM // max(self.WM, 1)

    @property
    def run_layout(self) -> str:
        """The layout of the product the kernel computes: the config's, or with ``swap`` that of
        C^T = op(B)^T op(A)^T, whose first operand is B^T and second A^T (NN <-> TT; NT, TN stay).

        >>> KernelConfig(layout="NN").run_layout, KernelConfig(layout="NN", swap=True).run_layout
        ('NN', 'TT')
        >>> KernelConfig(layout="NT", swap=True).run_layout, KernelConfig(layout="TN", swap=True).run_layout
        ('NT', 'TN')
        """
        if not self.swap:
            return self.layout
        flip = {"N": "T", "T": "N"}
        return flip[self.layout[1]] + flip[self.layout[0]]

    @property
    def uses_wgmma(self) -> bool:
        """The mainloop multiplies with Hopper's wgmma.mma_async (wgmma and the warp-specialized ones; sm_90a)."""
        return self.mainloop in WGMMA_MAINLOOPS

    @property
    def warp_specialized(self) -> bool:
        """A producer warpgroup fills mbarrier stages for wgmma consumer warpgroups (ws_cpasync, ws_tma)."""
        return self.mainloop in WARP_SPECIALIZED

    @property
    def tensor_maps(self) -> bool:
        """The warp-specialized kernel's producer copies with TMA (descriptors of A and B, 16-byte rows,
        layout NT: ws_tma); ws_cpasync's copies with cp.async instead (any layout and alignment)."""
        return self.mainloop == "ws_tma"

    @property
    def tensor_core(self) -> bool:
        """True for the mma.sync families (tf32, tf32x3)."""
        return self.family in TENSOR_CORE

    @property
    def precision(self) -> str:
        """The accuracy class of the result: fp32, tf32 (10-bit mantissa products), or for the half
        family its input type, f16 or bf16 (exact products, fp32 accumulation)."""
        if self.family in HALF:
            return self.dtype
        return PRECISION.get(self.family, "fp32")

    @property
    def elem_bytes(self) -> int:
        """Bytes of one element of A and B (2 for f16/bf16, 4 for f32)."""
        return 2 if self.dtype in HALF_DTYPES else 4

    @property
    def tma_type(self) -> str:
        """The element type of a TMA kernel's descriptors: the dtype, or "tf32" (the copy engine rounds)."""
        return "tf32" if self.family == "tf32" else self.dtype

    @property
    def global_layout_smem(self) -> bool:
        """Shared tiles keep the global layout (tensor-core and half families; simt may transpose A)."""
        return self.tensor_core or self.family in HALF

    @property
    def a_transposed(self) -> bool:
        """A is stored column-major (layout letter T): its rows in memory are k, m is contiguous."""
        return self.layout[0] == "T"

    @property
    def b_transposed(self) -> bool:
        """B is stored column-major (layout letter T): its rows in memory are n, k is contiguous."""
        return self.layout[1] == "T"

    @property
    def split_atomic(self) -> bool:
        """Split-K slices meet by atomicAdd into C, which a ``<name>_scale`` kernel pre-scales by beta."""
        return self.split_k > 1 and self.reduce == "atomic"

    @property
    def split_flags(self) -> bool:
        """An atomic split that clears C itself (measure.splitflags): a ws kernel that stages C (its barrier)."""
        return self.split_atomic and self.warp_specialized and not self.persistent_blocks and (self.swap or self.c_staged)

    def split_one_launch(self, M: int, N: int, sm_count: int) -> bool:
        """A split_flags kernel whose blocks fit the GPU at once (min_blocks an SM): no scale kernel."""
        return self.split_flags and math.prod(self.tiles(M, N)) * self.split_k <= sm_count * self.min_blocks

    @property
    def split_workspace(self) -> bool:
        """Split-K slices write raw partial sums to a workspace that a ``<name>_reduce`` kernel sums."""
        return self.split_k > 1 and self.reduce == "workspace"

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """The kernels one GEMM launches, in order: split-K adds a scale (before) or reduce (after) kernel."""
        if self.split_atomic:
            return (f"{self.name}_scale", self.name)
        if self.split_workspace:
            return (self.name, f"{self.name}_reduce")
        return (self.name,)

    @property
    def accumulators(self) -> int:
        """fp32 accumulators each thread holds."""
        if self.family == "naive":
            return 1
        if self.family == "skinny":   # TM rows of C per lane, all BN columns
            return self.TM * self.BN
        if self.uses_wgmma:
            return self.WM * self.WN // 128   # a warpgroup's 64 x BM tile over 128 threads
        if self.tensor_core or self.family in HALF:
            return self.WM * self.WN // 32   # m16n8 tiles of 4 (16x16 wmma tiles of 8) per thread
        return self.WMITER * self.TM * self.WNITER * self.TN

    def target_arch(self, arch: str) -> str:
        """The architecture to compile for on a GPU of ``arch``: wgmma needs the arch-specific sm_90a.

        >>> KernelConfig(family="tf32", mainloop="wgmma").target_arch("sm_90"), KernelConfig().target_arch("sm_90")
        ('sm_90a', 'sm_90')
        """
        return f"{arch}a" if self.uses_wgmma and arch == "sm_90" else arch

    def tiles(self, M: int, N: int) -> tuple[int, int]:
        """Number of block tiles along M and N (a swapped kernel's rows are N's)."""
        return (-(-N // self.BM), -(-M // self.BN)) if self.swap else (-(-M // self.BM), -(-N // self.BN))

    def grid(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        """Launch grid of the main kernel for an M x N x K problem."""
        tm, tn = self.tiles(M, N)
        if self.family == "naive":
            return (tn, tm, 1) if self.coalesced else (tm, tn, 1)
        if self.persistent_blocks:
            return (min(self.persistent_blocks, tm * tn), 1, 1)
        return (tm * tn, 1, self.split_k)

    def block(self) -> tuple[int, int, int]:
        """Launch block of the main kernel."""
        if self.family == "naive":
            return (self.BN, self.BM, 1) if self.coalesced else (self.BM, self.BN, 1)
        return (self.threads, 1, 1)

    def arithmetic_intensity(self) -> float:
        """Seed 001's block-tile intensity, FLOP per byte: 2*BM*BN*BK FLOP per (BM+BN)*BK elements."""
        return 2.0 * self.BM * self.BN / (self.elem_bytes * (self.BM + self.BN))

    def k_per_slice(self, K: int) -> int:
        """Depth of K each split-K slice covers (a multiple of BK)."""
        per = -(-K // self.split_k)
        return -(-per // self.BK) * self.BK

    def accepts(self, M: int, N: int, K: int, lda: int | None = None, ldb: int | None = None,
                ldc: int | None = None, aligned: bool = True) -> str | None:
        """None when this kernel computes the shape correctly, else the reason it does not
        (see :func:`gemmgen.kernel.accepts.refusal`; ``aligned``: A and B start on 16 bytes)."""
        return refusal(self, M, N, K, lda, ldb, ldc, aligned)
