"""Copying an operand into the layout a kernel reads (see :mod:`.staging` for when that pays).

A matrix in layout 'N' has contiguous rows, in 'T' contiguous columns (a transposed view). Changing the
layout is a transpose of the stored matrix: 32x32 tiles through shared memory (a 33-float row stride,
so the column reads hit 32 banks), read and written with coalesced rows, edges checked.

>>> import cupy                                                          # doctest: +GPU
>>> a = cupy.arange(15, dtype=cupy.float32).reshape(3, 5)
>>> t, ld = staged(a, "N", "T", 4)
>>> bool((t == a).all()), t.strides, ld
(True, (4, 16), 4)
"""
from __future__ import annotations

from .arrays import aligned_ld, packed

SOURCE = r"""
extern "C" __global__ void gg_transpose(const float* __restrict__ src, int rows, int cols, long long lds,
                                        float* __restrict__ dst, long long ldd) {
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, tx = threadIdx.x;
    for (int r0 = blockIdx.y * 32; r0 < rows; r0 += gridDim.y * 32) {   // gridDim.y is capped: stride
        for (int i = threadIdx.y; i < 32; i += 8) {   // rows r0.. of src, coalesced along the row
            const int r = r0 + i, c = c0 + tx;
            if (r < rows && c < cols) tile[i][tx] = src[(long long)r * lds + c];
        }
        __syncthreads();
        for (int i = threadIdx.y; i < 32; i += 8) {   // rows c0.. of dst (columns of src), coalesced too
            const int c = c0 + i, r = r0 + tx;
            if (c < cols && r < rows) dst[(long long)c * ldd + r] = tile[tx][i];
        }
        __syncthreads();                              // the tile is read before the next one lands
    }
}
"""
MAX_TILES_Y = 65535   # gridDim.y's limit; more stored rows than 32 x this are strided over
_KERNEL: list = []


def _kernel():
    if not _KERNEL:
        import cupy

        _KERNEL.append(cupy.RawKernel(SOURCE, "gg_transpose"))
    return _KERNEL[0]


def staged(x, have: str, want: str, align: int):
    """(copy of matrix ``x`` stored in layout ``want``, its leading dimension): x is stored in ``have``;
    the copy's leading dimension is a multiple of ``align`` elements and its first element 256-byte
    aligned (CuPy's allocator). Same layout: an aligned copy (:func:`.arrays.packed`)."""
    import cupy

    if have == want:   # packed() rounds the stored rows up to `align` (one row or many)
        return packed(x, have, align), aligned_ld(x.shape[1] if have == "N" else x.shape[0], align)
    if x.dtype != cupy.float32:
        raise ValueError(f"a transposing copy takes float32 operands, not {x.dtype}")
    src = x if have == "N" else x.T               # the stored matrix: rows contiguous
    rows, cols = src.shape
    ld = aligned_ld(rows, align)
    out = cupy.empty((cols, ld), dtype=cupy.float32)
    lds = src.strides[0] // 4
    _kernel()((-(-cols // 32), min(-(-rows // 32), MAX_TILES_Y)), (32, 8),
              (src, cupy.int32(rows), cupy.int32(cols), cupy.int64(lds), out, cupy.int64(ld)))
    view = out[:, :rows]                          # the stored copy: x in `want` with contiguous rows
    return (view if want == "N" else view.T), ld
