"""``gemmgen.matmul``: C = alpha * A @ B + beta * C on CUDA arrays, with this GPU's tuned kernel.

On a GPU (C = A @ B; C = 2 A@B + C with B column-major; TF32 tensor cores, ~3e-4 relative error;
half inputs with a float32 C):

>>> import cupy, gemmgen                                                # doctest: +GPU
>>> A = cupy.random.rand(1000, 700, dtype=cupy.float32)
>>> B = cupy.random.rand(700, 300, dtype=cupy.float32)
>>> C = gemmgen.matmul(A, B)
>>> C = gemmgen.matmul(A, B.T.copy().T, out=C, alpha=2.0, beta=1.0)
>>> C = gemmgen.matmul(A, B, precision="tf32")
>>> C = gemmgen.matmul(A.astype(cupy.float16), B.astype(cupy.float16))
"""
from __future__ import annotations

import contextlib
from typing import Any, Optional

from ..base.devices import require_gpu
from . import autotune
from .arrays import as_output, check_matrix, input_matrix, layout_of, overlaps, span_offsets
from .calls import Prepared, kept
from .handwritten import HANDWRITTEN
from .library import library_for
from .precision import DTYPE_NAMES, check_family, resolve_precision
from .transpose import staged, stored_shape

_ND = None   # cupy.ndarray, once CuPy is imported (with the two calls below)
_get_device = _current_stream = None


def matmul(A: Any, B: Any, out: Any = None, *, precision: Optional[str] = None, alpha: float = 1.0,
           beta: float = 0.0, stream: Any = None, strict: bool = False, family: Optional[str] = None) -> Any:
    """C = alpha * A @ B + beta * C for CUDA matrices, with the kernel tuned for this GPU.

    A and B are both float32, both float16 or both bfloat16; C is float32. ``precision`` picks the
    accuracy class: for float32 inputs "fp32" (default: the fastest fp32-accurate kernel, SIMT or
    3xTF32 tensor cores) or "tf32" (TF32 tensor cores, ~1e-3 relative error); float16/bfloat16
    inputs take "f16"/"bf16" (default: their own), exact products with fp32 accumulation. A
    precision that is not one of these, or does not fit the inputs, raises ValueError. ``family``
    restricts the choice to one template family of the class: "simt" or "tf32x3" for fp32 (e.g. simt
    on GPUs whose tensor cores are no faster than their FP32 units), "tf32", "wmma"; None: any.

    A and B may be C-contiguous, Fortran-contiguous or transposed views (mapped to the NN/NT/TN/TT
    kernels); ``out`` must have contiguous rows. Inputs may be CuPy arrays or anything with
    ``__cuda_array_interface__`` or DLPack (PyTorch CUDA tensors); when ``out`` is None a new CuPy array
    is returned (``out`` itself otherwise, written in place). The inputs are never modified; a temporary
    copy of A or B is made only where the stored timings predict it pays (rows that are not 16-byte
    aligned, or a faster kernel in another layout, see docs/API.md). Strides that no kernel can read
    raise ValueError. ``stream``: a CuPy stream (default: the current one).

    The arguments are checked in full on the first call of a kind (per thread: shapes, strides, dtypes,
    devices, 16-byte alignment of A and B, options); a repeated call of CuPy arrays then reads their
    pointers, checks that ``out`` overlaps neither, and enqueues the prepared kernels (:mod:`.calls`).

    >>> import cupy, gemmgen                                                 # doctest: +GPU
    >>> C = gemmgen.matmul(cupy.ones((64, 32), cupy.float32), cupy.ones((32, 16), cupy.float32))  # doctest: +GPU
    >>> float(C[0, 0]), C.shape                                              # doctest: +GPU
    (32.0, (64, 16))
    """
    nd = _ndarray()
    if type(A) is nd and type(B) is nd and (out is None or type(out) is nd) and (out is not None or beta == 0):
        # the common case: CuPy arrays in a request of a kind seen before on this thread
        pa, pb = A.data, B.data
        key = (A.shape, A.strides, A.dtype, pa.device_id, B.shape, B.strides, B.dtype, pb.device_id,
               None if out is None else (out.shape, out.strides, out.dtype, out.data.device_id),
               ((pa.ptr | pb.ptr) & 15) == 0, precision, family, strict)
        try:
            call = kept().get(key)
        except TypeError:   # an unhashable option: the checked route names it
            return _first_call(None, A, B, out, precision, alpha, beta, stream, strict, family)
        if call is not None and _get_device() == pa.device_id:
            pa, pb = pa.ptr, pb.ptr
            if out is None:
                c = _new_c(A.shape[0], B.shape[1], stream)
            else:
                c, clash = out, call.overlaps(pa, pb, out.data.ptr)
                if clash:
                    raise ValueError(f"out overlaps {clash} in memory; the kernel would read what it writes")
            call(pa, pb, c.data.ptr, float(alpha), float(beta), stream or _current_stream())
            return c
        return _first_call(key, A, B, out, precision, alpha, beta, stream, strict, family)
    return _first_call(None, A, B, out, precision, alpha, beta, stream, strict, family)


def _first_call(key, A, B, out, precision, alpha, beta, stream, strict, family):
    """A request checked in full (one-line errors for bad arguments), its plan made, and it run; where
    ``key`` is given (CuPy arrays), the prepared request is kept for the next call of its kind."""
    try:
        import cupy
    except ImportError:
        require_gpu()   # raises NoGpu: what to install
        raise

    (a, ta), (b, tb) = input_matrix(A, "A"), input_matrix(B, "B")
    check_matrix(a, "A")
    check_matrix(b, "B")
    if ta != tb:
        raise ValueError(f"A is {DTYPE_NAMES[ta]} and B is {DTYPE_NAMES[tb]}; A and B must have one dtype "
                         "(convert one, e.g. B.astype(A.dtype))")
    cls = resolve_precision(precision, ta)
    check_family(family, cls)
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    if a.device.id != b.device.id:
        raise ValueError(f"A is on GPU {a.device.id} and B on GPU {b.device.id}; put them on one device")
    with contextlib.nullcontext() if stream is None else stream:   # C from the pool of the stream that writes it
        c = _output(out, a, b, M, N, beta)
        if M == 0 or N == 0:
            return out if out is not None else c
        if K == 0:   # an empty sum: C = beta * C; beta == 0 writes zeros and never reads C, as the kernels do
            c[...] = 0 if beta == 0 else c * beta
            return out if out is not None else c
    (la, lda), (lb, ldb) = layout_of(a, "A"), layout_of(b, "B")
    dev, ldc = a.device.id, c.strides[0] // 4
    rows_aligned = (a.data.ptr | b.data.ptr) % 16 == 0
    # the common case needs no device switch, which would cost a few microseconds per call
    with contextlib.nullcontext() if cupy.cuda.runtime.getDevice() == dev else cupy.cuda.Device(dev):
        lib = library_for(dev, strict)
        kernel, pack_a, pack_b = lib.plan_for(M, N, K, la + lb, lda, ldb, ldc, cls, family, rows_aligned, a.itemsize)
        stream = stream or cupy.cuda.get_current_stream()
        settled = True
        if a.itemsize == 4 and autotune.candidates_per_request() and kernel.family not in HANDWRITTEN:   # opt-in tuning
            (kernel, pack_a, pack_b), settled = autotune.tuned_plan(
                lib, (M, N, K, la + lb, lda, ldb, ldc, cls, family, rows_aligned), (kernel, pack_a, pack_b),
                autotune.runner(a, b, la, lb, M, N, K, lda, ldb, ldc, stream), stream)
        if a.itemsize != 4 and (pack_a or pack_b):
            # half inputs: aligned copies through CuPy, fresh each call (a rare route: the copies are new
            # arrays, so the request is not kept), then the kernel as a prepared request without copies
            run = kernel.layout
            with stream:
                a, lda = staged(a, la, run[0], 16 // a.itemsize) if pack_a else (a, lda)
                b, ldb = staged(b, lb, run[1], 16 // b.itemsize) if pack_b else (b, ldb)
            pack_a = pack_b = False
        call = Prepared(kernel, M, N, K, la + lb, lda, ldb, ldc, pack_a, pack_b, stored_shape(a, la),
                        stored_shape(b, lb), (span_offsets(a), span_offsets(b)),
                        None if out is None else span_offsets(c))
        call(a.data.ptr, b.data.ptr, c.data.ptr, float(alpha), float(beta), stream)
    if key is not None and a is A and b is B and settled:   # not settled: a capture kept tuning from timing
        kept()[key] = call
    return out if out is not None else c


def _new_c(M: int, N: int, stream):
    """A new float32 C from the pool of the stream that will write it (the current one by default)."""
    import cupy

    if stream is None:
        return cupy.empty((M, N), dtype=cupy.float32)
    with stream:
        return cupy.empty((M, N), dtype=cupy.float32)


class _NoCupy:
    """What no argument is an instance of (CuPy missing)."""


def _ndarray():
    """cupy.ndarray, with CuPy's calls that the common case makes bound once (a class nothing is an
    instance of without CuPy: then the checked route says what to install)."""
    global _ND, _get_device, _current_stream
    if _ND is None:
        try:
            import cupy
        except ImportError:
            return _NoCupy
        _get_device, _current_stream = cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream
        _ND = cupy.ndarray
    return _ND


def _output(out, a, b, M: int, N: int, beta: float):
    import cupy

    if out is None:
        if beta != 0:
            raise ValueError(f"beta={beta} reads C, but out is None; pass out= holding C")
        return cupy.empty((M, N), dtype=cupy.float32)
    c = as_output(out)
    if tuple(c.shape) != (M, N):
        raise ValueError(f"out has shape {tuple(c.shape)}; A @ B is {M}x{N}")
    if c.strides[1] != 4 or c.strides[0] < 4 * N:
        raise ValueError(f"out has strides {tuple(c.strides)} bytes; its rows must be contiguous (row-major)")
    if c.device.id != a.device.id:
        raise ValueError(f"out is on GPU {c.device.id}, A on GPU {a.device.id}")
    for name, x in (("A", a), ("B", b)):
        if overlaps(c, x):
            raise ValueError(f"out overlaps {name} in memory; the kernel would read what it writes")
    return c
