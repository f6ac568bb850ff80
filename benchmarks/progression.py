"""Time the presets v0..v13 (or given configs) against cuBLAS in one process on this GPU.

    python benchmarks/progression.py --shape 4096x4096x4096 --shape 8192x8192x8192 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys

from gemmgen.measure import Session
from gemmgen.outcome import Failure, Shape
from gemmgen.presets import all_presets


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=float, default=200)
    args = ap.parse_args(argv)
    session = Session(0)
    rows = []
    for text in args.shape or ["4096x4096x4096"]:
        shape = Shape.parse(text)
        for cfg in all_presets(session.spec.arch):
            try:
                m = session.measure(cfg, shape, rep_ms=args.rep_ms)
                rows.append({"preset": cfg.label, **m.to_dict()})
                print(f"{shape.key:>20} {cfg.label:>4} {m.tflops:7.2f} TFLOP/s {m.ms:9.3f} ms  cuBLAS {m.cublas_tflops:6.2f}"
                      f"  {100 * m.ratio:6.1f}%  regs {m.registers:3d}  occ {m.occupancy:.2f}  clk {m.clock_mhz}", flush=True)
            except Exception as exc:  # a failure is a row, not the end of the table
                exc = exc if isinstance(exc, Failure) else Failure(f'{type(exc).__name__}: {exc}')
                rows.append({"preset": cfg.label, "shape": shape.key, "failure": exc.to_dict()})
                print(f"{shape.key:>20} {cfg.label:>4} FAILED {exc.kind}: {exc.reason}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": session.spec.to_dict(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
