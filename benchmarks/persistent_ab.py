"""The TMA kernel with and without a persistent grid: the 128x176 (tf32x3-tma) and 128x128 tiles at their
shipped stages, a stage fewer, and that persistent (persistent = 132), timed interleaved with cuBLAS
SGEMM on NT shapes (L2 flushed before each run). Prints each config's ratio to cuBLAS per shape.

    python benchmarks/persistent_ab.py --json out.json
    python benchmarks/persistent_ab.py --shape 11455x4009x28 --shape 2240x7425x68
"""
from __future__ import annotations

import argparse
import json

SHAPES = ["11456x4008x28", "7200x8984x28", "4096x4096x32", "2304x7392x64", "2240x7425x68", "6248x1692x76",
          "1236x1168x112", "3000x3000x512", "777x5001x1200", "1024x1024x1024", "512x512x512", "4096x4096x4096",
          "8192x8192x2048"]


def configs() -> dict:
    from gemmgen.kernel.presets import preset

    t176 = preset("tf32x3-tma").replace(label="")
    t128 = t176.replace(BN=128, WN=128, stages=4)
    return {"176s3": t176, "176s2": t176.replace(stages=2), "176s2p": t176.replace(stages=2, persistent=132),
            "128s4": t128, "128s3": t128.replace(stages=3), "128s3p": t128.replace(stages=3, persistent=132)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], metavar="MxNxK", help="NT shapes (default: a set)")
    ap.add_argument("--rep-ms", type=float, default=60.0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)

    from gemmgen.base import Shape
    from gemmgen.measure.session import Session

    cfgs, session, rows = configs(), Session(0), []
    for text in args.shape or SHAPES:
        ms = session.retime(list(cfgs.values()), Shape.parse(text, "NT"), rep_ms=args.rep_ms)
        row = {"shape": text, "cublas_ms": ms[0].cublas_ms}
        for key, m in zip(cfgs, ms):
            row[key], row[key + "_err"] = m.ms, m.rel_error
        rows.append(row)
        print(text, f"cublas {row['cublas_ms'] * 1e3:.1f}us",
              " ".join(f"{k}={row['cublas_ms'] / row[k]:.2f}x" for k in cfgs), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
