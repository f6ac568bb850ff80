// =====================================================================================================
// gemmgen kernel gg_naive_nn_32x32_c   (preset v1)
//   C = alpha * op(A) @ op(B) + beta * C, fp32 in and out, fp32 accumulation.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(N/32), ceil(M/32), 1)
//   block = (32, 32, 1)
//   dynamic shared memory = 0 bytes
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 8, "BM": 32, "BN": 32, "TM": 8, "TN": 8, "WM": 64, "WMITER": 1, "WN": 32, "WNITER": 1,
//    "a_kmajor": true, "async_copy": false, "bounds": "checked", "coalesced": true, "dtype": "f32",
//    "family": "naive", "frag": "lds", "label": "v1", "layout": "NN", "mainloop": "simt",
//    "min_blocks": 1, "pad_a": 0, "pad_b": 0, "partials": true, "prefetch": false, "raster": 1,
//    "reduce": "atomic", "split_k": 1, "stages": 1, "swz_a": 1, "swz_b": 1, "vec": 4}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin
// Produced by: gemmgen emit golden v1
// =====================================================================================================

// One thread per element of C, reading a whole row of A and column of B from global memory.
// Coalesced (v1): threadIdx.x walks the columns of C, so the 32 threads of a warp read 32 consecutive
// elements of B's row and write 32 consecutive elements of C: one memory transaction each.
extern "C" __global__ void gg_naive_nn_32x32_c(
    const int M, const int N, const int K, const float alpha,
    const float* __restrict__ A, const int lda,
    const float* __restrict__ B, const int ldb,
    const float beta, float* __restrict__ C, const int ldc,
    float* __restrict__ W)
{
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= M || n >= N) return;  // edge blocks hang over the matrix
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[(long long)m * lda + k] * B[(long long)k * ldb + n];
    }
    float* c = C + (long long)m * ldc + n;
    // beta == 0 must not read C: it may hold NaN or be uninitialised.
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
}
