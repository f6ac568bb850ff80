"""The kernels that compete for a request, for :mod:`.planner` (which picks the plan):

- the timed kernels (:mod:`gemmgen.records.timings`) of the request's precision class (and family, if
  one is asked for), each with its time model (:mod:`.predict`, :func:`fit_all`). A kernel timed in
  another layout competes in the requested one too (the same config, layout changed, where that is valid
  on this GPU), its predictions scaled by the measured ratio between the two layouts
  (:func:`layout_factors`; :func:`candidates`); :func:`ranked` orders those that accept a request;
- where nothing is timed, the entry of the nearest tuned shape, by log-distance sqrt(sum(log(x/y)^2))
  over M, N, K, among those of the same layout whose kernel accepts the request (:func:`dispatch`).

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

import statistics
from typing import Iterable, Mapping, Sequence

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from ..records.entry import Entry
from ..records.timings import KernelTimes
from .counts import aligned_for, log_distance
from .policy import DEFAULT, Policy
from .predict import Fitted, fit_points, launch_base

LAYOUTS = ("NN", "NT", "TN", "TT")


def dispatch(entries: Mapping[str, Entry], M: int, N: int, K: int, layout: str = "NN",
             lda: int | None = None, ldb: int | None = None, ldc: int | None = None,
             aligned: bool = True) -> Entry | None:
    """The tuned entry to run for a request, per the rule in the module docstring (see its example).

    Entries are matched by their shape, not by their key, so keys may carry more than shape and
    layout (a precision class, say); callers pass the entries of one precision class. The exact
    shape is at distance 0; ties in distance go to the faster entry, then to the smaller key, so
    the answer is stable. ``aligned``: A and B start on 16-byte boundaries (else no TMA or fast-path kernel).
    """
    want = Shape(M, N, K, layout.upper())
    near = [e for e in entries.values()
            if e.shape.layout == want.layout and e.kernel_config.accepts(M, N, K, lda, ldb, ldc, aligned) is None]
    return min(near, key=lambda e: (log_distance(e.shape, want), -e.tflops, e.key), default=None)


def fit_all(kernels: Iterable[KernelTimes], spec: DeviceSpec, base: float | None = None,
            policy: Policy = DEFAULT) -> list[Fitted]:
    """A time model per timed kernel: those with a measurement whose split-K slices all get K (a
    kernel timed only where slices go empty has nothing to fit: :func:`.predict.fit_points`), all with
    the same launch base: ``base`` (ms), or :func:`.predict.launch_base` of the kernels given (a caller
    fitting a subset of a precision class passes the whole class's, as the dispatch fits it); ``policy``:
    the time model's thresholds."""
    kernels = list(kernels)
    base = launch_base(kernels, policy) if base is None else base
    return [Fitted.fit(k.config, k.shapes(), spec, k.resident, base, policy) for k in kernels
            if fit_points(k.config, k.shapes())]


def layout_factors(fits: Sequence[Fitted]) -> dict[tuple[str, str, str], float]:
    """(family, timed layout, served layout) -> median time ratio of one config timed in both layouts
    on the same M, N, K (its layout letters aside). Ratios of whole times, though a prediction applies
    the factor above the launch base only: on ratios of (time - base) the 70,000 measured layout pairs
    replay no better (mean |log error| 0.0661 either way on the H100).

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> nn, tn = preset("tf32x3-wgmma"), preset("tf32x3-wgmma").replace(layout="TN")
    >>> fits = [Fitted.fit(nn, {Shape(512, 512, 512): 1.0}, known("h100")),
    ...         Fitted.fit(tn, {Shape(512, 512, 512, "TN"): 1.2}, known("h100"))]
    >>> layout_factors(fits)[("tf32x3", "NN", "TN")]
    1.2
    """
    by_kernel: dict[tuple[str, str], dict[str, dict[tuple, float]]] = {}   # (kind, config's NN name) -> ...
    for f in fits:
        key = (factor_kind(f.config), f.config.replace(layout="NN").name)
        by_kernel.setdefault(key, {})[f.config.layout] = {(p.shape.M, p.shape.N, p.shape.K): p.ms for p in f.points}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for (family, _), per_layout in by_kernel.items():
        for a, ta in per_layout.items():
            for b, tb in per_layout.items():
                common = ta.keys() & tb.keys()
                if a != b and common:
                    ratios.setdefault((family, a, b), []).extend(tb[s] / ta[s] for s in common)
    return {k: statistics.median(v) for k, v in ratios.items()}


def serves(asked: str | None, family: str) -> bool:
    """Whether a kernel of ``family`` serves a request for family ``asked``: that family, or with None any but
    the skinny one. The skinny kernels stay stored but do not compete: on 1889 random H200 shapes the 42
    plans that ran one ran 1.240x cuBLAS where the best other timed candidate ran 1.332x; their fits, of
    one narrow regime, pick the most optimistic of many near-equal predictions."""
    return family == asked if asked is not None else family != "skinny"


def factor_kind(c: KernelConfig) -> str:
    """The group whose layout factors a kernel shares: its family, apart for swapped kernels (a swapped
    NN kernel runs as TT, so its layouts' time ratios are the others' turned around)."""
    return c.family + ("/swapped" if c.swap else "")


def candidates(fits: Sequence[Fitted], layout: str, spec: DeviceSpec, family: str | None = None,
               factors: Mapping[tuple[str, str, str], float] | None = None,
               policy: Policy = DEFAULT) -> list[Fitted]:
    """The kernels that compete for a request in ``layout``: those timed in it, and the others in it
    (valid on ``spec``) with their time scaled by the layout factor (``policy.transfer`` where no pair of
    timings gives one); restricted to ``family`` if given, and without the skinny family if none is given."""
    factors = layout_factors(fits) if factors is None else factors
    own = {f.config.name for f in fits if f.config.layout == layout}
    out = []
    for f in fits:
        if not serves(family, f.config.family):
            continue
        if f.config.layout == layout:
            out.append(f)
            continue
        moved = f.config.in_layout(layout)
        if moved.name in own or explain(moved, spec):
            continue
        out.append(f.serving(layout, factors.get((factor_kind(f.config), f.config.layout, layout), policy.transfer)))
    return list({f.config.name: f for f in out}.values())   # one per kernel: the last one offered stays


def best(fits: Sequence[Fitted], M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
         ldb: int | None = None, ldc: int | None = None, rows_aligned: bool | None = None) -> tuple[float, Fitted] | None:
    """(predicted ms, candidate) of the least predicted time among those that accept the request (ties:
    the smaller name, so the answer is stable), or None. ``rows_aligned`` overrides what the leading
    dimensions say (False for operands whose first element is not 16-byte aligned: then no kernel that
    needs aligned base pointers competes)."""
    found = ranked(fits, M, N, K, layout, lda, ldb, ldc, rows_aligned)
    return found[0] if found else None


def ranked(fits: Sequence[Fitted], M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
           ldb: int | None = None, ldc: int | None = None, rows_aligned: bool | None = None) -> list[tuple[float, Fitted]]:
    """(predicted ms, candidate) of every candidate that accepts the request, least first (ties: the smaller
    name); :func:`best` is the first. ``rows_aligned`` as there."""
    want = Shape(M, N, K, layout)
    ok = (lambda f: aligned_for(f.config, want, lda, ldb)) if rows_aligned is None else (lambda f: rows_aligned)
    timed = sorted(((f.predict(want, ok(f)), f.config.name, f) for f in fits
                    if f.config.accepts(M, N, K, lda, ldb, ldc, rows_aligned is not False) is None),
                   key=lambda t: t[:2])
    return [(t, f) for t, _, f in timed]


def choose(fits: Sequence[Fitted], M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
           ldb: int | None = None, ldc: int | None = None, aligned: bool = True) -> Fitted | None:
    """The candidate :func:`best` names, or None (``aligned``: A and B start on 16-byte boundaries)."""
    found = best(fits, M, N, K, layout, lda, ldb, ldc, None if aligned else False)
    return found[1] if found else None
