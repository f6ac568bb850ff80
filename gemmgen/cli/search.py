"""``gemmgen search`` and ``gemmgen report``: tune kernels for this GPU with Optuna and keep the winners.

gemmgen search with no shapes tunes about 42 shapes derived from this GPU (--grid auto: six regimes,
waves of tiles, skinny, deep-K, shallow-K, small, ragged, in all four layouts, sized by its SM count),
one study per shape and family, on one worker per GPU of --devices, then times every winner and
preset, and on each shape the built-in kernels the analytic model predicts fastest there, on every
shape for the dispatch (each shape's built-ins and own winners first); all within --budget (wall
time of the whole run; tuning gets 60%, timing the rest). It prints its plan and estimate first
(--dry-run: only that). --shape and --shapes tune just those shapes, each in one study shared by every
GPU, then time them the same way within the same budget (--no-timings: tune only).

A rerun resumes (SQLite in the results folder by default, any RDB URL with --storage, e.g. PostgreSQL
shared by several hosts). Each study first measures the built-in kernels of its family predicted
fastest on its shape and the presets that fit, so a search never ends worse than the best preset;
every candidate passes the correctness gate before it is timed.

--family picks the template families: by default every fp32-accurate family this GPU runs (simt,
and tf32x3 on sm_80 and newer, which have TF32 tensor cores), whatever the mode; or simt, tf32,
tf32x3, skinny, a comma-separated list, or all; each in its own study (<gpu>-<family>-<shape>; simt
keeps <gpu>-<shape>). Winners are stored per accuracy class: simt and tf32x3 are both fp32-accurate
and compete for the shape's one fp32 entry (the faster stays); tf32 winners are stored under
<shape>/<layout>/tf32.
"""
from __future__ import annotations

import argparse

from . import checks, search_grid, search_shapes
from .command import Command
from .search_options import DEFAULT_BUDGET, EPILOG, configure


def run(args: argparse.Namespace) -> int:
    from ..tune.budget import parse_budget

    budget = parse_budget(args.budget or DEFAULT_BUDGET)   # before anything touches the GPU
    families = parse_families(args.family, args.space)     # None: every fp32 family valid on the GPU found
    devices = _devices(args.devices)
    if search_grid.check(args, families):
        checks.storage_url(args.storage)
        checks.output_folder(args.results, "--results")
        return search_grid.run_grid(args, families, devices, budget)
    args.trials = 200 if args.trials is None else args.trials
    args.jobs = 2 if args.jobs is None else args.jobs
    shapes = check(args, families)
    return search_shapes.run_shapes(args, families, shapes, devices, budget)


def parse_families(text: str | None, space: str | None = None) -> list[str | None] | None:
    """The families ``--family`` names, in search order; [None] (the file's own) for --space alone; None
    without either: every fp32 family valid on the GPU (:func:`gemmgen.tune.space.default_families`),
    resolved once the GPU is known (:func:`.search_grid.family_names`), in every mode alike.

    >>> parse_families("tf32x3,simt"), parse_families(None), parse_families("all")[:3]
    (['tf32x3', 'simt'], None, ['simt', 'tf32', 'tf32x3'])
    >>> parse_families("wmma")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --family 'wmma': unknown family wmma; valid: simt, tf32, tf32x3..., a comma-separated list of them, or all
    """
    from ..tune.space import families

    valid = families()
    if text is None:
        return [None] if space else None
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


def check(args: argparse.Namespace, families: list[str | None] | None):
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
    checks.positive(timeout=args.timeout, rep_ms=args.rep_ms)
    target = known(resolve_alias(args.gpu)) if args.gpu else for_arch(DEFAULT_ARCH)
    if args.study is not None and not args.study.strip():
        raise ValueError("--study '': give a name, or leave it out for <gpu>-<shape>")
    checks.storage_url(args.storage)
    checks.output_folder(args.results, "--results")
    for option, path in (("--space", args.space), ("--shapes", args.shapes)):
        if path is not None:
            checks.input_file(path, option)
    families = search_grid.family_names(families, target, args.space)
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
                 configure_report, run_report,
                 description="Plots a study's optimization history and parameter importances as PNG files. It needs\n"
                             "matplotlib, which the plot extra installs: pip install \"gemmgen[plot]\".",
                 epilog="example:\n  gemmgen report --study h100-4096x4096x4096-NN --out report/")
