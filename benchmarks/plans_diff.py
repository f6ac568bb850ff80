"""Which matmul plans two results files disagree on, without a GPU: the kernel (and the copies) each
file's dispatch picks for random untuned shapes and the set, printed where they differ. What to run
before merging new timings into a shipped results file.

    python -m benchmarks.plans_diff OLD/nvidia-h200.json results/nvidia-h200.json --seeds 1-20 --set

``--knob NAME=A,B`` sets a constant of gemmgen.runtime.dispatch, .staging or .predict to A for file A's
plans and to B for file B's (give one file twice to see what the constant alone changes; on a GPU,
benchmarks/ab_plans.py times the difference):

    python -m benchmarks.plans_diff results/nvidia-h100-80gb-hbm3.json results/nvidia-h100-80gb-hbm3.json --knob FMA_FLOOR=0,1
"""
from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.knobs import knob_owners, parse_knobs, restored, set_side
from benchmarks.matmul_vs_cublas import HERE, load_shapes, packed_lds, parse_macs, plan_name, random_shapes, tuned_keys


def seeds(text: str) -> list[int]:
    """'1-20' or '3,5,8' -> the seeds."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="results file A (e.g. the shipped one before a merge)")
    ap.add_argument("b", type=Path, help="results file B")
    ap.add_argument("--seeds", type=seeds, default=seeds("1-20"), help="random seeds, '1-20' or '3,5' (default 1-20)")
    ap.add_argument("--macs", type=parse_macs, default=(27, 37), metavar="LO:HI",
                    help="multiply-adds of the random shapes, 2^LO..2^HI (default 27:37)")
    ap.add_argument("--set", action="store_true", help="also the benchmark set (benchmarks/shapes.toml)")
    ap.add_argument("--family", help="restrict both dispatches to one family (e.g. simt)")
    ap.add_argument("--knob", action="append", default=[], metavar="NAME=A,B",
                    help="a constant of gemmgen.runtime.dispatch, .staging or .predict: A for file A, B for file B")
    args = ap.parse_args(argv)
    knobs = parse_knobs(ap, args.knob, "FMA_FLOOR=0,1")
    for path in (args.a, args.b):
        if not path.is_file():
            ap.error(f"results file {str(path)!r} does not exist (give a results JSON file, e.g. results/<gpu>.json)")

    from gemmgen.base.devices import known
    from gemmgen.records.store import load_file
    from gemmgen.runtime.library import KernelLibrary

    owners = knob_owners(ap, knobs)

    def library(path: Path) -> KernelLibrary:
        try:
            found = load_file(path)
        except ValueError as err:   # ResultsError: another GPU's name, another schema, not a results file
            ap.error(str(err).splitlines()[0])
        return KernelLibrary(known(found.name), found.entries, timings=found.timings)

    def plan(lib: KernelLibrary, M: int, N: int, K: int, L: str) -> str:
        copy_a, copy_b, fit = lib.staged_fit(M, N, K, L, *packed_lds(M, N, K, L), N, family=args.family)
        return plan_name((fit, copy_a, copy_b)) if fit is not None else "(no timed kernel)"

    grid = tuned_keys()
    shapes = [s for seed in args.seeds for s in random_shapes(24, seed, grid, args.macs)]
    shapes += load_shapes(HERE / "shapes.toml") if args.set else []
    plans = []
    with restored(owners):
        for side, path in enumerate((args.a, args.b)):     # each side's library fitted under its own constants
            set_side(knobs, owners, side)
            lib = library(path)
            plans.append([plan(lib, M, N, K, L) for M, N, K, L in shapes])
    changed = 0
    for (M, N, K, L), pa, pb in zip(shapes, *plans):
        if pa != pb:
            changed += 1
            print(f"{M}x{N}x{K}/{L}\n    A {pa}\n    B {pb}")
    print(f"{changed} of {len(shapes)} plans differ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
