"""The dispatch rule: which stored kernel serves a request for M x N x K in a layout.

1. Where the results hold timings (:mod:`gemmgen.records.timings`), every timed kernel of the request's
   precision class (and family, if one is asked for) that accepts the request competes: the one with
   the least predicted time (:mod:`.predict`) serves it. A kernel timed in another layout competes in
   the requested one too (the same config, layout changed, where that is valid on this GPU), its
   predictions scaled by the measured ratio between the two layouts (:func:`layout_factors`).
2. Else the entry of the nearest tuned shape, by log-distance sqrt(sum(log(x/y)^2)) over M, N, K,
   among those of the same layout whose kernel accepts the request (:func:`dispatch`).
3. Else None (the library falls back to a preset, see :mod:`.precision`).

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
import statistics
from typing import Iterable, Mapping, Sequence

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.rules import explain
from ..records.entry import Entry
from ..records.timings import KernelTimes
from .predict import Fitted, aligned

LAYOUTS = ("NN", "NT", "TN", "TT")
TRANSFER = 1.1   # a kernel serving another layout than it was timed in, where no pair of timings says


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


def fit_all(kernels: Iterable[KernelTimes], spec: DeviceSpec) -> list[Fitted]:
    """A time model per timed kernel (those with at least one measurement)."""
    return [Fitted.fit(k.config, k.shapes(), spec) for k in kernels if k.ms]


def layout_factors(fits: Sequence[Fitted]) -> dict[tuple[str, str, str], float]:
    """(family, timed layout, served layout) -> median time ratio of one config timed in both layouts
    on the same M, N, K (its layout letters aside).

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> nn, tn = preset("tf32x3-wgmma"), preset("tf32x3-wgmma").replace(layout="TN")
    >>> fits = [Fitted.fit(nn, {Shape(512, 512, 512): 1.0}, known("h100")),
    ...         Fitted.fit(tn, {Shape(512, 512, 512, "TN"): 1.2}, known("h100"))]
    >>> layout_factors(fits)[("tf32x3", "NN", "TN")]
    1.2
    """
    by_kernel: dict[str, dict[str, dict[tuple, float]]] = {}
    for f in fits:
        key = f.config.replace(layout="NN").name
        by_kernel.setdefault(key, {})[f.config.layout] = {(p.shape.M, p.shape.N, p.shape.K): p.ms for p in f.points}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for name, per_layout in by_kernel.items():
        family = name.split("_")[1]
        for a, ta in per_layout.items():
            for b, tb in per_layout.items():
                common = ta.keys() & tb.keys()
                if a != b and common:
                    ratios.setdefault((family, a, b), []).extend(tb[s] / ta[s] for s in common)
    return {k: statistics.median(v) for k, v in ratios.items()}


def candidates(fits: Sequence[Fitted], layout: str, spec: DeviceSpec, family: str | None = None,
               factors: Mapping[tuple[str, str, str], float] | None = None) -> list[Fitted]:
    """The kernels that compete for a request in ``layout``: those timed in it, and the others in it
    (valid on ``spec``) with their time scaled by the layout factor; restricted to ``family`` if given."""
    factors = layout_factors(fits) if factors is None else factors
    own = {f.config.name for f in fits if f.config.layout == layout}
    out = []
    for f in fits:
        if family is not None and f.config.family != family:
            continue
        if f.config.layout == layout:
            out.append(f)
            continue
        moved = f.config.replace(layout=layout)
        if moved.name in own or explain(moved, spec):
            continue
        out.append(f.serving(layout, factors.get((f.config.family, f.config.layout, layout), TRANSFER)))
    return list({f.config.name: f for f in out}.values())   # one per kernel: the first wins


def choose(fits: Sequence[Fitted], M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
           ldb: int | None = None, ldc: int | None = None) -> Fitted | None:
    """The candidate with the least predicted time among those that accept the request (ties: the
    smaller name, so the answer is stable), or None."""
    want = Shape(M, N, K, layout)
    ok = aligned(want, lda, ldb)
    timed = [(f.predict(want, ok), f.config.name, f) for f in fits if f.config.accepts(M, N, K, lda, ldb, ldc) is None]
    return min(timed, key=lambda t: t[:2])[2] if timed else None
