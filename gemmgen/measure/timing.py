"""Timing with CUDA events the way Triton's do_bench does: millisecond budgets, L2 flushed before
every timed run, median and quartiles; several functions interleaved so that a clock drift
affects them all alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Timing:
    """Times of one function, in milliseconds."""

    times: tuple[float, ...]

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def iqr(self) -> float:
        q1, q3 = np.percentile(self.times, [25, 75])
        return float(q3 - q1)


class L2Flusher:
    """Writes a buffer twice the L2's size, so the next run reads its inputs from DRAM."""

    def __init__(self, l2_bytes: int):
        import cupy

        self.nbytes = max(2 * l2_bytes, 8 << 20)
        self.buf = cupy.empty(self.nbytes // 4, dtype=cupy.int32)

    def __call__(self, stream) -> None:
        import cupy

        cupy.cuda.runtime.memsetAsync(self.buf.data.ptr, 0, self.nbytes, stream.ptr)


def bench_interleaved(fns: Sequence[Callable[[], None]], flush: Callable, warmup_ms: float = 25.0,
                      rep_ms: float = 100.0, min_reps: int = 5, max_reps: int = 500) -> list[Timing]:
    """Time each function, alternating them run by run, each run preceded by an L2 flush."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    per_round = _estimate_round_ms(fns, flush, stream)
    for _ in range(_count(warmup_ms, per_round, 1, max_reps)):
        _round(fns, flush, stream, None)
    reps = _count(rep_ms, per_round, min_reps, max_reps)
    events = [[(cupy.cuda.Event(), cupy.cuda.Event()) for _ in fns] for _ in range(reps)]
    for pairs in events:
        _round(fns, flush, stream, pairs)
    stream.synchronize()
    return [Timing(tuple(cupy.cuda.get_elapsed_time(r[i][0], r[i][1]) for r in events)) for i in range(len(fns))]


def _round(fns, flush, stream, pairs) -> None:
    for i, fn in enumerate(fns):
        flush(stream)
        if pairs:
            pairs[i][0].record(stream)
        fn()
        if pairs:
            pairs[i][1].record(stream)


def _estimate_round_ms(fns, flush, stream) -> float:
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    _round(fns, flush, stream, None)  # first run pays module load and cuBLAS heuristics
    start.record(stream)
    for _ in range(2):
        _round(fns, flush, stream, None)
    end.record(stream)
    end.synchronize()
    return max(cupy.cuda.get_elapsed_time(start, end) / 2, 1e-3)


def _count(budget_ms: float, per_round_ms: float, least: int, most: int) -> int:
    return int(min(max(budget_ms / per_round_ms, least), most))
