"""The matrix-vector route's constants and K slices forced, timed against cuBLAS SGEMM in one process.

    python benchmarks/gemv_knobs.py --shape 777x1x1025/NT --shape 1x4096x1024 --slices 0,1,2,4,8 \\
        --set ROW_DEEP=0 --set ROW_DEEP=1000
    python benchmarks/gemv_knobs.py --shapes benchmarks/gemv.toml --set COL_WIDTH=16 --set COL_WIDTH=64 --json out.json

Each ``--set`` is one setting of gemmgen.runtime.gemv's module constants (NAME=VALUE, several joined by
``+``: ``ROW_DEEP=0+ROW_FEW=0``); each ``--slices`` value forces that many K slices under every setting
(0: the route's own choice; a forced split runs rows at their base width, since
gg_gemv_rows_wide only ever replaces a split). Every setting x slices pair builds its GemvKernel for the shape, is checked
against float64 (relative Frobenius error under 1e-5), and is timed with cuBLAS, all interleaved, the L2
flushed before each run (``gemmgen.measure.timing.bench_interleaved``). Prints per shape cuBLAS's time and
each pair's time, ratio and route (kernel, slices, lanes or threads across). Session 47 chose ROW_DEEP,
ROW_FEW and COL_WIDTH with it (docs/PERFORMANCE.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from matmul_vs_cublas import leading_dims, load_shapes, operands, parse_shape  # noqa: E402

KNOBS = ("WAVES", "ROUNDS", "ROW_ROUNDS", "MAX_SLICES", "MIN_SLICE", "COL_WIDTH", "ROW_DEEP", "ROW_FEW", "WIDE")


def parse_setting(text: str) -> dict[str, int]:
    out = {}
    for item in text.split("+"):
        name, eq, value = item.partition("=")
        if name not in KNOBS or not eq or not value.lstrip("-").isdigit():
            raise argparse.ArgumentTypeError(f"{item!r} is not NAME=INTEGER with NAME one of {', '.join(KNOBS)}")
        out[name] = int(value)
    return out


def applied(gemv, defaults: dict, setting: dict, slices: int) -> None:
    """The module's constants as the setting says, K forced into ``slices`` (0: the route's choice)."""
    for name, value in {**defaults, **setting}.items():
        setattr(gemv, name, value)
    if slices:
        gemv.WAVES, gemv.MAX_SLICES, gemv.ROW_FEW = 10**6, slices, 0


def measure(M: int, N: int, K: int, layout: str, settings: list, slices: list, rep_ms: float) -> dict:
    import cupy

    from gemmgen.base import Shape
    from gemmgen.base.devices import detect
    from gemmgen.measure.problem import cublas_call
    from gemmgen.measure.timing import L2Flusher, bench_interleaved
    from gemmgen.runtime import gemv

    spec, stream = detect(cupy.cuda.Device().id), cupy.cuda.get_current_stream().ptr
    A, B, a_store, b_store = operands(M, N, K, layout, 0)
    lda, ldb = leading_dims(A, B, layout)
    ref = cupy.matmul(A.astype(cupy.float64), B.astype(cupy.float64))
    c_cb = cupy.empty((M, N), dtype=cupy.float32)
    runs, labels = [cublas_call("fp32", Shape(M, N, K, layout), a_store, b_store, c_cb)], []
    defaults = {name: getattr(gemv, name) for name in KNOBS}
    try:
        for setting in settings:
            for s in slices:
                applied(gemv, defaults, setting, s)
                kernel = gemv.GemvKernel(M, N, K, layout, lda, ldb, N, spec.sm_count)
                launch = kernel.prepared(M, N, K, lda, ldb, N)
                c = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
                ws = cupy.empty(max(1, kernel.workspace_floats(M, N)), dtype=cupy.float32)
                run = (lambda launch=launch, c=c, ws=ws:
                       launch(A.data.ptr, B.data.ptr, c.data.ptr, 1.0, 0.0, stream, ws.data.ptr))
                run()
                err = float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref))
                r = kernel.route
                label = f"{'+'.join(f'{k}={v}' for k, v in setting.items()) or 'default'}/{'auto' if not s else s}"
                if err > 1e-5:
                    raise SystemExit(f"gemv_knobs: {M}x{N}x{K}/{layout} under {label}: error {err:.1e} against float64")
                runs.append(run)
                labels.append((label, f"{kernel.config.name} w{r.width}"))
    finally:
        applied(gemv, defaults, {}, 0)
    times = [t.median for t in bench_interleaved(runs, L2Flusher(spec.l2_bytes), rep_ms=rep_ms)]
    return {"shape": f"{M}x{N}x{K}", "layout": layout, "cublas_us": times[0] * 1e3,
            "runs": [{"setting": lab, "route": route, "us": t * 1e3, "ratio": times[0] / t}
                     for (lab, route), t in zip(labels, times[1:])]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], type=parse_shape, metavar="MxNxK[/LAYOUT]")
    ap.add_argument("--shapes", type=Path, metavar="TOML", help="a file of shapes (benchmarks/gemv.toml)")
    ap.add_argument("--set", action="append", default=[], type=parse_setting, metavar="NAME=V[+NAME=V]",
                    help=f"a setting of the constants (repeatable; none: the defaults); NAME one of {', '.join(KNOBS)}")
    ap.add_argument("--slices", default="0", help="K slices to force, comma-separated (0: the route's; default 0)")
    ap.add_argument("--rep-ms", type=float, default=40.0, help="timing budget per shape in ms (default 40)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    try:
        slices = [int(x) for x in args.slices.split(",")]
        if any(s < 0 for s in slices):
            raise ValueError
    except ValueError:
        ap.error(f"--slices {args.slices!r}: comma-separated counts of 0 or more (0: the route's choice)")
    shapes = args.shape + (load_shapes(args.shapes) if args.shapes else [])
    if not shapes:
        ap.error("no shapes: give --shape MxNxK[/LAYOUT] or --shapes FILE")
    from gemmgen.runtime import gemv
    for M, N, K, layout in shapes:
        if not gemv.serves(M, N, K, "fp32", None):
            ap.error(f"{M}x{N}x{K} is not a matrix-vector product (M or N must be 1)")
    rows = []
    for M, N, K, layout in shapes:
        row = measure(M, N, K, layout, args.set or [{}], slices, args.rep_ms)
        rows.append(row)
        print(f"{row['shape']}/{layout}: cuBLAS {row['cublas_us']:.2f} us | " + " | ".join(
            f"{r['setting']} {r['route']} {r['us']:.2f} us {r['ratio']:.2f}x" for r in row["runs"]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
