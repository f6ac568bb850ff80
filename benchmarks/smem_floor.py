"""Whether a kernel's floor at tiny shapes is the shared-memory carveout: time stored kernels after a
kernel that needs little shared memory, and after themselves.

A kernel with ~100 KB of dynamic shared memory (the skinny k1 kernels) launched after one that needs
little (the L2-flush memset, cuBLAS, the caller's elementwise ops) may wait for the SM to re-split L1
and shared memory. Four ways, each kernel's runs timed with CUDA events:

- ``flush``: the harness's way (benchmarks and the stored timings): an L2-flush memset before each run,
  the kernels and cuBLAS interleaved.
- ``flush, carveout 100``: the same with CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 100 on the
  timed kernels (the memset and cuBLAS keep their own preference).
- ``after itself``: the kernel alone, run after run with no flush: a predecessor with the same carveout,
  and a busy GPU (a first run is queued ahead of each timed one), so no launch gap is timed.
- ``after itself, carveout 100``.

If ``after itself`` is much faster than ``flush`` the floor is (partly) the switch; if they agree, it is
the kernel. Kernels that refuse a shape (a skinny kernel's N > BN) are skipped there, named.

    python benchmarks/smem_floor.py results/nvidia-h100-80gb-hbm3.json \\
        --prefix gg_skinny_nn_b64x32x32_t2_w4_v4_s2_k1 --prefix gg_simt_nn_b64x32x16_w32x8i2x1 \\
        --shape 32x32x32 --shape 16x24x64
"""
from __future__ import annotations

import argparse
import json
import sys

CARVEOUT = 9   # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT (percent of the maximum; -1: no preference)


def parse_shape(text: str) -> tuple[int, int, int, str]:
    """(M, N, K, layout) of ``MxNxK[/LAYOUT]`` by :meth:`gemmgen.base.Shape.parse`; ValueError naming the
    option, the text and what is valid."""
    from gemmgen.base import Shape

    try:
        s = Shape.parse(text)
    except ValueError:
        raise ValueError(f"--shape {text!r}: expected MxNxK[/LAYOUT] with positive sizes and a layout of NN, NT, TN, "
                         "TT") from None
    return s.M, s.N, s.K, s.layout


def runnable(configs: dict, M: int, N: int, K: int, layout: str) -> tuple[list[str], list[str]]:
    """(names of the configs that compute the shape in its layout, 'name: why' of those of the layout that
    refuse it); ``configs`` maps name -> KernelConfig."""
    ok, refused = [], []
    for name, c in configs.items():
        if c.layout != layout:
            continue
        why = c.accepts(M, N, K)
        if why:
            refused.append(f"{name}: {why}")
        else:
            ok.append(name)
    return ok, refused


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("results", help="a results file whose timings name the kernels")
    ap.add_argument("--prefix", action="append", required=True, help="kernel names starting so (repeatable)")
    ap.add_argument("--shape", action="append", required=True, metavar="MxNxK[/LAYOUT]")
    ap.add_argument("--rep-ms", type=float, default=50.0, help="timed milliseconds per kernel and way (default 50)")
    args = ap.parse_args(argv)

    def refuse(line: str) -> int:
        print(line, file=sys.stderr)
        return 2

    if not args.rep_ms > 0:
        return refuse(f"--rep-ms {args.rep_ms}: must be above 0")
    try:
        shapes = [parse_shape(t) for t in args.shape]
    except ValueError as e:
        return refuse(str(e))
    try:
        with open(args.results) as fh:
            timed = json.load(fh)["timings"]["kernels"]
        names = [n for n in timed if n.startswith(tuple(args.prefix))]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return refuse(f"{args.results}: not a readable results file with timings ({e.__class__.__name__})")
    if not names:
        return refuse(f"no kernel of {args.results} starts with {', '.join(args.prefix)}")

    from gemmgen.kernel.config import KernelConfig

    configs = {n: KernelConfig.from_dict(timed[n]["config"]) for n in names}
    return measure(configs, shapes, args.rep_ms)


def measure(configs: dict, shapes: list, rep_ms: float) -> int:
    """Time each shape's runnable kernels and cuBLAS in the four ways of the module docstring."""
    import cupy as cp
    from cupy.cuda import driver

    from gemmgen.base import Shape
    from gemmgen.base.devices import detect
    from gemmgen.build.nvrtc import compile_source
    from gemmgen.codegen.render import render
    from gemmgen.measure.launch import LoadedKernel
    from gemmgen.measure.problem import Problem
    from gemmgen.measure.timing import L2Flusher, bench_interleaved

    arch = detect(cp.cuda.Device().id).arch
    loaded = {n: LoadedKernel(c, compile_source(render(c, arch), arch)) for n, c in configs.items()}
    index = {n: i for i, n in enumerate(loaded)}
    for n, i in index.items():
        print(f"kernel {i}: {n}")
    flush = L2Flusher(cp.cuda.Device().attributes["L2CacheSize"])
    for M, N, K, layout in shapes:
        ok, refused = runnable(configs, M, N, K, layout)
        for line in refused:
            print(f"{M}x{N}x{K}/{layout}: skipped {line}")
        if not ok:
            print(f"{M}x{N}x{K}/{layout}: no given kernel computes it; cuBLAS alone is not worth timing")
            continue
        prob = Problem(Shape(M, N, K, layout))
        ops = prob.operands()
        _, cublas = prob.cublas_call(cp.empty((M, N), cp.float32), "fp32")
        runs = [(lambda k=loaded[n]: k.launch(ops)) for n in ok]
        for carve in (-1, 100):
            for n in ok:
                driver.funcSetAttribute(loaded[n].main.ptr, CARVEOUT, carve)
            suffix = ", carveout 100" if carve == 100 else ""
            mixed = bench_interleaved(runs + [cublas], flush, rep_ms=rep_ms)
            alone = [bench_interleaved([run, run], lambda s: None, rep_ms=rep_ms)[1] for run in runs]
            for way, times in ((f"flush{suffix}", mixed), (f"after itself{suffix}", alone)):
                cells = [f"kernel {index[n]} {t.median * 1e3:.1f}" for n, t in zip(ok, times)]
                if len(times) > len(ok):
                    cells.append(f"cuBLAS {times[-1].median * 1e3:.1f}")
                print(f"{M}x{N}x{K}/{layout} {way}: " + ", ".join(cells) + " us", flush=True)
        for n in ok:
            driver.funcSetAttribute(loaded[n].main.ptr, CARVEOUT, -1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
