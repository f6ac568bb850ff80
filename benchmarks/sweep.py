"""Time a family of configs around the v10 warptiling preset at one shape, sorted by speed.

Exploration for issue 6 (what the H100 rewards); the search finds such kernels by itself once the
space in search/ includes them.

    python benchmarks/sweep.py --shape 4096x4096x4096 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from gemmgen.build.parallel import compile_many
from gemmgen.measure.session import Session
from gemmgen.base import Failure, Shape
from gemmgen.kernel.presets import preset
from gemmgen.codegen.render import render
from gemmgen.kernel.rules import explain

V10 = preset("v10").replace(label="")


def candidates():
    """(label, config) pairs: tile shapes x pipelines x shared layouts."""
    tiles = {
        "128x128 w64x32 t8x8": dict(BM=128, BN=128, WM=64, WN=32, WMITER=2, WNITER=2, TM=4, TN=4),
        "128x128 w64x64 t8x16": dict(BM=128, BN=128, WM=64, WN=64, WMITER=2, WNITER=4, TM=4, TN=4),
        "256x128 w64x64 t8x16": dict(BM=256, BN=128, WM=64, WN=64, WMITER=2, WNITER=4, TM=4, TN=4),
        "128x256 w64x64 t8x16": dict(BM=128, BN=256, WM=64, WN=64, WMITER=2, WNITER=4, TM=4, TN=4),
        "128x256 w32x128 t8x16": dict(BM=128, BN=256, WM=32, WN=128, WMITER=1, WNITER=4, TM=8, TN=4),
        "256x128 w128x32 t16x8": dict(BM=256, BN=128, WM=128, WN=32, WMITER=4, WNITER=2, TM=4, TN=4),
    }
    pipes = {
        "reg2 bk8": dict(BK=8, stages=2, async_copy=False, prefetch=True),
        "reg2 bk16": dict(BK=16, stages=2, async_copy=False, prefetch=True),
        "cp3 bk8": dict(BK=8, stages=3, async_copy=True, prefetch=True),
        "cp4 bk16": dict(BK=16, stages=4, async_copy=True, prefetch=True),
    }
    for tname, t in tiles.items():
        for pname, p in pipes.items():
            for swz in (False, True):
                extra = dict(pad_a=0, swz_a=8) if swz else {}
                cfg = V10.replace(**t, **p, **extra)
                if not explain(cfg, "h100"):
                    yield f"{tname} {pname}{' swz' if swz else ''}", cfg


def neighbors():
    """(label, config) pairs: v13's sm_90 config with one parameter changed at a time."""
    base = preset("v13", "sm_90").replace(label="")
    yield "v13", base
    changes = {"BK": [8, 32], "bounds": ["none"], "raster": [1, 4, 16], "pad_a": [0, 8],
               "layout": ["TN", "NT", "TT"], "prefetch": [False], "vec": [2], "pad_b": [4]}
    for key, values in changes.items():
        for value in values:
            cfg = base.replace(**{key: value})
            if not explain(cfg, "h100"):
                yield f"v13 {key}={value}", cfg
    cfg = base.replace(pad_a=0, swz_a=8)
    yield "v13 swz_a=8", cfg
    yield "v13 fast BK=8", base.replace(bounds="none", BK=8)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shape", default="4096x4096x4096")
    ap.add_argument("--json")
    ap.add_argument("--neighbors", action="store_true", help="vary v13 one parameter at a time")
    args = ap.parse_args(argv)
    shape = Shape.parse(args.shape)
    cands = list(neighbors() if args.neighbors else candidates())
    t = time.time()
    compile_many([(render(c, "sm_90"), "sm_90") for _, c in cands], compiler="nvrtc")
    print(f"{len(cands)} candidates compiled in {time.time() - t:.1f} s", flush=True)
    session, rows = Session(0), []
    for label, cfg in cands:
        try:
            m = session.measure(cfg, shape.__class__(shape.M, shape.N, shape.K, cfg.layout), rep_ms=100)
            rows.append({"label": label, "config": cfg.to_dict(), **m.to_dict()})
        except Failure as exc:
            print(f"{label}: {exc.kind} {exc.reason}", flush=True)
    rows.sort(key=lambda r: -r["tflops"])
    for r in rows:
        print(f"{r['label']:<40} {r['tflops']:6.2f} TFLOP/s {100 * r['ratio']:6.1f}% of cuBLAS "
              f"regs {r['registers']:3d} local {r['extra']['local_bytes']} occ {r['occupancy']:.2f}")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
