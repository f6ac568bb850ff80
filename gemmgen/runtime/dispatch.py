"""The dispatch rule: which stored kernel serves a request for M x N x K in a layout.

1. Where the results hold timings (:mod:`gemmgen.records.timings`), every timed kernel of the request's
   precision class (and family, if one is asked for) that accepts the request competes: the one with
   the least predicted time (:mod:`.predict`) serves it. A kernel timed in another layout competes in
   the requested one too (the same config, layout changed, where that is valid on this GPU), its
   predictions scaled by the measured ratio between the two layouts (:func:`layout_factors`).
2. Else the entry of the nearest tuned shape, by log-distance sqrt(sum(log(x/y)^2)) over M, N, K,
   among those of the same layout whose kernel accepts the request (:func:`dispatch`).
3. Else None (the library falls back to a preset, see :mod:`.precision`).

Operands whose rows do not start on 16-byte boundaries (an odd leading dimension) are read with 4-byte
copies; :func:`pack_plan` says when copying them into aligned rows first is predicted to pay.

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
from .arrays import aligned_ld
from .counts import aligned, aligned_for, log_distance
from .predict import LAUNCH_MS, Fitted, fit_points, launch_base

LAYOUTS = ("NN", "NT", "TN", "TT")
TRANSFER = 1.1   # a kernel serving another layout than it was timed in, where no pair of timings says
MIN_PACK_MS = 0.05   # below this predicted time a request never copies: copies cost launches and host time
                     # that the GPU no longer hides (two copies double a call's host time)
SMALL_PACK_MS = 0.2  # below this, copies must also pass small_copy_ok:
SMALL_NEEDS_TMA = 1  # ... feed a TMA kernel (its fits predict within 1-6%; a cp.async kernel's within 30%)
                     # that is not split (split-K adds launches, which small products do not hide),
COPY_SHARE = 0.8     # ... cost at most this share of the kernel they feed,
SPLIT_COPY_SHARE = 0.3  # ... or, into a split one, at most this share (a skinny operand's copy is cheap and
                     # pays; larger shares lost to the split's extra launch),
MIN_STAGE_K = 16     # ... and feed at least half a 32-deep K step (the persistent TMA kernels overlap one
                     # tile's stores with the next one's loads, so shallow K pays)
PAIR_LAUNCHES = 2   # launches counted for copies of both operands: they go out as one (copy_kernels.CopyPair),
                    # but counting one took copies into cp.async kernels that then ran slower: two keeps the margin
CHEAP_PACK = 0.05  # copies this small a share of the product are made on the UNALIGNED guess alone
SKINNY_AUTO = 0     # the skinny family competes for requests that name no family (1), or never (0: matmul's
                    # family= has no "skinny"; the kernels stay stored, for A/Bs). Off: off the grids the split-K
                    # 3xTF32 kernels beat the skinny picks (1.33x against 1.24x cuBLAS on random shapes), whose fits,
                    # of one narrow regime, pick the most optimistic of many near-equal predictions


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


def fit_all(kernels: Iterable[KernelTimes], spec: DeviceSpec, base: float | None = None) -> list[Fitted]:
    """A time model per timed kernel: those with a measurement whose split-K slices all get K (a
    kernel timed only where slices go empty has nothing to fit: :func:`.predict.fit_points`), all with
    the same launch base: ``base`` (ms), or :func:`.predict.launch_base` of the kernels given (a caller
    fitting a subset of a precision class passes the whole class's, as the dispatch fits it)."""
    kernels = list(kernels)
    base = launch_base(kernels) if base is None else base
    return [Fitted.fit(k.config, k.shapes(), spec, k.resident, base) for k in kernels
            if fit_points(k.config, k.shapes())]


def layout_factors(fits: Sequence[Fitted]) -> dict[tuple[str, str, str], float]:
    """(family, timed layout, served layout) -> median time ratio of one config timed in both layouts
    on the same M, N, K (its layout letters aside). Ratios of whole times, though a prediction applies
    the factor above the launch base only: on ratios of (time - base) the 70,000 measured layout pairs
    replay no better (the same mean |log error| either way on the H100).

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
    the skinny one, unless :data:`SKINNY_AUTO` (read at each call, so A/B scripts may set it)."""
    return family == asked if asked is not None else family != "skinny" or bool(SKINNY_AUTO)


def factor_kind(c: KernelConfig) -> str:
    """The group whose layout factors a kernel shares: its family, apart for swapped kernels (a swapped
    NN kernel runs as TT, so its layouts' time ratios are the others' turned around)."""
    return c.family + ("/swapped" if c.swap else "")


def candidates(fits: Sequence[Fitted], layout: str, spec: DeviceSpec, family: str | None = None,
               factors: Mapping[tuple[str, str, str], float] | None = None) -> list[Fitted]:
    """The kernels that compete for a request in ``layout``: those timed in it, and the others in it
    (valid on ``spec``) with their time scaled by the layout factor; restricted to ``family`` if given,
    and without the skinny family if none is given, unless :data:`SKINNY_AUTO`."""
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
        out.append(f.serving(layout, factors.get((factor_kind(f.config), f.config.layout, layout), TRANSFER)))
    return list({f.config.name: f for f in out}.values())   # one per kernel: the first wins


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


def pack_plan(fits: Sequence[Fitted], M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int,
              bandwidth: float, align: int = 4, elem: int = 4, rows_aligned: bool = True) -> tuple[bool, bool, Fitted | None]:
    """(copy A, copy B, candidate): whether to copy unaligned operands into 16-byte aligned rows first,
    and the kernel to run then. Copying pays where the best predicted time on aligned rows plus the
    copies (read and write each operand once, ``bandwidth`` bytes/ms, launches as :func:`copy_launches`
    counts them) beats the best predicted time on the rows as they are, and either that prediction
    rests on unaligned shapes measured nearby, or the copied plan beats even the as-is kernels' aligned
    predictions (a lower bound on their time: 4-byte loads never run faster than 16-byte ones), or the
    copies cost at most CHEAP_PACK of the product: on the H100, copying on the UNALIGNED guess alone
    lost to cuBLAS on small skinny shapes (74x480x8760 TT: 0.33x), where a copy costs as much as the
    product, while on large ones (4638x11305x1362 NN, copies 2% of the product) the
    unaligned kernel ran 1.23x cuBLAS where aligned neighbours run 1.5x."""
    return pack_choice(fits, M, N, K, layout, lda, ldb, ldc, bandwidth, align, elem, rows_aligned)[:3]


def pack_choice(fits: Sequence[Fitted], M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int,
                bandwidth: float, align: int = 4, elem: int = 4,
                rows_aligned: bool = True) -> tuple[bool, bool, Fitted | None, float | None]:
    """:func:`pack_plan`'s answer and its predicted ms (the kernel plus the copies; None with no kernel)."""
    as_is = best(fits, M, N, K, layout, lda, ldb, ldc, None if rows_aligned else False)
    want = Shape(M, N, K, layout)
    if as_is is None:
        return False, False, None, None
    keep = (False, False, as_is[1], as_is[0])
    if (rows_aligned and aligned(want, lda, ldb)) or as_is[0] < MIN_PACK_MS:
        return keep
    pack_a, pack_b = (not rows_aligned) or lda % align != 0, (not rows_aligned) or ldb % align != 0
    lda2, ldb2 = (aligned_ld(lda, align) if pack_a else lda), (aligned_ld(ldb, align) if pack_b else ldb)
    copy_ms = _copy_ms(want, lda2, ldb2, pack_a, pack_b, bandwidth, elem)
    packed = best(fits, M, N, K, layout, lda2, ldb2, ldc, True)
    if packed is None or not small_copy_ok(as_is[0], copy_ms, packed[0], K, packed[1].config.tma,
                                            packed[1].config.split_k > 1):
        return keep
    # The rows as they are run no faster than aligned rows would: the best aligned prediction among the
    # kernels that accept them bounds the as-is time from below, with no UNALIGNED guess in it.
    floor = best(fits, M, N, K, layout, lda, ldb, ldc, True)
    sure = floor is not None and packed[0] + copy_ms < floor[0]
    if not (sure or as_is[1].measured_near(want, False) or copy_ms <= CHEAP_PACK * packed[0]):
        return keep
    if packed[0] + copy_ms < as_is[0]:
        return pack_a, pack_b, packed[1], packed[0] + copy_ms
    return keep


def small_copy_ok(own_ms: float, copy_ms: float, kernel_ms: float, K: int, tma: bool, split: bool = False) -> bool:
    """Whether copies predicted to take ``copy_ms`` before a kernel predicted at ``kernel_ms`` (a TMA
    kernel or not, split-K or not) may replace a plan predicted at ``own_ms``: always at SMALL_PACK_MS and
    above; below it (down to MIN_PACK_MS, under which nothing copies) only into a TMA kernel
    (SMALL_NEEDS_TMA), where the copies cost at most COPY_SHARE of that kernel (SPLIT_COPY_SHARE of a
    split one: its reduce is one more launch, so only a skinny operand's copy pays) and K is at least
    MIN_STAGE_K. Copying into a TMA kernel's layout wins up to 1.6x on mid-size shapes, since the TMA fits
    predict within a few percent; copies into cp.async kernels, whose fits are looser, lost more often than
    they won (A/Bs on the H100, benchmarks/ab_plans.py).

    >>> small_copy_ok(0.15, 0.01, 0.10, 347, True), small_copy_ok(0.15, 0.01, 0.10, 347, False)
    (True, False)
    >>> small_copy_ok(0.15, 0.09, 0.10, 347, True), small_copy_ok(0.15, 0.01, 0.10, 12, True)
    (False, False)
    >>> small_copy_ok(0.04, 0.001, 0.03, 4096, True), small_copy_ok(0.30, 0.2, 0.05, 16, False)
    (False, True)
    >>> small_copy_ok(0.15, 0.04, 0.10, 347, True, split=True), small_copy_ok(0.25, 0.04, 0.10, 347, True, split=True)
    (False, True)
    >>> small_copy_ok(0.15, 0.005, 0.10, 347, True, split=True)   # a skinny operand's copy into a split kernel
    True
    """
    if own_ms < MIN_PACK_MS:
        return False
    share = SPLIT_COPY_SHARE if split else COPY_SHARE
    return own_ms >= SMALL_PACK_MS or ((tma or not SMALL_NEEDS_TMA) and copy_ms <= share * kernel_ms
                                       and K >= MIN_STAGE_K)


def _copy_ms(want: Shape, lda2: int, ldb2: int, pack_a: bool, pack_b: bool, bandwidth: float, elem: int) -> float:
    """Copies of A and B into rows of lda2 / ldb2 elements: read and written once; the launches as
    :func:`copy_launches` counts them (both go out as one, runtime.copy_kernels.CopyPair)."""
    a_rows = want.M if want.layout[0] == "N" else want.K
    b_rows = want.K if want.layout[1] == "N" else want.N
    return copy_time(pack_a * a_rows * lda2 + pack_b * b_rows * ldb2, copy_launches(pack_a, pack_b), bandwidth, elem)


def copy_launches(copy_a: bool, copy_b: bool) -> int:
    """Launches the time model counts for the copies of A and/or B: one each, both together PAIR_LAUNCHES.

    >>> copy_launches(False, False), copy_launches(True, False), copy_launches(True, True)
    (0, 1, 2)
    """
    return PAIR_LAUNCHES if copy_a and copy_b else int(copy_a or copy_b)


def copy_time(elements: float, launches: int, bandwidth: float, elem: int) -> float:
    """Predicted ms of copy kernels moving ``elements`` elements of ``elem`` bytes (each read and written
    once, ``bandwidth`` bytes/ms) in ``launches`` launches.

    >>> round(copy_time(4096 * 4096, 1, 2.345e9, 4), 4)
    0.0602
    """
    return elements * 2 * elem / bandwidth + launches * LAUNCH_MS
