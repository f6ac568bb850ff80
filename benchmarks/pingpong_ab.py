"""The pingpong kernel (two consumer warpgroups taking a persistent block's 64-row tiles in turn) against
the warp-specialized cp.async kernels the dispatch runs today, on shallow-K shapes of every layout:
each config gated against float64 and timed interleaved with cuBLAS SGEMM (L2 flushed before each run).
Prints per shape each config's ratio to cuBLAS.

    python benchmarks/pingpong_ab.py --json out.json
    python benchmarks/pingpong_ab.py --shape 1404x2073x79/TN --shape 4500x3800x21/NN

Prediction (session 37): on K <= 128 a 128x128 tile's time is its copy latency and its epilogue (64 KB of
C from one SM), one tile an SM at a time; with the epilogue of one consumer beside the other's main loop
and 64-row tiles (finer waves), the pingpong kernel runs those shapes 1.2-1.5x faster than the 128-row
cooperative kernels, and loses on deep K, where the main loops serialize on the tensor cores.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from matmul_vs_cublas import _compile  # noqa: E402

SHAPES = ["1404x2073x79/TN", "1318x3112x55/TN", "772x485x158/TN", "1665x3629x27/NT", "10094x246x26/NT",
          "2600x3300x45/NN", "4500x3800x21/NN", "4096x4096x32/NN", "4096x4096x128/NN", "1300x6500x29/TT",
          "6100x900x57/TT", "3000x3000x512/NN", "4096x4096x4096/NN"]


def configs() -> dict:
    """Today's cooperative kernels (a block per tile, and persistent) and pingpong variants, NN; each
    shape's layout is set at run time."""
    from gemmgen.kernel.presets import preset

    ws = preset("tf32x3-ws").replace(label="")                    # 128x128, 4 stages
    pp = preset("tf32x3-ws-pp").replace(label="")                 # 64x128, 3 stages, 132 blocks
    return {"ws128": ws.replace(stages=3),
            "ws144": ws.replace(BN=144, WN=144, raster=1),
            "p128": ws.replace(stages=2, persistent=132),
            "pp128": pp,
            "pp96": pp.replace(BN=96, WN=96, stages=4),
            "pp176": pp.replace(BN=176, WN=176, stages=2),
            "pp128x64": pp.replace(BM=128, WM=128, BN=64, WN=64, stages=3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], metavar="MxNxK/LAYOUT", help="shapes (default: a set)")
    ap.add_argument("--rep-ms", type=float, default=40.0)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                    help="processes compiling the configs before timing")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)

    from concurrent.futures import ProcessPoolExecutor

    from gemmgen.base import Shape
    from gemmgen.measure.session import Session

    cfgs, session, rows = configs(), Session(0), []
    shapes = [Shape.parse(t if "/" in t else t + "/NN") for t in args.shape or SHAPES]
    t0 = time.time()
    todo = {c.replace(layout=s.layout).name: c.replace(layout=s.layout) for s in shapes for c in cfgs.values()}
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, [(c.to_dict(), session.spec) for c in todo.values()]))
    print(f"{len(todo)} kernels compiled in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    for s in shapes:
        here = {k: c.replace(layout=s.layout) for k, c in cfgs.items()}
        try:
            ms = session.retime(list(here.values()), s, rep_ms=args.rep_ms)
        except Exception as exc:   # a config past the gate, say: the other shapes still run
            print(f"{s.key}: {type(exc).__name__}: {exc}", flush=True)
            continue
        row = {"shape": s.key, "cublas_ms": ms[0].cublas_ms}
        for key, m in zip(here, ms):
            row[key], row[key + "_err"] = m.ms, m.rel_error
        rows.append(row)
        print(f"{s.key:18} cublas {row['cublas_ms'] * 1e3:6.1f}us",
              " ".join(f"{k}={row['cublas_ms'] / row[k]:.2f}x" for k in here), flush=True)
        if args.json:   # after every shape: a run cut short keeps what it timed
            Path(args.json).write_text(json.dumps({"device": session.spec.to_dict(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
