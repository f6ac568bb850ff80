"""Timings off the tuning grids: random shapes, each with the kernels the dispatch predicts fastest, timed
against cuBLAS SGEMM; and how well the dispatch picks among them (no GPU needed for that).

    # CPU: jobs (shape, candidate configs) from the shipped results' predictions, new seeds only
    python benchmarks/offgrid.py plan --gpu h200 --seeds 3001-3040 --macs 27:37 --seeds 4001-4040 --macs 15:27 \\
        --top 5 --out jobs.json           # --every simt: each shape's whole SIMT family too (its true best)
    # GPU: compile every job's kernels once, then one process per GPU (rows written after each shape)
    python benchmarks/offgrid.py compile jobs.json --procs 30
    CUDA_VISIBLE_DEVICES=0 python benchmarks/offgrid.py time jobs.json --worker 0 --workers 2 --out w0.json &
    CUDA_VISIBLE_DEVICES=1 python benchmarks/offgrid.py time jobs.json --worker 1 --workers 2 --out w1.json &
    # CPU: the dispatch's pick among each shape's timed kernels against the best of them (two halves of the rows)
    python benchmarks/offgrid.py picks --gpu h200 w0.json w1.json --knob width=0.9
    python benchmarks/offgrid.py picks --gpu h200 docs/bench/h200-launch-oracle-s41-20261127.json --bias

A job holds the ``--top`` kernels of least predicted time (timed in the shape's layout, no copies), plus the
best of each family not among them (the skinny family too, though the planner keeps it out of matmul). ``time`` gates and times them interleaved with cuBLAS (L2 flushed before
each run, Session.retime); a kernel the gate or the shape refuses is named and skipped. ``picks`` prints the
pick's measured time over the best's, the fastest kernel timed there (geomean: the dispatch's loss), the pick's and the
best's ratio to cuBLAS, and the lowest; ``--bias``, the measured/predicted time of every kernel timed, by family
and whether the prediction rests on a measurement near or extrapolates, and by waves. Session 38
(docs/PERFORMANCE.md): 1889 H200 shapes, 11.6k timings; session 41: 96 launch-sized H200 shapes with every SIMT
kernel timed (the picks lose 4.4% to the family's true best; far SIMT predictions run 0.72x as long as predicted).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from matmul_vs_cublas import geomean  # noqa: E402


def seed_range(text: str) -> list[int]:
    """'3001-3040' or '7' -> the seeds (an argparse type: a bad text is one line naming it)."""
    lo, _, hi = text.partition("-")
    try:
        seeds = list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        seeds = []
    if not seeds:
        raise argparse.ArgumentTypeError(f"{text!r}: give seeds as FIRST-LAST or one seed, e.g. 3001-3040")
    return seeds


def macs_range(text: str) -> tuple[int, int]:
    """matmul_vs_cublas.parse_macs as an argparse type."""
    from matmul_vs_cublas import parse_macs

    try:
        return parse_macs(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def plan_jobs(gpu: str, groups: list[tuple[list[int], tuple[int, int]]], top: int,
              every: tuple[str, ...] = (), max_k: int = 0) -> dict:
    """{"gpu", "jobs": [{"shape", "kernels": [config dicts]}]} for the random shapes of each (seeds, macs): the
    ``top`` kernels of least predicted time, then each family's best not among them (the skinny family too,
    though the planner keeps them out of matmul), and every other kernel of the families in ``every`` that takes the
    shape (after the first ``top``, all in order of predicted time): the whole family timed, so its picks are
    scored against its true best, not only against the kernels the model already ranked high (session 41).
    ``max_k``: only the shapes of K up to it (0: all), e.g. the shallow band."""
    import random

    from matmul_vs_cublas import random_shapes, tuned_keys
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.counts import aligned_for

    grid, jobs = tuned_keys(), []
    with native_fits(gpu, {}, families=(None, "skinny")) as (name, fits):   # the skinny family too
        for seeds, macs in groups:
            for seed in seeds:
                for M, N, K, L in (d for d in random_shapes(24, seed, grid, macs) if not max_k or d[2] <= max_k):
                    s = Shape(M, N, K, L)
                    rows = sorted(((f.predict(s, aligned_for(f.config, s)), n, f) for n, f in fits[L].items()
                                   if f.config.accepts(M, N, K) is None), key=lambda t: t[:2])
                    pick, families = [], set()
                    for _, _, f in rows:
                        if len(pick) < top or f.config.family not in families or f.config.family in every:
                            pick.append(f.config.to_dict())
                            families.add(f.config.family)
                    jobs.append({"shape": s.key, "kernels": pick})
    random.Random(0).shuffle(jobs)   # a run cut short keeps a sample of every group
    return {"gpu": name, "jobs": jobs}


@contextlib.contextmanager
def native_fits(gpu: str, knobs: dict[str, float], ap: argparse.ArgumentParser | None = None,
                families: tuple = (None,)):
    """(the GPU's name, {layout: {kernel name: time model}}) of the kernels timed in each layout (no layout
    factor), fitted under the GPU's policy with the fields ``knobs`` names set (gemmgen.runtime.policy.Policy).
    ``families``: those the planner lets compete (None: any but skinny). An unknown field is ``ap.error``."""
    import importlib

    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.library import KernelLibrary, results_policy
    from gemmgen.runtime.policy import Policy

    found = load_device(gpu, None, missing_ok=False)
    try:
        policy = Policy.overridden(knobs, "--knob", results_policy(found))
    except ValueError as err:
        (ap or argparse.ArgumentParser(prog="offgrid.py")).error(str(err))
    lib = KernelLibrary(known(found.name), found.entries, timings=found.timings, policy=policy)
    stored = found.timings.kernels
    yield found.name, {L: {f.config.name: f for fam in families for f in lib.candidates("fp32", L, fam)
                           if f.factor == 1.0 and f.config.name in stored}
                       for L in importlib.import_module("gemmgen.runtime.dispatch").LAYOUTS}


def compile_jobs(jobs: list[dict], procs: int) -> int:
    from concurrent.futures import ProcessPoolExecutor

    from matmul_vs_cublas import _compile
    from gemmgen.base.devices import detect
    from gemmgen.kernel.config import KernelConfig

    todo = {KernelConfig.from_dict(d).name: d for j in jobs for d in j["kernels"]}
    spec = detect(0)
    with ProcessPoolExecutor(procs, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, [(d, spec) for d in todo.values()], chunksize=4))
    return len(todo)


def time_jobs(jobs: list[dict], out: Path, deadline_s: float, rep_ms: float) -> tuple[int, int]:
    """Rows {"shape", "cublas_ms", "ms", "err"} of the jobs, written to ``out`` after each; (rows, refused)."""
    from gemmgen.base import Shape
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.measure.session import Session

    t0, session, rows, refused = time.time(), Session(0), [], 0
    for job in jobs:
        if time.time() - t0 > deadline_s:
            break
        s, configs = Shape.parse(job["shape"]), [KernelConfig.from_dict(d) for d in job["kernels"]]
        try:
            got = list(zip(configs, session.retime(configs, s, rep_ms=rep_ms)))
        except Exception:   # one config refused: time the others alone
            got = []
            for c in configs:
                try:
                    got.append((c, session.retime([c], s, rep_ms=rep_ms)[0]))
                except Exception as exc:
                    refused += 1
                    print(f"{s.key} {c.name}: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}", flush=True)
        if got:
            rows.append({"shape": s.key, "cublas_ms": got[0][1].cublas_ms, "ms": {c.name: m.ms for c, m in got},
                         "err": {c.name: m.rel_error for c, m in got}})
            out.write_text(json.dumps(rows))
    return len(rows), refused


def bias(gpu: str, rows: list[dict], knobs: dict[str, float],
         ap: argparse.ArgumentParser | None = None, families: tuple = (None,)) -> dict[str, list[float]]:
    """measured / predicted of every timed kernel the dispatch has a model of, grouped: by family and whether
    a measurement of the kernel lies near the shape (``near``) or the prediction extrapolates (``far``), and
    by family and the waves of blocks the kernel runs there. Where the model errs, and which way."""
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.counts import aligned_for, counts

    out: dict[str, list[float]] = {}
    with native_fits(gpu, knobs, ap, families) as (_, fits):   # families: (None, "skinny") to score skinny too
        for r in rows:
            s = Shape.parse(r["shape"])
            for n, t in r["ms"].items():
                f = fits[s.layout].get(n)
                if f is None:
                    continue
                ok = aligned_for(f.config, s)
                e = t / f.predict(s, ok)
                waves = counts(f.config, s, f.sm_count)[1]
                band = "1" if waves <= 1 else "2-3" if waves <= 3 else "4-7" if waves <= 7 else "8+"
                for key in (f"{f.config.family} {'near' if f.measured_near(s, ok) else 'far'}",
                            f"{f.config.family} waves {band}"):
                    out.setdefault(key, []).append(e)
    return out


def picks(gpu: str, rows: list[dict], knobs: dict[str, float],
          ap: argparse.ArgumentParser | None = None, families: tuple = (None,)) -> dict[str, list[tuple[float, float, float]]]:
    """Per half of the rows (by a hash of the shape): (pick/best measured, cuBLAS/pick, cuBLAS/best) of every
    row with two or more kernels the dispatch (under ``knobs``) has models of in the row's layout; the best is
    the fastest kernel timed in the row, competing or not."""
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.counts import aligned_for

    with native_fits(gpu, knobs, ap, families) as (_, fits):   # families: (None, "skinny") to score skinny too
        out: dict[str, list] = {"A": [], "B": []}
        for r in rows:
            s = Shape.parse(r["shape"])
            ms = {n: t for n, t in r["ms"].items() if n in fits[s.layout]}
            if len(ms) < 2:
                continue
            f = fits[s.layout]
            pick = min(ms, key=lambda n: (f[n].predict(s, aligned_for(f[n].config, s)), n))
            best = min(r["ms"].values())   # of every kernel timed there, so knob settings compare
            out["AB"[zlib.crc32(r["shape"].encode()) % 2]].append((ms[pick] / best, r["cublas_ms"] / ms[pick],
                                                                   r["cublas_ms"] / best))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="jobs from the shipped results' predictions (CPU)")
    p.add_argument("--gpu", required=True)
    p.add_argument("--seeds", action="append", required=True, type=seed_range,
                   help="'3001-3040': seeds of random_shapes, 24 shapes each")
    p.add_argument("--macs", action="append", required=True, type=macs_range,
                   help="LO:HI per --seeds: 2^LO..2^HI multiply-adds")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--every", action="append", default=[], choices=("simt", "tf32x3", "skinny"),
                   help="also every other kernel of this family that takes the shape (repeatable)")
    p.add_argument("--max-k", type=int, default=0, help="only shapes with K up to this (default 0: all)")
    p.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compile", help="compile every job's kernels into NVRTC's cache (GPU machine)")
    c.add_argument("jobs", type=Path)
    c.add_argument("--procs", type=int, default=max(1, (multiprocessing.cpu_count() or 2) - 2))
    t = sub.add_parser("time", help="time this worker's share of the jobs (GPU)")
    t.add_argument("jobs", type=Path)
    t.add_argument("--worker", type=int, default=0)
    t.add_argument("--workers", type=int, default=1)
    t.add_argument("--deadline", type=float, default=1e9, help="seconds, then stop after the shape at hand")
    t.add_argument("--rep-ms", type=float, default=20.0)
    t.add_argument("--out", type=Path, required=True)
    k = sub.add_parser("picks", help="the dispatch's picks among the timed kernels (CPU)")
    k.add_argument("--gpu", required=True)
    k.add_argument("rows", nargs="+", type=Path)
    k.add_argument("--knob", action="append", default=[], metavar="NAME=V",
                   help="a field of gemmgen.runtime.policy.Policy (repeatable)")
    k.add_argument("--bias", action="store_true",
                   help="also measured/predicted per family, near or far from a measurement, and by waves")
    args = ap.parse_args(argv)

    def read(path: Path):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as err:
            ap.error(f"{path}: {err}")

    if args.cmd == "plan":
        if len(args.seeds) != len(args.macs):
            ap.error("give one --macs for each --seeds")
        try:
            data = plan_jobs(args.gpu, list(zip(args.seeds, args.macs)), args.top, tuple(args.every), args.max_k)
        except ValueError as err:   # ResultsError too: a GPU with no results
            ap.error(str(err).splitlines()[0])
        args.out.write_text(json.dumps(data))
        print(f"{len(data['jobs'])} jobs, {sum(len(j['kernels']) for j in data['jobs'])} timings -> {args.out}")
    elif args.cmd in ("compile", "time") and not isinstance(read(args.jobs), dict):
        ap.error(f"{args.jobs}: not a jobs file (`offgrid.py plan` writes one)")
    elif args.cmd == "compile":
        t0 = time.time()
        print(f"{compile_jobs(read(args.jobs)['jobs'], args.procs)} kernels compiled in "
              f"{time.time() - t0:.0f} s")
    elif args.cmd == "time":
        jobs = read(args.jobs)["jobs"][args.worker::args.workers]
        n, refused = time_jobs(jobs, args.out, args.deadline, args.rep_ms)
        print(f"worker {args.worker}: {n} shapes timed, {refused} kernels refused -> {args.out}")
    else:
        rows = []
        for path in args.rows:   # time's list of rows, or a file of docs/bench holding it under "rows"
            data = read(path)
            rows += data["rows"] if isinstance(data, dict) and "rows" in data else list(data)
        if not all(isinstance(r, dict) and {"shape", "cublas_ms", "ms"} <= set(r) for r in rows):
            ap.error("the rows files must be what `offgrid.py time` writes (a list of shape, cublas_ms, ms)")
        knobs = {}
        for text in args.knob:
            name, _, value = text.partition("=")
            try:
                knobs[name] = float(value)
            except ValueError:
                ap.error(f"--knob {text!r}: give NAME=V with a number, e.g. width=0.9")
        try:
            got = picks(args.gpu, rows, knobs, ap)
        except ValueError as err:
            ap.error(str(err).splitlines()[0])
        for half, v in got.items():
            if v:
                print(f"half {half}: {len(v)} shapes, pick/best {geomean([a for a, _, _ in v]):.4f}, "
                      f"pick {geomean([b for _, b, _ in v]):.4f}x cuBLAS (lowest {min(b for _, b, _ in v):.2f}), "
                      f"best {geomean([c for _, _, c in v]):.4f}x")
        if args.bias:
            print("measured / predicted (geomean, kernels timed):")
            for key, v in sorted(bias(args.gpu, rows, knobs, ap).items()):
                print(f"  {key:22s} {len(v):6d} {geomean(v):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
