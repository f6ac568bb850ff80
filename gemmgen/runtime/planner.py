"""The one planner: which kernel runs a GEMM request, and which operands are copied first into which layout.

Every entry point asks :meth:`Planner.plan`: ``gemmgen.matmul`` (copies allowed), ``gemmgen.torch`` (a
:class:`Request` with ``copies=False``, and ``fixed_order=True`` where PyTorch asks for deterministic
algorithms), ``gemmgen results plan`` (no GPU: the plan before anything is compiled) and first-call
tuning (:meth:`Planner.alternatives`: the plans it times beside the planner's pick).

1. A :class:`Request` (shape, layout, leading dimensions, alignment, precision class, family, and what
   it allows: copies, atomic split-K) gives candidate :class:`Plan`\\ s: a kernel, the operands copied
   first, the layout the kernel reads, and the plan's predicted cost, the kernel's time model plus its
   copies (:mod:`.staging`).
2. The candidates come from named sources (:data:`SOURCES`), in tiers: the first source that offers a
   plan passing the guards decides.

   - ``route``: the hand-written kernels (:mod:`.gemv`, :mod:`.small`) for the requests they serve;
     no time model, a route stands alone;
   - ``timed``: every timed kernel of the request's class and family (:mod:`.dispatch`, time models
     :mod:`.predict`): as the rows are, with the rows copied aligned, or copied into another layout;
   - ``stored``: where nothing timed accepts the request, the entry of the nearest tuned shape;
   - ``preset``: else the class's preset (:mod:`.precision`), with one warning from the library.

3. A plan passes named guards (:data:`GUARDS`; plans without copies pass them all): a copy must be
   worth its launches, a small copy must feed the right kernel, a copy must rest on trusted
   predictions, and a copy must beat the plan it replaces (its ``rival``) by the policy's margin.
4. The cheapest plan that passes wins (ties: the one offered first).

Every threshold is a field of the planner's :class:`.policy.Policy`.

**Adding a source** (say, a built-in analytic model for a GPU with no stored results): write a function
``(planner, request) -> list[Plan]`` whose plans carry ``kernel_ms`` from its own cost function, and
put it in :data:`SOURCES` at its tier (before ``stored``/``preset`` to replace them where it answers).
The library loads any plan whose ``config`` is a KernelConfig; nothing else changes.

>>> from gemmgen.base.devices import known
>>> from gemmgen.records.timings import Timings
>>> planner = Planner(known("h100"), {}, Timings.empty())
>>> planner.plan(Request(1, 4096, 4096)).route, planner.plan(Request(8192, 8192, 8)).route
('gemv', 'outer')
>>> p = planner.plan(Request(4096, 4096, 4096, "TN"))
>>> p.source, p.config.label, p.copies
('preset', 'tf32x3-wgmma', '')
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from ..records.entry import Entry
from ..records.timings import Timings
from . import gemv, small
from .arrays import aligned_ld
from .counts import aligned
from .dispatch import LAYOUTS, best, candidates, dispatch, fit_all, layout_factors, ranked, serves
from .policy import DEFAULT, Policy
from .precision import PRECISIONS, by_precision, check_family, family_fallback, fallback_config
from .predict import Fitted
from .staging import aligned_copies_ms, copied_ld, copies_ms, copy_bandwidth


class NoFixedOrder(RuntimeError):
    """A request with ``fixed_order`` that only kernels adding K slices atomically serve."""


@dataclass(frozen=True)
class Request:
    """One GEMM request: C (M x N, rows ``ldc`` apart) = A (M x K) @ B (K x N) stored as ``layout``
    says, rows ``lda`` and ``ldb`` apart (None: packed); ``rows_aligned`` False where A or B does not
    start on 16 bytes; ``elem`` bytes an input element; ``copies``: operands may be copied first;
    ``fixed_order``: no kernel that adds K slices atomically (bitwise repeatable results)."""

    M: int
    N: int
    K: int
    layout: str = "NN"
    lda: int | None = None
    ldb: int | None = None
    ldc: int | None = None
    precision: str = "fp32"
    family: str | None = None
    rows_aligned: bool = True
    elem: int = 4
    copies: bool = True
    fixed_order: bool = False

    @property
    def shape(self) -> Shape:
        return Shape(self.M, self.N, self.K, self.layout)

    @property
    def lds(self) -> tuple[int, int]:
        """(lda, ldb), packed where not given."""
        packed = self.shape.lds
        return (self.lda if self.lda is not None else packed[0], self.ldb if self.ldb is not None else packed[1])


@dataclass(frozen=True)
class Plan:
    """A way to run a request: ``config`` (a tuned kernel) or ``route`` (a hand-written one: "gemv",
    "dots", "outer"), the layout the kernel reads (copies make it), the operands copied first, and the
    predicted ms of the kernel and of the copies (None: a source without a time model). ``rival``: the
    plan this one would replace (what its guards weigh it against); ``fit`` the timed kernel's model,
    ``entry`` the stored entry."""

    source: str
    layout: str
    config: KernelConfig | None = None
    route: str | None = None
    copy_a: bool = False
    copy_b: bool = False
    kernel_ms: float | None = None
    copies_ms: float = 0.0
    fit: Fitted | None = None
    entry: Entry | None = None
    rival: "Plan | None" = None
    detail: str = ""                 # a preset's origin: "stored" (this GPU's v13 winner) or "built-in"

    @property
    def name(self) -> str:
        return self.config.name if self.config is not None else str(self.route)

    @property
    def ms(self) -> float | None:
        """Predicted ms of the plan: its kernel plus its copies (None without a time model)."""
        return None if self.kernel_ms is None else self.kernel_ms + self.copies_ms

    @property
    def copies(self) -> str:
        """The operands copied first: '', 'A', 'B' or 'AB'."""
        return "A" * self.copy_a + "B" * self.copy_b


# ---- guards: what a plan with copies must pass ------------------------------------------------------------
def worth_copying(planner: "Planner", req: Request, plan: Plan) -> bool:
    """A request predicted under ``min_pack_ms`` never copies: copies cost launches and host time the GPU
    no longer hides."""
    return plan.rival.ms >= planner.policy.min_pack_ms


def small_copy(planner: "Planner", req: Request, plan: Plan) -> bool:
    """Under ``small_pack_ms``, copies must feed a TMA kernel (``small_needs_tma``), cost at most
    ``copy_share`` of it (``split_copy_share`` of a split-K one: its reduce is one more launch, so only a
    skinny operand's copy pays), and feed at least ``min_stage_k`` of K. A/Bs on the H100: copying into the
    TMA kernel's layout won up to 1.6x on mid-size shapes (468x8958x654 NN: 0.94x -> 1.47x cuBLAS);
    copies into cp.async kernels lost 4 of 6 (174x2792x3814 NT: 0.97x -> 0.64x); with the copies' host
    time cut, small shallow-K shapes won too (4687x9902x35 NN 0.69x -> 0.95x)."""
    p, c = planner.policy, plan.config
    if plan.rival.ms >= p.small_pack_ms:
        return True
    share = p.split_copy_share if c.split_k > 1 else p.copy_share
    return ((c.tma or not p.small_needs_tma) and plan.copies_ms <= share * plan.kernel_ms
            and req.K >= p.min_stage_k)


def trusted(planner: "Planner", req: Request, plan: Plan) -> bool:
    """An aligning copy (same layout) replaces the rows as they are only where that is sure (the copied
    plan beats even the as-is kernels' aligned predictions, a lower bound on their time: 4-byte loads
    never run faster than 16-byte ones), or the as-is prediction rests on unaligned shapes measured
    nearby, or the copies cost at most ``cheap_pack`` of the product: on the H100, copying on the unaligned
    guess alone lost on small skinny shapes (74x480x8760 TT: 0.33x), where a copy costs as much as the
    product, while on large ones (copies 2% of the product) the unaligned kernel ran 1.23x cuBLAS where
    aligned neighbours run 1.5x. (A layout change's kernel is chosen among trusted kernels already:
    :func:`layout_changes`.)"""
    if plan.layout != req.layout:
        return True
    lda, ldb = req.lds
    floor = best(planner.candidates(req.precision, req.layout, req.family), req.M, req.N, req.K, req.layout,
                 lda, ldb, req.ldc, True)
    sure = floor is not None and plan.ms < floor[0]
    return (sure or plan.rival.fit.measured_near(req.shape, False)
            or plan.copies_ms <= planner.policy.cheap_pack * plan.kernel_ms)


def beats_rival(planner: "Planner", req: Request, plan: Plan) -> bool:
    """A plan with copies must be faster than the plan it replaces; one that changes the layout by
    ``margin`` (a second copy and its host time)."""
    margin = planner.policy.margin if plan.layout != req.layout else 0.0
    return plan.ms < plan.rival.ms * (1.0 - margin)


GUARDS: tuple[tuple[str, Callable[["Planner", Request, Plan], bool]], ...] = (
    ("worth copying", worth_copying), ("small copy", small_copy), ("trusted", trusted), ("beats rival", beats_rival))


def passes(planner: "Planner", req: Request, plan: Plan) -> bool:
    """Whether ``plan`` passes every guard (a plan without copies passes them all)."""
    return not plan.copies or all(guard(planner, req, plan) for _, guard in GUARDS)


def cheapest(planner: "Planner", req: Request, plans: Sequence[Plan]) -> Plan | None:
    """The plan of least predicted ms among those that pass the guards (ties, and plans without a time
    model: the first offered), or None."""
    ok = [p for p in plans if passes(planner, req, p)]
    return min(ok, key=lambda p: p.ms if p.ms is not None else float("inf"), default=None)


# ---- sources: where candidate plans come from ------------------------------------------------------------
def route_plans(planner: "Planner", req: Request) -> list[Plan]:
    """The hand-written route that serves the request, if any: one row or column of C (gemv), a tiny C
    or a short K (small: dots, outer; thresholds in the policy). No copies: the inputs are read once."""
    if gemv.serves(req.M, req.N, req.K, req.precision, req.family, req.elem):
        return [Plan("route", req.layout, route="gemv")]
    kind = small.serves(req.M, req.N, req.K, req.precision, req.family, req.elem, planner.policy)
    return [Plan("route", req.layout, route=kind)] if kind else []


def timed_plans(planner: "Planner", req: Request) -> list[Plan]:
    """Plans of the timed kernels: the cheapest kernel on the rows as they are; where they are not
    16-byte aligned, the cheapest on aligned copies of them; then, against the better of those, the
    cheapest trusted kernel of each other layout after copying into it (float32 only: the transposing
    copy kernel). Without copies (``req.copies`` False), the first alone."""
    fits = planner.candidates(req.precision, req.layout, req.family)
    pool = [f for f in fits if not f.config.split_atomic] if req.fixed_order else fits
    lda, ldb = req.lds
    as_is = best(pool, req.M, req.N, req.K, req.layout, req.lda, req.ldb, req.ldc, None if req.rows_aligned else False)
    if as_is is None and pool is not fits:   # only atomic ones accept it: the cheapest, run with one slice
        as_is = best(fits, req.M, req.N, req.K, req.layout, req.lda, req.ldb, req.ldc, None if req.rows_aligned else False)
    if as_is is None:
        return []
    own = Plan("timed", req.layout, as_is[1].config, kernel_ms=as_is[0], fit=as_is[1])
    if not req.copies:
        return [own]
    own = cheapest(planner, req, [own, *aligned_copies(planner, req, own)])
    return [own, *(layout_changes(planner, req, own) if req.elem == 4 else [])]


def aligned_copies(planner: "Planner", req: Request, as_is: Plan) -> list[Plan]:
    """The cheapest kernel of the request's layout after copying its unaligned operands into aligned rows."""
    lda, ldb = req.lds
    align = 16 // req.elem
    if req.rows_aligned and aligned(req.shape, lda, ldb):
        return []
    copy_a, copy_b = (not req.rows_aligned) or lda % align != 0, (not req.rows_aligned) or ldb % align != 0
    lda2, ldb2 = (aligned_ld(lda, align) if copy_a else lda), (aligned_ld(ldb, align) if copy_b else ldb)
    found = best(planner.candidates(req.precision, req.layout, req.family), req.M, req.N, req.K, req.layout,
                 lda2, ldb2, req.ldc, True)
    if found is None:
        return []
    ms = aligned_copies_ms(req.shape, lda2, ldb2, copy_a, copy_b, planner.bandwidth, req.elem, planner.policy)
    return [Plan("timed", req.layout, found[1].config, None, copy_a, copy_b, found[0], ms, found[1], rival=as_is)]


def layout_changes(planner: "Planner", req: Request, own: Plan) -> list[Plan]:
    """Per other layout, the cheapest trusted kernel after copying the operands into it (a flipped
    operand is copied, the other only where its rows are not aligned). Trusted: its prediction rests on
    aligned measurements near the shape, or it is a TMA kernel's extrapolation where ``own``'s is one
    too (the TMA fits predict within 1-6% off the grid, the cp.async kernels' within -30%..+30%)."""
    lda, ldb = req.lds
    align, here = 4, Shape(req.M, req.N, req.K)
    own_near = own.fit.measured_near(here, True)
    out = []
    for other in LAYOUTS:
        if other == req.layout:
            continue
        copy_a = other[0] != req.layout[0] or not req.rows_aligned or lda % align != 0
        copy_b = other[1] != req.layout[1] or not req.rows_aligned or ldb % align != 0
        lda2 = copied_ld("A", other[0], req.M, req.N, req.K, align) if copy_a else lda
        ldb2 = copied_ld("B", other[1], req.M, req.N, req.K, align) if copy_b else ldb
        fair = [f for f in planner.candidates(req.precision, other, req.family)
                if f.measured_near(here, True) or (f.config.tma and not own_near)]
        found = best(fair, req.M, req.N, req.K, other, lda2, ldb2, req.ldc, True)
        if found is not None:
            ms = copies_ms(req.M, req.N, req.K, req.layout, other, copy_a, copy_b, planner.bandwidth, req.elem,
                           planner.policy)
            out.append(Plan("timed", other, found[1].config, None, copy_a, copy_b, found[0], ms, found[1], rival=own))
    return out


def stored_plans(planner: "Planner", req: Request) -> list[Plan]:
    """The entry of the nearest tuned shape whose kernel accepts the request (:func:`.dispatch.dispatch`)."""
    stored = {k: e for k, e in planner.classes.get(req.precision, {}).items() if serves(req.family, e.kernel_config.family)}
    entry = dispatch(stored, req.M, req.N, req.K, req.layout, req.lda, req.ldb, req.ldc, req.rows_aligned)
    return [] if entry is None else [Plan("stored", req.layout, entry.kernel_config, entry=entry)]


def preset_plans(planner: "Planner", req: Request) -> list[Plan]:
    """The class's (or family's) preset as every entry point resolves it (v13: this GPU's stored winner)
    where that is valid here and accepts the request, else the built-in one, which accepts any shape."""
    spec = planner.spec
    if req.family is not None:
        return [Plan("preset", req.layout, family_fallback(req.family, req.precision, spec, req.layout), detail="built-in")]
    builtin = fallback_config(req.precision, spec, req.layout)
    resolved = fallback_config(req.precision, spec, req.layout, planner.stored)
    ask = (req.M, req.N, req.K, req.lda, req.ldb, req.ldc, req.rows_aligned)
    if resolved != builtin and resolved.accepts(*ask) is None and not explain(resolved, spec):
        return [Plan("preset", req.layout, resolved, detail="stored")]
    return [Plan("preset", req.layout, builtin, detail="built-in")]


SOURCES: tuple[tuple[str, Callable[["Planner", Request], list[Plan]]], ...] = (
    ("route", route_plans), ("timed", timed_plans), ("stored", stored_plans), ("preset", preset_plans))


class Planner:
    """One GPU's planner: its stored entries and timings (time models fitted once per precision class,
    cached), its :class:`.policy.Policy`; :meth:`plan` answers a request (see the module docstring).
    ``timed``: the timed kernels' models of a (class, layout, family), injected (tests, replays); default:
    fitted to ``timings``."""

    def __init__(self, spec: DeviceSpec, entries: Mapping[str, Entry], timings: Timings | None = None,
                 policy: Policy = DEFAULT, timed: Callable[[str, str, str | None], Sequence[Fitted]] | None = None):
        self.spec, self.policy, self._timed = spec, policy, timed
        self.stored = dict(entries)
        self.classes = by_precision(entries)
        self.timings = timings or Timings.empty()
        self.bandwidth = copy_bandwidth(spec, policy)   # bytes per ms a copy kernel moves
        self._fits: dict[tuple, list] = {}

    def plan(self, req: Request, sources: Sequence[str] | None = None) -> Plan | None:
        """The cheapest plan that passes the guards, from the first source that offers one (ValueError for
        a precision class or family that does not exist; NoFixedOrder where ``fixed_order`` leaves no kernel).
        ``sources``: only these of :data:`SOURCES` (e.g. ``("timed",)``: the plan among the timed kernels,
        what benchmarks/dispatch_loo.py scores; None where they offer nothing); default all (never None)."""
        if req.precision not in PRECISIONS:
            raise ValueError(f"precision {req.precision!r} is not one of {', '.join(PRECISIONS)}")
        check_family(req.family, req.precision)
        for name, source in SOURCES:
            found = cheapest(self, req, source(self, req)) if sources is None or name in sources else None
            if found is not None:
                return self._in_fixed_order(req, found) if req.fixed_order else found
        return None

    def ranked(self, req: Request) -> list[Plan]:
        """Every timed kernel that runs the request as it is (its layout, no copies), least predicted first
        (ties: the smaller name)."""
        return [Plan("timed", req.layout, f.config, kernel_ms=t, fit=f)
                for t, f in ranked(self.candidates(req.precision, req.layout, req.family), req.M, req.N, req.K,
                                   req.layout, req.lda, req.ldb, req.ldc, None if req.rows_aligned else False)]

    def alternatives(self, req: Request, top: int = 3, per_family: int | None = None) -> list[KernelConfig]:
        """Kernels that first-call tuning times beside the plan: of :meth:`ranked`, the ``top`` first and
        the ``per_family`` (default ``policy.tune_per_family``) first of each family."""
        per_family = self.policy.tune_per_family if per_family is None else per_family
        keep, seen = [], {}
        for p in self.ranked(req):
            fam = p.config.family
            if len(keep) < top or seen.get(fam, 0) < per_family:
                keep.append(p.config)
            seen[fam] = seen.get(fam, 0) + 1
        return keep

    def candidates(self, precision: str, layout: str, family: str | None = None) -> list[Fitted]:
        """The timed kernels (time models) that compete for requests of a class, layout and family."""
        key = (precision, layout, family)
        if self._timed is not None:
            return list(self._timed(precision, layout, family))
        if key not in self._fits:
            fits = self._fits.get(precision)
            if fits is None:
                fits = self._fits[precision] = fit_all(self.timings.of_precision(precision), self.spec,
                                                       policy=self.policy) if precision in PRECISIONS else []
            self._fits[key] = candidates(fits, layout, self.spec, family, layout_factors(fits), self.policy)
        return self._fits[key]

    def _in_fixed_order(self, req: Request, plan: Plan) -> Plan:
        """``plan``, or where its kernel adds K slices atomically (no non-atomic kernel accepted the
        request), its tile with one slice; NoFixedOrder where that does not fit."""
        if plan.config is None or not plan.config.split_atomic:
            return plan
        single = plan.config.replace(split_k=1)
        if explain(single, self.spec) or single.accepts(req.M, req.N, req.K, req.lda, req.ldb, req.ldc) is not None:
            raise NoFixedOrder(f"no deterministic kernel for {req.M}x{req.N}x{req.K}/{req.layout} ({req.precision}): "
                               f"{plan.config.name} adds its K slices atomically and one slice of it does not fit here")
        return replace(plan, config=single, kernel_ms=None, fit=None, entry=None)
