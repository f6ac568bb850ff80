"""Copying an operand into the layout a kernel reads (see :mod:`.staging` for when that pays).

A matrix in layout 'N' has contiguous rows, in 'T' contiguous columns (a transposed view). Changing the
layout is a transpose of the stored matrix; keeping it is a copy into rows of an aligned length (the
kernels and their prepared launches: :mod:`.copy_kernels`).

matmul copies float32 operands with prepared launches (:func:`pair_copies`: a :class:`.copy_kernels.Copy`,
or one launch for both operands; :func:`staged_pair` does the same in one call): both copies land in one
buffer kept per device, stream and thread (:func:`staging_buffer`), so a request repeated with the same
shape reuses the same addresses. That matters beyond the allocation: a TMA kernel encodes a tensor map
per operand address (a driver call, ~15 us each), cached by address, and fresh buffers missed that cache
on every call.

>>> import cupy                                                          # doctest: +GPU
>>> a = cupy.arange(15, dtype=cupy.float32).reshape(3, 5)
>>> t, ld = staged(a, "N", "T", 4)
>>> bool((t == a).all()), t.strides, ld
(True, (4, 16), 4)
>>> p, ld = staged(a, "N", "N", 4)
>>> bool((p == a).all()), p.strides, ld
(True, (32, 4), 8)
"""
from __future__ import annotations

import threading

from .arrays import aligned_ld, packed
from .copy_kernels import Copies, Copy

KEEP_BYTES = 64 << 20  # staging buffers up to this size are kept for the next call (larger: the pool's)
_LOCAL = threading.local()   # per thread: the staging buffers by (device, stream)


def staged(x, have: str, want: str, align: int):
    """(copy of matrix ``x`` stored in layout ``want``, its leading dimension): x is stored in ``have``;
    the copy's leading dimension is a multiple of ``align`` elements and its first element 256-byte
    aligned (CuPy's allocator). Same layout: an aligned copy (float32 through gg_pack, other types
    through :func:`.arrays.packed`)."""
    import cupy

    if have == want and x.dtype != cupy.float32:   # packed() rounds the stored rows up to `align`
        return packed(x, have, align), aligned_ld(x.shape[1] if have == "N" else x.shape[0], align)
    if x.dtype != cupy.float32:
        raise ValueError(f"a transposing copy takes float32 operands, not {x.dtype}")
    stored = x if have == "N" else x.T            # the stored matrix: rows contiguous
    rows, cols = _copied_shape(stored_shape(x, have), have, want)
    ld = aligned_ld(cols, align)
    out = cupy.empty((rows, ld), dtype=cupy.float32)
    _copy(x, have, stored.strides[0] // 4, want, out.data.ptr, ld)
    view = out[:, :cols]                          # the stored copy: x in `want` with contiguous rows
    return (view if want == "N" else view.T), ld


def staged_pair(a, la: str, lda: int, want_a: str | None, b, lb: str, ldb: int, want_b: str | None,
                align: int) -> tuple[int, int, int, int]:
    """(A's pointer, lda, B's pointer, ldb) after copying the float32 operands whose ``want_*`` names a
    layout (None: used as they are) into that layout with rows of a multiple of ``align`` elements, on
    the current stream. Both copies go into one :func:`staging_buffer`, each starting on 256 bytes (see
    :func:`pair_copies`); ``lda``/``ldb`` are the operands' own leading dimensions (stored rows, as
    :func:`.arrays.layout_of` gives them)."""
    import cupy

    copies, floats, (lda2, ldb2) = pair_copies(stored_shape(a, la), la, lda, want_a, stored_shape(b, lb), lb, ldb,
                                               want_b, align)
    pa, pb = a.data.ptr, b.data.ptr
    if copies:
        stream = cupy.cuda.get_current_stream()
        pa, pb = copies(pa, pb, staging_buffer(floats, stream).data.ptr, stream.ptr)
    return pa, lda2, pb, ldb2


def pair_copies(a_stored: tuple[int, int], la: str, lda: int, want_a: str | None, b_stored: tuple[int, int], lb: str,
                ldb: int, want_b: str | None, align: int) -> tuple[Copies | None, int, tuple[int, int]]:
    """The copies of a pair of float32 operands into one staging buffer, prepared on the current device:
    (:class:`Copies`, or None where nothing is copied; the floats the buffer needs; (lda, ldb) after the
    copies). ``*_stored``: (rows, row length) of each operand as stored in its layout ``l*``; ``want_*``:
    the layout to copy it into, None for no copy. Each copy starts on 256 bytes."""
    jobs, offsets, floats, lds = [], [], 0, [lda, ldb]
    for i, (stored, have, ld, want) in enumerate(((a_stored, la, lda, want_a), (b_stored, lb, ldb, want_b))):
        if want:
            rows, cols = _copied_shape(stored, have, want)
            lds[i] = aligned_ld(cols, align)
            jobs.append((i, (have != want, *stored, ld, lds[i])))
            offsets.append(floats)
            floats += -(-rows * lds[i] // 64) * 64      # the next copy starts 256 bytes further on
    return (Copies(jobs, offsets) if jobs else None), floats, (lds[0], lds[1])


def staging_buffer(floats: int, stream=None):
    """A float32 buffer of at least ``floats`` elements on the current device, for work on ``stream``
    (a CuPy stream; default the current one). Up to KEEP_BYTES it is kept per (device, stream, thread)
    and reused by the next call, which on the same stream runs after this call's kernels; a larger
    request up to KEEP_BYTES replaces it, one above gets a buffer of its own and leaves the kept one
    (its address, and so a TMA kernel's cached tensor maps, stay). Per thread: two threads enqueueing
    on one stream would otherwise overwrite each other's copies before use. The caller holds the array
    until its kernels are enqueued."""
    import cupy

    stream = stream or cupy.cuda.get_current_stream()
    key = (cupy.cuda.runtime.getDevice(), stream.ptr)
    kept = getattr(_LOCAL, "buffers", None)
    if kept is None:
        kept = _LOCAL.buffers = {}
    buf = kept.get(key)
    if buf is None or buf.size < floats:
        if 4 * floats <= KEEP_BYTES:
            kept.pop(key, None)                   # back to the pool before the larger one is taken
        with stream:                              # from the pool of the stream that uses it
            buf = cupy.empty(max(floats, 1), dtype=cupy.float32)
        if 4 * floats <= KEEP_BYTES:              # a larger one is this call's alone: the kept one stays
            kept[key] = buf
    return buf


def stored_shape(x, have: str) -> tuple[int, int]:
    """(rows, row length) of matrix x as stored in layout ``have`` (rows contiguous)."""
    return x.shape if have == "N" else (x.shape[1], x.shape[0])


def _copied_shape(stored: tuple[int, int], have: str, want: str) -> tuple[int, int]:
    """(rows, row length) in layout ``want`` of a matrix stored as ``stored`` (rows, row length) in ``have``."""
    return stored if have == want else (stored[1], stored[0])


def _copy(x, have: str, lds: int, want: str, dst: int, ldd: int) -> None:
    """Copy float32 matrix x (stored in ``have``, rows ``lds`` elements apart) into ``want`` at ``dst``."""
    import cupy

    Copy(have != want, *stored_shape(x, have), lds, ldd)(x.data.ptr, dst, cupy.cuda.get_current_stream().ptr)
