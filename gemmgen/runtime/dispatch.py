"""The dispatch rule: which stored entry serves a request for M x N x K in a layout.

1. the exact tuned shape, if its kernel accepts the request;
2. else the entry of the nearest tuned shape, by log-distance sqrt(sum(log(x/y)^2)) over M, N, K,
   among those of the same layout whose kernel accepts the request;
3. else None (the library falls back to a preset, see :mod:`.precision`).

>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.records.entry import Entry
>>> tuned = {e.key: e for e in [Entry.new("4096x4096x4096", preset("v10"), 20.0, 25.0, 200, "x"),
...                             Entry.new("512x512x512", preset("v6"), 5.0, 9.0, 100, "y")]}
>>> dispatch(tuned, 3000, 4000, 5000).key
'4096x4096x4096/NN'
>>> dispatch(tuned, 3000, 4000, 5000, "NT") is None
True
"""
from __future__ import annotations

import math
from typing import Mapping

from ..base.shape import Shape
from ..records.entry import Entry


def log_distance(a: Shape, b: Shape) -> float:
    """sqrt(sum(log(x/y)^2)) over M, N, K: shapes twice as large in every dimension are sqrt(3)*ln2 apart.

    >>> round(log_distance(Shape(1024, 1024, 1024), Shape(2048, 2048, 2048)), 4)
    1.2006
    """
    return math.sqrt(sum(math.log(x / y) ** 2 for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K))))


def dispatch(entries: Mapping[str, Entry], M: int, N: int, K: int, layout: str = "NN",
             lda: int | None = None, ldb: int | None = None, ldc: int | None = None) -> Entry | None:
    """The tuned entry to run for a request, per the rule in the module docstring (see its example).

    Entries are matched by their shape, not by their key, so keys may carry more than shape and
    layout (a precision class, say); callers pass the entries of one precision class. The exact
    shape is at distance 0; ties in distance go to the faster entry, then to the smaller key, so
    the answer is stable.
    """
    want = Shape(M, N, K, layout.upper())
    near = [e for e in entries.values()
            if e.shape.layout == want.layout and e.kernel_config.accepts(M, N, K, lda, ldb, ldc) is None]
    return min(near, key=lambda e: (log_distance(e.shape, want), -e.tflops, e.key), default=None)
