"""Which matmul plans two results files (or a saved set of plans) disagree on, without a GPU: the plan the
runtime's planner makes (kernel or hand-written route, and the copies) for random untuned shapes and the
set, printed where they differ. What to run before merging new timings into a shipped results file.

    python -m benchmarks.plans_diff OLD/nvidia-h200.json results/nvidia-h200.json --seeds 1-20 --set

``--knob NAME=A,B`` sets a field of gemmgen.runtime.policy.Policy to A for file A's plans and to B for
file B's (give one file twice to see what the field alone changes; on a GPU, benchmarks/ab_plans.py times
the difference):

    python -m benchmarks.plans_diff results/nvidia-h100-80gb-hbm3.json results/nvidia-h100-80gb-hbm3.json --knob fma_floor=0,1

``--save FILE`` writes side B's plans as JSON; such a file may stand for side A later (the plans of
another revision of the code on the same shapes):

    python -m benchmarks.plans_diff results/nvidia-h200.json results/nvidia-h200.json --set --save before.json
    (change the code)
    python -m benchmarks.plans_diff before.json results/nvidia-h200.json --set
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


from benchmarks.knobs import parse_knobs, side_policy
from benchmarks.matmul_vs_cublas import HERE, load_shapes, packed_lds, parse_macs, random_shapes, tuned_keys


def seeds(text: str) -> list[int]:
    """'1-20' or '3,5,8' -> the seeds."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def plan_text(planner, M: int, N: int, K: int, L: str, family: str | None = None) -> str:
    """'kernel', 'kernel copies AB' or 'ROUTE route' (gemv, dots, outer): the planner's plan for packed
    operands of M x N x K in layout L."""
    from gemmgen.runtime.planner import Request

    plan = planner.plan(Request(M, N, K, L, *packed_lds(M, N, K, L), N, family=family))
    if plan.source == "route":
        return f"{plan.route} route"
    return plan.name + (f" copies {plan.copies}" if plan.copies else "")


def saved_plans(path: Path) -> dict[str, str] | None:
    """The plans of a file ``--save`` wrote (shape key -> plan), or None where ``path`` is a results file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data["plans"] if isinstance(data, dict) and isinstance(data.get("plans"), dict) else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", type=Path, help="results file A (e.g. the shipped one before a merge), or plans --save wrote")
    ap.add_argument("b", type=Path, help="results file B")
    ap.add_argument("--seeds", type=seeds, default=seeds("1-20"), help="random seeds, '1-20' or '3,5' (default 1-20)")
    ap.add_argument("--macs", type=parse_macs, default=(27, 37), metavar="LO:HI",
                    help="multiply-adds of the random shapes, 2^LO..2^HI (default 27:37)")
    ap.add_argument("--set", action="store_true", help="also the benchmark set (benchmarks/shapes.toml)")
    ap.add_argument("--family", help="restrict both plans to one family (e.g. simt)")
    ap.add_argument("--knob", action="append", default=[], metavar="NAME=A,B",
                    help="a field of gemmgen.runtime.policy.Policy: A for file A, B for file B")
    ap.add_argument("--save", type=Path, metavar="FILE", help="write side B's plans to FILE (JSON)")
    args = ap.parse_args(argv)
    knobs = parse_knobs(ap, args.knob, "fma_floor=0,1")
    for path in (args.a, args.b):
        if not path.is_file():
            ap.error(f"results file {str(path)!r} does not exist (give a results JSON file, e.g. results/<gpu>.json)")

    from gemmgen.base.devices import known
    from gemmgen.records.store import load_file
    from gemmgen.runtime.library import results_policy
    from gemmgen.runtime.planner import Planner

    def planner(path: Path, side: int) -> Planner:
        try:
            found = load_file(path)
            policy = side_policy(knobs, side, results_policy(found))
        except ValueError as err:   # ResultsError: another GPU's name, another schema, not a results file
            ap.error(str(err).splitlines()[0])
        return Planner(known(found.name), found.entries, found.timings, policy)

    grid = tuned_keys()
    shapes = [s for seed in args.seeds for s in random_shapes(24, seed, grid, args.macs)]
    shapes += load_shapes(HERE / "shapes.toml") if args.set else []
    keys = [f"{M}x{N}x{K}/{L}" for M, N, K, L in shapes]
    plans = []
    for side, path in enumerate((args.a, args.b)):     # each side's planner under its own policy
        saved = saved_plans(path) if side == 0 else None
        if saved is not None:
            missing = [k for k in keys if k not in saved]
            if missing:
                ap.error(f"{path} holds no plan for {missing[0]} (saved with other --seeds, --macs or --set)")
            plans.append([saved[k] for k in keys])
            continue
        p = planner(path, side)
        plans.append([plan_text(p, M, N, K, L, args.family) for M, N, K, L in shapes])
    if args.save:
        args.save.write_text(json.dumps({"results": str(args.b), "plans": dict(zip(keys, plans[1]))}, indent=1))
    changed = 0
    for key, pa, pb in zip(keys, *plans):
        if pa != pb:
            changed += 1
            print(f"{key}\n    A {pa}\n    B {pb}")
    print(f"{changed} of {len(shapes)} plans differ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
