"""Add the kernels a ``--timings-only`` run timed to a shipped results file: their timings only (the
shipped entries and cuBLAS times stay as they are; cuBLAS's times of shapes the shipped file lacks are
added, for benchmarks/dispatch_loo.py and ``gemmgen results plan``), so new candidate kernels join the
dispatch.

    # a results file whose timings hold the candidate configs (no times), then time them on the grid:
    gemmgen search --grid hopper --family tf32x3 --timings-only --winners-from cand/nvidia-h100-80gb-hbm3.json \\
        --results fresh
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json fresh/nvidia-h100-80gb-hbm3.json
    python benchmarks/ab_plans.py --results-a old/nvidia-h100-80gb-hbm3.json \\
        --results-b results/nvidia-h100-80gb-hbm3.json --random 24 --seed 13 --only-changed

A kernel already in the shipped file is left alone, unless ``--add-shapes``: then the shapes the fresh
run timed and the shipped file lacks are added to it (a kernel first timed on a small grid, then on a
larger one); or ``--replace``: then the fresh times replace the shipped ones where both time a shape
(kernels whose code changed, re-timed where they were timed before):

    gemmgen search --grid FILE --timings-only --winners-from changed.json --only-timed --results fresh
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json fresh/nvidia-h100-80gb-hbm3.json --replace

``--out`` writes the merged file elsewhere instead of over the shipped one.
"""
from __future__ import annotations

import argparse
import json
import sys


def merge(shipped: dict, fresh: dict, add_shapes: bool = False, replace: bool = False) -> dict[str, int]:
    """Add fresh's timed kernels that shipped lacks to shipped (in place); with ``add_shapes`` the shapes
    of kernels it has that it lacks, with ``replace`` fresh's times of the shapes both time; kernel name
    -> how many shapes were added or replaced."""
    have, added = shipped["timings"]["kernels"], {}
    for name, k in fresh["timings"]["kernels"].items():
        if name not in have:
            if k["ms"]:
                have[name], added[name] = k, len(k["ms"])
            continue
        new = {s: ms for s, ms in k["ms"].items()
               if (add_shapes and s not in have[name]["ms"]) or (replace and s in have[name]["ms"])}
        if new:
            have[name]["ms"].update(new)
            if replace and "resident" in k:
                have[name]["resident"] = k["resident"]
            added[name] = len(new)
    for precision, times in fresh["timings"].get("cublas", {}).items():   # new shapes only
        mine = shipped["timings"].setdefault("cublas", {}).setdefault(precision, {})
        for s, ms in times.items():
            mine.setdefault(s, ms)
    return added


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shipped", help="the results file to add to (results/<gpu>.json)")
    ap.add_argument("fresh", help="the results file a --timings-only run wrote")
    ap.add_argument("--out", help="write the merged file here (default: over SHIPPED)")
    ap.add_argument("--add-shapes", action="store_true", help="also add new shapes to kernels SHIPPED has")
    ap.add_argument("--replace", action="store_true", help="FRESH's times replace SHIPPED's where both time a shape")
    args = ap.parse_args(argv)
    try:
        shipped, fresh = (json.load(open(p)) for p in (args.shipped, args.fresh))
    except (OSError, ValueError) as e:
        print(f"merge_timings: {e}", file=sys.stderr)
        return 2
    if shipped.get("device", {}).get("name") != fresh.get("device", {}).get("name"):
        print(f"merge_timings: {args.fresh} holds another GPU's results ({fresh.get('device', {}).get('name')!r})",
              file=sys.stderr)
        return 2
    added = merge(shipped, fresh, args.add_shapes, args.replace)
    with open(args.out or args.shipped, "w") as fh:
        json.dump(shipped, fh, indent=2)
        fh.write("\n")
    what = "added to or replaced in" if args.replace else "added to"
    print(f"{what} {len(added)} kernels" + "".join(f"\n  {n} ({count} shapes)" for n, count in added.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
