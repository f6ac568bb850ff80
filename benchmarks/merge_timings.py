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

A shape whose re-timed kernels moved by more than ``--max-shift`` (geometric mean of new over old, either way;
default 1.5) keeps its old times and takes no fresh time at all (kernels new to the file, cuBLAS), named in
one line: a batch timed while something else
ran (session 41: every kernel of one H100 shape at 1.3-5.8x, where a template change moves times by a few
percent) would otherwise land in the dispatch. The merged file keeps the shipped file's indentation.

``--controls FILE`` (kernel names, one a line): kernels whose code did not change, re-timed beside the changed
ones on the same shapes; the geometric mean of their new over old times is the drift between the sessions
(clocks, another machine of the kind), and every fresh time is divided by it before the merge (session 41:
0.977 on the H100, 1.006 on the H200). Their own times are merged too, drift removed.

``--out`` writes the merged file elsewhere instead of over the shipped one.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Iterator

from gemmgen.base.files import write_atomic


def log_ratios(shipped: dict, fresh: dict) -> Iterator[tuple[str, str, float]]:
    """(kernel, shape, log of fresh over shipped time) of every pair both files time (shipped times above 0;
    fresh ones are checked by :func:`bad_time`)."""
    have = shipped["timings"]["kernels"]
    for name, k in fresh["timings"]["kernels"].items():
        old = have.get(name, {}).get("ms", {})
        for s, ms in k["ms"].items():
            if old.get(s, 0) > 0:
                yield name, s, math.log(ms / old[s])


def shifted(shipped: dict, fresh: dict, max_shift: float) -> dict[str, float]:
    """Shape -> geometric mean of new/old time over the kernels both files time there, for the shapes where it
    lies outside [1/max_shift, max_shift] (none with max_shift 0)."""
    logs: dict[str, list[float]] = {}
    for _, s, x in log_ratios(shipped, fresh):
        logs.setdefault(s, []).append(x)
    means = {s: math.exp(sum(v) / len(v)) for s, v in logs.items()}
    return {s: r for s, r in means.items() if max_shift and not 1 / max_shift <= r <= max_shift}


def drift(shipped: dict, fresh: dict, controls: set[str]) -> tuple[float, int]:
    """(geometric mean of fresh/shipped time over the controls' pairs both files time, how many pairs)."""
    logs = [x for name, _, x in log_ratios(shipped, fresh) if name in controls]
    return (math.exp(sum(logs) / len(logs)) if logs else 1.0), len(logs)


def scaled(fresh: dict, factor: float) -> None:
    """Every time of ``fresh`` (its kernels' and cuBLAS's) divided by ``factor`` (in place)."""
    for k in fresh["timings"]["kernels"].values():
        k["ms"] = {s: ms / factor for s, ms in k["ms"].items()}
    for precision, times in fresh["timings"].get("cublas", {}).items():
        fresh["timings"]["cublas"][precision] = {s: ms / factor for s, ms in times.items()}


def without(fresh: dict, shapes: set[str]) -> None:
    """``fresh`` with no time of ``shapes`` left (in place): a disturbed shape joins the file in no way."""
    for k in fresh["timings"]["kernels"].values():
        k["ms"] = {s: ms for s, ms in k["ms"].items() if s not in shapes}
    for times in fresh["timings"].get("cublas", {}).values():
        for s in shapes & set(times):
            del times[s]


def bad_time(results: dict) -> str | None:
    """A line naming the first kernel time of ``results`` that is not a positive finite number, or None."""
    for name, k in results["timings"]["kernels"].items():
        for s, ms in k["ms"].items():
            if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not 0 < ms < math.inf:
                return f"{name} on {s}: time {ms!r} (want a positive number of ms)"
    return None


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
    ap.add_argument("--max-shift", type=float, default=1.5, metavar="R",
                    help="--replace: a shape whose kernels moved more than R times either way keeps its old "
                         "times (default 1.5; 0: replace all)")
    ap.add_argument("--controls", metavar="FILE",
                    help="names of unchanged kernels re-timed beside the changed ones (one a line): the fresh "
                         "times are divided by their drift (geomean new/old) first")
    args = ap.parse_args(argv)
    if args.max_shift and args.max_shift <= 1:
        print(f"merge_timings: --max-shift {args.max_shift:g}: give a ratio above 1 (e.g. 1.5), or 0 to replace all",
              file=sys.stderr)
        return 2
    try:
        texts = [open(p).read() for p in (args.shipped, args.fresh)]
        shipped, fresh = (json.loads(t) for t in texts)
        for path, data in ((args.shipped, shipped), (args.fresh, fresh)):
            if not isinstance(data, dict) or not all(isinstance(k, dict) and isinstance(k.get("ms"), dict)
                                                     for k in data["timings"]["kernels"].values()):
                raise ValueError(f"{path}: not a results file (want timings.kernels of name -> {{config, ms}})")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        print(f"merge_timings: {e}", file=sys.stderr)
        return 2
    bad = bad_time(fresh)
    if bad:
        print(f"merge_timings: {args.fresh}: {bad}", file=sys.stderr)
        return 2
    if shipped.get("device", {}).get("name") != fresh.get("device", {}).get("name"):
        print(f"merge_timings: {args.fresh} holds another GPU's results ({fresh.get('device', {}).get('name')!r})",
              file=sys.stderr)
        return 2
    if args.controls:
        try:
            controls = {line.strip() for line in open(args.controls) if line.strip()}
        except (OSError, ValueError) as e:
            print(f"merge_timings: {e}", file=sys.stderr)
            return 2
        factor, pairs = drift(shipped, fresh, controls)
        if not pairs:
            print(f"merge_timings: --controls {args.controls}: none of its {len(controls)} kernels is timed on a "
                  "shape both files time (name kernels FRESH re-timed where SHIPPED timed them)", file=sys.stderr)
            return 2
        scaled(fresh, factor)
        print(f"drift {factor:.4f} over {pairs} control pairs: fresh times divided by it")
    keep = shifted(shipped, fresh, args.max_shift) if args.replace or args.add_shapes else {}
    for s, r in sorted(keep.items()):
        print(f"kept the old times of {s}: its kernels re-timed {r:.2f}x their old times (over --max-shift "
              f"{args.max_shift:g}; time it again)", file=sys.stderr)
    without(fresh, set(keep))
    added = merge(shipped, fresh, args.add_shapes, args.replace)
    second = texts[0].split("\n", 2)[1] if texts[0].count("\n") >= 2 else ""
    indent = len(second) - len(second.lstrip(" ")) or 2       # the shipped file's own indentation
    write_atomic(Path(args.out or args.shipped), shipped, indent)   # an interrupted write leaves the old file whole
    what = "added to or replaced in" if args.replace else "added to"
    print(f"{what} {len(added)} kernels" + "".join(f"\n  {n} ({count} shapes)" for n, count in added.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
