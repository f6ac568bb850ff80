"""A/B of launching matmul's GEMM kernel as the programmatic dependent of the kernel ahead of it (the
operand copies, an atomic split's scale kernel; ``gemmgen.measure.launch.AFTER_COPIES`` and
``AFTER_SCALE``): the same plan launched each way, interleaved with cuBLAS SGEMM in one process, on the
shapes whose plan has such a kernel ahead of the GEMM (the others launch the same way in both).

    python benchmarks/pdl_ab.py --random 24 --seed 21 --seed 22 --json out.json
    python benchmarks/pdl_ab.py --shape 2153x311x679/TT --shape 410x710x592

Variants: 'plain' (both off), 'copies' (behind the copies only), 'both'. Prints per shape the three
times against cuBLAS and the geometric means.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from matmul_vs_cublas import (geomean, leading_dims, operands, parse_shape, prebuild, random_shapes,  # noqa: E402
                              rel_error, tuned_keys)

VARIANTS = {"plain": (False, False), "copies": (True, False), "both": (True, True)}


def measure(M: int, N: int, K: int, layout: str, rep_ms: float) -> dict | None:
    import cupy

    import gemmgen
    from gemmgen.base import Shape
    from gemmgen.base.devices import detect
    from gemmgen.measure import launch
    from gemmgen.measure.problem import cublas_call
    from gemmgen.measure.timing import L2Flusher, bench_interleaved

    A, B, a_store, b_store = operands(M, N, K, layout, 0)
    kernel, copy_a, copy_b = gemmgen.load().plan_for(M, N, K, layout, *leading_dims(A, B, layout), N)
    if not (copy_a or copy_b or kernel.config.split_atomic) or kernel.config.mma != "wgmma":
        return None
    c = {v: cupy.full((M, N), cupy.nan, dtype=cupy.float32) for v in VARIANTS}
    c_cb = cupy.full((M, N), cupy.nan, dtype=cupy.float32)

    def run(variant):
        def go():
            launch.AFTER_COPIES, launch.AFTER_SCALE = VARIANTS[variant]
            gemmgen.matmul(A, B, out=c[variant])
        return go

    fns = [run(v) for v in VARIANTS] + [cublas_call("fp32", Shape(M, N, K, layout), a_store, b_store, c_cb)]
    for f in fns:
        f()
    ref = cupy.matmul(A.astype(cupy.float64), B.astype(cupy.float64))
    errs = {v: rel_error(c[v], ref) for v in VARIANTS}
    del ref
    times = bench_interleaved(fns, L2Flusher(detect(cupy.cuda.Device().id).l2_bytes), rep_ms=rep_ms)
    launch.AFTER_COPIES, launch.AFTER_SCALE = VARIANTS["both"]
    cb = times[-1].median
    return {"shape": f"{M}x{N}x{K}", "layout": layout, "kernel": kernel.config.name,
            "copies": "A" * copy_a + "B" * copy_b, "cublas_ms": cb,
            **{f"{v}_ms": t.median for v, t in zip(VARIANTS, times)},
            **{f"{v}_ratio": cb / t.median for v, t in zip(VARIANTS, times)},
            **{f"{v}_err": e for v, e in errs.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], type=parse_shape, metavar="MxNxK[/LAYOUT]",
                    help="repeatable")
    ap.add_argument("--random", type=int, default=0, metavar="N", help="N random shapes per --seed")
    ap.add_argument("--seed", type=int, action="append", default=[], help="repeatable (default 0)")
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--jobs", type=int, default=8, help="processes compiling the plans' kernels first (default 8)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    shapes = list(args.shape)
    if args.random:
        grid = tuned_keys()
        for seed in args.seed or [0]:
            shapes += random_shapes(args.random, seed, grid)
    if not shapes:
        ap.error("give --shape or --random N")
    prebuild(shapes, None, args.jobs)
    rows = []
    print(f"{'shape':>20} {'plain':>7} {'copies':>7} {'both':>7}  copies kernel")
    for M, N, K, layout in shapes:
        row = measure(M, N, K, layout, args.rep_ms)
        if row is None:
            continue
        rows.append(row)
        print(f"{row['shape'] + '/' + layout:>20} {row['plain_ratio']:7.3f} {row['copies_ratio']:7.3f} "
              f"{row['both_ratio']:7.3f}  {row['copies']:2} {row['kernel']}", flush=True)
    if rows:
        print(f"geomean over {len(rows)} shapes: " + ", ".join(
            f"{v} {geomean([r[f'{v}_ratio'] for r in rows]):.3f}x" for v in VARIANTS) + " cuBLAS")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
