"""The new-GPU drill: what a GPU gets from gemmgen out of the box, after a short search, and with its
shipped results, measured on one GPU by hiding the shipped results (``GEMMGEN_SHIPPED=0``).

    python -m benchmarks.drill run a --out runs/drill              # (a) no results, no tuning
    python -m benchmarks.drill run c --out runs/drill              # (c) the shipped results
    python -m benchmarks.drill run b --out runs/drill --results DIR   # (b) DIR: a search's results
    python -m benchmarks.drill run a --out runs/drill --arch sm_80  # (a) planned as on an A100 (no wgmma, no TMA)
    python -m benchmarks.drill summary runs/drill [--json]         # each table of (a), (b) against (c)

``run`` runs benchmarks.targets' tables (``--only``; default set, layouts, simt, outsider, random)
into OUT/<situation>/ with the environment of the situation: (a) the shipped results hidden and an
empty results folder, (b) the shipped results hidden and ``--results DIR`` (what `gemmgen search
--budget 10m --results DIR` wrote), (c) as installed. ``summary`` prints, per table, each situation's
geomean and lowest ratio against cuBLAS and the targets: (a) at least 80% of (c)'s geomean and no shape
under 0.8x, (b) at least 95% of (c)'s; with the SIMT family alone (a) at least 0.85x and (b) 0.93x.
``search --out OUT --budget 10m`` runs (b)'s search as a new GPU would (`gemmgen search` with the
shipped results hidden, into OUT/results/); with ``--detach`` it goes on in a process session of its
own and returns at once, and ``wait OUT`` waits for it and returns its exit status, so that a search
longer than one command (a device call's 10 minutes) spans two:

    python -m benchmarks.drill search --out runs/drill --budget 10m --detach
    python -m benchmarks.drill wait runs/drill && python -m benchmarks.drill run b --out runs/drill --results runs/drill/results

``prebuild a c --out OUT`` compiles, at the lowest CPU priority, the kernels the situations' tables will
plan (``--detach``: in the background), so that the timed runs after a search find them in the kernel
cache instead of compiling them one table at a time; started beside a detached search, it takes only
the cores the search leaves idle:

    python -m benchmarks.drill search --out runs/drill --budget 10m --detach
    python -m benchmarks.drill prebuild a c --out runs/drill --seed 7 --detach

``step 1|2|3 --out OUT --seed S --pack FILE`` is the drill in three device calls of at most ten minutes,
one command each: 1 starts the detached search and the prebuilds and waits out the call (``--until``,
570 s), 2 waits for the search and times (c), (a) and (a) as sm_80, 3 times (b) and (b) as sm_80 and
prints the summary; ``--pack`` writes OUT as a .tar.gz after each table, so a call cut short keeps what
it measured:

    python -m benchmarks.drill step 1 --out /tmp/drill --seed 7203
    python -m benchmarks.drill step 2 --out /tmp/drill --seed 7203 --pack $OUT/drill.tgz
    python -m benchmarks.drill step 3 --out /tmp/drill --seed 7203 --pack $OUT/drill.tgz

``--arch sm_80`` runs a situation with the planner kept to the kernels that architecture runs too
(``GEMMGEN_POLICY=arch=sm_80``: an A100's families on this GPU) into OUT/<situation>-<arch>/; such a
proxy's (b) must reach at least its (a) on each table. ``summary`` exits 1 where a measured target is
missed, 0 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from benchmarks import targets
from gemmgen.base.gpus import ARCHS

HERE = Path(__file__).resolve().parent
TABLES = ("set", "layouts", "simt", "outsider", "random")
SITUATIONS = {"a": "out of the box (no results, no tuning)", "b": "after a search", "c": "shipped results"}
OF_C = {"a": 0.80, "b": 0.95}            # least share of (c)'s geomean, each table
SIMT_FLOOR = {"a": 0.85, "b": 0.93}      # least geomean against cuBLAS with the SIMT family alone
LOWEST_A = 0.8                           # no shape of (a) under this ratio
KEPT = ("rows", "geomean", "lowest", "lowest_shape", "inaccurate")   # of a targets.summary line (its own targets aside)


def environment(situation: str, results: Path | None, arch: str = "") -> dict:
    """The environment a situation's tables run in (``arch``: planned as on that architecture)."""
    env = {k: v for k, v in os.environ.items() if k != "GEMMGEN_POLICY"}   # none inherited: each run is its situation
    if arch:
        env["GEMMGEN_POLICY"] = f"arch={arch}"
    if situation in ("a", "b"):
        env["GEMMGEN_SHIPPED"] = "0"
        env["GEMMGEN_RESULTS"] = str(results if situation == "b" else Path(tempfile.mkdtemp(prefix="gemmgen-none-")))
    return env


def summary(out: Path) -> tuple[list[dict], bool]:
    """Per table and situation: rows, geomean and lowest as benchmarks.targets reads them (its layouts per
    table, its accuracy gate), and the verdict against the drill's targets; an inaccurate row misses."""
    got = {s: {line["table"]: line for line in targets.summary(out / s)[1] if line["rows"]}
           for s in [*SITUATIONS, *proxies(out)] if (out / s).is_dir()}
    table_rows, ok = [], True
    for table in TABLES:
        cells = {s: {k: got[s][table][k] for k in KEPT} if table in got.get(s, {}) else None for s in SITUATIONS}
        c = cells["c"]
        for s in ("a", "b"):
            st = cells[s]
            if st is None:
                continue
            need = SIMT_FLOOR[s] if table == "simt" else (OF_C[s] * c["geomean"] if c else None)
            met = None if need is None else (st["geomean"] >= need and not st["inaccurate"]
                                             and (s != "a" or table == "simt" or st["lowest"] >= LOWEST_A))
            ok = ok and met is not False
            st.update(need=need, met=met, of_c=(st["geomean"] / c["geomean"]) if c else None)
        for proxy in proxies(out):   # a-sm_80, b-sm_80: (b) at least (a), as reported
            line = got[proxy].get(table)
            st = {k: line[k] for k in KEPT} if line else None
            if st is not None:
                base = cells.get(f"a{proxy[1:]}") if proxy.startswith("b") else None
                need = base["geomean"] if base else None
                met = None if need is None else st["geomean"] >= need and not st["inaccurate"]
                ok = ok and met is not False
                st.update(need=need, met=met, of_c=(st["geomean"] / c["geomean"]) if c else None)
            cells[proxy] = st
        table_rows.append({"table": table, **cells})
    return table_rows, ok


def proxies(out: Path) -> list[str]:
    """The proxy situations' folders under ``out`` (<situation>-<arch>), (a) before (b)."""
    return sorted(p.name for p in out.glob("[ab]-sm_*") if p.is_dir())


def print_summary(table_rows: list[dict]) -> None:
    extra = [k for k in (table_rows[0] if table_rows else {}) if "-" in k]
    print(f"{'table':9} {'(c) shipped':>16} {'(a) out of box':>22} {'(b) searched':>22}"
          + "".join(f" {'(' + k + ')':>22}" for k in extra))
    for t in table_rows:
        cells = []
        for s in ("c", "a", "b", *extra):
            st = t[s]
            if st is None:
                cells.append("-")
                continue
            text = f"{st['geomean']:.3f}x low {st['lowest']:.2f}"
            if s != "c" and st.get("of_c"):
                text += f" {st['of_c']:.0%}"
            if s != "c" and st.get("met") is not None:
                text += " ok" if st["met"] else " MISS"
            cells.append(text)
        print(f"{t['table']:9} {cells[0]:>16} " + " ".join(f"{c:>22}" for c in cells[1:]))


SEARCH = (sys.executable, "-m", "gemmgen", "search")   # what ``search`` runs (tests pass a stand-in)
TARGETS = (sys.executable, "-m", "benchmarks.targets")   # what ``run`` runs
DRILL = (sys.executable, "-m", "benchmarks.drill")       # what ``step 1`` starts the prebuilds with
PROXY = ("sm_80", ("set", "simt"))                       # the A100 proxy and its tables
UNTIL = 570.0   # step 1 returns this long after it started (a device call's 10 minutes, less the start)


def search(out: Path, budget: str, detach: bool, program: tuple[str, ...] = SEARCH) -> int:
    """(b)'s search into ``out``/results with the shipped results hidden; its output to out/search.log and,
    when it ends, its exit status to out/search.rc. ``detach``: in a new process session, returning at once
    (0) with its pid in out/search.pid."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("search.rc", "search.pid"):
        (out / name).unlink(missing_ok=True)
    results = out / "results"
    results.mkdir(exist_ok=True)
    cmd = [*program, "--budget", budget, "--results", str(results)]
    env = environment("b", results)
    if detach:   # the search, then its exit status into search.rc, in a session of its own
        pid = detached(out, "search", cmd, env)
        (out / "search.pid").write_text(str(pid))
        print(f"search running as pid {pid}; then: python -m benchmarks.drill wait {out}")
        return 0
    rc = subprocess.run(cmd, env=env, cwd=HERE.parent).returncode
    (out / "search.rc").write_text(str(rc))
    return rc


def detached(out: Path, name: str, cmd: list[str], env: dict | None = None) -> int:
    """:func:`spawn` ``cmd`` so that its exit status lands in out/<name>.rc when it ends (:func:`_ended`
    reads it); its pid, at once."""
    (out / f"{name}.rc").unlink(missing_ok=True)
    return spawn(out, name, ["sh", "-c", f"{shlex.join(cmd)}; echo $? > {shlex.quote(str(out / f'{name}.rc'))}"], env)


def spawn(out: Path, name: str, cmd: list[str], env: dict | None = None) -> int:
    """Start ``cmd`` in a process session of its own (it outlives the command that starts it), output
    appended to out/<name>.log; its pid, at once."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{name}.log", "ab") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=HERE.parent, env=env).pid


def prebuild(situations: list[str], tables: list[str], seeds: list[int], arch: str = "",
             program: tuple[str, ...] = targets.PROGRAM) -> int:
    """Compile the kernels each situation's tables plan: their runs with ``--compile-only``, at the lowest
    CPU priority, one after the other; the worst exit status."""
    codes = []
    for situation in situations:
        env = environment(situation, None, arch)
        scratch = Path(tempfile.mkdtemp(prefix="gemmgen-prebuild-"))   # --json's folder: nothing is written
        for _, argv in targets.commands(tables, scratch, seeds, program):
            codes.append(subprocess.run(["nice", "-n", "19", *argv, "--compile-only"], env=env,
                                        cwd=HERE.parent).returncode)
    return max(codes, default=0)


def run_tables(out: Path, situation: str, tables: list[str], seeds: list[int], results: Path | None = None,
               arch: str = "", program: tuple[str, ...] = TARGETS) -> int:
    """Time ``tables`` in ``situation`` (its environment) into OUT/<situation>[-<arch>]; the exit status."""
    folder = situation + (f"-{arch}" if arch else "")
    cmd = [*program, "run", "--out", str(out / folder), "--only", *tables, *targets.seed_flags(seeds)]
    return subprocess.run(cmd, env=environment(situation, results, arch), cwd=HERE.parent).returncode


def pack(out: Path, into: Path | None) -> None:
    """OUT as a .tar.gz at ``into`` (written whole, then renamed), without SQLite journals and locks and
    without the archive itself where it lies inside OUT."""
    if into is None:
        return
    part = into.with_name(into.name + ".part")
    mine = {into.resolve(), part.resolve()}

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name.endswith((".db-journal", ".lock")) or (out / info.name).resolve() in mine:
            return None
        return info
    with tarfile.open(part, "w:gz") as tar:
        tar.add(out, arcname=".", filter=keep)
    part.replace(into)


def _ended(path: Path) -> int | None:
    """The exit status a detached run wrote to ``path``, or None while it runs."""
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text.lstrip("-").isdigit() else (1 if path.exists() else None)


def step(n: int, out: Path, seeds: list[int], budget: str = "10m", until: float = UNTIL, into: Path | None = None,
         programs: dict | None = None, patience: float = 240.0) -> int:
    """One device call of the drill (see the module's docstring); the worst exit status of what it ran, 1
    where a target is missed. Steps 2 and 3 time nothing while the search runs (the GPU is its): they
    wait for it ``patience`` seconds at most, then return 1; step 2 also lets the prebuilds end first (at
    most ``patience``), so no compiler shares the CPU with the timed tables. ``programs``: stand-ins for
    "search", "targets" and "drill" (tests)."""
    prog = {"search": SEARCH, "targets": TARGETS, "drill": DRILL, **(programs or {})}
    t0 = time.monotonic()
    said = lambda what: print(f"{what} at {time.monotonic() - t0:.0f} s", flush=True)
    arch, tables = PROXY
    builds = {"prebuild": ["a", "c"], f"prebuild-{arch}": ["a", "--arch", arch, "--only", *tables]}
    if n == 1:
        search(out, budget, detach=True, program=prog["search"])
        for name, args in builds.items():
            detached(out, name, [*prog["drill"], "prebuild", *args, "--out", str(out), *targets.seed_flags(seeds)])
        while time.monotonic() - t0 < until and _ended(out / "search.rc") is None:
            time.sleep(min(2.0, max(until - (time.monotonic() - t0), 0.01)))
        log = (out / "search.log").read_text(errors="replace").splitlines() if (out / "search.log").exists() else []
        print("\n".join([line for line in log if not line.startswith("[")][:12] + log[-3:]))
        rc = _ended(out / "search.rc")
        said("search running" if rc is None else f"search ended, exit status {rc}")
        return rc or 0
    rc = wait(out, timeout=patience, poll=min(2.0, max(patience / 10, 0.05)))
    if _ended(out / "search.rc") is None:
        print(f"step {n}: the search is still running; nothing timed (run step {n} again)", file=sys.stderr)
        return 1
    said(f"search exit status {rc}")
    codes = [rc]
    if n == 2:
        end = time.monotonic() + patience
        while any(_ended(out / f"{name}.rc") is None for name in builds if (out / f"{name}.log").exists()) \
                and time.monotonic() < end:
            time.sleep(1.0)
        said("prebuilds ended")
        for situation, where, only in (("c", "", TABLES), ("a", "", TABLES), ("a", arch, tables)):
            codes.append(run_tables(out, situation, list(only), seeds, arch=where, program=prog["targets"]))
            pack(out, into)
            said(f"{situation}{'-' + where if where else ''} done")
        return max(codes)
    for where, only in (("", TABLES), (arch, tables)):
        codes.append(run_tables(out, "b", list(only), seeds, out / "results", where, prog["targets"]))
        pack(out, into)
        said(f"b{'-' + where if where else ''} done")
    try:
        table_rows, ok = summary(out)
    except ValueError as err:   # a table's file that is not one: one line naming it
        print(f"summary: {err}", file=sys.stderr)
        return 2
    print_summary(table_rows)
    (out / "summary.json").write_text(json.dumps({"tables": table_rows, "met": ok}, indent=1))
    pack(out, into)
    return max([*codes, 0 if ok else 1])


def wait(out: Path, timeout: float, poll: float = 2.0) -> int:
    """Wait for a detached search of ``out`` to write its exit status, at most ``timeout`` seconds (then
    1); its exit status. ValueError where no search was started there."""
    if not (out / "search.pid").exists() and not (out / "search.rc").exists():
        raise ValueError(f"{out}: no search was started here (python -m benchmarks.drill search --out {out} ...)")
    end = time.monotonic() + timeout
    while (rc := _ended(out / "search.rc")) is None:
        if time.monotonic() > end:
            print(f"{out}: the search is still running after {timeout:.0f} s", file=sys.stderr)
            return 1
        time.sleep(poll)
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="time the tables in one situation")
    run.add_argument("situation", choices=list(SITUATIONS))
    run.add_argument("--out", type=Path, required=True, metavar="DIR")
    run.add_argument("--results", type=Path, metavar="DIR", help="(b): the folder a search wrote")
    run.add_argument("--only", nargs="+", default=list(TABLES), choices=list(TABLES) + ["launch"], metavar="TABLE")
    run.add_argument("--seed", type=int, action="append", default=[], help="random shapes' seeds")
    run.add_argument("--arch", choices=list(ARCHS), metavar="sm_XX",
                     help="plan only kernels that architecture runs too (sm_80: an A100 proxy)")
    find = sub.add_parser("search", help="(b)'s search with the shipped results hidden, into OUT/results")
    find.add_argument("--out", type=Path, required=True, metavar="DIR")
    find.add_argument("--budget", default="10m", help="gemmgen search --budget (default 10m)")
    find.add_argument("--detach", action="store_true", help="run on in a session of its own; `wait` waits for it")
    build = sub.add_parser("prebuild", help="compile, niced, the kernels the situations' tables will plan")
    build.add_argument("situations", nargs="+", choices=["a", "c"], metavar="SITUATION", help="a and/or c")
    build.add_argument("--out", type=Path, required=True, metavar="DIR")
    build.add_argument("--only", nargs="+", default=list(TABLES), choices=list(TABLES), metavar="TABLE")
    build.add_argument("--seed", type=int, action="append", default=[], help="random shapes' seeds")
    build.add_argument("--arch", choices=list(ARCHS), metavar="sm_XX", help="(a) planned as on that architecture")
    build.add_argument("--detach", action="store_true", help="run on in the background; returns at once")
    call = sub.add_parser("step", help="one device call of the whole drill: 1 search, 2 (c) (a), 3 (b) and the summary")
    call.add_argument("n", type=int, choices=[1, 2, 3], metavar="STEP", help="1, 2 or 3")
    call.add_argument("--out", type=Path, required=True, metavar="DIR")
    call.add_argument("--seed", type=int, action="append", default=[], help="random shapes' seeds")
    call.add_argument("--budget", default="10m", help="step 1: the search's --budget (default 10m)")
    call.add_argument("--until", type=float, default=UNTIL, metavar="S",
                      help=f"step 1: return this many seconds after starting, or when the search ends (default {UNTIL:.0f})")
    call.add_argument("--pack", type=Path, metavar="FILE", help="write OUT as a .tar.gz here after each table")
    hold = sub.add_parser("wait", help="wait for a detached search and return its exit status")
    hold.add_argument("out", type=Path, metavar="DIR")
    hold.add_argument("--timeout", type=float, default=900.0, metavar="S")
    show = sub.add_parser("summary", help="the situations' tables against the targets")
    show.add_argument("out", type=Path, metavar="DIR")
    show.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        if args.arch and args.situation == "c":
            ap.error(f"--arch {args.arch}: a proxy runs (a) or (b); (c), the shipped results, is the GPU's own")
        if args.situation == "b" and (args.results is None or not args.results.is_dir()):
            ap.error(f"--results {args.results}: situation b needs the folder a search wrote")
        return run_tables(args.out, args.situation, args.only, args.seed, args.results, args.arch or "")
    if args.cmd == "step":
        if args.n > 1 and not (args.out / "search.pid").exists() and not (args.out / "search.rc").exists():
            ap.error(f"step {args.n}: {args.out} holds no search; step 1 starts it")
        if args.pack is not None and not args.pack.parent.is_dir():
            ap.error(f"--pack {args.pack}: no folder {args.pack.parent}")
        return step(args.n, args.out, args.seed or list(targets.SEEDS), args.budget, args.until, args.pack)
    if args.cmd == "search":
        return search(args.out, args.budget, args.detach)
    if args.cmd == "prebuild":
        if args.arch and "c" in args.situations:
            ap.error(f"--arch {args.arch}: a proxy plans (a) only; (c), the shipped results, is the GPU's own")
        if args.detach:   # this command again, without --detach, in a session of its own
            again = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--detach"]
            pid = spawn(args.out, "prebuild", [sys.executable, "-m", "benchmarks.drill", *again])
            print(f"prebuild running as pid {pid}; output in {args.out / 'prebuild.log'}")
            return 0
        return prebuild(args.situations, args.only, args.seed or list(targets.SEEDS), args.arch or "")
    if args.cmd == "wait":
        try:
            return wait(args.out, args.timeout)
        except ValueError as err:
            ap.error(str(err))
    if not args.out.is_dir():
        ap.error(f"{args.out}: no such folder")
    try:
        table_rows, ok = summary(args.out)
    except ValueError as err:   # a file that is not a table's JSON: one line naming it
        ap.error(str(err))
    if args.json:
        print(json.dumps({"tables": table_rows, "met": ok}, indent=1))
    else:
        print_summary(table_rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
