"""Split-K plans as they launch, against two launches and against the main kernel alone (what a split
plan's second launch costs, and what the one-launch atomic split wins back: session 42).

For random launch-sized shapes (matmul_vs_cublas.py's draw: --seed, --macs) whose shipped plan splits K,
the plan's kernel on its own layout (no copies) is timed interleaved with cuBLAS SGEMM, the L2 flushed
before each run, four ways: as gemmgen launches it (an atomic split of the warp-specialized kernels whose
blocks fit one wave: one launch with split flags, gemmgen.measure.splitflags), with the flags withheld
(the scale kernel first: the two-launch path), the main kernel alone (no scale or reduce kernel: its
result is wrong, only its time counts), and an empty kernel.

    python benchmarks/split_launch_ab.py --seed 301 --seed 302 --seed 303 --json rows.json
    python benchmarks/split_launch_ab.py --seed 301 --limit 10 --rep-ms 20

Session 42's rows (docs/bench/h100-split-*-s42-*.json) were taken by this script's first draft.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matmul_vs_cublas import packed_lds, parse_macs, random_shapes  # noqa: E402


def split_plans(lib, seeds: list[int], macs: tuple[int, int], count: int = 24) -> list[tuple[str, object]]:
    """(MxNxK/LAYOUT, config) of each drawn shape whose plan in ``lib`` (a KernelLibrary; no GPU needed)
    splits K, the shape in the layout the kernel runs (its plan may copy an operand into another first)."""
    out = []
    for seed in seeds:
        for M, N, K, layout in random_shapes(count, seed, set(), macs):
            _, _, fit = lib.staged_fit(M, N, K, layout, *packed_lds(M, N, K, layout), N, "fp32", None)
            if fit is not None and fit.config.split_k > 1:   # the fit whose prediction makes matmul's plan
                out.append((f"{M}x{N}x{K}/{fit.config.layout}", fit.config))
    return out


def time_plan(session, key: str, config, rep_ms: float) -> dict:
    """The four timings of one plan's kernel on its shape, in us, and whether it went out in one launch."""
    import cupy

    from gemmgen.base.shape import Shape
    from gemmgen.measure.gate import mode_of
    from gemmgen.measure.launch import Launch, launch_kernel
    from gemmgen.measure.timing import bench_interleaved

    s = Shape.parse(key)
    kernel = session.kernel(config)
    ops = session.problem(s).operands(1.0, 0.0)
    floats = kernel.workspace_floats(s.M, s.N)
    ws = cupy.empty(max(floats, 1), dtype=cupy.float32)
    stream = cupy.cuda.get_current_stream().ptr
    args = (ops.A, ops.B, ops.C, 1.0, 0.0, stream, ws.data.ptr if floats else 0)
    shipped = kernel.prepared(s.M, s.N, s.K, ops.lda, ops.ldb, ops.ldc)
    two = Launch(kernel, s.M, s.N, s.K, ops.lda, ops.ldb, ops.ldc)
    two.flag_words = 0                       # no flags: the scale kernel first
    two(*args)                               # fills its parameters for the main kernel alone (W null)
    empty = cupy.RawKernel('extern "C" __global__ void e(int* p) { if (p) p[threadIdx.x] = 0; }', "e")
    fns = [lambda: shipped(*args), lambda: two(*args),
           lambda: launch_kernel(two.fn, *two.grid, *two.block, two.smem, stream, two.main.argv_ptr, 0),
           lambda: empty((1,), (32,), (0,)), session._cublas_run(s, 0, mode_of(config))]
    t = [x.median * 1e3 for x in bench_interleaved(fns, session.flush, 10, rep_ms)]
    return dict(shape=key, kernel=config.name, one_launch=shipped.flag_words > 0, shipped_us=t[0],
                two_launch_us=t[1], main_alone_us=t[2], empty_us=t[3], cublas_us=t[4])


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, action="append", help="seeds of the draw (repeatable; default 301)")
    ap.add_argument("--macs", type=parse_macs, default=(15, 27), metavar="LO:HI",
                    help="multiply-adds of the shapes, 2^LO..2^HI (default 15:27, launch-sized)")
    ap.add_argument("--limit", type=int, default=0, metavar="N", help="time at most N plans (0: all)")
    ap.add_argument("--rep-ms", type=float, default=40.0, help="timing budget per plan in ms (default 40)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if args.limit < 0 or not args.rep_ms > 0:
        ap.error(f"--limit {args.limit} / --rep-ms {args.rep_ms}: give a count of 0 or more and a time above 0")
    import gemmgen
    from gemmgen.measure.session import Session

    session = Session(0)
    plans = split_plans(gemmgen.load(), args.seed or [301], args.macs)
    rows = []
    for key, config in plans[:args.limit or None]:
        r = time_plan(session, key, config, args.rep_ms)
        rows.append(r)
        print(f"{key:>18} shipped {r['shipped_us']:6.1f}  two launches {r['two_launch_us']:6.1f}  main alone "
              f"{r['main_alone_us']:6.1f}  empty {r['empty_us']:4.1f}  cuBLAS {r['cublas_us']:6.1f} us"
              f"{'  (one launch)' if r['one_launch'] else ''}  {r['kernel']}", flush=True)
        if args.json:
            args.json.write_text(json.dumps({"device": session.spec.name, "rows": rows}, indent=1))
    for what, sel in (("all", rows), ("one-launch", [r for r in rows if r["one_launch"]])):
        if sel:
            g = {k: geomean([r["cublas_us"] / r[k] for r in sel]) for k in ("shipped_us", "two_launch_us", "main_alone_us")}
            print(f"{what} ({len(sel)} plans): cuBLAS/time shipped {g['shipped_us']:.3f}x, two launches "
                  f"{g['two_launch_us']:.3f}x, main alone {g['main_alone_us']:.3f}x")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
