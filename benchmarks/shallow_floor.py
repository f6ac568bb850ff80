"""The floor of a shape: gemmgen.matmul and cuBLAS SGEMM beside a kernel that only writes C, an empty kernel,
and a one-shot SIMT GEMM (the whole K in shared memory, one barrier), NN, interleaved, the L2 flushed before
each run (session 43). Where matmul runs far above writing C plus the math, the kernels, not the picks,
leave time on the table.

    python benchmarks/shallow_floor.py                                  # session 43's shallow shapes
    python benchmarks/shallow_floor.py --shape 3705x397x58 --shape 1632x1273x23 --json floor.json

Prints per shape the median us of each and the one-shot tile that did best; the one-shot kernel is checked
against float64 (max relative error 1e-5) before it is timed. K is at most 160 (its tiles of A and B fit
shared memory).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from matmul_vs_cublas import operands, parse_shape  # noqa: E402

SHAPES = ["696x859x26", "3705x397x58", "1632x1273x23", "794x5095x16", "1006x421x22", "431x523x17", "919x570x88",
          "98x2374x26", "6379x50x23", "32x7004x49", "149x3024x148", "164x1109x126", "3373x71x87", "30x48x66"]
TILES = [(64, 64, 4, 4), (32, 64, 2, 4), (64, 32, 4, 2), (32, 32, 2, 2), (128, 64, 8, 4), (32, 32, 4, 4), (64, 64, 8, 8)]
MAX_K = 160
SRC = r'''
template<int BM, int BN, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN)) shallow(int M, int N, int K, const float* __restrict__ A, int lda,
    const float* __restrict__ B, int ldb, float* __restrict__ C, int ldc)
{
    extern __shared__ float sm[];
    constexpr int T = (BM / TM) * (BN / TN), CX = BN / TN;
    float* As = sm;
    float* Bs = sm + K * BM;
    const int tid = threadIdx.x;
    const int bm0 = blockIdx.y * BM, bn0 = blockIdx.x * BN;
    for (int i = tid; i < BM * K; i += T) {
        const int m = i / K, k = i - m * K, gm = bm0 + m;
        As[k * BM + m] = gm < M ? __ldg(A + (size_t)gm * lda + k) : 0.f;
    }
    for (int i = tid; i < K * BN; i += T) {
        const int k = i / BN, n = i - k * BN, gn = bn0 + n;
        Bs[k * BN + n] = gn < N ? __ldg(B + (size_t)k * ldb + gn) : 0.f;
    }
    __syncthreads();
    const int tx = tid % CX, ty = tid / CX;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    #pragma unroll 4
    for (int k = 0; k < K; ++k) {
        float a[TM], b[TN];
        #pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = As[k * BM + ty * TM + i];
        #pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[k * BN + tx + j * CX];
        #pragma unroll
        for (int i = 0; i < TM; ++i)
            #pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = bm0 + ty * TM + i;
        if (m < M) {
            #pragma unroll
            for (int j = 0; j < TN; ++j) { const int n = bn0 + tx + j * CX; if (n < N) C[(size_t)m * ldc + n] = acc[i][j]; }
        }
    }
}
extern "C" __global__ void write_c(long long total, float* __restrict__ C)
{
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    for (; i < total; i += (long long)gridDim.x * blockDim.x * 4) {
        if (i + 3 < total) *reinterpret_cast<float4*>(C + i) = make_float4(0.f, 0.f, 0.f, 0.f);
        else for (long long j = i; j < total; ++j) C[j] = 0.f;
    }
}
extern "C" __global__ void empty() {}
'''


def floor_row(mod, M: int, N: int, K: int, l2_bytes: int, rep_ms: float) -> dict:
    """Median us of matmul, cuBLAS, the C writer, the empty kernel and each one-shot tile for one NN shape."""
    import cupy

    import gemmgen
    from gemmgen.base import Shape
    from gemmgen.measure.problem import cublas_call
    from gemmgen.measure.timing import L2Flusher, bench_interleaved

    A, B, a_store, b_store = operands(M, N, K, "NN", 0)
    c = {k: cupy.full((M, N), cupy.nan, cupy.float32) for k in ("gg", "cb", "os", "w")}
    write_c, empty = mod.get_function("write_c"), mod.get_function("empty")
    run = {"matmul": lambda: gemmgen.matmul(A, B, out=c["gg"]),
           "cublas": cublas_call("fp32", Shape(M, N, K, "NN"), a_store, b_store, c["cb"]),
           "write_c": lambda: write_c((min(132 * 8, (M * N + 1023) // 1024),), (256,), (cupy.int64(M * N), c["w"])),
           "empty": lambda: empty((1,), (32,), ())}
    ref = cupy.matmul(A.astype(cupy.float64), B.astype(cupy.float64))
    for BM, BN, TM, TN in TILES:
        f, smem = mod.get_function(f"shallow<{BM},{BN},{TM},{TN}>"), K * (BM + BN) * 4
        if smem > 99 * 1024:
            continue
        if smem > 48 * 1024:
            f.max_dynamic_shared_size_bytes = smem
        grid, threads = ((N + BN - 1) // BN, (M + BM - 1) // BM), (BM // TM) * (BN // TN)
        args = (cupy.int32(M), cupy.int32(N), cupy.int32(K), A, cupy.int32(K), B, cupy.int32(N), c["os"], cupy.int32(N))
        name = f"one-shot {BM}x{BN} t{TM}x{TN}"
        run[name] = lambda f=f, grid=grid, threads=threads, smem=smem, args=args: f(grid, (threads,), args, shared_mem=smem)
        run[name]()
        err = float(cupy.abs(c["os"] - ref).max() / cupy.abs(ref).max())
        if err > 1e-5:
            raise RuntimeError(f"{name} is wrong at {M}x{N}x{K}: max relative error {err:.1e}")
    keys = list(run)
    times = bench_interleaved([run[k] for k in keys], L2Flusher(l2_bytes), rep_ms=rep_ms)
    return {"shape": f"{M}x{N}x{K}", "us": {k: t.median * 1e3 for k, t in zip(keys, times)},
            "kernel": gemmgen.load().plan_for(M, N, K, "NN", K, N, N)[0].config.name}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], type=parse_shape, metavar="MxNxK",
                    help=f"an NN shape with K <= {MAX_K} (repeatable; default: session 43's shallow shapes)")
    ap.add_argument("--rep-ms", type=float, default=30.0, help="timing budget per shape in ms (default 30)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    shapes = args.shape or [parse_shape(s) for s in SHAPES]
    for M, N, K, layout in shapes:
        if layout != "NN" or K > MAX_K:
            ap.error(f"{M}x{N}x{K}/{layout}: the probe takes NN shapes with K <= {MAX_K}")
    if args.rep_ms <= 0:
        ap.error(f"--rep-ms {args.rep_ms}: a positive budget in ms")

    import cupy

    from gemmgen.base.devices import detect

    spec = detect(cupy.cuda.Device().id)
    names = [f"shallow<{a},{b},{c},{d}>" for a, b, c, d in TILES]
    mod = cupy.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
    rows = []
    for M, N, K, _ in shapes:
        r = floor_row(mod, M, N, K, spec.l2_bytes, args.rep_ms)
        us = r["us"]
        best = min((k for k in us if k.startswith("one-shot")), key=us.get)
        print(f"{r['shape']:>14}  matmul {us['matmul']:5.1f}  cuBLAS {us['cublas']:5.1f}  {best} {us[best]:5.1f}  "
              f"write C {us['write_c']:5.1f}  empty {us['empty']:4.1f} us   {r['kernel']}", flush=True)
        rows.append(r)
        if args.json:
            args.json.write_text(json.dumps({"device": spec.name, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
