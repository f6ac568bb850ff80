"""``gemmgen search`` and ``gemmgen report``: tune kernels for this GPU with Optuna and keep the winners.

A search resumes its study when run again (SQLite in the results folder by default, any RDB URL
with --storage, e.g. PostgreSQL shared by several hosts). Presets that fit are measured first, so a
search never ends worse than the best preset; every candidate passes the correctness gate before it
is timed; the top 5 are re-timed against cuBLAS before the winner is stored.

--family picks the template family: simt (default), tf32 or tf32x3 (tensor cores, sm_80 and newer),
a comma-separated list, or all. Families are searched in turn, each in its own study
(<gpu>-<family>-<shape>; simt keeps <gpu>-<shape>) with the full --trials budget. Winners are
stored per accuracy class: simt and tf32x3 are both fp32-accurate and compete for the shape's one
fp32 entry (the faster stays); tf32 winners are stored beside it, under <shape>/<layout>/tf32.

--grid tunes every shape of a grid (search/grid-NAME.json) on one worker per GPU of --devices, each
shape and family in its own study warm-started from its neighbours' winners, with --trials per
shape; then it times every winner on every grid shape for dispatch (see the grid options).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import checks, search_grid
from .command import Command

EPILOG = """examples:
  gemmgen search --gpu h100 --trials 200                 tune 4096^3 NN on this H100
  gemmgen search --family tf32x3 --trials 100            fp32-accurate 3xTF32 tensor-core kernels
  gemmgen search --family all --trials 100               simt, tf32 and tf32x3 in turn
  gemmgen search --shape 1000x1000x1000 --shape 8192x8192x8192/NT --trials 100
  gemmgen search --devices 0,1 --trials 400              one worker per GPU, one shared study
  gemmgen search --storage postgresql://user@db/gemmgen  several hosts, same command on each
  gemmgen search --grid auto --family all --trials 24    tune this GPU's shipped grid (hopper: 89 shapes)
  gemmgen search --grid hopper --family all --devices 0,1,2,3 --timeout 1800   4 GPUs, then timings
  gemmgen search --grid hopper --family all --timings-only --winners-from h200.json   re-time an H200's
                                                         winners on this H100 (a copy of its results file)
  gemmgen report --study h100-4096x4096x4096-NN --out report/"""


def configure(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--gpu", help="the GPU you mean to tune (rtx3090, a100, h100, ...); must match the detected one")
    a("--family", metavar="NAME[,NAME]", help="template family: simt (default; all with --winners-from), tf32, tf32x3, "
      "a comma-separated list, or all; each is searched in turn in its own study with the full --trials budget")
    a("--trials", type=int, help="measured trials per study, resumes included (default 200; with --grid, "
      "per shape and family, enqueued warm starts included: default 24)")
    a("--timeout", type=float, help="stop each worker after this many seconds (--grid: the whole tuning stage)")
    a("--shape", action="append", default=[], metavar="MxNxK[/LAYOUT]", help="shape to tune (repeatable)")
    a("--shapes", metavar="FILE", help='JSON file {"shapes": ["MxNxK/NN", ...]} (default: search/shapes.json)')
    a("--space", metavar="FILE", help="search space JSON (default: the shipped one of the family for the GPU's "
      "architecture); its family is searched")
    a("--sampler", default="tpe", choices=("tpe", "random", "cmaes", "grid"), help="Optuna sampler (default tpe)")
    a("--seed", type=int, default=0, help="sampler seed (default 0)")
    a("--storage", help="Optuna RDB URL (default sqlite:///<results>/studies.db)")
    a("--study", help="study name (default <gpu>-<shape>, <gpu>-<family>-<shape> for families other than simt)")
    a("--devices", default="0", help="GPU indices, comma-separated: one search process per GPU (default 0)")
    a("--jobs", type=int, help="compile workers preparing upcoming candidates (default 2; with --grid, "
      "the CPU cores per GPU, at most 8)")
    a("--results", metavar="DIR", help="results folder (default: the user folder; $GEMMGEN_RESULTS)")
    a("--json", action="store_true", help="print the winners as JSON")
    search_grid.add_options(parser)


def run(args: argparse.Namespace) -> int:
    if args.family is None and args.winners_from:
        args.family = "all"   # another GPU's kernels are timed whatever their family, unless --family says
    families = parse_families(args.family, args.space)   # before anything touches the GPU
    devices = _devices(args.devices)
    if search_grid.check(args):
        checks.storage_url(args.storage)
        checks.output_folder(args.results, "--results")
        return search_grid.run_grid(args, families, devices)
    args.trials = 200 if args.trials is None else args.trials
    args.jobs = 2 if args.jobs is None else args.jobs
    shapes = check(args, families)

    from ..base.devices import detect, fingerprint
    from ..kernel.accepts import family_refuses
    from ..tune.driver import run_search
    from ..tune.gpu import GpuMeasure, GpuRetime, NvrtcPrepare
    from ..tune.plan import make_plan, match_gpu

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)   # the progress line says it once per trial
    spec = detect(devices[0])   # raises NoGpu: CuPy, the driver or the GPU is missing
    match_gpu(args.gpu, spec.name)
    fp, winners = fingerprint(devices[0]), []
    for family in families:
        for shape in shapes:
            refused = family_refuses(family or "", shape.M, shape.N)
            if refused:   # e.g. --family all on a square shape: the skinny family has nothing to try
                print(f"search: no {family} study for {shape}: {refused}", file=sys.stderr)
                continue
            plan = make_plan(shape, spec, trials=args.trials, storage=args.storage, study=args.study,
                             several_shapes=len(shapes) > 1, space=args.space, results=args.results,
                             family=family, several_families=len(families) > 1,
                             sampler=args.sampler, seed=args.seed, timeout=args.timeout, jobs=args.jobs)
            print(f"search {plan.study}: {spec.name}, {plan.space.family}, {shape}, {args.trials} trials, "
                  f"{args.sampler}", file=sys.stderr)
            t0 = time.monotonic()
            result = run_search(plan, GpuMeasure(), prepare=NvrtcPrepare(spec.arch), retime=GpuRetime(devices[0]),
                                devices=devices, observer=_Bar())
            print(file=sys.stderr)
            winners.append(_store(result, plan, fp, args.results, time.monotonic() - t0))
    _report(winners, args.json)
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
    shapes = [Shape.parse(s) for s in args.shape] or default_shapes(args.shapes)
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
    """A progress line on stderr, redrawn in place on a terminal, printed every 10 s otherwise."""

    def __init__(self):
        self.tty, self.last = sys.stderr.isatty(), 0.0

    def __call__(self, progress) -> None:
        now = time.monotonic()
        if self.tty:
            print(f"\r{progress.line():<100}", end="", file=sys.stderr, flush=True)
        elif now - self.last >= 10:
            print(progress.line(), file=sys.stderr, flush=True)
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
