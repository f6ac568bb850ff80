"""KernelConfig: one point of gemmgen's kernel space, and everything derived from it.

A config is a frozen value. Its :attr:`KernelConfig.name` is the one procedural name used as the
CUDA symbol, the compile-cache key and the results key, so two configs with the same name are the
same kernel.

>>> cfg = KernelConfig(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=4)
>>> cfg.threads
256
>>> KernelConfig.from_dict(cfg.to_dict()) == cfg
True
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any

FAMILIES = ("naive", "simt", "tf32", "tf32x3", "wmma")
TENSOR_CORE = ("tf32", "tf32x3")   # mma.sync m16n8k8 families; tf32x3 is fp32-accurate (3xTF32)
HALF = ("wmma",)                   # fp16/bf16 inputs on the tensor cores (nvcuda::wmma 16x16x16, seed 004)
# What each family computes: the accuracy class the correctness gate holds it to (gemmgen.gate.gate_bound).
# The half family's class is its dtype ("f16" or "bf16"): see KernelConfig.precision.
PRECISION = {"naive": "fp32", "simt": "fp32", "tf32": "tf32", "tf32x3": "fp32"}
DTYPES = ("f32", "f16", "bf16")   # element type of A and B; C is always fp32
HALF_DTYPES = ("f16", "bf16")
EPILOGUE_LD = 20                  # floats per row of the wmma family's 16x16 epilogue staging tile
MMA_KINDS = ("sync", "wgmma")     # tensor-core instruction: mma.sync (sm_80+) or wgmma.mma_async (sm_90a)
LAYOUTS = ("NN", "NT", "TN", "TT")
BOUNDS = ("checked", "none")
REDUCTIONS = ("atomic", "workspace")
FRAGMENT_LOADS = ("lds", "shfl")


class ConfigError(ValueError):
    """A config dictionary names an unknown key or holds a value of the wrong type."""


@dataclass(frozen=True)
class KernelConfig:
    """Every template parameter of one GEMM kernel (C = alpha*op(A)@op(B) + beta*C, C in fp32; A and B
    of ``dtype``: fp32, or fp16/bf16 for the half family ``wmma``).

    Layout letters follow BLAS: ``layout[0]`` is A, ``layout[1]`` is B; ``N`` means the operand is
    stored row-major as written (A is MxK with lda >= K, B is KxN with ldb >= N), ``T`` means it is
    stored transposed (A as KxM row-major, i.e. column-major MxK, lda >= M; B as NxK, ldb >= K).
    C is always row-major MxN with ldc >= N.
    """

    family: str = "simt"          # naive (v0/v1), simt (shared-memory tiled), tf32/tf32x3/wmma (tensor cores)
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
    prefetch: bool = False        # double-buffer register fragments across the k loop
    frag: str = "lds"             # fragment loads: lds from shared, or shfl within the warp
    split_k: int = 1              # K slices computed by separate blocks
    reduce: str = "atomic"        # how split-K partial sums meet: atomic or workspace
    bounds: str = "checked"       # checked edges (any shape) or none (tile-divisible shapes only)
    coalesced: bool = True        # naive family only: consecutive threads walk columns of C
    min_blocks: int = 1           # __launch_bounds__ minimum resident blocks per SM
    dtype: str = "f32"            # element type of A and B (f32; f16/bf16 for the half families)
    mma: str = "sync"             # tensor-core families: mma.sync, or Hopper's wgmma (sm_90a)
    partials: bool = True         # wmma: k16 steps summed in pairs into fresh partials, added to C's
                                  # accumulators in round-to-nearest fp32 (false: straight on the tensor
                                  # cores, as cuBLAS does: faster, and the truncation error grows with K)
    label: str = field(default="", compare=False)  # free text (preset name); not part of the kernel

    # ---- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The procedural name: CUDA symbol, cache key and results key."""
        lay = self.layout.lower()
        if self.family == "naive":
            return "_".join([f"gg_naive_{lay}_{self.BM}x{self.BN}_{'c' if self.coalesced else 'u'}", *self._type_suffix()])
        if self.tensor_core or self.family in HALF:
            return self._tc_name()
        parts = [
            f"gg_simt_{lay}",
            f"b{self.BM}x{self.BN}x{self.BK}",
            f"w{self.WM}x{self.WN}i{self.WMITER}x{self.WNITER}",
            f"t{self.TM}x{self.TN}",
            f"v{self.vec}",
            f"a{'k' if self.a_kmajor else 'm'}p{self.pad_a}s{self.swz_a}",
            f"bp{self.pad_b}s{self.swz_b}",
            f"r{self.raster}",
            f"s{self.stages}{'c' if self.async_copy else 'r'}",
            f"f{self.frag}{'p' if self.prefetch else ''}",
            f"k{self.split_k}{self.reduce[0] if self.split_k > 1 else ''}",
            f"{'chk' if self.bounds == 'checked' else 'fast'}",
        ]
        if self.min_blocks != 1:
            parts.append(f"o{self.min_blocks}")
        return "_".join(parts + self._type_suffix())

    def _type_suffix(self) -> list[str]:
        """Name parts of the element type, the tensor-core instruction and the accumulation, where not
        the defaults."""
        return (([self.dtype] if self.dtype != "f32" else []) + (["wg"] if self.mma != "sync" else [])
                + (["direct"] if not self.partials else []))

    def _tc_name(self) -> str:
        """Tensor-core families: the warp tile is made of mma (or wmma) tiles, so there are no thread
        tiles, and shared memory follows the global layout (no a_kmajor)."""
        parts = [
            f"gg_{self.family}_{self.layout.lower()}",
            f"b{self.BM}x{self.BN}x{self.BK}",
            f"w{self.WM}x{self.WN}",
            f"v{self.vec}",
            f"ap{self.pad_a}s{self.swz_a}",
            f"bp{self.pad_b}s{self.swz_b}",
            f"r{self.raster}",
            f"s{self.stages}{'c' if self.async_copy else 'r'}",
            f"k{self.split_k}{self.reduce[0] if self.split_k > 1 else ''}",
            f"{'chk' if self.bounds == 'checked' else 'fast'}",
        ]
        if self.min_blocks != 1:
            parts.append(f"o{self.min_blocks}")
        return "_".join(parts + self._type_suffix())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary of every parameter (label included)."""
        return dataclasses.asdict(self)

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
    def threads(self) -> int:
        """Threads per block."""
        if self.family == "naive":
            return self.BM * self.BN
        # wgmma is issued by warpgroups of 4 warps: a "warp tile" of the wgmma variant is a warpgroup's
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
    def global_layout_smem(self) -> bool:
        """Shared tiles keep the global layout (tensor-core and half families), so every cp.async
        moves 16 contiguous bytes; simt may transpose A (a_kmajor)."""
        return self.tensor_core or self.family in HALF

    @property
    def a_smem_kmajor(self) -> bool:
        """A is stored [BK][BM] in shared memory. Tensor-core families keep the global layout, so
        every cp.async moves 16 contiguous bytes (T: A is column-major, m contiguous)."""
        return self.layout[0] == "T" if self.global_layout_smem else self.a_kmajor

    @property
    def b_smem_kmajor(self) -> bool:
        """B is stored [BK][BN] in shared memory (simt: always; tensor cores: when B is row-major)."""
        return self.layout[1] == "N" if self.global_layout_smem else True

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
        """Bytes of shared memory one pipeline stage holds (A tile plus B tile)."""
        if self.family == "naive":
            return 0
        (ra, ca), (rb, cb) = self.a_tile_shape, self.b_tile_shape
        return self.elem_bytes * (ra * ca + rb * cb)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per block, all stages. The half family's epilogue reuses it to stage
        one 16x16 fp32 tile per warp, so it is at least that."""
        pipeline = self.smem_per_stage * self.stages
        if self.mma == "wgmma" and self.family == "tf32x3":
            return pipeline + 4 * self.BM * self.BK   # the small parts of the A tile in use
        if self.family in HALF:
            return max(pipeline, (self.threads // 32) * 16 * EPILOGUE_LD * 4)
        return pipeline

    @property
    def accumulators(self) -> int:
        """fp32 accumulators each thread holds."""
        if self.family == "naive":
            return 1
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
        """Number of block tiles along M and N."""
        return -(-M // self.BM), -(-N // self.BN)

    def grid(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        """Launch grid of the main kernel for an M x N x K problem."""
        tm, tn = self.tiles(M, N)
        if self.family == "naive":
            return (tn, tm, 1) if self.coalesced else (tm, tn, 1)
        return (tm * tn, 1, self.split_k)

    def block(self) -> tuple[int, int, int]:
        """Launch block of the main kernel."""
        if self.family == "naive":
            return (self.BN, self.BM, 1) if self.coalesced else (self.BM, self.BN, 1)
        return (self.threads, 1, 1)

    def arithmetic_intensity(self) -> float:
        """Seed 001's block-tile intensity in FLOP per byte of global traffic: 2*BM*BN*BK FLOP per
        (BM+BN)*BK elements, i.e. BM*BN / (2*(BM+BN)) for fp32 and BM*BN / (BM+BN) for halves."""
        return 2.0 * self.BM * self.BN / (self.elem_bytes * (self.BM + self.BN))

    def k_per_slice(self, K: int) -> int:
        """Depth of K each split-K slice covers (a multiple of BK)."""
        per = -(-K // self.split_k)
        return -(-per // self.BK) * self.BK

    def accepts(self, M: int, N: int, K: int, lda: int | None = None, ldb: int | None = None,
                ldc: int | None = None) -> str | None:
        """None when this kernel computes the shape correctly, else the reason it does not.

        Checked-bounds kernels take every shape and leading dimension (misaligned operands fall back
        to scalar loads inside the kernel); the fast path needs whole tiles and aligned rows.
        """
        if min(M, N, K) < 1:
            return f"shape {M}x{N}x{K} has a dimension below 1"
        lda = lda if lda is not None else (K if self.layout[0] == "N" else M)
        ldb = ldb if ldb is not None else (N if self.layout[1] == "N" else K)
        ldc = ldc if ldc is not None else N
        for name, ld, least in (("lda", lda, K if self.layout[0] == "N" else M),
                                ("ldb", ldb, N if self.layout[1] == "N" else K), ("ldc", ldc, N)):
            if ld < least:
                return f"{name} = {ld} is below its row length {least}"
        if self.family == "naive" or self.bounds == "checked":
            return None
        if M % self.BM or N % self.BN:
            return f"fast path needs M % {self.BM} == 0 and N % {self.BN} == 0, got M={M}, N={N}"
        if K % (self.BK * self.split_k):
            return f"fast path needs K % {self.BK * self.split_k} == 0 (BK*split_k), got K={K}"
        align = 16 // self.elem_bytes   # elements per 16 bytes: vector loads of A and B
        for name, ld, per in (("lda", lda, align), ("ldb", ldb, align), ("ldc", ldc, 4)):
            if ld % per:  # 16-byte rows: vector loads of A and B, float4 stores of C
                return f"fast path needs {name} % {per} == 0 (16-byte rows), got {name}={ld}"
        return None


def coerce(key: str, value: Any, kind: type) -> Any:
    """Convert a JSON or command-line value to the parameter's type, or say why it cannot be."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key} = {value!r} is not a boolean; use true or false")
    if kind is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key} = {value!r} is not an integer")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} = {value!r} is not an integer") from None
    if not isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} is not a string")
    return value.upper() if key == "layout" else value
