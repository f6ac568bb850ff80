"""Which kernels of the space serve which shapes: time a grid of candidate configs on a list of shapes,
each against cuBLAS SGEMM in the same run, and print the best per shape and family.

Exploration for issue 11 (matmul on every shape). Candidates are the fp32-accurate families: the
wgmma 3xTF32 variant over block tiles, pipelines and split-K, the mma.sync 3xTF32 preset and v13.

    python benchmarks/explore_shapes.py --shapes 1024x1024x1024,128x4096x4096 --json out.json
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

SET = ("1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x4096x1024,2048x2048x16384,"
       "128x4096x4096,4096x128x4096,16384x16384x128,1000x1000x1000,4097x4097x4097,3000x5000x700")


def candidates(splits=(1, 2, 4, 8), layout="NN"):
    """(label, config) of the fp32-accurate families in one layout."""
    yield "v13", preset("v13").replace(layout=layout)
    yield "tf32x3", preset("tf32x3").replace(layout=layout)
    base = preset("tf32x3-wgmma").replace(label="", layout=layout, pad_b=4 if layout[1] == "T" else 8)
    tiles = {"128x128": dict(BM=128, WM=128, BN=128), "64x128": dict(BM=64, WM=64, BN=128),
             "128x64": dict(BM=128, WM=128, BN=64), "64x64": dict(BM=64, WM=64, BN=64)}
    pipes = {"bk64s2": dict(BK=64, stages=2), "bk32s4": dict(BK=32, stages=4), "bk32s3": dict(BK=32, stages=3),
             "bk32s2": dict(BK=32, stages=2)}
    for (tn, t), (pn, p), k in itertools.product(tiles.items(), pipes.items(), splits):
        for red in (("atomic", "workspace") if k > 1 else ("atomic",)):
            cfg = base.replace(**t, **p, split_k=k, reduce=red)
            if not explain(cfg, "h100"):
                yield f"wg {tn} {pn} k{k}{red[0] if k > 1 else ''}", cfg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default=SET)
    ap.add_argument("--rep-ms", type=float, default=20.0)
    ap.add_argument("--splits", default="1,2,4,8", help="split-K values of the wgmma candidates")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    shapes = [Shape.parse(s) for s in args.shapes.split(",")]
    splits = tuple(int(k) for k in args.splits.split(","))
    cands = {lay: list(candidates(splits, lay)) for lay in dict.fromkeys(s.layout for s in shapes)}
    t = time.time()
    compile_many([(render(c, "h100"), "sm_90") for cs in cands.values() for _, c in cs], compiler="nvrtc")
    print(f"{sum(map(len, cands.values()))} candidates compiled in {time.time() - t:.1f} s", flush=True)
    session, rows = Session(0), []
    for shape in shapes:
        t = time.time()
        for label, cfg in cands[shape.layout]:
            try:
                m = session.measure(cfg, shape, warmup_ms=5, rep_ms=args.rep_ms)
            except Failure as exc:
                print(f"{shape.key} {label}: {exc.kind} {exc.reason}"[:200], flush=True)
                continue
            rows.append({"label": label, "family": cfg.family, "config": cfg.to_dict(), **m.to_dict()})
        sub = sorted((r for r in rows if r["shape"] == shape.key), key=lambda r: -r["tflops"])
        print(f"{shape.key}  [{time.time() - t:.0f} s]  cuBLAS {sub[0]['cublas_tflops']:.1f} TFLOP/s", flush=True)
        for r in sub[:6]:
            print(f"    {r['label']:<28} {r['tflops']:7.2f} TFLOP/s {r['ratio']:5.2f}x  err {r['rel_error']:.1e}", flush=True)
    print("\nbest per shape and family:")
    for key in dict.fromkeys((r["shape"], r["family"]) for r in rows):
        best = max((r for r in rows if (r["shape"], r["family"]) == key), key=lambda r: r["tflops"])
        print(f"  {key[0]:<18} {key[1]:<7} {best['label']:<28} {best['tflops']:7.2f} TFLOP/s {best['ratio']:.2f}x")
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
