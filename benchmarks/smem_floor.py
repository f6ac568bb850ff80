"""Whether a kernel's floor at tiny shapes is the shared-memory carveout: time stored kernels with and
without the L2-flush memset before each run, and with the carveout preference at its maximum.

A kernel with ~100 KB of dynamic shared memory (the skinny k1 kernels) after a kernel that needs little
(the flush memset, the caller's elementwise ops) may wait for the SM to re-split L1 and shared memory.
If so, it runs faster without the memset, or with CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT =
100. Session 33 on the H100: neither moved it (docs/PERFORMANCE.md).

    python benchmarks/smem_floor.py results/nvidia-h100-80gb-hbm3.json \\
        --prefix gg_skinny_nn_b64x32x32_t2_w4_v4_s2_k1 --prefix gg_simt_nn_b64x32x16_w32x8i2x1 \\
        --shape 32x32x32 --shape 64x48x40 --shape 200x30x100
"""
from __future__ import annotations

import argparse
import json
import re
import sys

CARVEOUT = 9   # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT (percent of the maximum; -1: no preference)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results", help="a results file whose timings name the kernels")
    ap.add_argument("--prefix", action="append", required=True, help="kernel names starting so (repeatable)")
    ap.add_argument("--shape", action="append", required=True, metavar="MxNxK[/LAYOUT]")
    ap.add_argument("--rep-ms", type=float, default=50.0)
    args = ap.parse_args(argv)

    try:
        with open(args.results) as fh:
            timed = json.load(fh)["timings"]["kernels"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"{args.results}: not a readable results file with timings ({e.__class__.__name__})", file=sys.stderr)
        return 2
    names = [n for n in timed if n.startswith(tuple(args.prefix))]
    if not names:
        print(f"no kernel of {args.results} starts with {', '.join(args.prefix)}", file=sys.stderr)
        return 2
    shapes = []
    for text in args.shape:
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)(?:/(NN|NT|TN|TT))?", text)
        if not m or 0 in (int(m[1]), int(m[2]), int(m[3])):
            print(f"--shape {text!r}: expected MxNxK[/LAYOUT] with positive sizes and a layout of NN, NT, TN, TT",
                  file=sys.stderr)
            return 2
        shapes.append((int(m[1]), int(m[2]), int(m[3]), m[4] or "NN"))

    import cupy as cp
    from cupy.cuda import driver

    from gemmgen.base import Shape
    from gemmgen.build.nvrtc import compile_source
    from gemmgen.codegen.render import render
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.measure.launch import LoadedKernel
    from gemmgen.measure.problem import Problem
    from gemmgen.measure.timing import L2Flusher, bench_interleaved

    kernels = []
    for name in names:
        c = KernelConfig.from_dict(timed[name]["config"])
        kernels.append(LoadedKernel(c, compile_source(render(c, "sm_90"), "sm_90")))
    flush = L2Flusher(cp.cuda.Device().attributes["L2CacheSize"])
    for i, name in enumerate(names):
        print(f"kernel {i}: {name}")
    for M, N, K, layout in shapes:
        prob = Problem(Shape(M, N, K, layout))
        ops, out = prob.operands(), cp.empty((M, N), cp.float32)
        mine = [(i, k) for i, k in enumerate(kernels) if k.config.layout == layout]
        fns = [(lambda k=k: k.launch(ops)) for _, k in mine] + [lambda: prob.cublas(out=out, mode="fp32")]
        for way, fl, carve in (("flush", flush, -1), ("no flush", lambda s: None, -1), ("flush, carveout 100", flush, 100)):
            for k in kernels:
                driver.funcSetAttribute(k.main.ptr, CARVEOUT, carve)
            times = bench_interleaved(fns, fl, rep_ms=args.rep_ms)
            cells = [f"kernel {i} {t.median * 1e3:.1f}" for (i, _), t in zip(mine, times)]
            print(f"{M}x{N}x{K}/{layout} {way}: " + ", ".join(cells + [f"cuBLAS {times[-1].median * 1e3:.1f}"]) + " us",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
