"""KernelConfig: one point of gemmgen's kernel space, and everything derived from it.

A config is a frozen value. Its :attr:`KernelConfig.name` is the one procedural name used as the
CUDA symbol, the compile-cache key and the results key, so two configs with the same name are the
same kernel. What code and templates would otherwise branch on (layout letters, the
split-K reduction, shared-memory tile shapes, the kernels one GEMM launches) are properties, so
every stage asks the config once.

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
from dataclasses import dataclass, field, fields
from typing import Any

from .accepts import refusal
from .coerce import ConfigError, coerce
from .naming import kernel_name

FAMILIES = ("naive", "simt", "tf32", "tf32x3", "wmma", "skinny")
TENSOR_CORE = ("tf32", "tf32x3")   # mma.sync m16n8k8 families; tf32x3 is fp32-accurate (3xTF32)
HALF = ("wmma",)                   # fp16/bf16 inputs on the tensor cores (nvcuda::wmma 16x16x16, seed 004)
# Each family's accuracy class for the gate (measure.gate.gate_bound); the half family's is its dtype.
PRECISION = {"naive": "fp32", "simt": "fp32", "tf32": "tf32", "tf32x3": "fp32", "skinny": "fp32"}
DTYPES = ("f32", "f16", "bf16")   # element type of A and B; C is always fp32
HALF_DTYPES = ("f16", "bf16")
EPILOGUE_LD = 20                  # floats per row of the wmma family's 16x16 epilogue staging tile
MMA_KINDS = ("sync", "wgmma")     # tensor-core instruction: mma.sync (sm_80+) or wgmma.mma_async (sm_90a)
LAYOUTS = ("NN", "NT", "TN", "TT")
BOUNDS = ("checked", "none")
REDUCTIONS = ("atomic", "workspace")
FRAGMENT_LOADS = ("lds", "shfl")


@dataclass(frozen=True)
class KernelConfig:
    """Every template parameter of one GEMM kernel (C = alpha*op(A)@op(B) + beta*C, C in fp32; A and B
    of ``dtype``: fp32, or fp16/bf16 for the half family ``wmma``).
    Layout letters follow BLAS: ``layout[0]`` is A, ``layout[1]`` is B; ``N`` means the operand is
    stored row-major as written (A is MxK with lda >= K, B is KxN with ldb >= N), ``T`` means it is
    stored transposed (A as KxM row-major, i.e. column-major MxK, lda >= M; B as NxK, ldb >= K).
    C is always row-major MxN with ldc >= N."""

    family: str = "simt"          # naive (v0/v1), simt (tiled), tf32/tf32x3/wmma (tensor cores), skinny (N <= BN)
    layout: str = "NN"            # storage of A and B, see the class docstring
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
    async_copy: bool = False      # cp.async global->shared copies (sm_80+)
    prefetch: bool = False        # overlap: simt fragments of k+1 / wgmma split of stage k+1
    frag: str = "lds"             # fragment loads: lds from shared, or shfl within the warp
    interleave: bool = False      # simt: copies, stores, fragment loads ride on FMA rows (16-byte rows)
    split_k: int = 1              # K slices computed by separate blocks
    reduce: str = "atomic"        # how split-K partial sums meet: atomic or workspace
    bounds: str = "checked"       # checked edges (any shape) or none (tile-divisible shapes only)
    coalesced: bool = True        # naive family only: consecutive threads walk columns of C
    min_blocks: int = 1           # __launch_bounds__ minimum resident blocks per SM
    dtype: str = "f32"            # element type of A and B (f32; f16/bf16 for the half families)
    mma: str = "sync"             # tensor-core families: mma.sync, or Hopper's wgmma (sm_90a)
    tma: bool = False             # wgmma only: TMA loads into mbarrier stages, a producer warpgroup
                                  # beside BM/WM consumer warpgroups (templates/wgmma_tma.cu.j2)
    persistent: int = 0           # TMA only: 0 = a block per tile of C, n = n blocks walking tiles n apart
    partials: bool = True         # wmma: k16 steps summed in pairs into fresh partials added in fp32 (false:
                                  # straight on the tensor cores like cuBLAS: faster, error grows with K)
    warps_k: int = 1              # skinny only: warps of a block splitting its K range (summed in shared memory)
    swap: bool = False            # skinny only: the few columns are M's; C^T = op(B)^T op(A)^T, C stored transposed
    label: str = field(default="", compare=False)  # free text (preset name); not part of the kernel

    # ---- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The procedural name: CUDA symbol, cache key and results key (see kernel.naming)."""
        return kernel_name(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary of every parameter (label too; persistent, interleave, warps_k only where
        set: configs, sources and results written before they existed read the same)."""
        unset = {"persistent": 0, "interleave": False, "warps_k": 1, "swap": False}
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in unset or v != unset[k]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "KernelConfig":
        """Build a config from a dictionary, rejecting unknown keys and wrong types by name."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ConfigError(f"unknown config key(s) {', '.join(unknown)}; valid keys: {', '.join(known)}")
        values, errors = {}, []
        for k, v in data.items():   # name every bad value at once, not only the first
            try:
                values[k] = coerce(k, v, type(getattr(cls(), k)))
            except ConfigError as err:
                errors.append(str(err))
        if errors:
            raise ConfigError("; ".join(errors))
        return cls(**values)

    def replace(self, **changes: Any) -> "KernelConfig":
        """A copy with some parameters changed (validated only when explained or rendered)."""
        return self.from_dict({**self.to_dict(), **changes})

    # ---- derived geometry -----------------------------------------------------------------
    @property
    def threads(self) -> int:   # threads per block
        if self.family in ("naive", "skinny"):
            return self.BM * self.BN if self.family == "naive" else 32 * self.warps_k
        # wgmma is issued by warpgroups of 4 warps: a "warp tile" of the wgmma variant is a warpgroup's
        if self.tma:   # BM/WM consumer warpgroups, each WM rows by all BN columns, and one producer
            return (self.BM // self.WM) * 128 + 128
        return (self.BM // self.WM) * (self.BN // self.WN) * (128 if self.mma == "wgmma" else 32)

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
    def a_smem_kmajor(self) -> bool:
        """A is stored [BK][BM] in shared memory. Tensor-core families keep the global layout, so
        every cp.async moves 16 contiguous bytes (T: A is column-major, m contiguous)."""
        return self.a_transposed if self.global_layout_smem else self.a_kmajor

    @property
    def b_smem_kmajor(self) -> bool:
        """B is stored [BK][BN] in shared memory (simt: always; tensor cores: when B is row-major)."""
        return not self.b_transposed if self.global_layout_smem else True

    @property
    def a_tile_shape(self) -> tuple[int, int]:
        """Shared-memory array of A for one stage: (rows, row length in elements incl. padding)."""
        return (self.BK, self.BM + self.pad_a) if self.a_smem_kmajor else (self.BM, self.BK + self.pad_a)

    @property
    def b_tile_shape(self) -> tuple[int, int]:
        """Shared-memory array of B for one stage: [BK][BN + pad_b], or [BN][BK + pad_b] (n-major)."""
        return (self.BK, self.BN + self.pad_b) if self.b_smem_kmajor else (self.BN, self.BK + self.pad_b)

    @property
    def smem_per_stage(self) -> int:
        """Bytes of shared memory one pipeline stage holds (A tile plus B tile; skinny: one warp's)."""
        if self.family in ("naive", "skinny"):   # skinny: the big operand (A; B with swap) [BK][BM], or [BM][BK + 4]
            k_contiguous = self.b_transposed if self.swap else not self.a_transposed   # prefetch: in registers
            return 4 * (self.BM * (self.BK + 4 * k_contiguous) * (not self.prefetch) + self.BK * self.BN) * (self.family != "naive")
        (ra, ca), (rb, cb) = self.a_tile_shape, self.b_tile_shape
        return self.elem_bytes * (ra * ca + rb * cb)

    @property
    def tma_tile_bytes(self) -> int:
        """A TMA kernel's tiles in shared memory: the stages (3xTF32: and B's small parts), then C's staging
        tile where persistent (else C is staged in the drained stages); its mbarriers follow."""
        split = self.family == "tf32x3"
        c_tile = self.BM * self.c_ld * 4 if self.persistent else 0
        return self.stages * (self.smem_per_stage + split * self.BN * self.BK * 4) + c_tile

    @property
    def c_ld(self) -> int:
        """Row stride of a TMA kernel's staged C: 8 banks mod 32 (8-byte writes hit 32 banks), >= BN + 4."""
        pad = (8 - self.BN % 32) % 32
        return self.BN + (pad if pad >= 4 else pad + 32)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per block, all stages. The half family's epilogue reuses it to stage
        one 16x16 fp32 tile per warp, so it is at least that."""
        pipeline = self.smem_per_stage * self.stages
        if self.family == "skinny":   # each warp's ring, then the warps' BM x BN partials (rows BN + 1)
            return self.warps_k * max(pipeline, 4 * self.BM * (self.BN + 1))
        if self.tma:   # the tiles, then 2 or 3 mbarriers per stage (3 with the 3xTF32 split's)
            return self.tma_tile_bytes + self.stages * (24 if self.family == "tf32x3" else 16)
        if self.mma == "wgmma":   # tiles of A beside the ring: its small parts (3xTF32), its transpose (layout T)
            return pipeline + 4 * self.BM * self.BK * ((self.family == "tf32x3") + self.a_transposed) * (1 + self.prefetch)
        if self.family in HALF:
            return max(pipeline, (self.threads // 32) * 16 * EPILOGUE_LD * 4)
        return pipeline

    @property
    def accumulators(self) -> int:
        """fp32 accumulators each thread holds."""
        if self.family in ("naive", "skinny"):
            return 1 if self.family == "naive" else self.TM * self.BN
        if self.mma == "wgmma":
            return self.WM * self.WN // 128   # a warpgroup's 64 x BM tile over 128 threads
        if self.tensor_core or self.family in HALF:
            return self.WM * self.WN // 32   # m16n8 tiles of 4 (16x16 wmma tiles of 8) per thread
        return self.WMITER * self.TM * self.WNITER * self.TN

    def target_arch(self, arch: str) -> str:
        """The architecture to compile for on a GPU of ``arch``: wgmma needs the arch-specific sm_90a.

        >>> KernelConfig(mma="wgmma").target_arch("sm_90"), KernelConfig().target_arch("sm_90")
        ('sm_90a', 'sm_90')
        """
        return f"{arch}a" if self.mma == "wgmma" and arch == "sm_90" else arch

    def tiles(self, M: int, N: int) -> tuple[int, int]:
        """Number of block tiles along M and N (a swapped skinny kernel's rows are N's)."""
        return (-(-N // self.BM), -(-M // self.BN)) if self.swap else (-(-M // self.BM), -(-N // self.BN))

    def grid(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        """Launch grid of the main kernel for an M x N x K problem."""
        tm, tn = self.tiles(M, N)
        if self.family == "naive":
            return (tn, tm, 1) if self.coalesced else (tm, tn, 1)
        if self.persistent:
            return (min(self.persistent, tm * tn), 1, 1)
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
