"""GEMM inputs on the GPU in a given layout, and their references (cuBLAS fp32 and float64).

Inputs are fresh random non-zero values; zeros would hide unwritten outputs and wrong indexing.

    >>> p = Problem(Shape(64, 48, 32, "NT"), seed=1)          # doctest: +SKIP (needs a GPU)
    >>> p.operands(alpha=1.0, beta=0.0).ldb
    32
"""
from __future__ import annotations

from .launch import Operands
from .outcome import Shape


class Problem:
    """A, B, C for one shape and layout; ``pad`` adds floats to every leading dimension."""

    def __init__(self, shape: Shape, seed: int = 0, pad: int = 0):
        import cupy

        self.shape, self.pad = shape, pad
        rng = cupy.random.default_rng(seed)
        M, N, K = shape.M, shape.N, shape.K
        self.a_store = self._random(rng, (M, K + pad) if shape.layout[0] == "N" else (K, M + pad))
        self.b_store = self._random(rng, (K, N + pad) if shape.layout[1] == "N" else (N, K + pad))
        self.c_store = cupy.empty((M, N + pad), dtype=cupy.float32)
        self.A = self.a_store[:, :K] if shape.layout[0] == "N" else self.a_store[:, :M].T
        self.B = self.b_store[:, :N] if shape.layout[1] == "N" else self.b_store[:, :K].T
        self.C = self.c_store[:, :N]
        self._rng = rng

    @staticmethod
    def _random(rng, shape):
        import cupy

        return rng.uniform(-1.0, 1.0, size=shape, dtype=cupy.float32)

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

    def cublas(self, out=None):
        """cuBLAS SGEMM of A@B in strict fp32 (CuPy uses TF32 only when CUPY_TF32=1)."""
        import cupy

        return cupy.matmul(self.A, self.B, out=out)

    def reference64(self, alpha: float, beta: float, c0):
        """alpha*A@B + beta*C0 in float64."""
        import cupy

        ref = alpha * cupy.matmul(self.A.astype(cupy.float64), self.B.astype(cupy.float64))
        if beta != 0.0:
            ref += beta * c0.astype(cupy.float64)
        return ref
