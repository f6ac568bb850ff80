"""The shipped plan's kernel on each shape, timed alone (no copies) with cuBLAS SGEMM beside it, in this tree's
source: what a template change does to the kernels matmul picks, before their timings are re-measured.

    python benchmarks/plan_kernel.py 4504x2503x17/NN 4873x3590x17/TN --json new.json
    python benchmarks/plan_kernel.py 4873x3590x17/TN --k 1,9,17,33,65,129     # the plan's kernel over K

An A/B of two template versions runs the script in two trees (PYTHONPATH=<tree>) on the same warm GPU, in
turn, twice each (session 27: the unaligned epilogue, docs/PERFORMANCE.md). With --k, each shape's plan
is kept and K swept: the slope is a K step, the intercept the fill and the epilogue. A shape whose plan
runs a kernel that cannot take its rows as they lie (a TMA kernel behind copies) is skipped, named.
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("shapes", nargs="+", metavar="MxNxK/LAYOUT")
    ap.add_argument("--k", default="", help="comma-separated K values to sweep with each shape's plan")
    ap.add_argument("--rep-ms", type=float, default=60.0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)

    from gemmgen.base.outcome import Measurement
    from gemmgen.base.shape import Shape
    from gemmgen.cli.results_plan import plan
    from gemmgen.measure.worker import MeasureWorker
    from gemmgen.records.lookup import load_device

    try:
        shapes = [Shape.parse(s) for s in args.shapes]
        ks = [int(k) for k in args.k.split(",") if k] if args.k else []
    except ValueError as err:
        print(f"plan_kernel: {err}", file=sys.stderr)
        return 2
    rows = []
    with MeasureWorker(0) as worker:
        worker.call("ping")
        spec = worker.spec
        try:   # no results for this GPU, or none of its kernels takes a shape: one line (ResultsError is one)
            kernels = load_device(spec.name, None, missing_ok=False).timings.kernels
            configs = [kernels[plan(spec.name, s.key)["plan"]["kernel"]].config for s in shapes]
        except ValueError as err:
            print(f"plan_kernel: {err}", file=sys.stderr)
            return 2
        for s, config in zip(shapes, configs):
            for k in ks or [s.K]:
                run = Shape(s.M, s.N, k, config.layout)
                try:
                    m = worker.call("measure", config, run, rep_ms=args.rep_ms)
                except Exception as err:   # a kernel that cannot take these rows: named, skipped
                    print(f"{s.key}: skipped, {str(err).splitlines()[0][:120]}", file=sys.stderr)
                    continue
                if not isinstance(m, Measurement):
                    print(f"{s.key}: {m}", file=sys.stderr)
                    continue
                key = f"{s.M}x{s.N}x{k}/{s.layout}"
                rows.append(dict(shape=key, ms=m.ms, cublas_ms=m.cublas_ms, kernel=config.name, err=m.rel_error))
                print(f"{key:>22} {m.ms * 1e3:8.1f} us  cuBLAS {m.cublas_ms * 1e3:8.1f} us  "
                      f"{m.cublas_ms / m.ms:.2f}x  {config.name}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": spec.name, "rows": rows}, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
