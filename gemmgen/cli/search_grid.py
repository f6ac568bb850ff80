"""``gemmgen search --grid``: tune every shape of a grid on one worker per GPU, then time the winners
on every grid shape for dispatch, and store both in this GPU's results file.

Stage 1 tunes each (family, shape) in its own study (``<gpu>-<family>-<shape>``, simt ``<gpu>-<shape>``),
warm-started from its presets, the winners of its nearest finished shapes and split-K variants of
them; ``--trials`` is the budget per shape (enqueued trials included), ``--patience`` stops a shape
whose sampled trials stopped gaining, ``--extend-below`` lets a shape still short of that ratio to
cuBLAS go on to twice ``--trials``. Each winner is stored as the shape's entry, as a search does.
Stage 2 (``--no-timings`` skips it, ``--timings-only`` runs it alone) times every distinct winner of
each family, and the presets its space holds, on every grid shape where it runs (``--rep-ms``
each), and stores the times beside the entries (``timings``) with the fastest kernel per shape as
its entry. ``--timings-only --winners-from FILE`` times the kernels of another GPU's results file
here instead: tune on one GPU of a kind, re-time its winners on another.

Both stages resume: finished shapes are skipped (a larger ``--trials`` continues them), and pairs
of kernel and shape this GPU's results file already times are not timed again.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

from . import grid_output as out

MEASURE_MS = 50.0   # timed runs per trial (a plain search: 100 ms); the timings stage times the winners again
FINALISTS = 3
POOL = "process"    # several GPUs: one worker process each (tests use threads)


def add_options(parser: argparse.ArgumentParser) -> None:
    """The grid options of ``gemmgen search``."""
    g = parser.add_argument_group("grid search")
    a = g.add_argument
    a("--grid", metavar="NAME|FILE|auto", help="tune every shape of a grid: a shipped one (search/grid-NAME.json: "
      "hopper), a file, or auto (the shipped grid naming this GPU); --trials is then per shape and family")
    a("--patience", type=int, metavar="N", help="grid: stop a shape after N sampled trials without a 1%% gain "
      "(default 8; 0 never)")
    a("--extend-below", type=float, metavar="RATIO", help="grid: a shape whose best is below RATIO x cuBLAS "
      "when its budget ends may go on to twice --trials (default 1.2; 0 never)")
    a("--rep-ms", type=float, metavar="MS", help="grid timings: milliseconds of timed runs per kernel and shape "
      "(default 20)")
    a("--no-timings", action="store_true", help="grid: tune only, do not time the winners across the grid")
    a("--timings-only", action="store_true", help="grid: only time the studies' winners across the grid")
    a("--winners-from", metavar="FILE", help="with --timings-only: time the kernels of another GPU's results file "
      "(its timings and entries) here instead, e.g. an H200's winners on an H100")
    a("--timings-timeout", type=float, metavar="S", help="grid: stop timing after S seconds (a rerun times the rest)")
    a("--top", type=int, metavar="K", help="grid timings: on each shape, time only the K kernels the dispatch "
      "predicts fastest there (fitted to --winners-from's timings, else this GPU's results file); default all")
    a("--only-timed", action="store_true", help="with --winners-from: time each kernel only on the shapes FILE "
      "times it on (its timings, and its entries' kernels on their shapes): re-time kernels whose code changed, "
      "FILE holding just them, --results a fresh folder; `gemmgen results merge --replace` stores the times")
    a("--dry-run", action="store_true", help="grid: print what would be tuned and timed, and exit (no GPU needed "
      "with --gpu NAME)")


def check(args: argparse.Namespace) -> bool:
    """Whether this is a grid search, after the grid options' rules (one-line errors, before the GPU)."""
    grid_only = ("patience", "extend_below", "rep_ms", "no_timings", "timings_only", "winners_from", "timings_timeout",
                 "top", "only_timed", "dry_run")
    if not args.grid:
        given = [f"--{n.replace('_', '-')}" for n in grid_only if getattr(args, n) not in (None, False)]
        if given:
            raise ValueError(f"{given[0]} applies to grid searches: give --grid NAME|FILE|auto")
        return False
    if args.shape or args.shapes:
        raise ValueError("--grid and --shape/--shapes are exclusive: the grid names the shapes to tune")
    if args.no_timings and args.timings_only:
        raise ValueError("--no-timings and --timings-only are exclusive")
    if args.winners_from and not args.timings_only:
        raise ValueError("--winners-from FILE re-times another GPU's kernels: give it with --timings-only")
    if args.only_timed and not args.winners_from:
        raise ValueError("--only-timed times the pairs of kernel and shape a results file holds: give --winners-from FILE")
    if args.only_timed and args.top:
        raise ValueError("--only-timed and --top are exclusive: FILE's timed pairs, or each shape's predicted fastest")
    for name, value, low in (("--trials", args.trials, 1), ("--jobs", args.jobs, 1), ("--patience", args.patience, 0),
                             ("--extend-below", args.extend_below, 0), ("--top", args.top, 1)):
        if value is not None and not value >= low:
            raise ValueError(f"{name} {value}: must be at least {low}")
    seconds = (("--rep-ms", args.rep_ms), ("--timeout", args.timeout), ("--timings-timeout", args.timings_timeout))
    for name, value in seconds:
        if value is not None and not value > 0:
            raise ValueError(f"{name} {value}: must be above 0")
    return True


def run_grid(args: argparse.Namespace, families: list, gpus: list[int]) -> int:
    """``gemmgen search --grid ...`` on the families and GPUs ``--family`` and ``--devices`` name (checked
    by the caller, as :func:`check`); returns 1 when a shape or a batch failed, else 0."""
    from ..base import devices as devs
    from ..records.store import load_file
    from ..tune.grid import load_grid, resolve_grid
    from ..tune.plan import match_gpu
    from ..tune.space import load_space

    families = [f or load_space(path=args.space).family for f in families]
    grid = None if args.grid == "auto" else load_grid(args.grid)       # a bad name fails before the GPU
    foreign = load_file(args.winners_from) if args.winners_from else None
    if args.dry_run and args.gpu:
        spec = devs.known(args.gpu)
    else:
        spec = devs.detect(gpus[0])
        match_gpu(args.gpu, spec.name)
    grid = grid or resolve_grid("auto", spec.name)
    job = _job(args, grid, families, spec, len(gpus))
    if args.dry_run:
        from .search_dry import dry_run
        dry_run(args, job, foreign)
        return 0
    report = {"grid": grid.name, "device": spec.name, "families": families, "tasks": [], "timings": {}}
    ctx = {"fp": devs.fingerprint(gpus[0]), "devices": gpus, "mode": pool_mode(gpus), "report": report, "failed": 0}
    if not args.timings_only:
        _tune(args, job, ctx)
    if not args.no_timings:
        from .search_timings import time_grid
        time_grid(args, job, foreign, ctx)
    _close(args, job, ctx)
    return 1 if ctx["failed"] else 0


def _job(args: argparse.Namespace, grid: Any, families: list[str], spec: Any, gpus: int) -> Any:
    from ..tune.ahead import cores
    from ..tune.grid_plan import GridJob
    from ..tune.storage import default_storage

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)   # one line per shape says what happened
    # each GPU's next candidates compile meanwhile, up to 8 at once: with more in flight, TPE draws blind
    jobs = args.jobs or max(2, min(8, cores() // gpus))
    options = {"sampler": args.sampler, "seed": args.seed, "jobs": jobs, "lookahead": jobs + 1,
               "finalists": FINALISTS}
    deadline = time.time() + args.timeout if args.timeout else None
    return GridJob(grid, tuple(families), spec, args.storage or default_storage(args.results),
                   trials=24 if args.trials is None else args.trials,
                   patience=8 if args.patience is None else args.patience,
                   stretch_below=1.2 if args.extend_below is None else args.extend_below,
                   space=args.space, study=args.study, deadline=deadline, options=options)


def pool_mode(devices: list[int]) -> str:
    return "inline" if len(devices) == 1 else POOL


def _tune(args: argparse.Namespace, job: Any, ctx: dict) -> None:
    """Stage 1: every pending task on the next free GPU; each winner stored as its shape's entry."""
    from ..tune import gpu
    from ..tune.ahead import AHEAD, CompileAhead, cores, warm_kernels
    from ..tune.grid_run import TuneShape, run_grid

    tasks = job.tasks()
    pending = job.pending()
    most = job.trials * (2 if job.stretch_below else 1)
    out.say(f"grid {job.grid.name}: {len(job.grid.shapes)} shapes x {len(job.families)} families "
            f"({', '.join(job.families)}) on {job.device.name}, GPUs {','.join(map(str, ctx['devices']))}: "
            f"{len(pending)} of {len(tasks)} to tune, --trials {job.trials} per shape (up to {most} below "
            f"{job.stretch_below:g}x cuBLAS), patience {job.patience}")
    progress = out.Progress(len(pending))
    # finalists are not re-timed here: the timings stage times every winner again, on every shape
    prepare = gpu.NvrtcPrepare(job.device.arch)
    work = TuneShape(job, gpu.GpuMeasure(rep_ms=MEASURE_MS), prepare)
    spare = min(AHEAD, cores() - job.options["jobs"] * len(ctx["devices"]))   # cores the workers leave
    with CompileAhead(prepare, warm_kernels(job, pending), threads=spare):
        run_grid(job, work, ctx["devices"], mode=ctx["mode"], on_done=lambda done: _tuned(args, done, progress, ctx))


def _tuned(args: argparse.Namespace, done: Any, progress: Any, ctx: dict) -> None:
    """One task came back: store its winner, print its line."""
    task, r = done.item, done.result or {}
    if done.error:
        ctx["failed"] += 1
        row = {"family": task.family, "shape": task.shape.key, "status": "failed", "error": done.error}
        what = f"{task}: FAILED: {done.error}"
    elif "skipped" in r:
        row = {"family": task.family, "shape": task.shape.key, "status": "not started"}
        what = f"{task}: not started ({r['skipped']})"
    else:
        row = {**r, "status": "tuned", "entry": _store(args, task, r, ctx["fp"])}
        what = out.task_summary(r)
    ctx["report"]["tasks"].append(row)
    out.say(progress.line(done.device, what, done.seconds))


def _store(args: argparse.Namespace, task: Any, r: dict, fp: dict) -> str:
    """Record the task's winner as its shape's entry (the faster stays); the name the key keeps."""
    from ..kernel.config import KernelConfig
    from ..records.entry import Entry
    from ..records.store import record
    from .search_timings import fp_arch

    entry = Entry.new(task.shape.key, KernelConfig.from_dict(r["config"]), r["tflops"], r["cublas_tflops"],
                      r["measured"], arch=fp_arch(fp))
    return record(fp, [entry], args.results).entries[entry.key].name


def _close(args: argparse.Namespace, job: Any, ctx: dict) -> None:
    """The closing table (or JSON): every task, tuned now or before, and the stored fp32 entries."""
    from .search_timings import current

    report, states = ctx["report"], job.states()
    now = {(t["family"], t["shape"]): t for t in report["tasks"]}
    rows = {}
    for task in job.tasks():
        key, state = (task.family, task.shape.key), states.get(job.study_of(task), {})
        before = "finished before" if state.get("done", 0) >= job.trials else "unfinished" if state else "not tuned"
        rows[key] = {"family": task.family, "shape": task.shape.key, "study": job.study_of(task), **state,
                     "status": before, **now.get(key, {})}
    entries = current(args, ctx["fp"]).entries
    fp32 = {e.shape.key: {"family": e.kernel_config.family, "name": e.name, "tflops": e.tflops, "ratio": e.ratio}
            for e in entries.values() if e.precision == "fp32"}
    report.update(tasks=[{k: v for k, v in r.items() if k != "config"} for r in rows.values()], entries=fp32)
    if args.json:
        out.dump(report)
        return
    shapes = list(dict.fromkeys(t.shape.key for t in job.tasks()))
    print(out.table(shapes, job.families, rows, fp32))
