"""Copying an operand into the layout a kernel reads (see :mod:`.staging` for when that pays).

A matrix in layout 'N' has contiguous rows, in 'T' contiguous columns (a transposed view). Changing the
layout is a transpose of the stored matrix: 32x32 tiles through shared memory (a 33-float row stride,
so the column reads hit 32 banks), read and written with coalesced rows, edges checked. Keeping it is a
copy into rows of an aligned length, element by element in row-major order.

Both kernels are launched through cuLaunchKernel with a reused parameter buffer, as the GEMM kernels
are (:func:`gemmgen.measure.launch.thread_buffer`): CuPy's generic launch path costs ~20 us of host time
a copy (a strided assignment ~26 us), this ~8 us with the allocation, and small products are bound by it.

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

from ..measure.launch import param_struct, thread_buffer
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

extern "C" __global__ void gg_pack(const float* __restrict__ src, int rows, int cols, long long lds,
                                   float* __restrict__ dst, long long ldd) {
    const long long count = (long long)rows * cols;   // element i of the matrix in row-major order:
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {    // consecutive threads, consecutive columns
        const long long r = i / cols, c = i - r * cols;
        dst[r * ldd + c] = src[r * lds + c];
    }
}
"""
MAX_TILES_Y = 65535   # gridDim.y's limit; more stored rows than 32 x this are strided over
PACK_BLOCKS = 1024    # the copy's grid: enough blocks to fill the GPU, each striding over the rest
_COPY = param_struct("_Copy", "src:p rows:i cols:i lds:q dst:p ldd:q")
_MODULES: dict[int, object] = {}                 # per device: the compiled SOURCE (holds its functions)
_FUNCTIONS: dict[tuple[int, str], int] = {}
_LOCAL = threading.local()


def _function(name: str) -> int:
    """The CUfunction of kernel ``name`` of SOURCE on the current device (compiled once per device)."""
    import cupy

    key = (cupy.cuda.Device().id, name)
    ptr = _FUNCTIONS.get(key)
    if ptr is None:
        if key[0] not in _MODULES:
            _MODULES[key[0]] = cupy.RawModule(code=SOURCE)
        ptr = _FUNCTIONS[key] = _MODULES[key[0]].get_function(name).kernel.ptr
    return ptr


def _launch(name: str, grid: tuple, block: tuple, src: int, rows: int, cols: int, lds: int, dst: int,
            ldd: int) -> None:
    import cupy
    from cupy.cuda import driver

    buf = thread_buffer(_LOCAL, "copy", _COPY)
    p = buf.params
    p.src, p.rows, p.cols, p.lds, p.dst, p.ldd = src, rows, cols, lds, dst, ldd
    driver.launchKernel(_function(name), *grid, *block, 0, cupy.cuda.get_current_stream().ptr, buf.argv_ptr, 0)


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
    src = x if have == "N" else x.T               # the stored matrix: rows contiguous
    rows, cols = src.shape
    lds = src.strides[0] // 4
    if have == want:
        ld = aligned_ld(cols, align)
        out = cupy.empty((rows, ld), dtype=cupy.float32)
        blocks = max(1, min(PACK_BLOCKS, -(-rows * cols // 256)))
        _launch("gg_pack", (blocks, 1, 1), (256, 1, 1), src.data.ptr, rows, cols, lds, out.data.ptr, ld)
        view = out[:, :cols]
        return (view if have == "N" else view.T), ld
    ld = aligned_ld(rows, align)
    out = cupy.empty((cols, ld), dtype=cupy.float32)
    _launch("gg_transpose", (-(-cols // 32), min(-(-rows // 32), MAX_TILES_Y), 1), (32, 8, 1),
            src.data.ptr, rows, cols, lds, out.data.ptr, ld)
    view = out[:, :rows]                          # the stored copy: x in `want` with contiguous rows
    return (view if want == "N" else view.T), ld
