"""Time the Hopper wgmma variant of the TF32 families around its presets, next to the mma.sync presets
and cuBLAS SGEMM (interleaved in one run), at one or more shapes; sorted by speed.

Exploration for issue 7 (3xTF32 at 1.5x / 2x cuBLAS SGEMM on an H100):

    python benchmarks/wgmma_sweep.py --shapes 4096x4096x4096,8192x8192x8192 --json out.json
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

from gemmgen.build.parallel import compile_many
from gemmgen.measure.session import Session
from gemmgen.base import Failure, Shape
from gemmgen.kernel.presets import preset
from gemmgen.codegen.render import render
from gemmgen.kernel.rules import explain


def candidates(family: str):
    """(label, config): the presets, then the wgmma variant over tiles x pipelines x bounds."""
    yield family, preset(family).replace(label="")
    base = preset(f"{family}-wgmma").replace(label="")
    tiles = {"128x128": dict(BM=128, WM=128, BN=128), "128x256": dict(BM=128, WM=128, BN=256),
             "64x256": dict(BM=64, WM=64, BN=256), "256x128": dict(BM=256, WM=256, BN=128)}
    pipes = {"bk32 s3": dict(BK=32, stages=3), "bk32 s4": dict(BK=32, stages=4),
             "bk64 s2": dict(BK=64, stages=2), "bk64 s3": dict(BK=64, stages=3)}
    for (tn, t), (pn, p), bounds in itertools.product(tiles.items(), pipes.items(), ("checked", "none")):
        cfg = base.replace(**t, **p, bounds=bounds)
        if not explain(cfg, "h100"):
            yield f"wgmma {tn} {pn} {bounds}", cfg
    for raster in (1, 16):
        yield f"wgmma preset raster={raster}", base.replace(raster=raster)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192")
    ap.add_argument("--families", default="tf32x3,tf32")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    cands = [c for fam in args.families.split(",") for c in candidates(fam)]
    t = time.time()
    compile_many([(render(c, "h100"), "sm_90") for _, c in cands], compiler="nvrtc")
    print(f"{len(cands)} candidates compiled in {time.time() - t:.1f} s", flush=True)
    session, rows = Session(0), []
    for shape in map(Shape.parse, args.shapes.split(",")):
        for label, cfg in cands:
            if cfg.accepts(shape.M, shape.N, shape.K):
                continue
            try:
                m = session.measure(cfg, shape, rep_ms=100)
            except Failure as exc:
                print(f"{shape.key} {label}: {exc.kind} {exc.reason}", flush=True)
                continue
            row = {"label": label, "family": cfg.family, "config": cfg.to_dict(), **m.to_dict()}
            rows.append(row)
            print(f"{shape.key:<16} {cfg.family:<7} {label:<32} {m.tflops:7.2f} TFLOP/s {m.ratio:5.2f}x cuBLAS "
                  f"err {m.rel_error:.2e} regs {m.registers} local {m.extra['local_bytes']}", flush=True)
    print("\nbest per shape and family:")
    for key in dict.fromkeys((r["shape"], r["family"]) for r in rows):
        best = max((r for r in rows if (r["shape"], r["family"]) == key), key=lambda r: r["tflops"])
        print(f"  {key[0]:<16} {key[1]:<7} {best['label']:<32} {best['tflops']:7.2f} TFLOP/s {best['ratio']:.2f}x")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
