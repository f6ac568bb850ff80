"""Latency-bound shapes: unsplit 64-row cp.async 3xTF32 wgmma kernels that keep 2-4 blocks on an SM
(64x64, and 64x128 at min_blocks 2), timed interleaved with cuBLAS SGEMM beside a kernel you name
(say, what gemmgen.matmul runs there: `gemmgen results plan h100 SHAPE`). Session 15 found these
variants 1.1-1.3x faster than the one-block-per-SM kernels the dispatch ran on shallow-K shapes.

    python benchmarks/unsplit_ab.py --shape 2318x3460x40/NN --shape 4495x766x88/TN --json out.json
    python benchmarks/unsplit_ab.py \
        --shape 528x8708x43/NN=gg_tf32x3_nn_b64x128x32_w64x64_v4_ap0s8_bp8s1_r2_s2c_k1_chk_wg

A named kernel is looked up in this GPU's shipped results (timings or entries). ``--variants FILE``
times other candidates instead: a JSON object of name -> config (any layout; each is moved to the
shape's layout), e.g. skinny-N SIMT tiles with split-K:

    python benchmarks/unsplit_ab.py --variants cands.json --shape 2580x18x8537/NN --shape 1738x22x5471/TT
"""
from __future__ import annotations

import argparse
import json


def variants(path: str | None = None):
    """name -> config: the unsplit 64-row variants, or those of the JSON file ``path`` (NN; each is
    moved to the shape's layout)."""
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.kernel.presets import preset

    if path:
        with open(path) as fh:
            return {name: KernelConfig.from_dict(c) for name, c in json.load(fh).items()}

    base = preset("tf32x3-wgmma").replace(label="", BM=64, BN=64, BK=32, WM=64, WN=64, pad_b=8, swz_b=1,
                                         raster=2, stages=2, split_k=1, bounds="checked")
    wide = base.replace(BN=128, stages=3, min_blocks=2)
    return {"64x64 s2c": base, "64x64 s3c": base.replace(stages=3),
            "64x64 s3cp": base.replace(stages=3, prefetch=True), "64x128o2 s3c": wide,
            "64x128o2 s2c": wide.replace(stages=2), "64x128o2 s3cp": wide.replace(prefetch=True)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", required=True, metavar="MxNxK/LAYOUT[=KERNEL]")
    ap.add_argument("--rep-ms", type=float, default=60.0)
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--variants", metavar="FILE", help="candidates to time: a JSON object of name -> config")
    args = ap.parse_args(argv)

    from gemmgen.base import Shape
    from gemmgen.kernel.rules import explain
    from gemmgen.measure.session import Session
    from gemmgen.records.lookup import load_device

    session = Session(0)
    stored = load_device(session.spec.name)
    known = {n: k.config for n, k in stored.timings.kernels.items()}
    known.update({e.kernel_config.name: e.kernel_config for e in stored.entries.values()})
    rows = []
    for text in args.shape:
        where, _, name = text.partition("=")
        shape = Shape.parse(where.split("/")[0], (where.split("/") + ["NN"])[1])
        if name and name not in known:
            ap.error(f"--shape {text!r}: no kernel {name!r} in the results of {session.spec.name}")
        cands = {"named": known[name].replace(layout=shape.layout)} if name else {}
        for key, c in variants(args.variants).items():
            moved = c.replace(layout=shape.layout)
            if not explain(moved, session.spec) and moved.accepts(shape.M, shape.N, shape.K) is None:
                cands[key] = moved
        for key, c in list(cands.items()):   # a candidate that fails the gate is dropped, with its reason
            try:
                session.check(c, shape)
            except Exception as exc:   # noqa: BLE001 - WrongResult, a compile or launch failure
                print(f"{shape.key:>20} {key}: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
                del cands[key]
        ms = session.retime(list(cands.values()), shape, rep_ms=args.rep_ms, validated=True)
        ratio = {k: m.cublas_ms / m.ms for k, m in zip(cands, ms)}
        rows.append({"shape": shape.key, "cublas_ms": ms[0].cublas_ms, "ratio": ratio,
                     "resident": {k: m.resident for k, m in zip(cands, ms)}, "max_err": max(m.rel_error for m in ms)})
        cells = "  ".join(f"{k} {v:.2f}x" for k, v in ratio.items())
        print(f"{shape.key:>20} cuBLAS {ms[0].cublas_ms * 1e3:6.1f} us  {cells}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
