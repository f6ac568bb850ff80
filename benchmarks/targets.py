"""The release tables in one command, and their verdicts against the targets.

    python -m benchmarks.targets run --out runs/h100            # every table (about 20 minutes on an H200)
    python -m benchmarks.targets run --out runs/h100 --only set simt layouts   # some (a device call's 10 minutes)
    python -m benchmarks.targets summary runs/h100 [--json]     # the verdicts of what the folder holds

``run`` calls benchmarks/matmul_vs_cublas.py once a table (its JSON to OUT/<table>.json, its printout to
OUT/<table>.txt; an earlier JSON of the table is removed first), notes each table's commit (with
"-dirty" where the tree differs from it), the hash of the code it ran (``tree_code``: the same at that
commit's checkout, whatever git metadata a copy of the tree carried), date and exit status in
OUT/meta.json, then prints the
summary. Tables (TABLES below):

- set: the 15 shapes of benchmarks/shapes.toml; its 12 NN rows judged (geomean >= 1.5x, none under 1.0x), and ``layouts``
  judges its 4096^3 NT, TN and TT rows (each >= 1.4x);
- simt: the set with the dispatch restricted to the SIMT family (NN rows: >= 0.95x, none under 0.8x);
- outsider, random, launch: shapes outside the set and the grids (>= 1.3x, none under 0.9x): the outsider
  set chosen by another hand, random products of 2^27..2^37 and of 2^15..2^27 multiply-adds (--seed);
- gemv, small, edge: the benchmark files of matrix-vector, tiny-C and short-K products, reported unjudged.

Every row of every table is also held to the accuracy gate (gemmgen.measure.gate.allowed: at most 1.5x
SGEMM's error against float64, within the fp32 floor and ceiling; a NaN error fails). A judged table whose
run was cut short (its JSON not marked complete) is "incomplete", not met. ``summary`` exits 0 where every
judged table is there, complete and met and no row is over the gate, 1 otherwise (``run`` also where a
table's run failed), 2 on bad input.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent

from benchmarks.matmul_vs_cublas import geomean   # the tables' own geometric mean


class Table(NamedTuple):
    """A table: the rows of ``source``'s run (matmul_vs_cublas.py with ``args``) in ``layouts`` (None: all),
    judged by geomean and lowest ratio where ``geomean``/``lowest`` are given."""

    source: str
    args: tuple
    layouts: tuple | None = None
    geomean: float | None = None
    lowest: float | None = None


RANDOM = ("--random", "24")
TABLES = {
    "set": Table("set", ("--rep-ms", "100"), ("NN",), 1.5, 1.0),
    "layouts": Table("set", (), ("NT", "TN", "TT"), None, 1.4),
    "simt": Table("simt", ("--family", "simt", "--rep-ms", "100"), ("NN",), 0.95, 0.8),
    "outsider": Table("outsider", ("--shapes", str(HERE / "outsider.toml"), "--rep-ms", "50"), None, 1.3, 0.9),
    "random": Table("random", RANDOM + ("--rep-ms", "50"), None, 1.3, 0.9),
    "launch": Table("launch", RANDOM + ("--macs", "15:27", "--rep-ms", "30"), None, 1.3, 0.9),
    "gemv": Table("gemv", ("--shapes", str(HERE / "gemv.toml"), "--rep-ms", "40")),
    "small": Table("small", ("--shapes", str(HERE / "small.toml"), "--rep-ms", "40")),
    "edge": Table("edge", ("--shapes", str(HERE / "edge.toml"), "--rep-ms", "40")),
}
SEEDS = (1, 2)   # random and launch: --seed (repeatable) replaces them
PROGRAM = (sys.executable, "-m", "benchmarks.matmul_vs_cublas")   # run from the repository root (cwd below)
FIELDS = ("shape", "layout", "ratio", "err_gemmgen", "err_cublas")   # what the summary reads of a row


def tree_commit(where: Path = HERE) -> str:
    """The commit the tables ran at, with "-dirty" where the working tree differs from it (a copy of a tree
    sent with another checkout's git metadata, or uncommitted changes); "" outside git."""
    found = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=where,
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else ""


CODE = ("gemmgen", "templates", "search", "results", "benchmarks")   # what decides what a table runs and times
BUILT = (".pyc", ".pyo", ".cubin", ".lock", ".part", "~")        # outputs and leftovers, not code


def tree_code(root: Path = HERE.parent) -> str:
    """12 hex digits of a SHA-256 over the files of :data:`CODE` (names and bytes; caches, build outputs
    and package metadata left out): the code a run timed, whatever git metadata its copy of the tree
    carried. The same at a commit's checkout.

    >>> len(tree_code()), tree_code() == tree_code()
    (12, True)
    """
    digest = hashlib.sha256()
    for top in CODE:
        for path in sorted((root / top).rglob("*")):
            if (path.is_file() and not path.name.endswith(BUILT)
                    and not any(p == "__pycache__" or p.endswith(".egg-info") for p in path.parts)):
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def seed_flags(seeds: list[int]) -> list[str]:
    """``--seed S`` for each seed, the random tables' arguments.

    >>> seed_flags([3, 5])
    ['--seed', '3', '--seed', '5']
    """
    return [a for s in seeds for a in ("--seed", str(s))]


def commands(names: list[str], out: Path, seeds: list[int], program: tuple[str, ...] = PROGRAM
             ) -> list[tuple[str, list[str]]]:
    """(source, argv) of each run the tables ``names`` need, each source once, in TABLES' order; ``program``
    is the command line that times a table (matmul_vs_cublas.py, or a stand-in)."""
    sources = []
    for name, t in TABLES.items():
        if name in names and t.source not in sources:
            sources.append(t.source)
    runs = []
    for source in sources:
        args = list(TABLES[source].args)
        if "--random" in args:
            args += seed_flags(seeds)
        runs.append((source, [*program, *args, "--json", str(out / f"{source}.json")]))
    return runs


def judge(name: str, run: dict | None) -> dict:
    """One table's line of the summary: rows, geomean (and each seed's), lowest (its shape), target, verdict:
    met / missed / incomplete (its run was cut short) / not run for judged tables; "-" or inaccurate else."""
    from gemmgen.measure.gate import allowed

    t = TABLES[name]
    line = {"table": name, "target": target_text(t), "judged": t.lowest is not None}
    mine = [r for r in (run or {}).get("rows", []) if t.layouts is None or r["layout"] in t.layouts]
    if not mine:
        return {**line, "rows": 0, "verdict": ("not run" if run is None else "no rows") if line["judged"] else "-"}
    low = min(mine, key=lambda r: r["ratio"])
    # not <=: a NaN error (an output never written) is no pass
    inaccurate = [f"{r['shape']} {r['layout']}" for r in mine if not r["err_gemmgen"] <= allowed("fp32", r["err_cublas"])]
    g = geomean([r["ratio"] for r in mine])
    seeds = sorted({r["seed"] for r in mine if r.get("seed") is not None})
    met = (t.geomean is None or g >= t.geomean) and (t.lowest is None or low["ratio"] >= t.lowest)
    if inaccurate:
        verdict = "inaccurate"
    elif not line["judged"]:
        verdict = "-"
    else:
        verdict = "incomplete" if not run.get("complete") else "met" if met else "missed"
    return {**line, "rows": len(mine), "geomean": g, "lowest": low["ratio"], "lowest_shape": f"{low['shape']} {low['layout']}",
            "seeds": {s: geomean([r["ratio"] for r in mine if r.get("seed") == s]) for s in seeds},
            "inaccurate": inaccurate, "verdict": verdict}


def target_text(t: Table) -> str:
    parts = ([f"geomean >= {t.geomean}x"] if t.geomean else []) + ([f"none under {t.lowest}x"] if t.lowest else [])
    return ", ".join(parts) or "-"


def _row(r: dict) -> dict:
    """The fields the summary reads of a row, checked: ratios positive and finite, errors numbers."""
    row = {k: r[k] for k in FIELDS}
    row["seed"] = r.get("seed")
    if not (isinstance(row["ratio"], (int, float)) and 0 < row["ratio"] < math.inf):
        raise ValueError(f"row {row['shape']} {row['layout']}: ratio {row['ratio']!r} is no positive number")
    for key in ("err_gemmgen", "err_cublas"):
        if not isinstance(row[key], (int, float)):
            raise ValueError(f"row {row['shape']} {row['layout']}: {key} {row[key]!r} is no number")
    return row


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None


def summary(folder: Path) -> tuple[dict, list[dict]]:
    """(meta, a line per table) of the runs a folder holds; ValueError naming a file that is not a run's JSON."""
    meta = _read(folder / "meta.json") if (folder / "meta.json").exists() else {}
    if not isinstance(meta, dict):
        raise ValueError(f"{folder / 'meta.json'}: not the meta.json that targets.py run writes")
    runs = {}
    for t in TABLES.values():
        path = folder / f"{t.source}.json"
        if t.source not in runs and path.exists():
            data = _read(path)
            try:
                runs[t.source] = {"rows": [_row(r) for r in data["rows"]], "complete": data.get("complete", False)}
                meta.setdefault("device", data.get("device", {}).get("name", "?"))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"{path}: not a JSON of matmul_vs_cublas.py ({type(exc).__name__}: {exc})") from None
    return meta, [judge(name, runs.get(t.source)) for name, t in TABLES.items()]


def markdown(meta: dict, lines: list[dict]) -> str:
    commits = ", ".join(f"{src} {m.get('commit', '?')}" for src, m in meta.get("runs", {}).items()) or "?"
    head = (f"{meta.get('device', '?')}; runs at commits: {commits}\n\n"
            "| table | rows | geomean | lowest | target | verdict |\n|---|---:|---:|---|---|---|\n")
    body = ""
    for x in lines:
        g = f"{x['geomean']:.3f}x" if "geomean" in x else ""
        if x.get("seeds"):
            g += " (seeds " + ", ".join(f"{s}: {v:.3f}x" for s, v in x["seeds"].items()) + ")"
        low = f"{x['lowest']:.2f}x ({x['lowest_shape']})" if "lowest" in x else ""
        extra = f" ({len(x['inaccurate'])} rows over the accuracy gate: {', '.join(x['inaccurate'][:3])})" if x.get("inaccurate") else ""
        body += f"| {x['table']} | {x['rows']} | {g} | {low} | {x['target']} | {x['verdict']}{extra} |\n"
    return head + body


def met(lines: list[dict]) -> bool:
    """Every judged table there and met, and no row of any table over the accuracy gate."""
    return all(x["verdict"] == "met" for x in lines if x["judged"]) and not any(x.get("inaccurate") for x in lines)


def main(argv=None, program: tuple[str, ...] = PROGRAM) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    run = sub.add_parser("run", help="time the tables (a GPU), then print the summary")
    run.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the tables' JSON and printouts")
    run.add_argument("--only", nargs="+", choices=list(TABLES), default=list(TABLES), metavar="TABLE",
                     help=f"these tables only (of {', '.join(TABLES)})")
    run.add_argument("--seed", type=int, action="append", default=[], help=f"random and launch seeds (default {SEEDS})")
    show = sub.add_parser("summary", help="the verdicts of a folder's tables (no GPU)")
    show.add_argument("folder", type=Path, metavar="DIR")
    for p in (run, show):
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)
    folder = args.out if args.verb == "run" else args.folder
    if args.verb == "summary" and not folder.is_dir():
        ap.error(f"DIR {str(folder)!r} is not a folder (one that `targets.py run --out DIR` wrote)")
    if args.verb == "run":
        if folder.exists() and not folder.is_dir():
            ap.error(f"--out {str(folder)!r} is a file, not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        commit, code = tree_commit(), tree_code()
        meta_file = folder / "meta.json"
        try:
            meta = _read(meta_file) if meta_file.exists() else {}
        except ValueError as exc:
            ap.error(str(exc))
        failed = []
        for source, cmd in commands(args.only, folder, args.seed or list(SEEDS), program):
            (folder / f"{source}.json").unlink(missing_ok=True)   # no stale rows judged for a run that fails
            t = time.time()
            with open(folder / f"{source}.txt", "w") as log:
                rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=HERE.parent).returncode
            print(f"{source}: exit {rc} in {time.time() - t:.0f} s", file=sys.stderr, flush=True)
            failed += [source] if rc else []
            meta.setdefault("runs", {})[source] = {"commit": commit or "?", "code": code, "date": time.strftime("%Y-%m-%d"),
                                                   "exit": rc}
            meta_file.write_text(json.dumps(meta, indent=1))
        if failed:
            print(f"failed: {', '.join(failed)} (their printouts: {folder}/<table>.txt)", file=sys.stderr)
    try:
        meta, lines = summary(folder)
    except ValueError as exc:
        ap.error(str(exc))
    print(json.dumps({"meta": meta, "tables": lines}, indent=1) if args.json else markdown(meta, lines))
    return 0 if met(lines) and not (args.verb == "run" and failed) else 1


if __name__ == "__main__":
    sys.exit(main())
