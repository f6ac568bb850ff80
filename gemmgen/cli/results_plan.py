"""``gemmgen results plan GPU SHAPE``: the kernel gemmgen.matmul runs for a shape on a GPU, and why.

The runtime's planner (gemmgen.runtime.planner, the one every entry point asks) applied to a GPU's results
without the GPU: the plan (kernel, and the operands copied first), then the competing kernels of the
request's layout with their predicted times and the terms of their time models (docs/API.md, "Dispatch").

>>> rows = plan("h100", "4096x4096x4096/NN", top=3)        # the shipped H100 results
>>> rows["plan"]["kernel"].startswith("gg_"), len(rows["candidates"]) == 3
(True, True)
"""
from __future__ import annotations

from typing import Any


def plan(gpu: str, shape: str, results: str | None = None, family: str | None = None,
         top: int = 8) -> dict[str, Any]:
    """The plan and the ``top`` candidates for ``shape`` ('MxNxK' or 'MxNxK/LAYOUT', packed operands)
    on ``gpu`` (a name, alias or results file stem); ValueError or ResultsError names a bad input."""
    from ..base.devices import UnknownDevice, known
    from ..records.entry import ResultsError
    from ..base.shape import Shape
    from ..records.lookup import load_device
    from ..runtime.library import results_policy
    from ..runtime.planner import Planner, Request
    from ..runtime.precision import check_family
    from ..records.best import resolve_preset

    s = Shape.parse(shape)
    check_family(family, "fp32")
    try:
        found = load_device(gpu, results, missing_ok=False)
        spec = known(found.name)
    except ResultsError as err:              # a GPU of the table with no results: the built-in kernels' plan
        try:
            spec = known(gpu)
        except UnknownDevice:
            raise err from None              # it names the GPUs with results and those of the table
        found = load_device(gpu, results, missing_ok=True)
    if found.entries and not found.timings.kernels:
        raise ValueError(f"the results of {found.name!r} hold no timings: the dispatch picks the nearest "
                         "tuned shape's entry (run `gemmgen search --grid` to time kernels across shapes)")
    planner = Planner(spec, found.entries, found.timings, results_policy(found))   # as load() plans
    v13 = resolve_preset("v13", planner.also or spec, found.entries, timings=found.timings)
    v13 = v13.name if planner.runs(v13) else None   # the proxy's own where the GPU's v13 does not run there
    lda, ldb = s.lds
    req = Request(s.M, s.N, s.K, s.layout, lda, ldb, s.N, "fp32", family)
    cublas = found.timings.cublas.get("fp32", {}).get(s.key)
    chosen = planner.plan(req)
    arch = {"arch": planner.policy.arch} if planner.policy.arch else {}   # planned as on another architecture
    if chosen.source == "route":   # one row or column of C, or a tiny C or a short K: no time model
        return {"gpu": found.name, **arch, "shape": s.key, "cublas_ms": cublas, "launch_base_ms": None, "candidates": [], "v13": v13,
                "plan": {"kernel": _route_kernel(chosen.route, req, spec, planner.policy), "layout": s.layout, "copies": "",
                         "predicted_ms": None, "copies_ms": 0.0,
                         "route": "gemv" if chosen.route == "gemv" else "small"}}
    if chosen.source != "timed":
        raise ValueError(f"no timed fp32 {family + ' ' if family else ''}kernel of {found.name!r} accepts {s.key}")
    rows = planner.ranked(Request(s.M, s.N, s.K, s.layout, None, None, None, "fp32", family, copies=False))
    return {"gpu": found.name, **arch, "shape": s.key,
            "plan": {"kernel": chosen.name, "layout": chosen.layout, "copies": chosen.copies,
                     "predicted_ms": chosen.ms, "copies_ms": chosen.copies_ms},
            "cublas_ms": cublas, "launch_base_ms": chosen.fit.base, "v13": v13,
            "candidates": [{"kernel": p.name, "predicted_ms": p.kernel_ms,
                            "measured_here": p.fit.measured_near(s, _aligned(p, s)),
                            "u": p.fit.u, "w": p.fit.w, "v": p.fit.v, "resident": p.fit.resident,
                            "layout_factor": p.fit.factor}
                           for p in rows[:top]]}


def _aligned(p, s) -> bool:
    from ..runtime.counts import aligned_for

    return aligned_for(p.config, s)


def _route_kernel(route: str, req, spec, policy) -> str:
    """The name of the hand-written kernel a route runs for the request under the results' policy."""
    from ..runtime.library import route_kernel

    return route_kernel(route, req, spec.sm_count, policy).name


def text(rows: dict[str, Any], wide: bool = False) -> str:
    """The plan and its candidates as a few readable lines (``wide``: with their time models' terms)."""
    from .presets import wrapped

    p = rows["plan"]
    if rows.get("arch"):   # GEMMGEN_POLICY=arch=...: the kernels that architecture runs too
        rows = {**rows, "gpu": f"{rows['gpu']} as {rows['arch']}"}
    if p["predicted_ms"] is None:
        what = ("the small-product route (a tiny C or K <= 16, gemmgen/runtime/small.py)" if p.get("route") == "small"
                else "the matrix-vector route (one row or column of C, gemmgen/runtime/gemv.py)")
        return "\n".join([f"{rows['gpu']}, {rows['shape']}: {p['kernel']}", *wrapped(
            f"{what}: bandwidth-bound kernels, not the tuned GEMM kernels; no time model", wide, "  ", "  ")])
    head = f"{rows['gpu']}, {rows['shape']}: {p['kernel']}"
    head = [head] if wide or len(head) <= 100 else [f"{rows['gpu']}, {rows['shape']}:", f"  {p['kernel']}"]
    if p["copies"]:
        head.append(f"  after copying {' and '.join(p['copies'])} into layout {p['layout']} ({p['copies_ms'] * 1e3:.1f} us)")
    terms = ", then u, w, v: ms per block-step, per round-step, per block" if wide else " (--wide: model terms)"
    out = [*head, f"  predicted {p['predicted_ms'] * 1e3:.1f} us"
           + (f"; cuBLAS measured {rows['cublas_ms'] * 1e3:.1f} us" if rows["cublas_ms"] else ""),
           "", *wrapped(f"candidates in {rows['shape'].split('/')[1]} (predicted: {rows['launch_base_ms'] * 1e3:.1f} "
                        f"us a launch{terms}; *: measured near this shape)", wide, "  ")]
    for c in rows["candidates"]:
        out.append(f"  {c['predicted_ms'] * 1e3:9.1f} us {'*' if c['measured_here'] else ' '} {c['kernel']}"
                   + (" (v13)" if c["kernel"] == rows.get("v13") else "")
                   + (f"  u={c['u']:.2e} w={c['w']:.2e} v={c['v']:.2e} resident={c['resident']}" if wide else "")
                   + (f" x{c['layout_factor']:.2f} (timed in another layout)" if c["layout_factor"] != 1.0 else ""))
    if rows.get("v13") and rows["v13"] not in {c["kernel"] for c in rows["candidates"]} | {p["kernel"]}:
        out.append(f"  (v13, {rows.get('v13')}, is not among them)")
    return "\n".join(out)
