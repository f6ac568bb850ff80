"""How fast matmul's operand copies run: the aligned-rows copy (gg_pack) and the transposing one
(gg_transpose) of :mod:`gemmgen.runtime.transpose`, each timed with the L2 flushed before every run
(as the matmul benchmark times whole calls) beside a device-to-device memcpy of the same bytes, and
against the bandwidth the dispatch assumes for copies (``Library.copy_bandwidth``).

    python benchmarks/copy_kernels.py                       # a default set of stored shapes
    python benchmarks/copy_kernels.py --case 2153x679 --case 19x4137/T --json out.json

A case is ROWSxCOLS of the stored source (rows of COLS contiguous floats, COLS apart: unaligned where
COLS % 4 != 0), '/T' for a transposing copy. GB/s counts each element read once and written once.
"""
from __future__ import annotations

import argparse
import json
import sys

DEFAULT = ["5072x4241", "2153x679", "4137x19", "19x4137", "679x2153", "8989x2520", "534x2142",
           "5072x4241/T", "2153x679/T", "679x2153/T", "19x4137/T", "4137x19/T", "534x2142/T"]


def parse_case(text: str) -> tuple[int, int, bool]:
    dims, _, t = text.partition("/")
    try:
        rows, cols = (int(x) for x in dims.lower().split("x"))
    except ValueError:
        rows = cols = 0
    if rows < 1 or cols < 1 or t.upper() not in ("", "T"):
        raise ValueError(f"case {text!r}: want ROWSxCOLS or ROWSxCOLS/T with positive sizes")
    return rows, cols, t.upper() == "T"


def measure(rows: int, cols: int, transpose: bool, rep_ms: float) -> dict:
    import cupy

    from gemmgen.base.devices import detect
    from gemmgen.measure.timing import L2Flusher, bench_interleaved
    from gemmgen.runtime.arrays import aligned_ld
    from gemmgen.runtime.copy_kernels import Copy
    from gemmgen.runtime.dispatch import copy_time
    from gemmgen.runtime.library import KernelLibrary

    src = cupy.random.default_rng(0).uniform(-1, 1, (rows, cols), dtype=cupy.float32)
    out_rows, out_cols = (cols, rows) if transpose else (rows, cols)
    ldd = aligned_ld(out_cols, 4)
    dst = cupy.full((out_rows, ldd), cupy.nan, dtype=cupy.float32)
    ref = cupy.empty_like(src)
    copy = Copy(transpose, rows, cols, cols, ldd)
    stream = cupy.cuda.get_current_stream()
    run = lambda: copy(src.data.ptr, dst.data.ptr, stream.ptr)
    memcpy = lambda: cupy.cuda.runtime.memcpyAsync(ref.data.ptr, src.data.ptr, src.nbytes, 3, stream.ptr)
    run()
    expect = src.T if transpose else src
    if not bool((dst[:, :out_cols] == expect).all()):
        raise SystemExit(f"{rows}x{cols}{'/T' if transpose else ''}: the copy is wrong")
    spec = detect(cupy.cuda.Device().id)
    t_copy, t_memcpy = bench_interleaved([run, memcpy], L2Flusher(spec.l2_bytes), rep_ms=rep_ms)
    moved = 2.0 * 4 * rows * cols
    bandwidth = KernelLibrary(spec, {}).copy_bandwidth   # bytes/ms, as the dispatch predicts copies
    return {"case": f"{rows}x{cols}{'/T' if transpose else ''}", "copy_us": t_copy.median * 1e3,
            "memcpy_us": t_memcpy.median * 1e3, "copy_gbs": moved / t_copy.median / 1e6,
            "memcpy_gbs": moved / t_memcpy.median / 1e6, "model_gbs": bandwidth / 1e6,
            "model_us": copy_time(rows * cols, 1, bandwidth, 4) * 1e3}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], metavar="ROWSxCOLS[/T]",
                    help="a stored source to copy (repeatable; default: a set of 13)")
    ap.add_argument("--rep-ms", type=float, default=100.0, help="timing budget per case (default 100)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    try:
        cases = [parse_case(c) for c in (args.case or DEFAULT)]
    except ValueError as e:
        print(f"copy_kernels: {e}", file=sys.stderr)
        return 2
    rows = []
    print(f"{'case':>14} {'copy us':>9} {'GB/s':>7} {'memcpy us':>10} {'GB/s':>7} {'model us':>9}")
    for r, c, t in cases:
        row = measure(r, c, t, args.rep_ms)
        rows.append(row)
        print(f"{row['case']:>14} {row['copy_us']:9.1f} {row['copy_gbs']:7.0f} {row['memcpy_us']:10.1f} "
              f"{row['memcpy_gbs']:7.0f} {row['model_us']:9.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
