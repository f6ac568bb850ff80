"""Where the planner's candidate plans come from (:data:`SOURCES`, in tiers; :mod:`.planner` says how
they are weighed): the hand-written routes, the timed kernels (as the rows are, with aligning copies,
or copied into another layout), the nearest stored entry, the class's preset. A source is a function
``(planner, request) -> list[Plan]``; a new one (say, a built-in analytic time model) goes into
:data:`SOURCES` at its tier.

>>> from gemmgen.base.devices import known
>>> from gemmgen.runtime.planner import Planner
>>> [p.route for p in route_plans(Planner(known("h100"), {}), Request(2, 2, 100000))]
['dots']
"""
from __future__ import annotations

from typing import Callable

from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from . import gemv, small
from .arrays import aligned_ld
from .counts import aligned
from .dispatch import LAYOUTS, best, dispatch, serves
from .plans import Plan, Request, cheapest
from .precision import family_fallback, fallback_config
from .staging import aligned_copies_ms, copied_ld, copies_ms


def route_plans(planner: "planner.Planner", req: Request) -> list[Plan]:
    """The hand-written route that serves the request, if any: one row or column of C (gemv), a tiny C
    or a short K (small: dots, outer; thresholds in the policy). No copies: the inputs are read once."""
    if gemv.serves(req.M, req.N, req.K, req.precision, req.family, req.elem):
        return [Plan("route", req.layout, route="gemv")]
    kind = small.serves(req.M, req.N, req.K, req.precision, req.family, req.elem, planner.policy)
    return [Plan("route", req.layout, route=kind)] if kind else []


def timed_plans(planner: "planner.Planner", req: Request) -> list[Plan]:
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


def aligned_copies(planner: "planner.Planner", req: Request, as_is: Plan) -> list[Plan]:
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


def layout_changes(planner: "planner.Planner", req: Request, own: Plan) -> list[Plan]:
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
                if f.measured_near(here, True) or (f.config.warp_specialized and not own_near)]
        found = best(fair, req.M, req.N, req.K, other, lda2, ldb2, req.ldc, True)
        if found is not None:
            ms = copies_ms(req.M, req.N, req.K, req.layout, other, copy_a, copy_b, planner.bandwidth, req.elem,
                           planner.policy)
            out.append(Plan("timed", other, found[1].config, None, copy_a, copy_b, found[0], ms, found[1], rival=own))
    return out


def stored_plans(planner: "planner.Planner", req: Request) -> list[Plan]:
    """The entry of the nearest tuned shape whose kernel accepts the request (:func:`.dispatch.dispatch`)."""
    stored = {k: e for k, e in planner.classes.get(req.precision, {}).items()
              if serves(req.family, e.kernel_config.family) and planner.runs(e.kernel_config)}
    entry = dispatch(stored, req.M, req.N, req.K, req.layout, req.lda, req.ldb, req.ldc, req.rows_aligned)
    return [] if entry is None else [Plan("stored", req.layout, entry.kernel_config, entry=entry)]


def preset_plans(planner: "planner.Planner", req: Request) -> list[Plan]:
    """The class's (or family's) preset as every entry point resolves it (v13: this GPU's stored winner)
    where that is valid here and accepts the request, else the built-in one, which accepts any shape (with
    ``policy.arch``, that architecture's, which runs here too)."""
    spec = planner.also or planner.spec
    if req.family is not None:
        return [Plan("preset", req.layout, runs_there(planner, family_fallback(req.family, req.precision, spec, req.layout)),
                     detail="built-in")]
    builtin = runs_there(planner, fallback_config(req.precision, spec, req.layout))
    resolved = fallback_config(req.precision, spec, req.layout, planner.stored)
    ask = (req.M, req.N, req.K, req.lda, req.ldb, req.ldc, req.rows_aligned)
    if (resolved != builtin and resolved.accepts(*ask) is None and not explain(resolved, planner.spec)
            and planner.runs(resolved)):
        return [Plan("preset", req.layout, resolved, detail="stored")]
    return [Plan("preset", req.layout, builtin, detail="built-in")]


def runs_there(planner: "planner.Planner", preset: KernelConfig) -> KernelConfig:
    """``preset``, where the planner may plan it; ValueError in one line where ``policy.arch`` names an
    architecture whose rules it breaks (sm_75 has no TF32 tensor cores: no tf32 or 3xTF32 kernel there)."""
    if not planner.runs(preset):
        raise ValueError(f"policy arch={planner.policy.arch}: no {preset.family} kernel runs on "
                         f"{planner.policy.arch} (choose another precision or family, or another arch)")
    return preset


SOURCES: tuple[tuple[str, Callable[["planner.Planner", Request], list[Plan]]], ...] = (
    ("route", route_plans), ("timed", timed_plans), ("stored", stored_plans), ("preset", preset_plans))
