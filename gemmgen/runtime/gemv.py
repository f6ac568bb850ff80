"""Products with one row or one column (M == 1 or N == 1): matrix-vector kernels, not GEMM tiles.

C = alpha * A @ B + beta * C with M == 1 or N == 1 is a matrix-vector product: one operand, X, is read
once and whole (K x N for one row of C, M x K for one column), the other is a vector v of K elements, and
the time is X's bytes over the memory bandwidth. A GEMM tile pads the vector side to its own width (a
128-row 3xTF32 tile does 128 times the work) and runs at a third of the bandwidth; cuBLAS switches to a
GEMV kernel there (H200, 1x4096x4096: 24 us, 2.8 TB/s; the tuned GEMM kernels ran 0.70-0.78x of it).
Two kernel forms of SOURCE (templates/gemv.cu) cover the four layouts (:func:`route`):

- gg_gemv_rows: X's rows run along k (A stored N for N == 1, B stored T for M == 1): 4..32 lanes a row
  (by K), each row's first elements up to a 16-byte boundary one by one, the rest 16 bytes at a time,
  four loads in flight a lane, a shuffle sum at the end. gg_gemv_rows8 keeps eight in flight, for fewer
  than ``policy.gemv_row_deep`` blocks an SM; it and gg_gemv_rows_odd (rows of odd length, 16 bytes apart no more) load
  the vector's elements that sit off 16 bytes as two aligned 16-byte loads and a shift, not four 4-byte
  loads (rows of odd length then run at the aligned rows' rate).
  gg_gemv_rows_wide spans a row across 2..8 warps where the rows give fewer than ``policy.gemv_wide`` blocks an SM and
  that saves a K split (the split's reduce launch costs more);
- gg_gemv_cols: X's rows are k (A stored T, B stored N): a thread owns 4 consecutive outputs, a block
  up to ``policy.gemv_col_width`` (64) such threads across and the rest of its 256 walking k (eight rows of X in flight; four where
  the rows are not 16 bytes apart and take 4-byte loads: 3001x1x3001 TN 0.78 -> 1.08x), the k-groups'
  sums met in shared memory in a fixed order.

Where the outputs give too few blocks for two waves, or a thread of gg_gemv_cols would wait for more
than ``policy.gemv_col_rounds`` rounds of loads, K is split into ``slices``: each writes its partial sums to a workspace and
gg_gemv_reduce adds them in slice order (deterministic, no atomics; launched as a programmatic
dependent on sm_90), then applies alpha and beta. beta == 0 never reads C; Inf and NaN in A or B
propagate as in SGEMM (plain fp32 products and sums). H200, 31 such shapes: 0.90-1.41x cuBLAS, geomean
1.13x (docs/PERFORMANCE.md).

Requests of the fp32 class (no family, or the simt family: these are FP32-unit kernels) with float32
inputs take this route (:func:`serves`); the library hands out a :class:`GemvKernel` where it would
hand out a GEMM kernel, with the same interface (:class:`.library.Served`); the thresholds above are
the planner's :class:`.policy.Policy` fields (``gemv_*``).
"""
from __future__ import annotations

from typing import NamedTuple

from ..measure import launch as _launch
from ..measure.launch import ParamBuffer, param_struct
from .handwritten import THREADS, Behind, RouteKernel, function, source
from .policy import DEFAULT, Policy

FILE = "gemv.cu"
SOURCE = source(FILE)   # hand-written CUDA, not a Jinja template
_MAIN = param_struct("_Gemv", "R:i K:i kchunk:i width:i alpha:f X:p ldx:q v:p incv:q beta:f y:p incy:q W:p")
_REDUCE = param_struct("_GemvReduce", "R:i S:i alpha:f W:p beta:f y:p incy:q")
LIMIT = 2**26          # the most outputs (and, times 16, K): the kernels index threads, rows and k in 32 bits
                       # (R x 32 lanes, K + a slice); beyond, the GEMM kernels serve
LANES = 32             # the most lanes of a row in one warp (gg_gemv_rows); wider rows span warps (gg_gemv_rows_wide)
REDUCE_OUTPUTS = 32    # outputs a block of gg_gemv_reduce adds up (its part[8][33])
COL_LOADS = 8          # rows of X a thread of gg_gemv_cols has in flight (its step)
# Which kernel, block shape and K split a request takes are the planner's decisions: Policy.gemv_* fields.


def serves(M: int, N: int, K: int, precision: str, family: str | None, elem: int = 4) -> bool:
    """Whether a request takes the matrix-vector route: one row or one column of C, float32 inputs in
    the fp32 class, and no family asked for but simt (these kernels use the FP32 units only); M and N
    under LIMIT, K from 1 to under 16 x LIMIT."""
    return (min(M, N) == 1 and max(M, N) < LIMIT and 1 <= K < 16 * LIMIT and precision == "fp32"
            and family in (None, "simt") and elem == 4)


class Route(NamedTuple):
    """How a request maps onto the kernels: ``kind`` "rows" or "cols"; X is operand ``x`` ("A" or "B"),
    the vector the other; ``R`` outputs y[r] at C + r * incy; X's rows ldx apart (k-contiguous rows for
    "rows", rows of k for "cols"), the vector's elements incv apart; ``width``: lanes a row ("rows") or
    threads across a block, 4 outputs each ("cols"); K split into ``slices`` of ``kchunk``."""

    kind: str
    x: str
    R: int
    ldx: int
    incv: int
    incy: int
    width: int
    slices: int
    kchunk: int
    depth: int = 4   # loads in flight a lane of "rows" (4 or 8)

    @property
    def kernel(self) -> str:
        """The kernel's name in SOURCE."""
        if self.kind == "rows" and self.width > 32:
            return "gg_gemv_rows_wide"   # a row across warps
        if self.kind == "rows" and self.depth == 4 and self.ldx % 4:
            return "gg_gemv_rows_odd"   # rows not 16 bytes apart: the vector's loads shifted to them
        return f"gg_gemv_{self.kind}" + ("8" if self.depth == 8 else "")

    @property
    def grid(self) -> tuple[int, int, int]:
        per_block = THREADS // self.width if self.kind == "rows" else 4 * self.width
        return -(-self.R // per_block), self.slices, 1


def _pow2(n: int) -> int:
    """The least power of two >= n (n >= 1)."""
    return 1 << (max(1, n) - 1).bit_length()


def route(M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, sm_count: int,
          policy: Policy = DEFAULT) -> Route:
    """The kernel, operand roles, block shape and K slices of a request with M == 1 or N == 1 (C
    row-major, ldc apart; A and B stored as the layout letters say, N row-major, T column-major), under
    ``policy``'s ``gemv_*`` thresholds.

    >>> route(4096, 1, 4096, "NN", 4096, 1, 1, 132)      # a column of C: X = A, its rows along k
    Route(kind='rows', x='A', R=4096, ldx=4096, incv=1, incy=1, width=32, slices=1, kchunk=4096, depth=4)
    >>> route(1, 4096, 4096, "NN", 4096, 4096, 4096, 132)   # a row of C: X = B, its rows are k
    Route(kind='cols', x='B', R=4096, ldx=4096, incv=1, incy=1, width=64, slices=32, kchunk=128, depth=4)
    """
    if not (min(M, N) == 1 and max(M, N) < LIMIT and 1 <= K < 16 * LIMIT):
        raise ValueError(f"{M}x{N}x{K} is no matrix-vector product these kernels compute "
                         f"(M or N = 1, the other under {LIMIT}, 1 <= K < {16 * LIMIT})")
    if N == 1:   # y = C[:, 0] (ldc apart), X = A (M x K), v = B[:, 0]
        kind = "rows" if layout[0] == "N" else "cols"
        x, R, ldx, incv, incy = "A", M, lda, (ldb if layout[1] == "N" else 1), ldc
    else:        # y = C[0, :], X = B (K x N), v = A[0, :]
        kind = "cols" if layout[1] == "N" else "rows"
        x, R, ldx, incv, incy = "B", N, ldb, (1 if layout[0] == "N" else lda), 1
    if kind == "rows":   # lanes a row, 4 .. 32: a round of four (eight) 16-byte loads each covers the row's K
        width = base = min(LANES, max(4, _pow2(K // 16 + 1) // 2))
        while width < THREADS and -(-R * width // THREADS) < policy.gemv_wide * sm_count and K >= 32 * width:
            width *= 2   # few rows: a row across warps (four 16-byte groups a lane or more), not a K split
        depth, slices = _split(kind, R, K, width, sm_count, policy)
        if slices > 1 and width > base:   # across warps in place of a split only: widened and split as well,
            width = base                  # a row ran slower than narrow and split more ways
            depth, slices = _split(kind, R, K, width, sm_count, policy)
    else:                # threads across: 4 outputs each, up to gemv_col_width; the rest of the block walk k
        width = min(policy.gemv_col_width, _pow2(-(-R // 4)))
        depth, slices = _split(kind, R, K, width, sm_count, policy)
    kchunk = -(-(-(-K // slices)) // 4) * 4   # slices of whole 16-byte groups of k
    return Route(kind, x, R, ldx, incv, incy, width, -(-K // kchunk), kchunk, depth)


def _split(kind: str, R: int, K: int, width: int, sm_count: int, policy: Policy) -> tuple[int, int]:
    """(loads in flight a lane of "rows", K slices) of a route's blocks."""
    depth = 4
    if kind == "rows":
        blocks = -(-R * width // THREADS)
        depth = 8 if blocks < policy.gemv_row_deep * sm_count or width > LANES else 4
        per_round = width * 4 * depth                                          # k a round of loads covers
        few = -(-K // per_round) <= policy.gemv_row_few and 4 * blocks >= sm_count
        least = 1 if few else K // policy.gemv_min_slice
    else:
        blocks, per_round = -(-R // (4 * width)), COL_LOADS * (THREADS // width)
        least = K // max(policy.gemv_min_slice, THREADS // width)
    rounds = policy.gemv_col_rounds if kind == "cols" else policy.gemv_row_rounds
    want = max(-(-policy.gemv_waves * sm_count // blocks), -(-K // (rounds * per_round)))
    return depth, max(1, min(want, policy.gemv_max_slices, least))


class GemvKernel(RouteKernel):
    """The matrix-vector route of one request (:class:`.handwritten.RouteKernel`), under ``policy``."""

    family, source = "gemv", SOURCE

    def __init__(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, sm_count: int,
                 policy: Policy = DEFAULT):
        super().__init__(M, N, K, layout, sm_count)
        self.policy = policy
        self.route = route(M, N, K, layout, lda, ldb, ldc, sm_count, policy)
        self._named(self.route.kernel, self.route.slices, self.route.slices * self.route.R)

    def _launch(self, lda: int, ldb: int, ldc: int) -> "GemvLaunch":
        M, N, K, layout = self.shape
        return GemvLaunch(route(M, N, K, layout, lda, ldb, ldc, self.sm_count, self.policy), K)


class GemvLaunch:
    """The request's launches prepared (parameter buffers filled but for the pointers and scalars), called
    as :class:`gemmgen.measure.launch.Launch` is."""

    __slots__ = ("route", "fn", "fn_off", "main", "reduce")

    def __init__(self, route_: Route, K: int):
        self.route, self.fn = route_, function(FILE, route_.kernel)
        # gg_gemv_rows's rows are 16 bytes apart; a vector off X's 16-byte phase takes gg_gemv_rows_odd's
        # shifted loads (the phase is the pointers', known at the call)
        self.fn_off = function(FILE, "gg_gemv_rows_odd") if route_.kernel == "gg_gemv_rows" else self.fn
        self.main = ParamBuffer(_MAIN)
        p = self.main.params
        p.R, p.K, p.kchunk, p.width = route_.R, K, route_.kchunk, route_.width
        p.ldx, p.incv, p.incy = route_.ldx, route_.incv, route_.incy
        self.reduce = None
        if route_.slices > 1:   # placed while the slices finish, waiting for them in the kernel (sm_90+)
            self.reduce = Behind(function(FILE, "gg_gemv_reduce"), (-(-route_.R // REDUCE_OUTPUTS), 1, 1), _REDUCE)
            q = self.reduce.params.params
            q.R, q.S, q.incy = route_.R, route_.slices, route_.incy

    def __call__(self, A: int, B: int, C: int, alpha: float, beta: float, stream: int, workspace: int = 0,
                 behind: bool = False) -> None:
        r, p = self.route, self.main.params
        p.X, p.v = X, v = (A, B) if r.x == "A" else (B, A)
        p.alpha, p.beta, p.y, p.W = alpha, beta, C, (workspace if self.reduce is not None else 0)
        _launch.launch_kernel(self.fn if not (X - v) & 15 else self.fn_off, *r.grid, THREADS, 1, 1, 0, stream,
                              self.main.argv_ptr, 0)
        if self.reduce is not None:
            q = self.reduce.params.params
            q.alpha, q.beta, q.y, q.W = alpha, beta, C, workspace
            self.reduce(stream)
