"""Turning the user's arrays into matrices matmul can pass to a kernel: CuPy arrays, anything with
__cuda_array_interface__, or DLPack (PyTorch CUDA tensors), without copies. (The pointers a kernel
launch reads are gemmgen.measure.launch.Operands.)

A and B may be float32, float16 or bfloat16 (CuPy knows bfloat16 only with ml_dtypes installed; a
PyTorch bfloat16 tensor is read through a 16-bit integer view of the same memory). A 2-D operand
whose rows are contiguous is layout 'N' (leading dimension = row stride); one whose columns are
contiguous (a transposed view, Fortran order) is layout 'T'. Other strides are refused with the
reason, never copied silently.
"""
from __future__ import annotations

from typing import Any

# dtype.char -> gemmgen's element type; bfloat16 (CuPy with ml_dtypes) is recognised by its name
ELEMENT_TYPES = {"f": "f32", "e": "f16"}
VALID = "float32, float16 or bfloat16"


def input_matrix(x: Any, what: str) -> tuple[Any, str]:
    """(a CuPy view of a CUDA matrix, its element type "f32"/"f16"/"bf16"), without copies.

    TypeError names ``what`` for host arrays, non-arrays and other dtypes.
    """
    import cupy

    if isinstance(x, cupy.ndarray):   # the common case first: matmul's host overhead is per call
        return x, element_type(x, what)
    bf16 = _torch_bfloat16(x)
    a = as_cupy(bf16 if bf16 is not None else x, what)
    return a, ("bf16" if bf16 is not None else element_type(a, what))


def _torch_bfloat16(x: Any):
    """A PyTorch bfloat16 tensor as an int16 tensor over the same memory (DLPack and the CUDA array
    interface cannot carry bfloat16 without ml_dtypes); None for anything else."""
    if type(x).__module__.split(".")[0] != "torch" or str(getattr(x, "dtype", "")) != "torch.bfloat16":
        return None
    import torch

    return x.view(torch.int16)


def as_cupy(x: Any, what: str):
    """A CuPy view of a CUDA array (no copy); TypeError naming ``what`` for anything else."""
    import cupy

    if isinstance(x, cupy.ndarray):
        return x
    if type(x).__module__.split(".")[0] == "numpy":
        raise TypeError(f"{what} is a host (NumPy) array; move it to the GPU first, e.g. cupy.asarray({what})")
    if _has_cuda_array_interface(x):
        view = Described(x, checked_interface(x, what))
        try:
            a = cupy.asarray(view)
            if a.size:
                _device_memory(a.data.ptr, what)
            return a
        except cupy.cuda.runtime.CUDARuntimeError as err:   # CuPy asked the driver about the pointer
            from ..base.devices import require_gpu

            require_gpu()    # NoGpu where there is no usable GPU at all
            raise ValueError(f"{what}'s __cuda_array_interface__ points at {view.__cuda_array_interface__['data'][0]:#x}, "
                             f"which CUDA does not know as memory ({err}); pass a CUDA array (CuPy, PyTorch, ...)") from None
    if hasattr(x, "__dlpack__"):
        try:
            return cupy.from_dlpack(x)
        except Exception as exc:
            raise TypeError(f"{what} ({type(x).__name__}) is not a CUDA array: {exc}") from None
    raise TypeError(f"{what} must be a CUDA array (CuPy, or with __cuda_array_interface__ or DLPack), "
                    f"got {type(x).__name__}")


class Described:
    """An object's checked ``__cuda_array_interface__``, read once, with the object kept alive (CuPy's
    view of the memory holds this, this holds the owner)."""

    __slots__ = ("owner", "__cuda_array_interface__")

    def __init__(self, owner: Any, interface: dict):
        self.owner, self.__cuda_array_interface__ = owner, interface


def checked_interface(x: Any, what: str) -> dict:
    """``x.__cuda_array_interface__`` if it is well formed (version 0-3: shape, typestr, data, strides),
    else a TypeError or ValueError naming the bad field, before CuPy hands its pointer to the driver.

    >>> class Bogus:
    ...     __cuda_array_interface__ = {"shape": (2, 2), "typestr": "<f4", "data": (0, False), "version": 3}
    >>> checked_interface(Bogus(), "A")
    Traceback (most recent call last):
    ValueError: A's __cuda_array_interface__ has a null data pointer for 4 elements; it describes no memory
    """
    d = x.__cuda_array_interface__
    where = f"{what}'s __cuda_array_interface__"
    if not isinstance(d, dict):
        raise TypeError(f"{where} is a {type(d).__name__}, not a dict (see the CUDA Array Interface, version 3)")
    missing = [k for k in ("shape", "typestr", "data") if k not in d]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}; it needs shape, typestr, data (and version)")
    shape, typestr, data, strides = d["shape"], d["typestr"], d["data"], d.get("strides")
    if not (isinstance(shape, tuple) and all(isinstance(n, int) and n >= 0 for n in shape)):
        raise ValueError(f"{where} has shape {shape!r}; give a tuple of sizes >= 0")
    if not isinstance(typestr, str):
        raise ValueError(f"{where} has typestr {typestr!r}; give a NumPy type string such as '<f4'")
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int) and data[0] >= 0):
        raise ValueError(f"{where} has data {data!r}; give (pointer, read_only) with an integer pointer")
    if strides is not None and not (isinstance(strides, tuple) and len(strides) == len(shape)
                                    and all(isinstance(n, int) for n in strides)):
        raise ValueError(f"{where} has strides {strides!r} for shape {shape!r}; give None or one integer per dimension")
    count = 1
    for n in shape:
        count *= n
    if data[0] == 0 and count:
        raise ValueError(f"{where} has a null data pointer for {count} elements; it describes no memory")
    return d


def _device_memory(ptr: int, what: str) -> None:
    """ValueError unless ``ptr`` is CUDA device or managed memory: a kernel reading host memory, or none,
    would fail with an illegal address that ruins the CUDA context for the rest of the process."""
    import cupy

    kind = cupy.cuda.runtime.pointerGetAttributes(ptr).type
    if kind not in (cupy.cuda.runtime.memoryTypeDevice, cupy.cuda.runtime.memoryTypeManaged):
        raise ValueError(f"{what}'s __cuda_array_interface__ points at {ptr:#x}, which is not CUDA device memory "
                         f"(CUDA memory type {kind}); pass a CUDA array (CuPy, PyTorch, ...)")


def _has_cuda_array_interface(x: Any) -> bool:
    """hasattr, except that a property that raises (PyTorch: a dtype it cannot describe, a tensor
    that requires grad) means 'no' and lets DLPack try."""
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:
        return False


def element_type(a, what: str) -> str:
    """'f32', 'f16' or 'bf16' for a matrix's dtype, or a TypeError naming it and the valid ones."""
    kind = ELEMENT_TYPES.get(a.dtype.char)   # the char skips numpy's dtype-name machinery on the hot path
    if kind is None and a.dtype.name == "bfloat16":
        kind = "bf16"
    if kind is None:
        raise TypeError(f"{what} has dtype {a.dtype.name}; gemmgen's A and B are {VALID} (C is float32)")
    return kind


def check_matrix(a, what: str) -> None:
    """2-D, or a ValueError saying how many dimensions it has."""
    if a.ndim != 2:
        raise ValueError(f"{what} has {a.ndim} dimensions {tuple(a.shape)}; a matrix has 2")


def as_output(x: Any, what: str = "out"):
    """A CuPy view of C: a 2-D float32 CUDA array, else TypeError/ValueError naming what is wrong."""
    c = None if _torch_bfloat16(x) is not None else as_cupy(x, what)
    if c is None or c.dtype.char != "f":
        raise TypeError(f"{what} has dtype {'bfloat16' if c is None else c.dtype.name}; C is always float32, "
                        "whatever A and B are")
    check_matrix(c, what)
    return c


def layout_of(a, what: str) -> tuple[str, int]:
    """('N', leading dim) for rows contiguous, ('T', leading dim) for columns contiguous, in elements."""
    rows, cols = a.shape
    s0, s1 = (s // a.itemsize for s in a.strides)
    # A stride along a dimension of length 1 is never used, so it does not constrain the layout.
    if (s1 == 1 or cols == 1) and (s0 >= cols or rows == 1):
        return "N", max(s0 if rows > 1 else cols, cols, 1)
    if (s0 == 1 or rows == 1) and (s1 >= rows or cols == 1):
        return "T", max(s1 if cols > 1 else rows, rows, 1)
    raise ValueError(f"{what} has strides {tuple(a.strides)} bytes for shape {tuple(a.shape)}: neither its rows "
                     "nor its columns are contiguous; pass a contiguous array or a transposed view "
                     "(e.g. cupy.ascontiguousarray)")


def span_offsets(a) -> tuple[int, int]:
    """[first byte, last byte + 1) of a matrix's elements relative to its data pointer.

    >>> from types import SimpleNamespace as M
    >>> span_offsets(M(shape=(3, 5), strides=(20, 4), itemsize=4)), span_offsets(M(shape=(3, 5), strides=(4, 16), itemsize=4))
    ((0, 60), (0, 76))
    """
    (r, c), (s0, s1) = a.shape, a.strides
    return min(0, (r - 1) * s0) + min(0, (c - 1) * s1), max(0, (r - 1) * s0) + max(0, (c - 1) * s1) + a.itemsize


def span(a) -> tuple[int, int]:
    """[first byte, last byte + 1) that an array's elements occupy."""
    lo, hi = span_offsets(a)
    return a.data.ptr + lo, a.data.ptr + hi


def intersect(s1: int, e1: int, s2: int, e2: int) -> bool:
    """Whether the byte ranges [s1, e1) and [s2, e2) share a byte."""
    return s1 < e2 and s2 < e1


def overlaps(a, b) -> bool:
    return intersect(*span(a), *span(b))


def aligned_ld(n: int, align: int) -> int:
    """A leading dimension for rows of ``n`` elements: n rounded up to a multiple of ``align``.

    >>> aligned_ld(4097, 4), aligned_ld(8, 4)
    (4100, 8)
    """
    return -(-n // align) * align


def packed(x, layout: str, align: int):
    """A copy of matrix ``x`` (stored in ``layout``: 'N' rows contiguous, 'T' columns contiguous) whose
    leading dimension is a multiple of ``align`` elements and whose first element is 256-byte aligned,
    returned as a view of the same shape and layout. Kernels read such rows with 16-byte copies; rows
    that do not start on 16 bytes take 4-byte copies, up to twice as slow (dispatch decides).

    >>> import cupy                                                          # doctest: +GPU
    >>> a = cupy.arange(15, dtype=cupy.float32).reshape(3, 5)
    >>> p = packed(a, "N", 4)
    >>> p.strides, bool((p == a).all())
    ((32, 4), True)
    """
    import cupy

    stored = x if layout == "N" else x.T          # the stored matrix: its rows are contiguous
    rows, cols = stored.shape
    ld = aligned_ld(cols, align)
    out = cupy.empty((rows, ld), dtype=stored.dtype)[:, :cols]
    out[...] = stored
    return out if layout == "N" else out.T
