"""Host overhead of gemmgen.matmul against cupy.matmul, and its speed at 4096^3 against the kernel alone.

    python -m benchmarks.api_overhead            # prints both; numbers go to docs/PERFORMANCE.md
"""
from __future__ import annotations

import json
import sys
import time

import cupy as cp

import gemmgen
from gemmgen.measure.launch import Operands


def per_call_us(fn, calls: int = 200, rounds: int = 10) -> float:
    """Host time to issue one call: the enqueue loop alone, the GPU drained before each round.

    200 calls stay below the launch queue's depth, so the host never waits for the GPU inside the
    timed loop; waiting for the kernels (which differ between libraries) is not host overhead.
    """
    best = float("inf")
    for _ in range(rounds):
        cp.cuda.get_current_stream().synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t)
    cp.cuda.get_current_stream().synchronize()
    return best / calls * 1e6


def device_ms(fn, reps: int = 30) -> float:
    start, end = cp.cuda.Event(), cp.cuda.Event()
    fn()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return sorted(times)[reps // 2]


def main() -> int:
    small = [cp.random.rand(256, 256, dtype=cp.float32) for _ in range(2)]
    out = cp.empty((256, 256), cp.float32)
    rows = {}
    for _ in range(3):   # interleave the two, three rounds: clocks and caches affect both alike
        rows.setdefault("cupy_us", []).append(per_call_us(lambda: cp.matmul(*small, out=out)))
        rows.setdefault("gemmgen_us", []).append(per_call_us(lambda: gemmgen.matmul(*small, out=out)))
    cupy_us, gg_us = min(rows["cupy_us"]), min(rows["gemmgen_us"])
    if "--profile" in sys.argv:   # where the host time goes, for the next trim
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(per_call_us, lambda: gemmgen.matmul(*small, out=out))
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    print(f"256^3 host overhead: cupy.matmul {cupy_us:.1f} us/call, gemmgen.matmul {gg_us:.1f} us/call "
          f"({gg_us / cupy_us:.2f}x)")
    n = 4096
    A, B = (cp.random.rand(n, n, dtype=cp.float32) for _ in range(2))
    C = cp.empty((n, n), cp.float32)
    kernel = gemmgen.load().kernel_for(n, n, n, "NN")
    ops = Operands(n, n, n, A.data.ptr, n, B.data.ptr, n, C.data.ptr, n)
    api_ms, raw_ms = device_ms(lambda: gemmgen.matmul(A, B, out=C)), device_ms(lambda: kernel(ops))
    print(f"4096^3: gemmgen.matmul {2 * n**3 / api_ms / 1e9:.2f} TFLOP/s, kernel alone {2 * n**3 / raw_ms / 1e9:.2f} "
          f"TFLOP/s ({100 * (raw_ms / api_ms):.1f}%), kernel {kernel.name}")
    json.dump({"cupy_us": cupy_us, "gemmgen_us": gg_us, "api_ms": api_ms, "kernel_ms": raw_ms,
               "kernel": kernel.name}, sys.stdout if len(sys.argv) < 2 or sys.argv[1].startswith("-") else open(sys.argv[1], "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
