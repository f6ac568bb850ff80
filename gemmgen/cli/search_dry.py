"""``gemmgen search --grid ... --dry-run``: what a grid run would tune and time, without a GPU (``--gpu``
names it), to size a run before booking GPU time. Reads the studies and the results file, changes nothing.
"""
from __future__ import annotations

import argparse
from typing import Any


def dry_run(args: argparse.Namespace, job: Any, foreign: Any) -> None:
    """Print the plan: pending tasks and their trial bounds per family, then the timings to do now."""
    from ..tune.grid_timings import timing_batches
    from ..tune.warm import warm_configs
    from .search_timings import current, kernels, pairs_to_time

    pending = job.pending()
    most = job.trials * (2 if job.stretch_below else 1)
    print(f"grid {job.grid.name} on {job.device.name} (planned, not run): {len(job.tasks())} tasks, "
          f"{len(job.tasks()) - len(pending)} finished")
    low_total = high_total = 0
    for family in job.families:
        mine = [t for t in pending if t.family == family]
        if not mine or args.timings_only:
            continue
        warm = [len(warm_configs(job.plan_for(t), [])) for t in mine]
        # a plateau ends a task after its warm starts and `patience` draws; at most the stretched budget
        low = sum(min(job.trials, w + job.patience + 1) if job.patience else job.trials for w in warm)
        high = len(mine) * most
        low_total, high_total = low_total + low, high_total + high
        print(f"  tune {family}: {len(mine)} shapes, {min(warm)}..{max(warm)} presets and split-K variants each "
              f"(+ up to {2 * job.neighbours} from neighbours), {low}..{high} trials")
    if not args.timings_only:
        print(f"  tune in all: {low_total}..{high_total} trials (--trials {job.trials}, up to {most} below "
              f"{job.stretch_below:g}x cuBLAS, patience {job.patience})")
    if args.no_timings:
        return
    have = current(args, {"name": job.device.name})
    timed = {(name, key) for name, k in have.timings.kernels.items() for key in k.ms}
    configs = kernels(args, job, foreign)
    batches = timing_batches(configs, job.grid.shapes, job.device, skip=timed,
                             only=pairs_to_time(args, have, foreign, configs, job))
    print(f"  time now: {len({c.name for c in configs})} kernels on {len(job.grid.shapes)} shapes, "
          f"{sum(len(b.configs) for b in batches)} pairs in {len(batches)} batches ({len(timed)} timed before; "
          "tuning first adds its winners)")
