"""``gemmgen bench``: time presets or configs against cuBLAS on this GPU: TFLOP/s, ratio to cuBLAS, resources.

Each kernel passes the correctness gate first and runs in an isolated worker process; cuBLAS is
timed in the same run, interleaved with it, in the mode of the kernel's precision class: strict
SGEMM for fp32 (simt, tf32x3), TF32 for tf32, f16/bf16 inputs with fp32 output for the half
families. The table gives each kernel's relative error against float64 beside cuBLAS's.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..base.shape import Shape
from ..kernel.presets import names
from ..kernel.rules import DeviceLike, validate
from ..records.best import resolve_preset
from . import checks
from .command import Command
from .options import apply_overrides, load_config

EPILOG = """examples:
  gemmgen bench --preset all --shape 4096x4096x4096          the progression table v0..v13
  gemmgen bench --preset v10 --preset v13 --shape 1000x1000x1000 --shape 8192x8192x8192
  gemmgen bench --preset v13 --layout NT --json > nt.json      numbers for scripts
  gemmgen bench --preset all --plot progression.png            roofline and % of cuBLAS charts"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", action="append", default=[], metavar="NAME",
                        help=f"a preset to time (repeatable): {', '.join(names())} or 'all' (default: all)")
    parser.add_argument("--config", action="append", default=[], metavar="FILE.json", help="a config to time (repeatable)")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE",
                        help="override a parameter of every timed config")
    parser.add_argument("--shape", action="append", default=[], metavar="MxNxK",
                        help="problem size, e.g. 4096x4096x4096 (repeatable; default 4096x4096x4096)")
    parser.add_argument("--layout", default="NN", choices=("NN", "NT", "TN", "TT"),
                        help="storage of A and B: N row-major, T column-major (default NN)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    parser.add_argument("--rep-ms", type=float, default=100.0, help="timing budget per kernel in ms (default 100)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--plot", metavar="FILE.png", help="also write roofline and %% of cuBLAS charts (needs matplotlib)")
    checks.shapes_may_start_with_minus(parser)   # '--shape -1x2x3' is a bad shape, not a missing value


def configs_from_args(args: argparse.Namespace, target: DeviceLike) -> list:
    """The configs named by --preset/--config on ``target``, with --set applied (v13 resolved as everywhere)."""
    wanted = args.preset or ([] if args.config else ["all"])
    chosen = names() if "all" in wanted else wanted
    configs = [resolve_preset(n, target) for n in chosen] + [load_config(checks.input_file(p, "--config").as_posix())
                                                             for p in args.config]
    return [apply_overrides(c, args.overrides) for c in configs]


def run(args: argparse.Namespace) -> int:
    from ..base import devices
    from ..measure.benchmark import plot, run as run_bench, table, to_json
    from ..measure.worker import MeasureWorker

    # every option is checked before the GPU is looked for and a worker starts
    checks.positive(rep_ms=args.rep_ms)
    checks.at_least(0, device=args.device)
    shapes = [Shape.parse(s, args.layout) for s in (args.shape or ["4096x4096x4096"])]
    for s in args.shape:
        checks.problem_size(s, "--shape")
    for c in configs_from_args(args, "sm_90"):   # bad names, files and overrides, and configs that no GPU
        validate(c, "sm_90")                     # runs: sm_90 (H100) has the most of every resource
    if args.plot:
        checks.output_file(args.plot, "--plot")
        checks.plotting()
    devices.require_gpu(args.device)   # CuPy, the driver, the GPU: one line if one is missing
    with MeasureWorker(args.device) as worker:
        worker.call("ping")
        spec = worker.spec
        configs = configs_from_args(args, spec)
        rows = run_bench(configs, shapes, lambda c, s: worker.call("measure", c, s, rep_ms=args.rep_ms), _progress)
    if args.json:
        json.dump(to_json(rows, spec.to_dict()), sys.stdout, indent=1)
        print()
    else:
        print(f"{spec.name} ({spec.sm_count} SMs); cuBLAS timed in the same run, in each kernel's precision "
              "mode; errors: relative Frobenius error of A@B against float64\n")
        print(table(rows))
    if args.plot:
        plot(rows, spec, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0 if any(r.measurement for r in rows) else 1


def _progress(i: int, n: int, row) -> None:
    m = row.measurement
    if m:
        cub = m.extra.get("cublas_err_fp64")
        what = (f"{m.tflops:.2f} TFLOP/s, {100 * m.ratio:.1f}% of cuBLAS {m.extra.get('baseline', 'fp32')}, "
                f"error {m.rel_error:.1e}" + (f" (cuBLAS {cub:.1e})" if cub is not None else ""))
    else:
        what = f"FAILED {row.failure.kind}: {row.failure.reason}"
    print(f"[{i}/{n}] {row.label} {row.shape}: {what}", file=sys.stderr, flush=True)


COMMAND = Command("bench", "time kernels against cuBLAS on this GPU (TFLOP/s, ratio to cuBLAS, registers, occupancy)", configure, run,
                  description=__doc__.splitlines()[0].split(": ", 1)[1], epilog=EPILOG)
