"""GEMM inputs on the GPU in a given layout and element type, and their references: cuBLAS in the
mode of a precision class, and float64.

Inputs are fresh random non-zero values; zeros would hide unwritten outputs and wrong indexing.
A and B are stored in the problem's dtype (f32, f16, or bf16 kept as uint16 bit patterns, since CuPy
has no bfloat16 of its own without ml_dtypes); C is always fp32. The float64 reference is computed
from the stored values, so rounding the inputs to half precision is not counted as error. On a GPU:

    >>> p = Problem(Shape(64, 48, 32, "NT"), seed=1, dtype="bf16")   # doctest: +GPU
    >>> p.operands(alpha=1.0, beta=0.0).ldb, p.a_store.dtype.name    # doctest: +GPU
    (32, 'uint16')
"""
from __future__ import annotations

from ..base.shape import Shape
from .launch import Operands

DTYPES = ("f32", "f16", "bf16")
# cuBLAS modes, one per precision class: what a kernel of that class is held to and timed against.
CUBLAS_MODES = {
    "fp32": "SGEMM (strict fp32)",
    "tf32": "TF32 (gemmEx, COMPUTE_32F_FAST_TF32)",
    "f16": "f16 in, fp32 out (gemmEx, COMPUTE_32F)",
    "bf16": "bf16 in, fp32 out (gemmEx, COMPUTE_32F)",
}
MODE_DTYPE = {"fp32": "f32", "tf32": "f32", "f16": "f16", "bf16": "bf16"}   # the inputs each mode takes


def to_bf16_bits(x):
    """fp32 -> bfloat16 bit patterns (uint16), rounded to nearest, ties to even (inputs are finite).

    Adding 0x7FFF plus the lowest kept bit to the fp32 pattern carries into bit 16 exactly when the
    dropped half is above the halfway point, or at it with an odd kept part.

    >>> import numpy as np
    >>> [hex(v) for v in to_bf16_bits(np.array([1.0, 1.00390625, 1.01171875], np.float32))]
    ['0x3f80', '0x3f80', '0x3f82']
    """
    bits = x.view("uint32")
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("uint16")


def widen(x, dtype: str):
    """Stored values as float32 (exact: f16 and bf16 are subsets of fp32); bf16 bits shift into place."""
    if dtype == "bf16":
        return (x.astype("uint32") << 16).view("float32")
    return x.astype("float32", copy=False)


class Problem:
    """A, B, C for one shape and layout; ``pad`` adds elements to every leading dimension."""

    def __init__(self, shape: Shape, seed: int = 0, pad: int = 0, dtype: str = "f32"):
        import cupy

        if dtype not in DTYPES:
            raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        self.shape, self.pad, self.dtype = shape, pad, dtype
        rng = cupy.random.default_rng(seed)
        M, N, K = shape.M, shape.N, shape.K
        a32 = self._random(rng, (K, M + pad) if shape.a_transposed else (M, K + pad))
        b32 = self._random(rng, (N, K + pad) if shape.b_transposed else (K, N + pad))
        self.a_store, self.b_store = self._narrow(a32), self._narrow(b32)
        self.c_store = cupy.empty((M, N + pad), dtype=cupy.float32)
        self.A = self.a_store[:, :M].T if shape.a_transposed else self.a_store[:, :K]
        self.B = self.b_store[:, :K].T if shape.b_transposed else self.b_store[:, :N]
        self.C = self.c_store[:, :N]
        self._rng = rng

    @staticmethod
    def _random(rng, shape):
        import cupy

        return rng.uniform(-1.0, 1.0, size=shape, dtype=cupy.float32)

    def _narrow(self, x):
        if self.dtype == "f16":
            return x.astype("float16")
        return to_bf16_bits(x) if self.dtype == "bf16" else x

    def operands(self, alpha: float = 1.0, beta: float = 0.0) -> Operands:
        s = self.shape
        return Operands(s.M, s.N, s.K, self.a_store.data.ptr, self.a_store.shape[1], self.b_store.data.ptr,
                        self.b_store.shape[1], self.c_store.data.ptr, self.c_store.shape[1], alpha, beta)

    def fill_c(self, poison: bool):
        """C before a run: NaN everywhere (every element must be written, beta=0 must not read it)
        or random values (for beta != 0). Returns a copy of what C held."""
        import cupy

        if poison:
            self.c_store.fill(cupy.nan)
        else:
            self.c_store[...] = self._random(self._rng, self.c_store.shape)
        return self.C.copy()

    def default_mode(self) -> str:
        """The cuBLAS mode of the inputs' own class: strict SGEMM for f32, gemmEx for f16/bf16."""
        return "fp32" if self.dtype == "f32" else self.dtype

    def cublas(self, out=None, mode: str | None = None, alpha: float = 1.0, beta: float = 0.0):
        """alpha*A@B + beta*out by cuBLAS in ``mode`` (a key of CUBLAS_MODES; default: default_mode()).

        ``out`` is an fp32 (M, N) array with contiguous rows (new if None; it holds C when beta != 0).
        """
        out, call = self.cublas_call(out, mode, alpha, beta)
        call()
        return out

    def cublas_call(self, out=None, mode: str | None = None, alpha: float = 1.0, beta: float = 0.0):
        """(out, a function that runs :meth:`cublas` into it): the arguments are checked and bound
        once, so a timed loop pays only for the cuBLAS call itself."""
        import cupy

        mode = mode or self.default_mode()
        if MODE_DTYPE.get(mode) != self.dtype:
            valid = [m for m, d in MODE_DTYPE.items() if d == self.dtype]
            raise ValueError(f"cuBLAS mode {mode!r} does not take {self.dtype} inputs; valid: {', '.join(valid)}")
        s = self.shape
        out = cupy.empty((s.M, s.N), dtype=cupy.float32) if out is None else out
        if out.dtype != cupy.float32 or out.shape != (s.M, s.N) or out.strides[1] != 4:
            raise ValueError(f"out must be a float32 {s.M}x{s.N} array with contiguous rows")
        return out, cublas_call(mode, s, self.a_store, self.b_store, out, alpha, beta)

    def reference64(self, alpha: float, beta: float, c0):
        """alpha*A@B + beta*C0 in float64, from the stored values of A and B."""
        import cupy

        a, b = (widen(x, self.dtype).astype(cupy.float64) for x in (self.A, self.B))
        ref = alpha * cupy.matmul(a, b)
        if beta != 0.0:
            ref += beta * c0.astype(cupy.float64)
        return ref


def cublas_call(mode: str, shape: Shape, a_store, b_store, out, alpha: float = 1.0, beta: float = 0.0):
    """A function that runs out = alpha * op(A) @ op(B) + beta * out with the low-level cuBLAS API,
    on the current stream at each call.

    ``a_store``/``b_store`` are the stored 2-D arrays of A and B in gemmgen's layout (see KernelConfig):
    their row length is the leading dimension. cuBLAS is column-major, and a row-major array is its
    column-major transpose, so cuBLAS computes C^T = op(B)^T @ op(A)^T into C^T (N x M, ld = ldc):
    B stored row-major (layout N) already is B^T column-major (no transpose); B stored as N x K
    (layout T) is B column-major and needs OP_T. The same holds for A.
    """
    import numpy as np
    from cupy.cuda import cublas, device, runtime

    op = {"N": cublas.CUBLAS_OP_N, "T": cublas.CUBLAS_OP_T}
    handle = device.get_cublas_handle()
    # host scalars, read during each call (CuPy's handles are in CUBLAS_POINTER_MODE_HOST)
    scalars = np.array([alpha, beta], np.float32)
    keep = (scalars, a_store, b_store, out)   # the closure holds what its raw pointers point into
    alpha_p, beta_p = scalars.ctypes.data, scalars.ctypes.data + 4
    lay, ldc = shape.layout, out.strides[0] // 4
    head = (handle, op[lay[1]], op[lay[0]], shape.N, shape.M, shape.K, alpha_p)
    if mode == "fp32":   # cublasSgemm: with the default math mode (CuPy's), strict fp32 without TF32
        args = (*head, b_store.data.ptr, b_store.shape[1], a_store.data.ptr, a_store.shape[1], beta_p,
                out.data.ptr, ldc)
        return lambda keep=keep: cublas.sgemm(*args)
    kind = {"tf32": runtime.CUDA_R_32F, "f16": runtime.CUDA_R_16F, "bf16": runtime.CUDA_R_16BF}[mode]
    compute = cublas.CUBLAS_COMPUTE_32F_FAST_TF32 if mode == "tf32" else cublas.CUBLAS_COMPUTE_32F
    args = (*head, b_store.data.ptr, kind, b_store.shape[1], a_store.data.ptr, kind, a_store.shape[1], beta_p,
            out.data.ptr, runtime.CUDA_R_32F, ldc, compute, cublas.CUBLAS_GEMM_DEFAULT)
    return lambda keep=keep: cublas.gemmEx(*args)
