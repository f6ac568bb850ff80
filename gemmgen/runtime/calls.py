"""A matmul request prepared once, so that a repeated call reads three pointers and enqueues its kernels.

Everything a call does that depends only on the operands' shapes, strides, dtypes, devices and
alignment and on the options (the argument checks, the layouts, the plan: which kernel, which copies,
where they land) is worked out on the first call of a kind (:mod:`.matmul`) and kept as a
:class:`Prepared`, with the launches' parameter buffers filled but for the pointers and scalars
(:class:`gemmgen.measure.launch.Launch`, :class:`.copy_kernels.Copy`). Checked and planned on every
call, a request spent 40-75 us of host time on the H100 where cuBLAS spends 15-25, and products that
cuBLAS runs in 20-60 us were bound by it.

Prepared requests are kept per thread (they own parameter buffers, which a launch refills), at most
MAX_PREPARED of them; then they start again.
"""
from __future__ import annotations

import threading

from .arrays import intersect
from .transpose import pair_copies, staging_buffer

MAX_PREPARED = 4096
_LOCAL = threading.local()


def kept() -> dict:
    """This thread's prepared requests, by the facts that key them (see :func:`.matmul.matmul`)."""
    found = getattr(_LOCAL, "prepared", None)
    if found is None:
        found = _LOCAL.prepared = {}
    elif len(found) >= MAX_PREPARED:
        found.clear()
    return found


def forget() -> None:
    """Drop this thread's prepared requests (the next call of each kind is checked and planned again):
    after the library's results or rules change within a process, e.g. in tests that swap them."""
    _LOCAL.prepared = {}


def swap(prepared: dict) -> dict:
    """Make ``prepared`` this thread's prepared requests and return the ones it replaces: a benchmark that
    runs two libraries side by side (benchmarks/ab_plans.py) keeps one dict for each."""
    old = kept()
    _LOCAL.prepared = prepared
    return old


class Prepared:
    """The work of one kind of request: copies of A and/or B into the staging buffer (where the plan
    copies, :mod:`.staging`), then the kernel sequence, each launch prepared. ``spans``: the byte
    offsets of A's and B's elements from their pointers (:func:`.arrays.span_offsets`), for the per-call
    check that ``out`` overlaps neither (C's are ``out_span``)."""

    __slots__ = ("launch", "copies", "floats", "work", "a_span", "b_span", "out_span")

    def __init__(self, kernel, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int,
                 copy_a: bool, copy_b: bool, a_stored: tuple[int, int], b_stored: tuple[int, int],
                 spans: tuple, out_span: tuple | None):
        run = kernel.layout   # a library.Served: a GEMM kernel or a route's
        align = 4   # float32 copies only (matmul keeps other types on its copying route)
        self.copies, self.floats, (lda2, ldb2) = pair_copies(a_stored, layout[0], lda, run[0] if copy_a else None,
                                                             b_stored, layout[1], ldb, run[1] if copy_b else None,
                                                             align)
        self.launch = kernel.prepared(M, N, K, lda2, ldb2, ldc)
        self.work = kernel.workspace_floats(M, N)   # after the copies, in the same kept buffer
        self.a_span, self.b_span = spans
        self.out_span = out_span

    def overlaps(self, pa: int, pb: int, pc: int) -> str | None:
        """'A' or 'B' where ``out`` (at ``pc``) shares memory with that operand, else None."""
        c0, c1 = pc + self.out_span[0], pc + self.out_span[1]
        if intersect(c0, c1, pa + self.a_span[0], pa + self.a_span[1]):
            return "A"
        if intersect(c0, c1, pb + self.b_span[0], pb + self.b_span[1]):
            return "B"
        return None

    def __call__(self, pa: int, pb: int, pc: int, alpha: float, beta: float, stream) -> None:
        """Enqueue the copies and the kernels on ``stream`` (a CuPy stream) for A at ``pa``, B at ``pb``
        and C at ``pc``."""
        sp, buf, work = stream.ptr, None, 0
        if self.copies or self.work:
            buf = staging_buffer(self.floats + self.work, stream)   # held until the kernels are enqueued
            base = buf.data.ptr
            if self.copies:
                pa, pb = self.copies(pa, pb, base, sp)
            work = base + 4 * self.floats
        self.launch(pa, pb, pc, alpha, beta, sp, work, bool(self.copies))
