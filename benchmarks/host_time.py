"""GPU time and host time per call of gemmgen.matmul, cuBLAS SGEMM (CuPy's handle) and cupy.matmul, apart:
the calls queued behind a kernel that spins ~30 ms give the GPU's time per call (no host gaps between
them); the host loop alone (200 calls a round, the GPU drained before each round, the best of 8 rounds;
the GPU keeps up, so the launch queue never fills) gives the host's. Where host time exceeds GPU time, a
call is bound by Python, not by its kernels. ``--profile`` adds cProfile's view of the first shape.

    python -m benchmarks.host_time 4504x2503x17/NN 410x710x592/NN --profile
"""
from __future__ import annotations

import argparse
import time

from benchmarks.matmul_vs_cublas import operands, parse_shape

SPIN = r'''extern "C" __global__ void spin(long long n) { long long t = clock64(); while (clock64() - t < n) {} }'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shape", nargs="+", metavar="MxNxK[/LAYOUT]")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--profile", action="store_true", help="cProfile the first shape's calls")
    args = ap.parse_args(argv)

    import cupy

    import gemmgen
    from gemmgen.base import Shape
    from gemmgen.measure.problem import cublas_call

    spin = cupy.RawKernel(SPIN, "spin")

    def gpu_us(fn) -> float:
        stream, e0, e1 = cupy.cuda.get_current_stream(), cupy.cuda.Event(), cupy.cuda.Event()
        spin((1,), (1,), (cupy.int64(60_000_000),))
        e0.record(stream)
        for _ in range(args.calls):
            fn()
        e1.record(stream)
        e1.synchronize()
        return cupy.cuda.get_elapsed_time(e0, e1) / args.calls * 1e3

    def host_us(fn, calls: int = 200, rounds: int = 8) -> float:
        best = float("inf")
        for _ in range(rounds):
            cupy.cuda.runtime.deviceSynchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, time.perf_counter() - t0)
        cupy.cuda.runtime.deviceSynchronize()
        return best / calls * 1e6

    first = None
    for text in args.shape:
        M, N, K, layout = parse_shape(text)
        A, B, a_store, b_store = operands(M, N, K, layout, 0)
        C = cupy.empty((M, N), cupy.float32)
        ours = lambda: gemmgen.matmul(A, B, out=C)
        theirs = cublas_call("fp32", Shape(M, N, K, layout), a_store, b_store, cupy.empty((M, N), cupy.float32))
        cupys = lambda: cupy.matmul(A, B, out=C)
        for _ in range(10):
            ours()
            theirs()
            cupys()
        first = first or ours
        print(f"{M}x{N}x{K}/{layout}: gemmgen GPU {gpu_us(ours):.1f} host {host_us(ours):.1f} | "
              f"cuBLAS GPU {gpu_us(theirs):.1f} host {host_us(theirs):.1f} | cupy.matmul host {host_us(cupys):.1f} "
              "us per call", flush=True)
    if args.profile:
        import cProfile
        import pstats

        spin((1,), (1,), (cupy.int64(2_000_000_000),))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2 * args.calls):
            first()
        prof.disable()
        pstats.Stats(prof).sort_stats("cumtime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
