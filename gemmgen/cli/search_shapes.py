"""``gemmgen search --shape``/``--shapes``: tune just the shapes given, each family's study shared by every
GPU of ``--devices``, then time the winners, the presets and each shape's predicted-fastest built-in
kernels on those shapes for the dispatch (as a shape-set search's timings stage does, :mod:`.search_timings`),
all within ``--budget``: tuning gets its share (:class:`gemmgen.tune.budget.Costs`), timing the rest.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from .grid_output import clock as _clock


def run_shapes(args: argparse.Namespace, families: list | None, shapes: list, devices: list[int], budget: float) -> int:
    """Tune ``shapes`` (checked) with ``families`` (None: every fp32 family valid on the GPU), store each
    winner, then time them; returns 1 when a timings batch failed, else 0."""
    from ..base.devices import detect, fingerprint
    from ..tune.budget import Costs
    from ..tune.plan import match_gpu
    from .search_grid import family_names

    from ..base.devices import known

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)   # the progress line says it once per trial
    start, wall = time.monotonic(), time.time()
    if args.dry_run and args.gpu:   # a plan for a GPU named, as a shape-set search's: no GPU needed
        spec = known(args.gpu)
    else:
        spec = detect(devices[0])   # raises NoGpu: CuPy, the driver or the GPU is missing
        match_gpu(args.gpu, spec.name)
    families = family_names(families, spec, args.space)
    if args.dry_run:
        return _dry_run(args, families, shapes, budget)
    fp = fingerprint(devices[0])
    share = 1.0 if args.no_timings else Costs().tune_share
    winners = _tune(args, families, shapes, spec, devices, fp, start + budget * share, budget)
    failed = 0 if args.no_timings else _time(args, families, shapes, spec, devices, fp, winners, wall + budget)
    _report(winners, args.json)
    return 1 if failed else 0


def _tune(args: argparse.Namespace, families: list[str], shapes: list, spec, devices: list[int], fp: dict,
          end: float, budget: float) -> list[dict]:
    """One study per family and shape, each its share of the tuning time left, warm-started with the
    built-ins of its family predicted fastest on its shape; each winner stored as its shape's entry."""
    from ..kernel.accepts import family_refuses
    from ..tune.budget import task_timeout
    from ..tune.driver import run_search, setup_study
    from ..tune.finalists import SearchError
    from ..tune.gpu import GpuMeasure, GpuRetime, NvrtcPrepare
    from ..tune.grid_plan import Task
    from ..tune.plan import make_plan
    from ..tune.warm import enqueue_builtins
    from .search_builtin import warm_builtins

    todo = []
    for family in families:
        for shape in shapes:
            refused = family_refuses(family, shape.M, shape.N)
            if refused:
                print(f"search: no {family} study for {shape}: {refused}", file=sys.stderr)
            else:
                todo.append(Task(family, shape))
    builtins, winners = warm_builtins(spec, todo), []
    for i, task in enumerate(todo):
        share = task_timeout(end - time.monotonic(), len(todo) - i, 1)   # the studies share every GPU
        timeout = min(share, args.timeout) if args.timeout else share
        if timeout <= 0:
            print(f"search: the tuning share of the budget is spent; {len(todo) - i} studies not started "
                  "(a rerun with --budget continues)", file=sys.stderr)
            break
        plan = make_plan(task.shape, spec, trials=args.trials, storage=args.storage, study=args.study,
                         several_shapes=len(shapes) > 1, space=args.space, results=args.results,
                         family=task.family, several_families=len(families) > 1,
                         sampler=args.sampler, seed=args.seed, timeout=timeout, jobs=args.jobs)
        print(f"search {plan.study}: {spec.name}, {plan.space.family}, {task.shape}, {args.trials} trials, "
              f"{args.sampler}, {_clock(timeout)} at most (budget {_clock(budget)})", file=sys.stderr)
        t0 = time.monotonic()
        enqueue_builtins(setup_study(plan), plan, builtins.get(task, ()))
        try:
            result = run_search(plan, GpuMeasure(), prepare=NvrtcPrepare(spec.arch), retime=GpuRetime(devices[0]),
                                devices=devices, observer=_Bar(end))
        except SearchError as err:   # no candidate passed (all failed, or the budget ended first): the next study goes on
            print(f"\nsearch {plan.study}: no winner: {err}", file=sys.stderr)
            continue
        print(file=sys.stderr)
        winners.append(_store(result, plan, fp, args.results, time.monotonic() - t0))
    return winners


def _time(args: argparse.Namespace, families: list[str], shapes: list, spec, devices: list[int], fp: dict,
          winners: list[dict], end: float) -> int:
    """The timings stage on the given shapes until ``end`` (time.time()); returns the failed batches."""
    from ..kernel.config import KernelConfig
    from ..tune.grid import Grid
    from ..tune.grid_plan import GridJob
    from ..tune.storage import default_storage
    from .search_grid import pool_mode
    from .search_timings import time_grid

    grid = Grid("shapes", tuple(shapes), (spec.key,), "--shape", ordered=True)   # the user's order
    job = GridJob(grid, tuple(families), spec, args.storage or default_storage(args.results), space=args.space,
                  options={"jobs": args.jobs})
    tuned: dict[str, list] = {}
    for w in winners:
        tuned.setdefault(w["shape"], []).append(KernelConfig.from_dict(w["config"]))
    ctx = {"fp": fp, "devices": devices, "mode": pool_mode(devices), "report": {}, "failed": 0, "end": end}
    time_grid(args, job, None, ctx, winners=tuned)
    return ctx["failed"]


def _dry_run(args: argparse.Namespace, names: list[str], shapes: list, budget: float) -> int:
    """``--shape ... --dry-run``: the studies, their trials and the budget, as text or JSON."""
    from ..tune.budget import Costs

    tune_s = budget * (1.0 if args.no_timings else Costs().tune_share)
    plan = {"mode": "shapes", "shapes": [s.key for s in shapes], "families": names,
            "trials": args.trials, "budget_s": budget, "tune_s": tune_s, "time_s": budget - tune_s,
            "devices": args.devices, "timings": not args.no_timings,
            "estimate_s": min(tune_s, len(shapes) * len(names) * args.trials * Costs().trial_s)}
    if args.json:
        print(json.dumps(plan, indent=1))
        return 0
    timings = "then the timings stage" if plan["timings"] else "no timings (--no-timings)"
    print(f"search plan (not run): {len(shapes)} shapes x {len(names)} families "
          f"({', '.join(names)}), up to {args.trials} trials each, budget {_clock(budget)} = tune "
          f"{_clock(tune_s)} + time {_clock(budget - tune_s)}; tuning estimate {_clock(plan['estimate_s'])}, {timings}")
    return 0


def _store(result, plan, fp: dict, results, seconds: float) -> dict:
    """Record the winner in the results store and return what the closing report shows.

    ``entry`` names what the store holds for the winner's key afterwards: the winner, or an
    earlier faster one (of this family or, for fp32, of the other fp32-accurate family).
    """
    import optuna

    from ..records.entry import Entry
    from ..records.store import record
    from ..tune.storage import open_storage
    from ..tune.trial_stats import summary

    m, config = result.measurement, result.config
    new = Entry.new(plan.shape.key, config, m.tflops, m.cublas_tflops, result.counts.measured, arch=plan.device.arch)
    kept = record(fp, [new], results).entries[new.key]
    study = optuna.load_study(study_name=plan.study, storage=open_storage(plan.storage))
    c = result.counts
    return {"study": plan.study, "shape": plan.shape.key, "family": config.family, "precision": config.precision,
            "key": new.key, "winner": config.name, "tflops": m.tflops, "cublas_tflops": m.cublas_tflops,
            "ratio": m.ratio, "stopped": result.stopped, "seconds": seconds,
            "counts": {"measured": c.measured, "failed": c.failed, "invalid": c.invalid, "duplicates": c.duplicates},
            "config": config.to_dict(), "top": summary(study, 5),
            "entry": {"name": kept.name, "family": kept.kernel_config.family, "tflops": kept.tflops}}


def _report(winners: list[dict], as_json: bool) -> None:
    if as_json:
        json.dump(winners, sys.stdout, indent=1)
        print()
        return
    for w in winners:
        print(f"\n{w['study']}: winner {w['winner']}\n  {w['tflops']:.2f} TFLOP/s, cuBLAS {w['cublas_tflops']:.2f} "
              f"({100 * w['ratio']:.1f}%), re-timed; {w['counts']['measured']} trials in {w['seconds']:.0f} s "
              f"({w['stopped']}), failures {w['counts']['failed'] or 'none'}, {w['counts']['invalid']} invalid draws")
        e = w["entry"]
        if e["name"] == w["winner"]:
            print(f"  stored as {w['key']} ({w['precision']})")
        else:
            print(f"  not stored: {w['key']} keeps the faster {e['family']} kernel {e['name']} ({e['tflops']:.2f} TFLOP/s)")
        print("  top 5 during the search:")
        for r in w["top"]:
            print(f"   {r['rank']}. {r['tflops']:6.2f} TFLOP/s {r['pct_cublas']:5.1f}%  {r['name']} {r['preset']}")


class _Bar:
    """A progress line on stderr with the budget left, redrawn in place on a terminal, every 10 s otherwise."""

    def __init__(self, end: float):
        self.tty, self.last, self.end = sys.stderr.isatty(), 0.0, end

    def __call__(self, progress) -> None:
        now = time.monotonic()
        line = f"{progress.line()}; budget left {_clock(max(0.0, self.end - now))}"
        if self.tty:
            print(f"\r{line:<110}", end="", file=sys.stderr, flush=True)
        elif now - self.last >= 10:
            print(line, file=sys.stderr, flush=True)
            self.last = now


