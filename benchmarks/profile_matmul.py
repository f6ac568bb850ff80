"""What gemmgen.matmul and cuBLAS SGEMM launch for each shape, for Nsight Compute: both are warmed up, then
run once each between cudaProfilerStart/Stop, and the plan (kernel, copies) is printed.

    ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum,launch__grid_size \\
        python -m benchmarks.profile_matmul 11455x4009x28/NT 323x62x10276/TN
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("CUPY_TF32", "0")
from benchmarks.matmul_vs_cublas import leading_dims, operands, parse_shape  # noqa: E402  (after CUPY_TF32)


def main(argv=None) -> int:
    import cupy

    import gemmgen
    from gemmgen.base import Shape
    from gemmgen.measure.problem import cublas_call

    for text in (sys.argv[1:] if argv is None else argv):
        M, N, K, layout = parse_shape(text)
        A, B, a_store, b_store = operands(M, N, K, layout, 0)
        c_gg, c_cb = cupy.empty((M, N), cupy.float32), cupy.empty((M, N), cupy.float32)
        run_cb = cublas_call("fp32", Shape(M, N, K, layout), a_store, b_store, c_cb)
        for _ in range(3):
            gemmgen.matmul(A, B, out=c_gg)
            run_cb()
        kernel, copy_a, copy_b = gemmgen.load().plan_for(M, N, K, layout, *leading_dims(A, B, layout), N)
        print(f"{text}: {kernel.name} copies {'A' * copy_a + 'B' * copy_b or '-'}", flush=True)
        cupy.cuda.Device().synchronize()
        cupy.cuda.runtime.profilerStart()
        gemmgen.matmul(A, B, out=c_gg)
        cupy.cuda.Device().synchronize()
        run_cb()
        cupy.cuda.Device().synchronize()
        cupy.cuda.runtime.profilerStop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
