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
     :mod:`.predict`): as the rows are, with the rows copied aligned, or copied into another layout.
     Where the GPU has no timings and no stored entries of the class (out of the box), these are the
     built-in kernels with their analytic models (:mod:`.builtin`, :mod:`.analytic`); where it has
     timings, the built-in kernels they miss join them ``builtin_margin`` slower, if the policy's
     ``untimed_builtins`` says so (``load()`` turns it on);
   - ``stored``: where nothing timed accepts the request, the entry of the nearest tuned shape;
   - ``preset``: else the class's preset (:mod:`.precision`), with one warning from the library
     (``builtin=False``, what a strict library asks, leaves the built-in kernels out).

3. A plan passes named guards (:data:`GUARDS`; plans without copies pass them all): a copy must be
   worth its launches, a small copy must feed the right kernel, a copy must rest on trusted
   predictions, and a copy must beat the plan it replaces (its ``rival``) by the policy's margin.
4. The cheapest plan that passes wins (ties: the one offered first).

Every threshold is a field of the planner's :class:`.policy.Policy`.

**Adding a source**: write a function
``(planner, request) -> list[Plan]`` whose plans carry ``kernel_ms`` from its own cost function, and
put it in :data:`SOURCES` at its tier (before ``stored``/``preset`` to replace them where it answers).
The library loads any plan whose ``config`` is a KernelConfig; nothing else changes.

>>> from gemmgen.base.devices import known
>>> from gemmgen.records.timings import Timings
>>> planner = Planner(known("h100"), {}, Timings.empty())
>>> planner.plan(Request(1, 4096, 4096)).route, planner.plan(Request(8192, 8192, 8)).route
('gemv', 'outer')
>>> p = planner.plan(Request(4096, 4096, 4096, "TN"))     # no results: a built-in kernel, modelled
>>> p.source, p.config.family, type(p.fit).__name__
('timed', 'tf32x3', 'Analytic')
>>> Planner(known("h100"), {}, Timings.empty(), builtin=False).plan(Request(4096, 4096, 4096, "TN")).config.label
'tf32x3-wgmma'
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Sequence

from ..base.devices import DeviceSpec, for_arch
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from ..records.entry import Entry
from ..records.timings import Timings
from .dispatch import candidates, fit_all, layout_factors, ranked
from .plans import NoFixedOrder, Plan, Request, cheapest
from .policy import DEFAULT, Policy
from .precision import PRECISIONS, by_precision, check_family
from .predict import Fitted
from .builtin import builtin_fits
from .sources import SOURCES
from .staging import copy_bandwidth

__all__ = ["NoFixedOrder", "Plan", "Planner", "Request", "SOURCES"]


class Planner:
    """One GPU's planner: its stored entries and timings (time models fitted once per precision class,
    cached), its :class:`.policy.Policy`; :meth:`plan` answers a request (see the module docstring).
    ``timed``: the timed kernels' models of a (class, layout, family), injected (tests, replays); default:
    fitted to ``timings``."""

    def __init__(self, spec: DeviceSpec, entries: Mapping[str, Entry], timings: Timings | None = None,
                 policy: Policy = DEFAULT, timed: Callable[[str, str, str | None], Sequence[Fitted]] | None = None,
                 builtin: bool = True):
        self.spec, self.policy, self._timed, self.builtin = spec, policy, timed, builtin   # builtin: False for strict
        self.stored = dict(entries)
        self.classes = by_precision(entries)
        self.timings = timings or Timings.empty()
        self.bandwidth = copy_bandwidth(spec, policy)   # bytes per ms a copy kernel moves
        self.also = for_arch(policy.arch) if policy.arch else None   # policy.arch's device: kernels must run there too
        self._fits: dict[tuple, list] = {}
        self._runs: dict[str, bool] = {}

    def runs(self, config: KernelConfig) -> bool:
        """Whether the planner may plan ``config``: always, unless ``policy.arch`` names an architecture it
        must run on too (its representative GPU's rules: an sm_80 proxy has no wgmma, no TMA, 164 KiB of
        shared memory)."""
        if self.also is None:
            return True
        ok = self._runs.get(config.name)
        if ok is None:
            ok = self._runs[config.name] = not explain(config, self.also)
        return ok

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
            return [f for f in self._timed(precision, layout, family) if self.runs(f.config)]
        if key not in self._fits:
            fits = self._fits.get(precision)
            if fits is None:
                fits = self._fits[precision] = self._models(precision)
            found = candidates(fits, layout, self.spec, family, layout_factors(fits), self.policy)
            self._fits[key] = [f for f in found if self.runs(f.config)]
        return self._fits[key]

    def _models(self, precision: str) -> list:
        """The time models of a class: each timed kernel's fit; with no timings and no stored entries (a GPU
        out of the box), the built-in kernels' analytic models; with timings and ``untimed_builtins``, the
        built-in kernels they miss too, ``builtin_margin`` slower (:mod:`.builtin`)."""
        if precision not in PRECISIONS:
            return []
        timed = self.timings.of_precision(precision)
        if not timed:
            return ([] if self.classes.get(precision) or not self.builtin
                    else builtin_fits(self.spec, precision, policy=self.policy))
        fits = fit_all(timed, self.spec, policy=self.policy)
        if self.builtin and self.policy.untimed_builtins:
            fits += builtin_fits(self.spec, precision, timed=(k.config for k in timed),
                                 margin=self.policy.builtin_margin, policy=self.policy)
        return fits

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
