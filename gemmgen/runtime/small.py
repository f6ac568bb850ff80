"""Products a GEMM tile serves badly besides one row or column (:mod:`.gemv`): a tiny C with long K, and a
short K. Hand-written kernels of templates/small.cu, any layout, no copies:

- dots (2 <= M, N <= DOT_MAX): C is a handful of dot products of length K, the time is A's and B's bytes
  read. A GEMM tile pads C to 64 x 32 or more and splits K into a few dozen slices. gg_dots2/4/8 (M, N
  <= 2, 4, 8) give each block a slice of K, each thread 16 / D k in flight, and write the slices' sums to
  a workspace that gg_dots_reduce adds in order (H200: 2x2x1000000 376 -> 14.5 us, 0.45 ->
  11.5x cuBLAS; 8x8x65536 TN 0.74 -> 2.57x; 6x5x3000 NT 1.03 -> 1.31x). Short K: the tuned kernels.
- outer (K <= 8, or K <= 16 with 2^23 outputs; M, N > 1 and not dots): C is a sum of a few
  outer products, the time is C's bytes written (8192x8192x8: 256 MB). gg_outer4/8/16 (K <= 4, 8, 16)
  stage a block's rows of A and B's tile in shared memory, keep B's K x 4 values of a thread's four
  columns in registers and walk up to ``policy.outer_rows`` rows of C, storing 16-byte pieces (H200:
  8192x8192x8 NT 132 -> 69 us, 0.83 -> 1.59x cuBLAS, at the 256 MB fill's 68 us; 8x100000x8 0.72 ->
  1.21x; 100000x8x8 TN 0.90 -> 1.31x).

Plain fp32 products and sums (Inf and NaN as in SGEMM; beta == 0 never reads C). Requests of the fp32 class
(no family, or simt: these are FP32-unit kernels) with float32 inputs take this route (:func:`serves`; the
thresholds are the planner's :class:`.policy.Policy` fields).
"""
from __future__ import annotations

from typing import NamedTuple

from ..measure import launch as _launch
from ..measure.launch import ParamBuffer, param_struct
from .handwritten import THREADS, Behind, RouteKernel, function, source
from .policy import DEFAULT, Policy

FILE = "small.cu"
SOURCE = source(FILE)
_MAIN = param_struct("_Small", "M:i N:i K:i kc:i rows:i alpha:f A:p sam:q sak:q B:p sbk:q sbn:q beta:f C:p ldc:q W:p")
_REDUCE = param_struct("_DotsReduce", "M:i N:i S:i alpha:f W:p beta:f C:p ldc:q")
DOT_MAX = 8             # dots: M and N up to this (gg_dots8's 64 sums a thread); which requests take dots,
                        # and outer, is the planner's policy (Policy.dots_max, dots_min_k, outer_k, outer_big)
DOTS_RESIDENT = 2       # blocks of gg_dots an SM holds (__launch_bounds__(256, 2): <= 128 registers a thread)
OUTER_LANES = 32        # outer: the most lanes of a row of C (four columns each: small.cu's Bs rows of 128)
LIMIT = 2**30           # the most M, N and K (32-bit sizes and tile indices in the kernels)
# How a request's dots are sliced and how many rows a thread of outer walks are the planner's decisions:
# Policy.dots_slice_bytes, outer_rows, outer_waves.


def serves(M: int, N: int, K: int, precision: str, family: str | None, elem: int = 4,
           policy: Policy = DEFAULT) -> str | None:
    """The kind of kernel ("dots" or "outer") a request takes, or None: fp32 class, float32 inputs, no family
    but simt asked for, M and N at least 2 (one row or column is :mod:`.gemv`'s), sizes under LIMIT; dots for
    M, N up to ``policy.dots_max`` and K from ``policy.dots_min_k``, outer for K up to ``policy.outer_k`` (up
    to 16 where C has ``policy.outer_big`` outputs). H200: 2x2x1000000 376 -> 14.5 us; below K = 32 the tuned
    kernels ran 3x3x3 and 5x7x9 0.5-1 us quicker; K = 12..16 won at 128x65536x12 TT (1.00 -> 1.18x) and
    4096x4096x12 TT, lost at 2048x2048x16 TN (1.28 -> 1.08x) and 1000x1000x16 NT (1.17 -> 0.82x)."""
    if (precision != "fp32" or family not in (None, "simt") or elem != 4 or min(M, N) < 2
            or max(M, N, K) >= LIMIT or K < 1):
        return None
    if max(M, N) <= policy.dots_max:
        return "dots" if K >= policy.dots_min_k else None
    if M * N >= 2**40:   # C of 4 TB: past the one-dimensional grid's 2**31 blocks of gg_outer
        return None
    return "outer" if K <= policy.outer_k or (K <= 16 and M * N >= policy.outer_big) else None


class Route(NamedTuple):
    """How a request maps onto the kernels: ``kernel`` (a name in small.cu), its ``grid`` (blocks),
    ``kc`` (outer: lanes a row; dots: k a slice), ``slices`` (dots: K slices reduced after) and ``rows``
    (outer: rows of C a thread walks)."""

    kernel: str
    grid: int
    kc: int
    slices: int = 1
    rows: int = 1


def _pow2(n: int) -> int:
    return 1 << (max(1, n) - 1).bit_length()


def route(M: int, N: int, K: int, sm_count: int, kind: str | None = None, policy: Policy = DEFAULT) -> Route:
    """The kernel, grid and split of a request that :func:`serves` takes (``kind``: what it said, under the
    planner's policy; None: under ``policy``), sliced and shaped by ``policy``.

    >>> route(2, 2, 1000000, 132)
    Route(kernel='gg_dots2', grid=264, kc=3788, slices=264, rows=1)
    >>> route(8192, 8192, 8, 132)     # 32 lanes a row (128 columns), 8 rows at once, 16 rows a thread
    Route(kernel='gg_outer8', grid=4096, kc=32, slices=1, rows=16)
    >>> route(100000, 8, 8, 132)      # 2 lanes a row, 128 rows at once
    Route(kernel='gg_outer8', grid=391, kc=2, slices=1, rows=2)
    """
    kind = kind or serves(M, N, K, "fp32", None, policy=policy)
    if kind == "dots" and max(M, N) <= DOT_MAX:
        D = 2 if max(M, N) <= 2 else 4 if max(M, N) <= 4 else 8
        want = -(-K * (M + N) * 4 // policy.dots_slice_bytes)
        kc = -(-K // max(1, min(want, DOTS_RESIDENT * sm_count)))
        slices = -(-K // kc)
        return Route(f"gg_dots{D}", slices, kc, slices)
    if kind != "outer" or K > 16:
        raise ValueError(f"{M}x{N}x{K} is no product these kernels compute (M, N >= 2 and both <= {DOT_MAX}, or "
                         f"K <= 16; sizes under {LIMIT})")
    L = min(OUTER_LANES, _pow2(-(-N // 4)))   # lanes a row, four columns each
    P = THREADS // L                            # rows a block's threads cover at once
    rows = min(policy.outer_rows, THREADS // P, -(-M // P))   # a block's rows P * rows <= 256: small.cu's As
    while rows > 1 and -(-M // (P * rows)) * -(-N // (4 * L)) < policy.outer_waves * sm_count:
        rows //= 2
    kb = 4 if K <= 4 else 8 if K <= 8 else 16
    return Route(f"gg_outer{kb}", -(-M // (P * rows)) * -(-N // (4 * L)), L, 1, rows)


def strides(layout: str, lda: int, ldb: int) -> tuple[int, int, int, int]:
    """(sam, sak, sbk, sbn): A(m, k) at A[m * sam + k * sak], B(k, n) at B[k * sbk + n * sbn] (N: row-major).

    >>> strides("NN", 40, 50), strides("TT", 40, 50)
    ((40, 1, 50, 1), (1, 40, 1, 50))
    """
    sam, sak = (lda, 1) if layout[0] == "N" else (1, lda)
    sbk, sbn = (ldb, 1) if layout[1] == "N" else (1, ldb)
    return sam, sak, sbk, sbn


class SmallKernel(RouteKernel):
    """One request's dots or outer kernel (:class:`.handwritten.RouteKernel`), under ``policy``."""

    family, source = "small", SOURCE

    def __init__(self, M: int, N: int, K: int, layout: str, sm_count: int, kind: str | None = None,
                 policy: Policy = DEFAULT):
        super().__init__(M, N, K, layout, sm_count)
        self.route = route(M, N, K, sm_count, kind, policy)
        self._named(self.route.kernel, self.route.slices, self.route.slices * M * N)

    def _launch(self, lda: int, ldb: int, ldc: int) -> "SmallLaunch":
        M, N, K, layout = self.shape
        return SmallLaunch(self.route, M, N, K, strides(layout, lda, ldb), ldc)


class SmallLaunch:
    """The request's launches prepared (parameter buffers filled but for the pointers and scalars), called
    as :class:`gemmgen.measure.launch.Launch` is."""

    __slots__ = ("route", "fn", "main", "reduce")

    def __init__(self, route_: Route, M: int, N: int, K: int, st: tuple[int, int, int, int], ldc: int):
        self.route, self.fn, self.main = route_, function(FILE, route_.kernel), ParamBuffer(_MAIN)
        p = self.main.params
        p.M, p.N, p.K, p.kc, p.rows, p.ldc = M, N, K, route_.kc, route_.rows, ldc
        p.sam, p.sak, p.sbk, p.sbn = st
        self.reduce = None
        if route_.slices > 1:   # placed while the slices finish, waiting for them in the kernel (sm_90+)
            self.reduce = Behind(function(FILE, "gg_dots_reduce"), (1, 1, 1), _REDUCE)
            q = self.reduce.params.params
            q.M, q.N, q.S, q.ldc = M, N, route_.slices, ldc

    def __call__(self, A: int, B: int, C: int, alpha: float, beta: float, stream: int, workspace: int = 0,
                 behind: bool = False) -> None:
        p = self.main.params
        p.A, p.B, p.C, p.alpha, p.beta, p.W = A, B, C, alpha, beta, (workspace if self.reduce is not None else 0)
        _launch.launch_kernel(self.fn, self.route.grid, 1, 1, THREADS, 1, 1, 0, stream, self.main.argv_ptr, 0)
        if self.reduce is not None:
            q = self.reduce.params.params
            q.alpha, q.beta, q.C, q.W = alpha, beta, C, workspace
            self.reduce(stream)
