"""A/B of planner policies or of results files: gemmgen.matmul under side A and side B, and cuBLAS
SGEMM, timed interleaved in one process on the same operands (L2 flushed before each run).

    python -m benchmarks.ab_plans --knob min_pack_ms=0.2,0.08 --random 24 --seed 1 --seed 2 --only-changed
    python -m benchmarks.ab_plans --knob copy_share=0.4,1.0 --shape 11786x58x246/NN --json out.json
    python -m benchmarks.ab_plans --knob copy_share=0.4,0.8 --knob min_stage_k=96,64 --random 24 --seed 3
    python -m benchmarks.ab_plans --results-a old/nvidia-h100-80gb-hbm3.json --results-b results/nvidia-h100-80gb-hbm3.json \\
        --random 24 --seed 1 --seed 2 --only-changed

Each knob is a field of gemmgen.runtime.policy.Policy (the planner's and the time model's thresholds:
min_pack_ms, small_pack_ms, small_needs_tma (0/1), copy_share, min_stage_k, cheap_pack, margin, transpose,
width, prior, unaligned, unaligned_ws, extrapolated, max_resident, latency_simt (0/1), ...:
``--knob max_resident=1,8`` is the time model without and with its latency term); the small-product
route against the GEMM kernels is

    python -m benchmarks.ab_plans --knob outer_k=8,0 --knob outer_big=8388608,1e15 --knob dots_max=8,1 \\
        --shapes benchmarks/small.toml

Two libraries are loaded, each with its side's Policy; each plans every shape, and matmul runs the library of the side
being timed. ``--results-a/--results-b`` give each side its own results file instead of the shipped
ones (a file as `gemmgen search` writes it, for this GPU): what a change of the stored kernels or
timings does to the plans and to matmul's speed. Prints per shape both ratios to cuBLAS and both plans;
--only-changed skips shapes whose two plans are the same.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

from benchmarks.knobs import parse_knobs, side_policy
from benchmarks.matmul_vs_cublas import (geomean, leading_dims, load_shapes, operands, parse_macs, parse_shape,
                              plan_name, random_shapes, rel_error, tuned_keys)


def side_library(path: str | None, knobs: dict, side: int):
    """A side's library under its Policy (the results' own, with the side's knobs): the shipped results
    (and the user's), or those of one results file alone, which must be this GPU's."""
    from gemmgen.base.devices import detect, fingerprint
    from gemmgen.records.lookup import load_device
    from gemmgen.records.store import load_file
    from gemmgen.runtime.library import KernelLibrary, results_policy
    spec = detect(0)
    found = load_device(fingerprint(0)) if path is None else load_file(Path(path))
    if found.name != spec.name:
        raise SystemExit(f"ab_plans: {path} holds results of {found.name!r}, not of this GPU ({spec.name!r})")
    return KernelLibrary(spec, found.entries, 0, False, found.timings, side_policy(knobs, side, results_policy(found)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--knob", action="append", default=[], metavar="NAME=A,B",
                    help="a Policy field and its two values (repeatable)")
    ap.add_argument("--results-a", metavar="FILE", help="side A's results file (default: the shipped results)")
    ap.add_argument("--results-b", metavar="FILE", help="side B's results file (default: the shipped results)")
    ap.add_argument("--shape", action="append", default=[], type=parse_shape, metavar="MxNxK[/LAYOUT]")
    ap.add_argument("--shapes", type=Path, metavar="FILE", help="a TOML file of shapes (benchmarks/*.toml)")
    ap.add_argument("--random", type=int, metavar="N", help="N random untuned shapes per --seed")
    ap.add_argument("--seed", type=int, action="append", default=[], help="seeds of --random (repeatable)")
    ap.add_argument("--macs", type=parse_macs, default=(27, 37), metavar="LO:HI",
                    help="multiply-adds of the random shapes, 2^LO..2^HI (default 27:37)")
    ap.add_argument("--only-changed", action="store_true", help="time only shapes whose plans differ")
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    knobs = parse_knobs(ap, args.knob, "min_pack_ms=0.2,0.08")
    if not knobs and not (args.results_a or args.results_b):
        ap.error("nothing to compare: give --knob NAME=A,B, or --results-a / --results-b FILE")
    for path in (args.results_a, args.results_b):
        if path and not Path(path).is_file():
            ap.error(f"results file {path!r} does not exist (give a results JSON file, e.g. results/<gpu>.json)")
    if args.shapes is not None and not args.shapes.is_file():
        ap.error(f"shapes file {str(args.shapes)!r} does not exist (give a TOML file, e.g. benchmarks/small.toml)")
    try:
        shapes = list(args.shape) + (load_shapes(args.shapes) if args.shapes is not None else [])
    except (ValueError, KeyError, TypeError) as err:   # TOMLDecodeError is a ValueError
        ap.error(f"shapes file {str(args.shapes)!r} is not a list of [[shape]] mnk = [M, N, K] entries ({err})")
    for seed in args.seed if args.random else []:
        shapes += random_shapes(args.random, seed, tuned_keys(), args.macs)

    import cupy

    import gemmgen
    from gemmgen.base import Shape
    from gemmgen.base.devices import detect
    from gemmgen.measure.problem import cublas_call
    from gemmgen.measure.timing import L2Flusher, bench_interleaved
    from gemmgen.runtime import calls, library

    libs = tuple(side_library(path, knobs, side) for side, path in enumerate((args.results_a, args.results_b)))
    key = (cupy.cuda.Device().id, False)
    spec = detect(key[0])
    rows, prepared = [], ({}, {})
    for M, N, K, L in shapes:
        A, B, a_store, b_store = operands(M, N, K, L, 0)
        lda, ldb = leading_dims(A, B, L)
        plans = []
        for lib in libs:
            plans.append(plan_name(lib.plan_for(M, N, K, L, lda, ldb, N)))
        if args.only_changed and plans[0] == plans[1]:
            continue
        outs = [cupy.full((M, N), cupy.nan, dtype=cupy.float32) for _ in range(3)]

        def side(lib, out, prepared):
            def run():
                library._LIBRARIES[key] = lib     # matmul runs this side's library (and its plans) ...
                calls.swap(prepared)              # ... and the requests it prepared
                gemmgen.matmul(A, B, out=out)
            return run

        runs = [side(libs[0], outs[0], prepared[0]), side(libs[1], outs[1], prepared[1]), cublas_call("fp32", Shape(M, N, K, L), a_store, b_store, outs[2])]
        for run in runs:
            run()
        ref = cupy.matmul(A.astype(cupy.float64), B.astype(cupy.float64))
        errs = [rel_error(c, ref) for c in outs]
        del ref
        t_a, t_b, t_cb = bench_interleaved(runs, L2Flusher(spec.l2_bytes), rep_ms=args.rep_ms)
        r = {"shape": f"{M}x{N}x{K}", "layout": L, "a_ratio": t_cb.median / t_a.median,
             "b_ratio": t_cb.median / t_b.median, "a_ms": t_a.median, "b_ms": t_b.median,
             "cublas_ms": t_cb.median, "a_plan": plans[0], "b_plan": plans[1],
             "err_a": errs[0], "err_b": errs[1], "err_cublas": errs[2]}
        rows.append(r)
        print(f"{r['shape']:>16} {L} A {r['a_ratio']:.2f}x B {r['b_ratio']:.2f}x  {plans[0]} | {plans[1]}", flush=True)
    if rows:
        files = (args.results_a, args.results_b)
        side = lambda i: " ".join([f"{n}={v[i]:g}" for n, v in knobs.items()] + ([files[i]] if files[i] else []))
        print(f"geomean over {len(rows)} shapes: A ({side(0)}) {geomean(r['a_ratio'] for r in rows):.3f}x, "
              f"B ({side(1)}) {geomean(r['b_ratio'] for r in rows):.3f}x cuBLAS")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": spec.to_dict(), "knobs": knobs,
                                           "results": [args.results_a, args.results_b], "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
