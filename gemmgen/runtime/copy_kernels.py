"""The copy kernels behind matmul's operand copies, and their prepared launches (:mod:`.transpose` says
when and where they copy): gg_transpose (32x32 tiles through shared memory, a 33-float row stride so
the column reads hit 32 banks, rows read and written coalesced, edges checked), gg_pack (rows into an
aligned length, a warp a row segment) and gg_copy_pair (both of a request's copies in one launch).

They are launched through cuLaunchKernel with a reused parameter buffer, as the GEMM kernels are
(:class:`gemmgen.measure.launch.Launch`): CuPy's generic launch path costs ~20 us of host time a copy
(a strided assignment ~26 us), this a few, and small products are bound by it.
"""
from __future__ import annotations

from ..base.gpus import GRID_Y_LIMIT
from ..measure import launch as _launch
from ..measure.launch import ParamBuffer, param_struct

SOURCE = r"""
// Block (bx, by) of a (gx, gy) grid over one copy: the kernels below run one copy (their own grid) or
// two in one launch (gg_copy_pair: the blocks of the first, then the second's).
__device__ __forceinline__ void transpose_tiles(const float* __restrict__ src, int rows, int cols, long long lds,
                                                float* __restrict__ dst, long long ldd, int bx, int by, int gx,
                                                int gy, float (*tile)[33]) {
    const int tx = threadIdx.x;
    for (int c0 = bx * 32; c0 < cols; c0 += gx * 32) {
        for (int r0 = by * 32; r0 < rows; r0 += gy * 32) {   // gy is capped: stride
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
}

__device__ __forceinline__ void pack_rows(const float* __restrict__ src, int rows, int cols, long long lds,
                                          float* __restrict__ dst, long long ldd, int bx, int by, int gx, int gy) {
    // A warp a row segment of 256 columns (by), 8 rows a block (bx); both grid dimensions stride over
    // the rest. Lanes take consecutive columns, so loads and stores are coalesced whatever the rows'
    // alignment, and 4 loads are in flight before the stores. No division per element: a flat index
    // cost a 64-bit divide each and ran at 1.6 TB/s.
    const int lane = threadIdx.x;
    for (long long c0 = by * 256LL; c0 < cols; c0 += gy * 256LL) {
        const int c1 = (int)min((long long)cols, c0 + 256);
        for (long long r = bx * 8LL + threadIdx.y; r < rows; r += gx * 8LL) {
            const float* __restrict__ s = src + r * lds;
            float* __restrict__ d = dst + r * ldd;
            int c = (int)c0 + lane;
            for (; c + 96 < c1; c += 128) {
                const float x0 = s[c], x1 = s[c + 32], x2 = s[c + 64], x3 = s[c + 96];
                d[c] = x0; d[c + 32] = x1; d[c + 64] = x2; d[c + 96] = x3;
            }
            for (; c < c1; c += 32) d[c] = s[c];
        }
    }
}

extern "C" __global__ void gg_transpose(const float* __restrict__ src, int rows, int cols, long long lds,
                                        float* __restrict__ dst, long long ldd) {
    __shared__ float tile[32][33];
    transpose_tiles(src, rows, cols, lds, dst, ldd, blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, tile);
}

extern "C" __global__ void gg_pack(const float* __restrict__ src, int rows, int cols, long long lds,
                                   float* __restrict__ dst, long long ldd) {
    pack_rows(src, rows, cols, lds, dst, ldd, blockIdx.x, blockIdx.y, gridDim.x, gridDim.y);
}

// Both of matmul's operand copies in one launch (one launch less before the GEMM): blocks
// 0 .. gx0 * gy0 - 1 run the first copy's (gx0, gy0) grid, the rest the second's. t: transposing.
extern "C" __global__ void gg_copy_pair(const float* __restrict__ s0, int rows0, int cols0, long long lds0,
                                        float* __restrict__ d0, long long ldd0, int t0, int gx0, int gy0,
                                        const float* __restrict__ s1, int rows1, int cols1, long long lds1,
                                        float* __restrict__ d1, long long ldd1, int t1, int gx1, int gy1) {
    __shared__ float tile[32][33];
    int b = blockIdx.x;
    const bool first = b < gx0 * gy0;
    if (!first) b -= gx0 * gy0;
    const int gx = first ? gx0 : gx1, gy = first ? gy0 : gy1;
    const int bx = b % gx, by = b / gx;
    if (first ? t0 : t1)
        transpose_tiles(first ? s0 : s1, first ? rows0 : rows1, first ? cols0 : cols1, first ? lds0 : lds1,
                        first ? d0 : d1, first ? ldd0 : ldd1, bx, by, gx, gy, tile);
    else
        pack_rows(first ? s0 : s1, first ? rows0 : rows1, first ? cols0 : cols1, first ? lds0 : lds1,
                  first ? d0 : d1, first ? ldd0 : ldd1, bx, by, gx, gy);
}
"""
PACK_BLOCKS = 1 << 16  # the copy's grid along rows at most (8 rows a block); more rows are strided over
_COPY = param_struct("_Copy", "src:p rows:i cols:i lds:q dst:p ldd:q")
_PAIR = param_struct("_Pair", "s0:p rows0:i cols0:i lds0:q d0:p ldd0:q t0:i gx0:i gy0:i "
                              "s1:p rows1:i cols1:i lds1:q d1:p ldd1:q t1:i gx1:i gy1:i")
_MODULES: dict[int, object] = {}                 # per device: the compiled SOURCE (holds its functions)
_FUNCTIONS: dict[tuple[int, str], int] = {}


def _function(name: str) -> int:
    """The CUfunction of kernel ``name`` of SOURCE on the current device (compiled once per device)."""
    import cupy

    key = (cupy.cuda.runtime.getDevice(), name)   # the runtime call: a Device object costs host time
    ptr = _FUNCTIONS.get(key)
    if ptr is None:
        if key[0] not in _MODULES:
            _MODULES[key[0]] = cupy.RawModule(code=SOURCE)
        ptr = _FUNCTIONS[key] = _MODULES[key[0]].get_function(name).kernel.ptr
    return ptr


class Copy:
    """One copy of a float32 matrix stored as ``rows`` rows of ``cols`` elements, ``lds`` apart, into
    rows ``ldd`` apart: transposed (``transpose``: the copy's rows are the source's columns) or not
    (aligned rows). Prepared once on the current device: a call sets the two pointers and enqueues one
    cuLaunchKernel; a Copy is used by one thread (it owns its parameter buffer). ``max_y``: the most blocks
    along y (the hardware's limit; a test passes fewer to have the blocks stride over the rest)."""

    __slots__ = ("fn", "grid", "buf")

    def __init__(self, transpose: bool, rows: int, cols: int, lds: int, ldd: int, max_y: int = GRID_Y_LIMIT):
        self.fn = _function("gg_transpose" if transpose else "gg_pack")
        self.grid = (*copy_grid(transpose, rows, cols, max_y), 1)
        self.buf = ParamBuffer(_COPY)
        p = self.buf.params
        p.rows, p.cols, p.lds, p.ldd = rows, cols, lds, ldd

    def __call__(self, src: int, dst: int, stream: int) -> None:
        """Enqueue the copy from ``src`` to ``dst`` on the raw stream ``stream`` (cuLaunchKernel as the GEMM
        kernels' launches call it, :func:`gemmgen.measure.launch.launch_kernel`)."""
        p = self.buf.params
        p.src, p.dst = src, dst
        _launch.launch_kernel(self.fn, *self.grid, 32, 8, 1, 0, stream, self.buf.argv_ptr, 0)


def copy_grid(transpose: bool, rows: int, cols: int, max_y: int = GRID_Y_LIMIT) -> tuple[int, int]:
    """(gx, gy) of one copy's blocks of 32 x 8 threads: 32 x 32 tiles (transposing; gy capped at ``max_y``,
    strided over), or 8 rows by 256 columns (both capped, strided over).

    >>> copy_grid(True, 1000, 37), copy_grid(True, 1000, 37, max_y=2)
    ((2, 32), (2, 2))
    """
    if transpose:
        return -(-cols // 32), min(-(-rows // 32), max_y)
    return max(1, min(PACK_BLOCKS, -(-rows // 8))), min(-(-cols // 256), max_y)


class CopyPair:
    """Copies of both operands as one launch of gg_copy_pair (each copy a :class:`Copy`'s work on its own
    grid, the two grids' blocks one after the other): a launch less ahead of the GEMM kernel. ``jobs``:
    two (transpose, rows, cols, lds, ldd) as :class:`Copy` takes them. A call names both sources, then both
    destinations, then the stream."""

    __slots__ = ("fn", "blocks", "buf")

    def __init__(self, jobs):
        self.fn, self.buf = _function("gg_copy_pair"), ParamBuffer(_PAIR)
        p, self.blocks = self.buf.params, 0
        for i, (transpose, rows, cols, lds, ldd) in enumerate(jobs):
            gx, gy = copy_grid(transpose, rows, cols)
            for name, value in (("rows", rows), ("cols", cols), ("lds", lds), ("ldd", ldd), ("t", int(transpose)),
                                ("gx", gx), ("gy", gy)):
                setattr(p, f"{name}{i}", value)
            self.blocks += gx * gy

    def __call__(self, s0: int, s1: int, d0: int, d1: int, stream: int) -> None:
        p = self.buf.params
        p.s0, p.s1, p.d0, p.d1 = s0, s1, d0, d1
        _launch.launch_kernel(self.fn, self.blocks, 1, 1, 32, 8, 1, 0, stream, self.buf.argv_ptr, 0)


class Copies:
    """matmul's copies of A and/or B into a staging buffer, prepared (:func:`pair_copies`): a call takes
    the operands' pointers and the buffer's, enqueues one launch (:class:`Copy`, or :class:`CopyPair`
    for both), and returns the pointers the kernel reads."""

    __slots__ = ("which", "offsets", "launch")

    def __init__(self, jobs: list, offsets: list[int]):
        self.which, self.offsets = [i for i, _ in jobs], offsets
        self.launch = CopyPair([job for _, job in jobs]) if len(jobs) == 2 else Copy(*jobs[0][1])

    def __call__(self, pa: int, pb: int, base: int, stream: int) -> tuple[int, int]:
        ptrs = [pa, pb]
        dsts = [base + 4 * offset for offset in self.offsets]
        self.launch(*[ptrs[i] for i in self.which], *dsts, stream)   # Copy: src, dst; CopyPair: both, both
        for i, dst in zip(self.which, dsts):
            ptrs[i] = dst
        return ptrs[0], ptrs[1]
