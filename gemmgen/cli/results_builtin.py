"""``gemmgen results builtin``: choose the built-in kernels (what a GPU with no results runs) and fit the
analytic model's coefficients from tuned GPUs' results files, into ``search/builtin.json``."""
from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = """Choose the built-in kernels and fit the analytic time model from tuned GPUs' timings.

The built-in kernels serve every GPU that has no tuned results: matmul predicts each of them on that
GPU with the analytic model (docs/DESIGN.md) and runs the fastest. They are chosen greedily from the
kernels timed on the given GPUs so that together they come nearest each grid shape's best time (48 of
any family, 16 SIMT, 12 mma.sync); the model's coefficients are fitted to the first GPU's timings."""
EPILOG = """examples:
  gemmgen results builtin h100 h200                        print what would be written
  gemmgen results builtin h100 h200 --out search/builtin.json"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gpus", nargs="+", metavar="GPU", help="GPUs whose results hold timings (name, alias or file stem)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the portfolio here (default: print a summary only)")


def run(args: argparse.Namespace) -> int:
    from ..base.devices import known
    from ..records.lookup import load_device
    from ..runtime import builtin

    tuned, names = [], []
    for gpu in args.gpus:
        found = load_device(gpu, args.results, missing_ok=False)
        if not found.timings.of_precision("fp32"):
            raise ValueError(f"{gpu}: its results hold no fp32 timings; run `gemmgen search` there first")
        tuned.append((known(found.name), found.timings))
        names.append(found.path.name if found.path else found.name)
    kernels, coef, sizes = builtin.derive(tuned)
    if args.out is not None:
        builtin.write(args.out, kernels, coef, names, sizes)
    print(f"{len(kernels)} kernels ({', '.join(f'{k} {v}' for k, v in sizes.items())}) from {', '.join(names)}"
          + (f"; written to {args.out}" if args.out else ""))
    for kind, values in coef.items():
        print(f"  {kind:7} " + " ".join(f"{x:.4f}" for x in values))
    return 0
