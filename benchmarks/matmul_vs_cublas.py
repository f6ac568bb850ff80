"""gemmgen.matmul against cuBLAS SGEMM (strict fp32, TF32 off), interleaved in one process.

For every shape of the set (benchmarks/shapes.toml, or --shape MxNxK[/LAYOUT] ...) it times what a user
gets from ``gemmgen.matmul`` (dispatch included) and cuBLAS SGEMM on the same operands, alternating run
by run with the L2 flushed before each, and prints per shape: both TFLOP/s, the ratio, the kernel matmul
dispatched to, and the relative Frobenius error of each against float64. The geometric mean of the
ratios closes the table.

    python -m benchmarks.matmul_vs_cublas                       # the set (benchmarks/shapes.toml)
    python -m benchmarks.matmul_vs_cublas --family simt         # dispatch restricted to the SIMT family
    python -m benchmarks.matmul_vs_cublas --shape 777x3001x555 --shape 4096x4096x4096/TN --json out.json
    python -m benchmarks.matmul_vs_cublas --random 24 --seed 1      # shapes drawn outside set and grid
    python -m benchmarks.matmul_vs_cublas --random 24 --seed 21 --seed 22 --json rows.json   # each seed's table
    python -m benchmarks.matmul_vs_cublas --random 24 --macs 15:27 --seed 1   # launch-sized products (2^15..2^27)

Before timing, the kernels the dispatch will pick are compiled in parallel processes (--jobs; NVRTC's
disk cache), so the timing loop loads them instead of compiling one at a time.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import tomllib
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")   # CuPy's own matmul strict fp32 as well

HERE = Path(__file__).resolve().parent


def load_shapes(path: Path) -> list[tuple[int, int, int, str]]:
    """(M, N, K, layout) of every [[shape]] in a TOML file."""
    data = tomllib.loads(path.read_text())
    return [(*map(int, s["mnk"]), s.get("layout", "NN").upper()) for s in data["shape"]]


class BadValue(argparse.ArgumentTypeError, ValueError):
    """A command-line value that is not valid: argparse prints its message (a plain ValueError prints
    only "invalid <type> value"), and callers may catch it as a ValueError."""


def parse_shape(text: str) -> tuple[int, int, int, str]:
    """'MxNxK' or 'MxNxK/LAYOUT' (a BadValue that names the text otherwise: usable as argparse's type)."""
    dims, _, layout = text.partition("/")
    try:
        M, N, K = (int(x) for x in dims.lower().split("x"))
    except ValueError:
        M = N = K = 0
    layout = (layout or "NN").upper()
    if min(M, N, K) < 1 or layout not in ("NN", "NT", "TN", "TT"):
        raise BadValue(f"shape {text!r}: want MxNxK or MxNxK/LAYOUT, positive sizes, LAYOUT one of NN, NT, TN, TT")
    return M, N, K, layout


def random_shapes(count: int, seed: int, grid: set, macs: tuple[int, int] = (27, 37)) -> list[tuple[int, int, int, str]]:
    """Shapes no one tuned: M, N, K log-uniform in 16..12000 with 2^macs[0]..2^macs[1] multiply-adds
    (by default a 10 us to 3 ms problem, not a launch), any layout, none in ``grid`` (MxNxK/LAYOUT
    keys). The default range draws the same shapes for a seed as it always has."""
    import random

    rng, out = random.Random(seed), []
    while len(out) < count:
        M, N, K = (int(round(math.exp(rng.uniform(math.log(16), math.log(12000))))) for _ in range(3))
        layout = rng.choice(("NN", "NN", "NT", "TN", "TT"))
        if 2 ** macs[0] <= M * N * K <= 2 ** macs[1] and f"{M}x{N}x{K}/{layout}" not in grid:
            out.append((M, N, K, layout))
    return out


def parse_macs(text: str) -> tuple[int, int]:
    """'LO:HI', exponents of two with 12 <= LO <= HI <= 40 (a BadValue that names the text otherwise)."""
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        lo = hi = -1
    if not 12 <= lo <= hi <= 40:
        raise BadValue(f"--macs {text!r}: want LO:HI, powers of two of the multiply-adds, 12 <= LO <= HI <= 40 (e.g. 15:27)")
    return lo, hi


def tuned_keys(shapes_file: Path | None = None) -> set:
    """MxNxK/LAYOUT of every shape in the tuning grids (search/grid-*.json) and the benchmark set."""
    keys = {k for f in (HERE.parent / "search").glob("grid-*.json") for k in json.loads(f.read_text())["shapes"]}
    return keys | {f"{M}x{N}x{K}/{L}" for M, N, K, L in load_shapes(shapes_file or HERE / "shapes.toml")}


def operands(M: int, N: int, K: int, layout: str, seed: int):
    """Random A (M x K) and B (K x N) in the layout, as views of their stored arrays, and their stores."""
    import cupy

    rng = cupy.random.default_rng(seed)
    rand = lambda shape: rng.uniform(-1.0, 1.0, size=shape, dtype=cupy.float32)
    a_store = rand((M, K) if layout[0] == "N" else (K, M))
    b_store = rand((K, N) if layout[1] == "N" else (N, K))
    A = a_store if layout[0] == "N" else a_store.T
    B = b_store if layout[1] == "N" else b_store.T
    return A, B, a_store, b_store


def packed_lds(M: int, N: int, K: int, layout: str) -> tuple[int, int]:
    """lda, ldb of packed operands in ``layout`` (rows of K or M floats for A, N or K for B): what
    ``operands`` makes, for plans worked out without arrays."""
    from gemmgen.base import Shape

    return Shape(M, N, K, layout).lds


def plan_name(plan) -> str:
    """'kernel name' or 'kernel name copies AB' of a plan (kernel, copy A, copy B: what KernelLibrary.plan_for gives)."""
    kernel, copy_a, copy_b = plan
    return kernel.name + (f" copies {'A' * copy_a}{'B' * copy_b}" if copy_a or copy_b else "")


def leading_dims(A, B, layout: str) -> tuple[int, int]:
    """lda, ldb of the operand views ``operands`` returns: their stored rows' lengths in elements."""
    return A.strides[0 if layout[0] == "N" else 1] // 4, B.strides[0 if layout[1] == "N" else 1] // 4


def rel_error(c, ref) -> float:
    import cupy

    return float(cupy.linalg.norm(c.astype(cupy.float64) - ref) / cupy.linalg.norm(ref))


def measure(M: int, N: int, K: int, layout: str, rep_ms: float, family: str | None, seed: int = 0) -> dict:
    import cupy

    import gemmgen
    from gemmgen.base.devices import detect
    from gemmgen.base import Shape
    from gemmgen.measure.problem import cublas_call
    from gemmgen.measure.timing import bench_interleaved, L2Flusher
    from gemmgen.runtime.library import library_for

    A, B, a_store, b_store = operands(M, N, K, layout, seed)
    c_gg = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
    c_cb = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
    kwargs = {"family": family} if family else {}
    run_gg = lambda: gemmgen.matmul(A, B, out=c_gg, **kwargs)
    run_cb = cublas_call("fp32", Shape(M, N, K, layout), a_store, b_store, c_cb)
    run_gg()
    run_cb()
    ref = cupy.matmul(A.astype(cupy.float64), B.astype(cupy.float64))
    err_gg, err_cb = rel_error(c_gg, ref), rel_error(c_cb, ref)
    del ref
    spec = detect(cupy.cuda.Device().id)
    t_gg, t_cb = bench_interleaved([run_gg, run_cb], L2Flusher(spec.l2_bytes), rep_ms=rep_ms)
    # the library matmul ran with, plans cached: gemmgen.load() would build another and fit its time
    # models anew on every row
    lib = library_for(cupy.cuda.Device().id, False)
    kernel, copy_a, copy_b = lib.plan_for(M, N, K, layout, *leading_dims(A, B, layout), N, family=family)
    name, family_ran = kernel.name, kernel.family
    tuned = tuned_pick(lib, M, N, K, layout, *leading_dims(A, B, layout), family)
    if tuned is not None:   # --tune: the first call timed a few kernels and kept this one
        name, copy_a, copy_b = tuned["kernel"], tuned.get("copy_a", False), tuned.get("copy_b", False)
        family_ran = name.split("_")[1]
    flops = 2.0 * M * N * K
    return {"shape": f"{M}x{N}x{K}", "layout": layout, "gemmgen_tflops": flops / t_gg.median / 1e9,
            "cublas_tflops": flops / t_cb.median / 1e9, "ratio": t_cb.median / t_gg.median,
            "gemmgen_ms": t_gg.median, "cublas_ms": t_cb.median, "kernel": name,
            "family": family_ran, "copies": "A" * copy_a + "B" * copy_b,
            "err_gemmgen": err_gg, "err_cublas": err_cb, **({"tuned": tuned["us"]} if tuned else {})}


def tuned_pick(lib, M: int, N: int, K: int, layout: str, lda: int, ldb: int, family: str | None) -> dict | None:
    """The first-call tuning's kept pick for this request (its kernel, copies and the candidates' us), or None
    where tuning is off (``--tune``)."""
    from gemmgen.runtime import autotune, picks

    if not autotune.candidates_per_request():
        return None
    return picks.kept(lib.spec.name).get(picks.request_key(M, N, K, layout, lda, ldb, N, "fp32", family, True))


def _compile(job) -> None:
    """One config (as a dict) compiled for ``spec`` into NVRTC's disk cache (a worker process)."""
    from gemmgen.build.nvrtc import compile_source
    from gemmgen.codegen.render import render
    from gemmgen.kernel.config import KernelConfig

    config, spec = job
    try:
        compile_source(render(KernelConfig.from_dict(config), spec), spec.arch)
    except Exception:   # the timing loop compiles it again and reports what went wrong
        pass


def prebuild(shapes, family: str | None, jobs: int) -> int:
    """Compile, in ``jobs`` processes, the kernels matmul's dispatch plans for ``shapes`` (packed operands);
    returns how many. A plan this misses (another alignment class, a fallback) compiles when first run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import gemmgen

    lib = gemmgen.load()
    configs = {}
    for M, N, K, layout in shapes:
        lda, ldb = packed_lds(M, N, K, layout)
        fit = lib.staged_fit(M, N, K, layout, lda, ldb, N, family=family)[2]
        if fit is not None:
            configs[fit.config.name] = fit.config
    if jobs > 1 and len(configs) > 1:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(_compile, [(c.to_dict(), lib.spec) for c in configs.values()]))
    return len(configs)


def table(rows: list[dict]) -> str:
    head = ("shape", "layout", "cuBLAS TFLOP/s", "gemmgen TFLOP/s", "ratio", "err gemmgen", "err cuBLAS", "kernel")
    body = [(r["shape"], r["layout"], f"{r['cublas_tflops']:.2f}", f"{r['gemmgen_tflops']:.2f}",
             f"{r['ratio']:.2f}x", f"{r['err_gemmgen']:.1e}", f"{r['err_cublas']:.1e}",
             r["kernel"] + (f" (copies {r['copies']})" if r.get("copies") else "")) for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, body)]
    return "\n".join(out)


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--shapes", type=Path, default=HERE / "shapes.toml", help="TOML file of shapes (default: the set)")
    ap.add_argument("--shape", action="append", default=[], type=parse_shape, metavar="MxNxK[/LAYOUT]",
                    help="time these shapes instead of the file's (repeatable)")
    ap.add_argument("--random", type=int, metavar="N", help="time N random shapes outside the set and the grids instead")
    ap.add_argument("--seed", type=int, action="append", default=[],
                    help="seed of --random (default 0; repeatable: a table per seed, rows tagged with it)")
    ap.add_argument("--macs", type=parse_macs, default=(27, 37), metavar="LO:HI",
                    help="multiply-adds of --random's shapes, 2^LO..2^HI (default 27:37; 15:27 draws launch-sized products)")
    ap.add_argument("--family", help="restrict matmul's dispatch to one family (e.g. simt)")
    ap.add_argument("--rep-ms", type=float, default=200.0, help="timing budget per shape in ms (default 200)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON (rewritten after each row)")
    ap.add_argument("--tune", type=int, metavar="N",
                    help="first-call tuning (gemmgen.tune_first_calls(N)): each shape's first call, untimed, times N "
                         "kernels and each family's two best, and the rows name the pick (default: GEMMGEN_TUNE, "
                         "else off)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                    help="processes compiling the planned kernels before timing (default: half the cores)")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile the planned kernels into the kernel cache and time nothing (a later run finds them)")
    args = ap.parse_args(argv)
    import gemmgen

    try:
        if args.tune is not None:
            gemmgen.tune_first_calls(args.tune)
    except ValueError as exc:
        ap.error(f"--tune: {exc}")
    if args.random:
        groups = [(seed, random_shapes(args.random, seed, tuned_keys(args.shapes), args.macs)) for seed in args.seed or [0]]
    else:
        groups = [(None, list(args.shape) if args.shape else load_shapes(args.shapes))]

    import cupy

    from gemmgen.base.devices import detect

    spec = detect(cupy.cuda.Device().id)
    t = time.time()
    built = prebuild([s for _, shapes in groups for s in shapes], args.family, args.jobs)
    print(f"{built} planned kernels compiled in {time.time() - t:.1f} s ({args.jobs} processes)", file=sys.stderr)
    if args.compile_only:
        return 0
    rows = []

    from gemmgen.base.files import write_atomic

    def save(more: list, complete: bool = False) -> None:   # after every row: a run cut short (a device's time
        if args.json:                                          # limit) keeps what it measured, marked incomplete
            write_atomic(Path(args.json), {"device": spec.to_dict(), "rows": rows + more, "complete": complete}, indent=1)

    for seed, shapes in groups:
        mine = []
        for M, N, K, layout in shapes:
            t = time.time()
            mine.append(measure(M, N, K, layout, args.rep_ms, args.family))
            r = mine[-1]
            if seed is not None:
                r["seed"] = seed
            save(mine)
            print(f"{r['shape']} {layout}: {r['gemmgen_tflops']:.2f} vs {r['cublas_tflops']:.2f} TFLOP/s "
                  f"({r['ratio']:.2f}x) {r['kernel']} [{time.time() - t:.1f} s]", file=sys.stderr, flush=True)
        print(f"\n{spec.name} ({spec.sm_count} SMs), gemmgen.matmul{' family=' + args.family if args.family else ''} "
              f"vs cuBLAS SGEMM (strict fp32), interleaved, L2 flushed before each run"
              f"{f', random seed {seed}' if seed is not None else ''}\n")
        print(table(mine))
        nn = [r["ratio"] for r in mine if r["layout"] == "NN"]
        print(f"\ngeometric mean of the ratios{f' (seed {seed})' if seed is not None else ''}: "
              f"{geomean(r['ratio'] for r in mine):.3f}x over all {len(mine)} rows, "
              f"{geomean(nn):.3f}x over the {len(nn)} NN rows; lowest {min(r['ratio'] for r in mine):.2f}x")
        rows += mine
    save([], complete=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
