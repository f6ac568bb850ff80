"""``gemmgen search --grid``: tune every shape of a grid on one worker per GPU, then time the winners
on every grid shape for dispatch, and store both in this GPU's results file.

Stage 1 tunes each (family, shape) in its own study (``<gpu>-<family>-<shape>``, simt ``<gpu>-<shape>``),
warm-started from the built-in kernels of its family predicted fastest on its shape, its presets, the
winners of its nearest finished shapes and split-K variants of them; ``--trials`` is the budget per shape (enqueued trials included), ``--patience`` stops a shape
whose sampled trials stopped gaining, ``--extend-below`` lets a shape still short of that ratio to
cuBLAS go on to twice ``--trials``. Each winner is stored as the shape's entry, as a search does.
Stage 2 (``--no-timings`` skips it, ``--timings-only`` runs it alone) times every distinct winner of
each family, the presets its space holds and, per shape, the built-in kernels predicted fastest there,
on every grid shape where they run (``--rep-ms`` each; each shape's built-ins and own winners first,
round-robin over the shapes), and stores the times beside the entries (``timings``) with the fastest kernel per shape as
its entry. ``--timings-only --winners-from FILE`` times the kernels of another GPU's results file
here instead: tune on one GPU of a kind, re-time its winners on another.

Both stages resume: finished shapes are skipped (a larger ``--trials`` continues them), and pairs
of kernel and shape this GPU's results file already times are not timed again.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from . import grid_output as out

MEASURE_MS = 50.0   # timed runs per trial (a plain search: 100 ms); the timings stage times the winners again
FINALISTS = 3


def check(args: argparse.Namespace, families: list) -> bool:
    """Whether this is a shape-set search (no --shape/--shapes), after its options' rules (one-line errors,
    before the GPU)."""
    set_only = ("grid", "patience", "extend_below", "timings_only", "winners_from", "top", "only_timed")
    if args.shape or args.shapes:
        given = [f"--{n.replace('_', '-')}" for n in set_only if getattr(args, n) not in (None, False)]
        if given:
            raise ValueError(f"{given[0]} applies to a shape-set search; leave out --shape/--shapes "
                             "(they tune just those shapes, one study each)")
        return False
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
    for name, value in (("--rep-ms", args.rep_ms), ("--timeout", args.timeout)):
        if value is not None and not value > 0:
            raise ValueError(f"{name} {value}: must be above 0")
    _common(args, families)
    return True


def _common(args: argparse.Namespace, families: list) -> None:
    """The options both kinds of search share, checked as a --shape search checks them (one line each)."""
    from ..base.devices import for_arch, known
    from ..tune.space import load_space
    from . import checks
    from .options import DEFAULT_ARCH

    checks.at_least(0, seed=args.seed)
    if args.seed > 2**32 - 1:
        raise ValueError(f"--seed {args.seed}: must be at most {2**32 - 1}")
    target = known(args.gpu) if args.gpu else for_arch(DEFAULT_ARCH)   # an unknown --gpu lists the known ones
    if args.study is not None and not args.study.strip():
        raise ValueError("--study '': give a name, or leave it out for <gpu>-<shape>")
    for option, path in (("--space", args.space), ("--winners-from", args.winners_from)):
        if path is not None:
            checks.input_file(path, option)
    for family in family_names(families, target, args.space):
        load_space(family, target.arch, args.space, device=target)


def run_grid(args: argparse.Namespace, families: list, gpus: list[int], budget: float) -> int:
    """``gemmgen search`` over a shape set, on the families and GPUs ``--family`` and ``--devices`` name (checked
    by the caller, as :func:`check`), within ``budget`` seconds; returns 1 when a shape or a batch failed, else 0."""
    from ..base import devices as devs
    from ..records.store import load_file
    from ..tune.grid import load_grid, resolve_grid
    from ..tune.plan import match_gpu
    start = time.time()
    text = args.grid or "auto"
    if text != "auto":
        load_grid(text)   # a bad name fails before the GPU
    foreign = load_file(args.winners_from) if args.winners_from else None
    if args.dry_run and args.gpu:
        spec = devs.known(args.gpu)
    else:
        spec = devs.detect(gpus[0])
        match_gpu(args.gpu, spec.name)
    families = family_names(families, spec, args.space)
    grid = resolve_grid(text, spec)
    job, split = _job(args, grid, families, spec, len(gpus), start, budget)
    from .search_dry import plan_of, print_plan
    plan = plan_of(args, job, split, foreign)
    if args.dry_run:
        print_plan(plan, args.json, sys.stdout)
        return 0
    print_plan(plan, False, sys.stderr)
    report = {"grid": grid.name, "device": spec.name, "families": families, "tasks": [], "timings": {},
              "plan": plan}
    ctx = {"fp": devs.fingerprint(gpus[0]), "devices": gpus, "mode": pool_mode(gpus), "report": report, "failed": 0,
           "end": start + budget}
    if not args.timings_only:
        job = _tune(args, job, ctx)
    if not args.no_timings:
        from .search_timings import time_grid
        time_grid(args, job, foreign, ctx)
    _close(args, job, ctx)
    return 1 if ctx["failed"] else 0


TRIALS = 200   # most trials a shape and family: the budget usually ends a shape sooner
ROUND_S = 20.0   # tuning share left below which no further round starts: too little for a task's first trials


def family_names(families: list | None, spec: Any, space: str | None) -> list[str]:
    """The families a search runs on ``spec``: those given (None for --space alone: the file's own), or
    without --family every fp32 family valid there (:func:`gemmgen.tune.space.default_families`)."""
    from ..tune.space import default_families, load_space

    if families is None:
        return default_families(spec)
    return [f or load_space(path=space).family for f in families]


def _job(args: argparse.Namespace, grid: Any, families: list[str], spec: Any, gpus: int, start: float,
         budget: float) -> tuple[Any, Any]:
    """The grid job and the budget's split (:func:`gemmgen.tune.budget.plan_budget`)."""
    from ..tune.ahead import cores
    from ..tune.budget import plan_budget
    from ..tune.grid_plan import GridJob
    from ..tune.storage import default_storage

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)   # one line per shape says what happened
    # each GPU's next candidates compile meanwhile, up to 8 at once: with more in flight, TPE draws blind
    jobs = args.jobs or max(2, min(8, cores() // gpus))
    options = {"sampler": args.sampler, "seed": args.seed, "jobs": jobs, "lookahead": jobs + 1,
               "finalists": FINALISTS}
    job = GridJob(grid, tuple(families), spec, args.storage or default_storage(args.results),
                  trials=TRIALS if args.trials is None else args.trials,
                  patience=8 if args.patience is None else args.patience,
                  stretch_below=1.2 if args.extend_below is None else args.extend_below,
                  space=args.space, study=args.study, options=options, timeout=args.timeout, devices=gpus)
    split = plan_budget(budget, tasks=len(job.tasks()), trials=job.trials, devices=gpus, tune=not args.timings_only)
    if not args.timings_only:   # a rerun: the budget goes to the tasks not finished at its trials
        states = job.states()
        still = sum(not dataclasses.replace(job, trials=split.trials).done(t, states) for t in job.tasks())
        if 0 < still < len(job.tasks()):
            split = plan_budget(budget, tasks=still, trials=job.trials, devices=gpus)
    if not args.timings_only:   # the budget's trials and tasks; the tuning share ends at its deadline
        from .search_builtin import warm_builtins

        job = dataclasses.replace(job, trials=split.trials, limit=split.tasks_tuned, deadline=start + split.tune_s)
        job = dataclasses.replace(job, builtins=warm_builtins(spec, job.tasks()))   # later rounds tune any
    return job, split


def pool_mode(devices: list[int], pool: str = "process") -> str:
    """How the workers of ``devices`` run: inline for one GPU, else ``pool`` ("process": one worker process a
    GPU, each with its own CUDA context; "thread": workers in this process, which sees a test's fake GPUs)."""
    return "inline" if len(devices) == 1 else pool


def _tune(args: argparse.Namespace, job: Any, ctx: dict) -> Any:
    """Stage 1: every pending task on the next free GPU, each winner stored as its shape's entry; then, while
    the tuning share lasts, further rounds (:func:`gemmgen.tune.grid_plan.next_round`): the tasks the plan
    left untuned, then every task to twice its trials. Returns the job as its last round left it."""
    from ..tune.grid_plan import next_round

    cap = TRIALS if args.trials is None else args.trials
    before = -1   # trials finished when the last round began
    _tune_round(args, job, ctx)
    while job.deadline is not None and job.deadline - time.time() > ROUND_S:
        states = job.states()
        now = _finished(job, states)
        more = next_round(job, cap, states)
        if more is None or (more is job and now == before):
            break   # every task has its trials, or the last round finished none (each failed or ran out)
        before, job = now, more
        out.say(f"tuning share left {out.clock(job.deadline - time.time())}: another round, "
                f"{len(job.pending(states))} task(s) to {job.trials} trials")
        _tune_round(args, job, ctx)
    return job


def _finished(job: Any, states: dict) -> int:
    """Trials the job's tasks have finished, summed over their studies (what a round adds to)."""
    return sum(states.get(job.study_of(t), {}).get("done", 0) for t in job.tasks())


def _tune_round(args: argparse.Namespace, job: Any, ctx: dict) -> None:
    """One round: every pending task of ``job`` on the next free GPU."""
    from ..tune import gpu
    from ..tune.ahead import AHEAD, CompileAhead, cores, warm_kernels
    from ..tune.grid_run import TuneShape, run_grid

    tasks = job.tasks()
    pending = job.pending()
    most = job.trials * (2 if job.stretch_below else 1)
    out.say(f"grid {job.grid.name}: {len(job.grid.shapes)} shapes x {len(job.families)} families "
            f"({', '.join(job.families)}) on {job.device.name}, GPUs {','.join(map(str, ctx['devices']))}: "
            f"{len(pending)} of {len(tasks)} to tune, {job.trials} trials per shape (up to {most} below "
            f"{job.stretch_below:g}x cuBLAS), patience {job.patience}")
    if not pending:
        return
    progress = out.Progress(len(pending), end=ctx["end"])
    # finalists are not re-timed here: the timings stage times every winner again, on every shape
    prepare = gpu.NvrtcPrepare(job.device.arch)
    work = TuneShape(job, gpu.GpuMeasure(rep_ms=MEASURE_MS), prepare, keep=KeepBest(ctx["fp"], args.results))
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


@dataclasses.dataclass(frozen=True)
class KeepBest:
    """``keep(task, progress)``: store a task's new best as its shape's entry at once (locked, atomic write;
    the faster stays), so a run killed mid-shape keeps what it found. Picklable, for worker processes."""

    fp: dict
    results: str | None = None

    def __call__(self, task: Any, progress: Any) -> None:
        from ..kernel.config import KernelConfig
        from ..records.entry import Entry
        from ..records.store import record
        from .search_timings import fp_arch

        cublas = progress.best_tflops / progress.best_ratio if progress.best_ratio else 0.0
        entry = Entry.new(task.shape.key, KernelConfig.from_dict(progress.best_config), progress.best_tflops,
                          cublas, progress.done, arch=fp_arch(self.fp))
        record(self.fp, [entry], self.results)


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
