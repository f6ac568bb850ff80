"""The plan of a shape-set search, printed before it starts (``--dry-run``: only that, as text or ``--json``):
its shapes per regime, families, trials per shape, the budget's split and an estimate of each stage.
Without a GPU with ``--gpu NAME``. Reads the studies and the results file, changes nothing.
"""
from __future__ import annotations

import argparse
import json
from typing import IO, Any

from .checks import hidden
from .grid_output import clock

DRAWS = 300   # random draws per family's space for its invalid share (CPU only, about a second)


def plan_of(args: argparse.Namespace, job: Any, split: Any, foreign: Any) -> dict:
    """What the run will do, as a JSON-ready dict (see :func:`print_plan`)."""
    from ..tune.shapeset import regime_counts
    from ..tune.draws import invalid_draws
    from ..tune.space import load_space
    from .search_timings import current, timing_work

    states = job.states()
    tasks, tuned = job.tasks(), job.tuned()
    pending = job.pending(states)
    shapes = job.shapes()
    spaces = {f: load_space(f, job.device.arch, job.space, device=job.device) for f in job.families}
    invalid = {f: round(invalid_draws(s, job.device, DRAWS).share, 3) for f, s in spaces.items()}
    have = current(args, {"name": job.device.name})
    work = timing_work(args, job, foreign, have)
    pairs = 0 if args.no_timings else sum(len(b.configs) for b in work.batches)
    # the winners tuning adds are timed too: about one new kernel a tuned task, each on as many shapes as
    # the kernels now are on average (a kernel runs on the shapes of its layouts that it computes)
    timed_on = job.timing_shapes()
    per_kernel = pairs / max(1, work.kernel_count())
    pairs_after = pairs + (0 if args.no_timings or args.timings_only else round(len(pending) * per_kernel))
    return {
        "device": job.device.name, "gpu": job.device.key, "sm_count": job.device.sm_count,
        "grid": job.grid.name, "source": job.grid.source, "shapes": len(shapes), "timing_shapes": len(timed_on),
        "regimes": regime_counts(shapes, job.device), "shape_order": [s.key for s in shapes],
        "families": list(job.families), "invalid_draws": invalid,
        "tasks": len(tasks), "tasks_tuned": 0 if args.timings_only else len(tuned),
        "tasks_done": sum(job.done(t, states) for t in tasks),
        "tasks_to_tune": 0 if args.timings_only else len(pending),
        "trials_per_task": job.trials, "devices": split.devices,
        "budget": {**split.to_dict(), "time_estimate_s": split.time_estimate_s(pairs_after),
                   "pairs_within": split.pairs_within(pairs_after)},
        "timings": {"kernels": work.kernel_count(), "pairs_now": pairs, "pairs_after_tuning": pairs_after,
                    "first": sum(len(v) for v in work.first.values()),
                    "timed_before": len(work.timed), "skipped": bool(args.no_timings)},
        "storage": hidden(job.storage),
    }


def print_plan(plan: dict, as_json: bool, stream: IO[str]) -> None:
    """The plan as lines (or JSON) on ``stream``."""
    if as_json:
        stream.write(json.dumps(plan, indent=1) + "\n")
        return
    b, t = plan["budget"], plan["timings"]
    regimes = ", ".join(f"{r} {n}" for r, n in plan["regimes"].items())
    invalid = ", ".join(f"{f} {100 * x:.0f}%" for f, x in plan["invalid_draws"].items())
    lines = [
        f"search plan for the {plan['device']} ({plan['sm_count']} SMs), {plan['devices']} GPU(s): "
        f"budget {clock(b['budget_s'])} = tune {clock(b['tune_s'])} + time {clock(b['time_s'])}",
        f"  shapes: {plan['shapes']} ({plan['source'] or plan['grid']}): {regimes}",
        f"  families: {', '.join(plan['families'])} (random draws that break the rules: {invalid})",
        f"  tune: {plan['tasks_to_tune']} of {plan['tasks']} shape x family tasks ({plan['tasks_done']} finished "
        f"before; {plan['tasks_tuned']} in value order fit the budget), up to {plan['trials_per_task']} trials "
        f"each: ~{clock(b['tune_estimate_s'])}; then, while the tuning share lasts, the rest and more trials",
        f"  time: {t['kernels']} kernels (winners, presets, built-ins) x {plan['timing_shapes']} shapes"
        f"{' (the tuned shapes in every layout)' if plan['timing_shapes'] > plan['shapes'] else ''}, each shape's "
        f"predicted-fastest built-ins and own winners first: {t['pairs_now']} pairs "
        f"now, ~{t['pairs_after_tuning']} after tuning, {b['pairs_within']} within the budget: "
        f"~{clock(b['time_estimate_s'])}" if not t["skipped"] else "  time: skipped (--no-timings)",
        f"  estimate: ~{clock(b['tune_estimate_s'] + (0 if t['skipped'] else b['time_estimate_s']))}; "
        f"studies in {plan['storage']} (a rerun resumes)",
    ]
    stream.write("\n".join(lines) + "\n")
