"""Turning user arrays into GEMM operands: CuPy arrays, anything with __cuda_array_interface__,
or DLPack (PyTorch CUDA tensors), without copies.

A 2-D operand whose rows are contiguous is layout 'N' (leading dimension = row stride); one whose
columns are contiguous (a transposed view, Fortran order) is layout 'T'. Other strides are refused
with the reason, never copied silently.
"""
from __future__ import annotations

from typing import Any


def as_cupy(x: Any, what: str):
    """A CuPy view of a CUDA array (no copy); TypeError naming ``what`` for anything else."""
    import cupy

    if isinstance(x, cupy.ndarray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return cupy.asarray(x)
    if type(x).__module__.split(".")[0] == "numpy":
        raise TypeError(f"{what} is a host (NumPy) array; move it to the GPU first, e.g. cupy.asarray({what})")
    if hasattr(x, "__dlpack__"):
        try:
            return cupy.from_dlpack(x)
        except Exception as exc:
            raise TypeError(f"{what} ({type(x).__name__}) is not a CUDA array: {exc}") from None
    raise TypeError(f"{what} must be a CUDA array (CuPy, or with __cuda_array_interface__ or DLPack), "
                    f"got {type(x).__name__}")


def check_matrix(a, what: str) -> None:
    """float32 and 2-D, or a TypeError/ValueError saying which."""
    if a.dtype.char != "f":   # 'f' is float32; comparing the char skips numpy's dtype-name machinery
        raise TypeError(f"{what} has dtype {a.dtype.name}; gemmgen computes SGEMM and needs float32")
    if a.ndim != 2:
        raise ValueError(f"{what} has {a.ndim} dimensions {tuple(a.shape)}; a matrix has 2")


def layout_of(a, what: str) -> tuple[str, int]:
    """('N', leading dim) for rows contiguous, ('T', leading dim) for columns contiguous."""
    rows, cols = a.shape
    s0, s1 = (s // 4 for s in a.strides)
    # A stride along a dimension of length 1 is never used, so it does not constrain the layout.
    if (s1 == 1 or cols == 1) and (s0 >= cols or rows == 1):
        return "N", max(s0 if rows > 1 else cols, cols, 1)
    if (s0 == 1 or rows == 1) and (s1 >= rows or cols == 1):
        return "T", max(s1 if cols > 1 else rows, rows, 1)
    raise ValueError(f"{what} has strides {tuple(a.strides)} bytes for shape {tuple(a.shape)}: neither its rows "
                     "nor its columns are contiguous; pass a contiguous array or a transposed view "
                     "(e.g. cupy.ascontiguousarray)")


def span(a) -> tuple[int, int]:
    """[first byte, last byte + 1) that an array's elements occupy."""
    (r, c), (s0, s1) = a.shape, a.strides   # matrices only: this runs on every matmul call
    start = a.data.ptr + min(0, (r - 1) * s0) + min(0, (c - 1) * s1)
    return start, a.data.ptr + max(0, (r - 1) * s0) + max(0, (c - 1) * s1) + a.itemsize


def overlaps(a, b) -> bool:
    (s1, e1), (s2, e2) = span(a), span(b)
    return s1 < e2 and s2 < e1
