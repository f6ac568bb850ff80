"""``gemmgen results merge SHIPPED FRESH``: the kernels a ``--timings-only`` run timed join a results file.

Only timings move: the shipped entries stay as they are, and cuBLAS's times join only for shapes the
shipped file lacks (``gemmgen results plan`` scores a grid shape by them). A kernel the shipped file
already has is left alone, unless ``--add-shapes`` (the shapes the fresh run timed and the shipped file
lacks are added: a kernel first timed on a small grid, then on a larger one) or ``--replace`` (the fresh
times replace the shipped ones where both time a shape: kernels whose generated code changed, re-timed
where they were timed before).

A shape whose re-timed kernels moved by more than ``--max-shift`` (geometric mean of new over old, either
way) keeps its old times and takes no fresh time at all, named in one line: a batch timed while something
else ran on the GPU moves every kernel of a shape by whole factors, where a code change moves them by a
few percent. ``--controls FILE`` names kernels whose code did not change, re-timed beside the changed ones:
the geometric mean of their new over old times is the drift between the two runs (clocks, another machine
of the same kind), and every fresh time is divided by it first.

>>> shipped = {"device": {"name": "GPU X"}, "timings": {"kernels": {"k": {"ms": {"1x1x1/NN": 1.0}}}}}
>>> fresh = {"device": {"name": "GPU X"}, "timings": {"kernels": {"k": {"ms": {"1x1x1/NN": 0.8}},
...                                                               "n": {"ms": {"1x1x1/NN": 2.0}}}}}
>>> merge(shipped, fresh, replace=True)
{'k': 1, 'n': 1}
>>> shipped["timings"]["kernels"]["k"]["ms"]
{'1x1x1/NN': 0.8}
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Iterator

EXAMPLES = """examples:
  gemmgen search --grid hopper --family tf32x3 --timings-only --winners-from cand/nvidia-h200.json --results fresh
  gemmgen results merge results/nvidia-h200.json fresh/nvidia-h200.json
  gemmgen search --grid FILE --timings-only --winners-from changed.json --only-timed --results fresh
  gemmgen results merge results/nvidia-h200.json fresh/nvidia-h200.json --replace --controls controls.txt"""


def configure(sub) -> None:
    """Add the ``merge`` action to ``gemmgen results``' sub-parsers."""
    mrg = sub.add_parser("merge", help="add the kernels a --timings-only run timed to a results file",
                         description=__doc__.split("\n\n>>>")[0], epilog=EXAMPLES,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    mrg.add_argument("shipped", help="the results file to add to (results/<gpu>.json)")
    mrg.add_argument("fresh", help="the results file a --timings-only run wrote")
    mrg.add_argument("--out", help="write the merged file here (default: over SHIPPED)")
    mrg.add_argument("--add-shapes", action="store_true", help="also add new shapes to kernels SHIPPED has")
    mrg.add_argument("--replace", action="store_true", help="FRESH's times replace SHIPPED's where both time a shape")
    mrg.add_argument("--max-shift", type=float, default=1.5, metavar="R",
                     help="a shape whose kernels moved more than R times either way keeps its old times "
                          "(default 1.5; 0: take all)")
    mrg.add_argument("--controls", metavar="FILE",
                     help="names of unchanged kernels re-timed beside the changed ones (one a line): the fresh "
                          "times are divided by their drift (geomean new/old) first")


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


def _read(path: str) -> tuple[str, dict]:
    """A results file's text and data; ValueError naming the file where it is not one."""
    from . import checks

    text = checks.input_file(path, "results file").read_text()
    try:
        data = json.loads(text)
        ok = isinstance(data, dict) and all(isinstance(k, dict) and isinstance(k.get("ms"), dict)
                                            for k in data["timings"]["kernels"].values())
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: not a results file ({err})") from None
    if not ok:
        raise ValueError(f"{path}: not a results file (want timings.kernels of name -> {{config, ms}})")
    return text, data


def _controls(path: str, shipped: dict, fresh: dict) -> float:
    """The drift of the kernels named in ``path``; ValueError where none is timed in both files."""
    from . import checks

    names = {line.strip() for line in checks.input_file(path, "--controls").read_text().splitlines() if line.strip()}
    factor, pairs = drift(shipped, fresh, names)
    if not pairs:
        raise ValueError(f"--controls {path}: none of its {len(names)} kernels is timed on a shape both files "
                         "time (name kernels FRESH re-timed where SHIPPED timed them)")
    print(f"drift {factor:.4f} over {pairs} control pairs: fresh times divided by it")
    return factor


def run(args: argparse.Namespace) -> int:
    """``gemmgen results merge``: checks every input before it writes, then writes SHIPPED (or --out) whole."""
    import sys

    from ..base.files import write_atomic
    from . import checks

    if args.max_shift and args.max_shift <= 1:
        raise ValueError(f"--max-shift {args.max_shift:g}: give a ratio above 1 (e.g. 1.5), or 0 to take all")
    checks.output_file(args.out, "--out")
    (text, shipped), (_, fresh) = _read(args.shipped), _read(args.fresh)
    bad = bad_time(fresh)
    if bad:
        raise ValueError(f"{args.fresh}: {bad}")
    if shipped.get("device", {}).get("name") != fresh.get("device", {}).get("name"):
        raise ValueError(f"{args.fresh} holds another GPU's results ({fresh.get('device', {}).get('name')!r}, "
                         f"want {shipped.get('device', {}).get('name')!r})")
    if args.controls:
        scaled(fresh, _controls(args.controls, shipped, fresh))
    keep = shifted(shipped, fresh, args.max_shift) if args.replace or args.add_shapes else {}
    for s, r in sorted(keep.items()):
        print(f"kept the old times of {s}: its kernels re-timed {r:.2f}x their old times (over --max-shift "
              f"{args.max_shift:g}; time it again)", file=sys.stderr)
    without(fresh, set(keep))
    added = merge(shipped, fresh, args.add_shapes, args.replace)
    second = text.split("\n", 2)[1] if text.count("\n") >= 2 else ""
    indent = len(second) - len(second.lstrip(" ")) or 2       # the shipped file's own indentation
    write_atomic(Path(args.out or args.shipped), shipped, indent)   # an interrupted write leaves the old file whole
    what = "added to or replaced in" if args.replace else "added to"
    print(f"{what} {len(added)} kernels" + "".join(f"\n  {n} ({count} shapes)" for n, count in added.items()))
    return 0
