"""``gemmgen search`` and ``gemmgen report``: tune kernels for this GPU with Optuna and keep the winners.

gemmgen search with no shapes tunes about 42 shapes derived from this GPU (--grid auto: six regimes,
waves of tiles, skinny, deep-K, shallow-K, small, ragged, in all four layouts, sized by its SM count),
one study per shape and family, on one worker per GPU of --devices, then times every winner and
preset on every shape for the dispatch; all within --budget (wall time of the whole run; tuning gets
60%, timing the rest). It prints its plan and estimate first (--dry-run: only that). --shape and
--shapes tune just those shapes, each in one study shared by every GPU (no timings stage).

A rerun resumes (SQLite in the results folder by default, any RDB URL with --storage, e.g. PostgreSQL
shared by several hosts). Presets that fit are measured first, so a search never ends worse than the
best preset; every candidate passes the correctness gate before it is timed.

--family picks the template family: simt (default), tf32 or tf32x3 (tensor cores, sm_80 and newer),
a comma-separated list, or all; each in its own study (<gpu>-<family>-<shape>; simt keeps
<gpu>-<shape>). Winners are stored per accuracy class: simt and tf32x3 are both fp32-accurate and
compete for the shape's one fp32 entry (the faster stays); tf32 winners are stored under
<shape>/<layout>/tf32.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import checks, search_grid
from .command import Command
from .grid_output import clock as _clock
from .search_options import DEFAULT_BUDGET, EPILOG, configure


def run(args: argparse.Namespace) -> int:
    from ..tune.budget import parse_budget

    budget = parse_budget(args.budget or DEFAULT_BUDGET)   # before anything touches the GPU
    if args.family is None and args.winners_from:
        args.family = "all"   # another GPU's kernels are timed whatever their family, unless --family says
    families = parse_families(args.family, args.space)
    devices = _devices(args.devices)
    if search_grid.check(args, families):
        checks.storage_url(args.storage)
        checks.output_folder(args.results, "--results")
        return search_grid.run_grid(args, families, devices, budget)
    args.trials = 200 if args.trials is None else args.trials
    args.jobs = 2 if args.jobs is None else args.jobs
    shapes = check(args, families)
    if args.dry_run:
        return _dry_run(args, families, shapes, budget)

    from ..base.devices import detect, fingerprint
    from ..kernel.accepts import family_refuses
    from ..tune.budget import task_timeout
    from ..tune.driver import run_search
    from ..tune.gpu import GpuMeasure, GpuRetime, NvrtcPrepare
    from ..tune.plan import make_plan, match_gpu

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)   # the progress line says it once per trial
    spec = detect(devices[0])   # raises NoGpu: CuPy, the driver or the GPU is missing
    match_gpu(args.gpu, spec.name)
    fp, winners = fingerprint(devices[0]), []
    todo = [(f, s) for f in families for s in shapes if not family_refuses(f or "", s.M, s.N)]
    end = time.monotonic() + budget
    for i, (family, shape) in enumerate(todo):
        share = task_timeout(end - time.monotonic(), len(todo) - i, 1)   # the studies share every GPU
        timeout = min(share, args.timeout) if args.timeout else share
        if timeout <= 0:
            print(f"search: budget spent; {len(todo) - i} studies not started (a rerun with --budget continues)",
                  file=sys.stderr)
            break
        plan = make_plan(shape, spec, trials=args.trials, storage=args.storage, study=args.study,
                         several_shapes=len(shapes) > 1, space=args.space, results=args.results,
                         family=family, several_families=len(families) > 1,
                         sampler=args.sampler, seed=args.seed, timeout=timeout, jobs=args.jobs)
        print(f"search {plan.study}: {spec.name}, {plan.space.family}, {shape}, {args.trials} trials, "
              f"{args.sampler}, {_clock(timeout)} at most (budget {_clock(budget)})", file=sys.stderr)
        t0 = time.monotonic()
        result = run_search(plan, GpuMeasure(), prepare=NvrtcPrepare(spec.arch), retime=GpuRetime(devices[0]),
                            devices=devices, observer=_Bar(end))
        print(file=sys.stderr)
        winners.append(_store(result, plan, fp, args.results, time.monotonic() - t0))
    _report(winners, args.json)
    return 0


def _dry_run(args: argparse.Namespace, families: list, shapes: list, budget: float) -> int:
    """``--shape ... --dry-run``: the studies, their trials and the budget, as text or JSON."""
    from ..tune.budget import Costs

    plan = {"mode": "shapes", "shapes": [s.key for s in shapes], "families": [f or "space file" for f in families],
            "trials": args.trials, "budget_s": budget, "devices": args.devices,
            "estimate_s": min(budget, len(shapes) * len(families) * args.trials * Costs().trial_s)}
    if args.json:
        print(json.dumps(plan, indent=1))
        return 0
    print(f"search plan (not run): {len(shapes)} shapes x {len(families)} families "
          f"({', '.join(plan['families'])}), up to {args.trials} trials each, budget {_clock(budget)}; "
          f"estimate {_clock(plan['estimate_s'])}")
    return 0


def parse_families(text: str | None, space: str | None = None) -> list[str | None]:
    """The families ``--family`` names, in search order; [None] (the file's own) for --space alone.

    >>> parse_families("tf32x3,simt"), parse_families(None), parse_families("all")[:3]
    (['tf32x3', 'simt'], ['simt'], ['simt', 'tf32', 'tf32x3'])
    >>> parse_families("wmma")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --family 'wmma': unknown family wmma; valid: simt, tf32, tf32x3..., a comma-separated list of them, or all
    """
    from ..tune.space import families

    valid = families()
    if text is None:
        return [None] if space else ["simt"]
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    names = valid if names == ["all"] else names
    bad = [n for n in names if n not in valid]
    if bad:
        raise ValueError(f"--family {text!r}: unknown family {', '.join(bad)}; valid: {', '.join(valid)}, "
                         "a comma-separated list of them, or all")
    if not names or len(set(names)) != len(names):
        raise ValueError(f"--family {text!r} must name each family once, e.g. simt,tf32x3")
    if space and len(names) > 1:
        raise ValueError(f"--space holds one family's space; give one --family with it, not {text!r}")
    return names


def check(args: argparse.Namespace, families: list[str | None]):
    """Every option of a search, before GPU detection: the shapes to tune, or one line on the first
    bad value. Each family's plan is made once for the --gpu named (else an H100) with an in-memory
    storage, so a bad space file, sampler or grid fails here too, and nothing is written.
    """
    from ..base.devices import for_arch, known, resolve_alias
    from ..base.shape import Shape
    from ..kernel.accepts import family_refuses
    from ..tune.plan import make_plan
    from ..tune.space import default_shapes
    from .options import DEFAULT_ARCH

    checks.at_least(1, trials=args.trials, jobs=args.jobs)
    checks.at_least(0, seed=args.seed)
    if args.seed > 2**32 - 1:
        raise ValueError(f"--seed {args.seed}: must be at most {2**32 - 1}")
    checks.positive(timeout=args.timeout)
    target = known(resolve_alias(args.gpu)) if args.gpu else for_arch(DEFAULT_ARCH)
    if args.study is not None and not args.study.strip():
        raise ValueError("--study '': give a name, or leave it out for <gpu>-<shape>")
    checks.storage_url(args.storage)
    checks.output_folder(args.results, "--results")
    for option, path in (("--space", args.space), ("--shapes", args.shapes)):
        if path is not None:
            checks.input_file(path, option)
    shapes = [_shape(s) for s in args.shape] or default_shapes(args.shapes)
    if not shapes:
        raise ValueError(f"--shapes {args.shapes!r} lists no shapes; e.g. {{\"shapes\": [\"4096x4096x4096/NN\"]}}")
    refused = [family_refuses(f or "", s.M, s.N) for f in families for s in shapes]
    if all(refused):   # nothing to search: say so before the GPU is touched
        raise ValueError(f"--family {args.family}: nothing to search on {shapes[0]}{' and the rest' if len(shapes) > 1 else ''}: "
                         f"{refused[0]}")
    for family in families:
        make_plan(shapes[0], target, trials=args.trials, storage="sqlite:///:memory:", study=args.study,
                  space=args.space, family=family, sampler=args.sampler, seed=args.seed, timeout=args.timeout,
                  jobs=args.jobs)
    return shapes


def _shape(text: str):
    from ..base.shape import Shape

    try:
        return Shape.parse(text)
    except ValueError as e:
        raise ValueError(f"--shape {text!r}: {e}; valid: MxNxK[/LAYOUT] of positive sizes, e.g. 1024x1024x1024/NT") from None


def _devices(text: str) -> list[int]:
    try:
        devices = [int(d) for d in text.split(",") if d.strip()]
    except ValueError:
        raise ValueError(f"--devices {text!r} is not a comma-separated list of GPU indices, e.g. 0,1") from None
    if not devices or len(set(devices)) != len(devices) or min(devices) < 0:
        raise ValueError(f"--devices {text!r} must name each GPU once by its index (0, 1, ...), e.g. 0,1")
    return devices


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


def configure_report(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", required=True, help="study name, as `gemmgen search` printed it")
    parser.add_argument("--out", required=True, help="folder for the PNG plots")
    parser.add_argument("--storage", help="Optuna RDB URL (default sqlite:///<results>/studies.db)")
    parser.add_argument("--results", metavar="DIR", help="results folder holding studies.db")


def run_report(args: argparse.Namespace) -> int:
    from ..tune.report import write_report
    from ..tune.storage import default_storage

    checks.input_folder(args.results)
    checks.output_folder(args.out, "--out")
    storage = args.storage or default_storage(args.results)
    names = checks.existing_studies(storage, "--storage" if args.storage else "default storage")
    if args.study not in names:   # before matplotlib is imported (it writes its config folder)
        raise ValueError(f"--study {args.study!r}: no such study in {checks.hidden(storage)}; valid: "
                         f"{', '.join(sorted(names)) or 'none yet (run gemmgen search)'}")
    checks.plotting("gemmgen report")
    for path in write_report(storage, args.study, args.out):
        print(f"wrote {path}")
    return 0


COMMAND = Command("search", "tune kernels for this GPU with Optuna and store the winners", configure, run,
                  description="\n\n".join(__doc__.split("\n\n")[1:]), epilog=EPILOG)
REPORT = Command("report", "plot a search's optimization history and parameter importances",
                 configure_report, run_report, epilog="example:\n  gemmgen report --study h100-4096x4096x4096-NN --out report/")
