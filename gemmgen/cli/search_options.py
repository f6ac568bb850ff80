"""The options of ``gemmgen search``, grouped by the job they serve (what to tune, how long, timing,
re-timing, where), and its examples with their times."""
from __future__ import annotations

import argparse
import re

DEFAULT_BUDGET = "20m"   # long enough to tune every regime a little and time the winners on every shape


EPILOG = """examples (times on one GPU; --dry-run prints the plan and its estimate first):
  gemmgen search --gpu rtx3090                           tune this GPU's derived shapes (simt and tf32x3),
                                                         then time the winners and the built-ins predicted
                                                         fastest for dispatch: 20 min (the default budget)
  gemmgen search --budget 1h --family simt               an hour, SIMT kernels only
  gemmgen search --budget 10m --dry-run --json           the plan of a 10-minute run as JSON, no GPU needed
                                                         with --gpu NAME
  gemmgen search --budget 2h --devices 0,1,2,3           one worker per GPU: four times the trials in 2 h
  gemmgen search --storage postgresql://user@db/gemmgen --budget 1h   several hosts, same command on each
  gemmgen search --shape 4096x4096x4096 --budget 5m      one shape, a study per family, then its timings
  gemmgen search --grid hopper --family all --budget 3h  the shipped H100/H200 grid (140 shapes)
  gemmgen search --timings-only --winners-from h200.json --grid hopper --family all   re-time an H200's
                                                         winners on this H100 (a copy of its results file)
  gemmgen report --study h100-4096x4096x4096-NN --out report/"""


def configure(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to tune (default: shapes derived from this GPU, every regime and layout)")
    a = what.add_argument
    a("--gpu", help="the GPU you mean to tune (rtx3090, a100, h100, ...); must match the detected one; with "
      "--dry-run, the GPU to plan for")
    a("--family", metavar="NAME[,NAME]", help="template families (default: every fp32 family this GPU runs: simt, "
      "and tf32x3 on sm_80 and newer): simt, tf32, tf32x3, skinny, a comma-separated list, or all; each shape is "
      "tuned once per family, in its own study")
    a("--grid", metavar="NAME|FILE|auto", help="the shapes: auto (default: derived from this GPU's SM count), a "
      "shipped grid (search/grid-NAME.json: hopper, ...) or a file; tuned, then timed for dispatch")
    a("--shape", action="append", default=[], metavar="MxNxK[/LAYOUT]", help="tune only this shape, in one study "
      "per family shared by every GPU of --devices, store its winner, then time the winners, presets and "
      "built-ins on the shapes given (repeatable)")
    a("--shapes", metavar="FILE", help='as --shape, from a JSON file {"shapes": ["MxNxK/NN", ...]}')
    a("--space", metavar="FILE", help="search space JSON (default: the shipped one of the family for the GPU's "
      "architecture); its family is searched")
    limits = parser.add_argument_group("how long")
    a = limits.add_argument
    a("--budget", metavar="DURATION", help=f"wall time for the whole run, all GPUs together: 90s, 10m, 1h, 1h30m "
      f"(default {DEFAULT_BUDGET}); tuning gets 60%%, timing the winners the rest")
    a("--trials", type=int, help="most measured trials per shape and family, presets and warm starts included "
      "(default 200; the budget usually ends a shape sooner)")
    a("--timeout", type=float, metavar="S", help="most seconds of tuning per shape and family")
    a("--patience", type=int, metavar="N", help="stop a shape after N sampled trials without a 1%% gain "
      "(default 8; 0 never; not with --shape)")
    a("--extend-below", type=float, metavar="RATIO", help="a shape whose best is below RATIO x cuBLAS when its "
      "trials run out may go on to twice --trials (default 1.2; 0 never; not with --shape)")
    a("--sampler", default="tpe", choices=("tpe", "random", "cmaes"), help="Optuna sampler (default tpe)")
    a("--seed", type=int, default=0, help="sampler seed (default 0)")
    timing = parser.add_argument_group("time the winners for dispatch (after tuning; each shape's predicted-fastest "
                                       "built-ins and own winners first)")
    a = timing.add_argument
    a("--no-timings", action="store_true", help="tune only (the whole budget)")
    a("--timings-only", action="store_true", help="only time the studies' winners, the presets and the built-ins "
      "predicted fastest on every shape (not with --shape)")
    a("--rep-ms", type=float, metavar="MS", help="milliseconds of timed runs per kernel and shape (default 20)")
    a("--top", type=int, metavar="K", help="on each shape, time only the K kernels the dispatch predicts fastest "
      "there (fitted to --winners-from's timings, else this GPU's results file), besides its built-ins and own "
      "winners; default all (not with --shape)")
    retime = parser.add_argument_group("re-time another GPU's kernels (with --timings-only)")
    a = retime.add_argument
    a("--winners-from", metavar="FILE", help="time the kernels of another GPU's results file (its timings and "
      "entries, of --family's families) here instead, e.g. an H200's winners on an H100")
    a("--only-timed", action="store_true", help="time each kernel only on the shapes FILE times it on: re-time "
      "kernels whose code changed, FILE holding just them, --results a fresh folder; "
      "`gemmgen results merge --replace` stores the times")
    where = parser.add_argument_group("where it runs and what it keeps")
    a = where.add_argument
    a("--devices", default="0", help="GPU indices, comma-separated: one worker per GPU (default 0)")
    a("--jobs", type=int, help="compile workers per GPU preparing upcoming candidates (default: the CPU cores per "
      "GPU, 2 to 8)")
    a("--storage", help="Optuna RDB URL (default sqlite:///<results>/studies.db); a rerun resumes its studies")
    a("--study", help="study name (default <gpu>-<shape>, <gpu>-<family>-<shape> for families other than simt)")
    a("--results", metavar="DIR", help="results folder (default: the user folder; $GEMMGEN_RESULTS)")
    a("--json", action="store_true", help="print the outcome (or, with --dry-run, the plan) as JSON")
    a("--dry-run", action="store_true", help="print the plan and its estimate, and exit (no GPU needed with --gpu)")
    # "-1x2x3" is a bad shape to name, not an option: let argparse hand it to --shape
    parser._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d+x")
