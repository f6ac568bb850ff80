"""Special values and extreme magnitudes: does a kernel behave as cuBLAS SGEMM does?

For each config: (1) Inf, -Inf and NaN planted in A and B: the positions of Inf, -Inf and NaN in C must
be those of SGEMM's C; (2) A and B scaled by 2^e for a range of e: the relative error against float64
beside SGEMM's (products of the scaled inputs range from 2^(2e-2) down).

    python benchmarks/special_values.py --preset tf32x3-wgmma --preset tf32x3 --preset v13
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")


def classes(c):
    import cupy

    return cupy.stack([cupy.isnan(c), cupy.isposinf(c), cupy.isneginf(c)])


def main(argv=None) -> int:
    import cupy

    from gemmgen.build.nvrtc import compile_source
    from gemmgen.base.devices import detect
    from gemmgen.measure.launch import LoadedKernel, Operands
    from gemmgen.base import Shape
    from gemmgen.kernel.presets import preset
    from gemmgen.measure.problem import cublas_call
    from gemmgen.codegen.render import render

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--preset", action="append", default=[])
    ap.add_argument("--shape", default="256x192x320")
    args = ap.parse_args(argv)
    spec = detect(0)
    shape = Shape.parse(args.shape)
    M, N, K = shape.M, shape.N, shape.K
    rng = cupy.random.default_rng(7)
    bad = 0
    for name in args.preset or ["tf32x3-wgmma"]:
        cfg = preset(name, spec.arch)
        k = LoadedKernel(cfg, compile_source(render(cfg, spec), spec.arch))
        run = lambda a, b, c: k.launch(Operands(M, N, K, a.data.ptr, K, b.data.ptr, N, c.data.ptr, N))
        for what in ("inf", "-inf", "nan", "mixed", "inf*0", "inf*1"):
            a = rng.uniform(-1, 1, (M, K), dtype=cupy.float32)
            b = rng.uniform(-1, 1, (K, N), dtype=cupy.float32)
            vals = {"inf": [cupy.inf], "-inf": [-cupy.inf], "nan": [cupy.nan], "inf*0": [cupy.inf],
                    "inf*1": [-cupy.inf], "mixed": [cupy.inf, -cupy.inf, cupy.nan]}[what]
            if what in ("inf*0", "inf*1"):   # the row of B that meets A's Inf: zeros (NaN in SGEMM), or ones
                b[3, :] = 0.0 if what == "inf*0" else 1.0                  # (exact in TF32: small part 0)
            for i, v in enumerate(vals):
                a[(5 + 17 * i) % M, (3 + 31 * i) % K] = v
                b[(11 + 13 * i) % K, (7 + 29 * i) % N] = v
            a[M - 1, K - 1] = cupy.float32(3e38)   # finite, huge: products overflow to Inf as in SGEMM
            ours = cupy.full((M, N), 1.0, cupy.float32)
            ref = cupy.full((M, N), 1.0, cupy.float32)
            run(a, b, ours)
            cublas_call("fp32", shape, a, b, ref)()
            same = bool((classes(ours) == classes(ref)).all())
            bad += not same
            print(f"{name:<14} {what:<6} Inf/NaN pattern {'same as' if same else 'DIFFERS from'} SGEMM "
                  f"(ours: {int(cupy.isnan(ours).sum())} NaN, {int(cupy.isinf(ours).sum())} Inf; "
                  f"SGEMM: {int(cupy.isnan(ref).sum())} NaN, {int(cupy.isinf(ref).sum())} Inf)", flush=True)
        for e in (-64, -60, -50, -40, -20, 0, 20, 40, 56, 60):
            s = cupy.float32(2.0 ** e)
            a = rng.uniform(-1, 1, (M, K), dtype=cupy.float32) * s
            b = rng.uniform(-1, 1, (K, N), dtype=cupy.float32) * s
            ours, ref = cupy.empty((M, N), cupy.float32), cupy.empty((M, N), cupy.float32)
            run(a, b, ours)
            cublas_call("fp32", shape, a, b, ref)()
            r64 = a.astype(cupy.float64) @ b.astype(cupy.float64)
            nrm = float(cupy.linalg.norm(r64))
            err = lambda c: float(cupy.linalg.norm(c.astype(cupy.float64) - r64)) / nrm if nrm else float("nan")
            eo, er = err(ours), err(ref)
            worse = not (eo <= 1.5 * er or eo < 1e-6)
            bad += worse
            print(f"{name:<14} scale 2^{e:<4} error {eo:.2e} (SGEMM {er:.2e}){'  WORSE' if worse else ''}", flush=True)
    print(f"\n{bad} case(s) unlike SGEMM")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
