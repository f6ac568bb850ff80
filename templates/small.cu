// gemmgen's kernels for products a GEMM tile serves badly (gemmgen/runtime/small.py says which requests take
// them): C = alpha * A @ B + beta * C with a tiny C and long K ("dots": M, N <= 8, a reduction of K), and
// with a short K ("outer": K <= 16, the time is C's bytes written). Any layout: A(m, k) is A[m * sam + k * sak],
// B(k, n) is B[k * sbk + n * sbn]; C row-major, ldc apart. Plain fp32 products and sums, as SGEMM's: Inf and
// NaN propagate, beta == 0 never reads C.
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 small.cu

#define GG_SMALL_PARAMS                                                                                        \
    const int M, const int N, const int K, const int kc, const int rows, const float alpha,                    \
    const float* __restrict__ A,                                                                               \
    const long long sam, const long long sak, const float* __restrict__ B, const long long sbk,                \
    const long long sbn, const float beta, float* __restrict__ C, const long long ldc, float* __restrict__ W

__device__ __forceinline__ float scaled(const float acc, const float alpha, const float beta, const float* c) {
    return beta == 0.0f ? alpha * acc : fmaf(beta, *c, alpha * acc);   // beta == 0: C is never read; rounded as
                                                                       // the 16-byte stores are
}

// ---- outer: K <= 16. A block computes BM = rows * (256 / L) rows by BN = 4 * L columns of C (L = kc lanes a
// row, 1..32). The block stages its rows of A (KB k a row, zero past K) and B's K x BN tile in shared memory,
// each read from global memory once and in the order its layout stores it; thread t then keeps B's values of
// its four columns 4 (t % L) .. + 3 in registers and walks rows t / L, + 256 / L, ... of the block's, each
// row of A read as KB / 4 16-byte broadcasts. A warp stores 32 consecutive 16-byte pieces of C where L = 32.
// Each output is the sum over k in order. Not a tile a block: each block waits for its loads before it stores,
// and the blocks an SM holds do not hide that wait. Nor B's values loaded by each thread from global memory: the
// threads of a block would load the same values, 4 bytes at a time and far apart where B is stored T.
template <int KB>
__device__ __forceinline__ void outer(GG_SMALL_PARAMS) {
    constexpr int SA = KB + 4, SB = 132;   // row strides: 16-byte rows, fewer bank conflicts in the fills
    __shared__ __align__(16) float As[256 * SA];   // [row][k]
    __shared__ __align__(16) float Bs[KB * SB];    // [k][column]
    const int L = kc, P = 256 / L, BM = P * rows, BN = 4 * L;
    const int nb = (N + BN - 1) / BN;
    const long long m0 = (long long)(blockIdx.x / nb) * BM;
    const int n0 = (blockIdx.x % nb) * BN;
    const int t = threadIdx.x, p = t / L, c4 = 4 * (t % L), n = n0 + c4;
    if (sak == 1) {   // A's rows run along k: consecutive threads take consecutive k
        for (int i = t; i < BM * KB; i += 256) {
            const int r = i / KB, k = i % KB;
            As[r * SA + k] = m0 + r < M && k < K ? __ldg(A + (m0 + r) * sam + k) : 0.0f;
        }
    } else {          // A's columns run along m
        for (int i = t; i < BM * KB; i += 256) {
            const int r = i % BM, k = i / BM;
            As[r * SA + k] = m0 + r < M && k < K ? __ldg(A + (m0 + r) * sam + k * sak) : 0.0f;
        }
    }
    if (sbn == 1) {   // B's rows run along n
        for (int i = t; i < BN * KB; i += 256) {
            const int c = i % BN, k = i / BN;
            Bs[k * SB + c] = n0 + c < N && k < K ? __ldg(B + k * sbk + n0 + c) : 0.0f;
        }
    } else {          // B's columns run along k
        for (int i = t; i < BN * KB; i += 256) {
            const int c = i / KB, k = i % KB;
            Bs[k * SB + c] = n0 + c < N && k < K ? __ldg(B + k + (long long)(n0 + c) * sbn) : 0.0f;
        }
    }
    __syncthreads();
    if (n >= N) return;
    float4 b[KB];
    #pragma unroll
    for (int k = 0; k < KB; ++k) b[k] = *reinterpret_cast<const float4*>(&Bs[k * SB + c4]);
    #pragma unroll 2
    for (int i = 0; i < rows; ++i) {
        const int r = p + i * P;
        const long long m = m0 + r;
        if (m >= M) break;   // rows only grow with i
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        #pragma unroll
        for (int k = 0; k < KB; k += 4) {
            const float4 a = *reinterpret_cast<const float4*>(&As[r * SA + k]);
            const float av[4] = {a.x, a.y, a.z, a.w};
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                acc.x = fmaf(av[j], b[k + j].x, acc.x); acc.y = fmaf(av[j], b[k + j].y, acc.y);
                acc.z = fmaf(av[j], b[k + j].z, acc.z); acc.w = fmaf(av[j], b[k + j].w, acc.w);
            }
        }
        float* __restrict__ out = C + m * ldc + n;
        if (n + 4 <= N && (reinterpret_cast<size_t>(out) & 15) == 0) {
            float4 v = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
            if (beta != 0.0f) {
                const float4 o = *reinterpret_cast<const float4*>(out);
                v.x = fmaf(beta, o.x, v.x); v.y = fmaf(beta, o.y, v.y); v.z = fmaf(beta, o.z, v.z); v.w = fmaf(beta, o.w, v.w);
            }
            __stcs(reinterpret_cast<float4*>(out), v);
        } else {
            const float s4[4] = {acc.x, acc.y, acc.z, acc.w};
            #pragma unroll
            for (int j = 0; j < 4; ++j)
                if (n + j < N) out[j] = scaled(s4[j], alpha, beta, out + j);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) gg_outer4(GG_SMALL_PARAMS) { outer<4>(M, N, K, kc, rows, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, W); }
extern "C" __global__ void __launch_bounds__(256) gg_outer8(GG_SMALL_PARAMS) { outer<8>(M, N, K, kc, rows, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, W); }
extern "C" __global__ void __launch_bounds__(256) gg_outer16(GG_SMALL_PARAMS) { outer<16>(M, N, K, kc, rows, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, W); }

// ---- dots: M, N <= D. Block s walks k in [s * kc, min(K, (s + 1) * kc)), thread t the k = t, t + 256, ... of
// it, U = 16 / D k in flight (2D loads each); each thread's D x D sums meet by warp shuffles (a fixed tree),
// then in shared memory in warp order. One block: C written here; more: W[s][m * N + n], gg_dots_reduce adds
// the slices in order.
template <int D>
__device__ __forceinline__ void dots(GG_SMALL_PARAMS) {
    constexpr int U = 16 / D;
    __shared__ float part[8][D * D];
    float acc[D][D];
    #pragma unroll
    for (int m = 0; m < D; ++m) {
        #pragma unroll
        for (int n = 0; n < D; ++n) acc[m][n] = 0.0f;
    }
    const long long k0 = (long long)blockIdx.x * kc, k1 = min((long long)K, k0 + kc);
    for (long long k = k0 + threadIdx.x; k < k1; k += 256 * U) {
        float a[U][D], b[U][D];
        #pragma unroll
        for (int u = 0; u < U; ++u) {
            const long long kk = k + u * 256;
            #pragma unroll
            for (int m = 0; m < D; ++m) a[u][m] = kk < k1 && m < M ? __ldcs(A + m * sam + kk * sak) : 0.0f;
            #pragma unroll
            for (int n = 0; n < D; ++n) b[u][n] = kk < k1 && n < N ? __ldcs(B + kk * sbk + n * sbn) : 0.0f;
        }
        #pragma unroll
        for (int u = 0; u < U; ++u) {
            #pragma unroll
            for (int m = 0; m < D; ++m) {
                #pragma unroll
                for (int n = 0; n < D; ++n) acc[m][n] = fmaf(a[u][m], b[u][n], acc[m][n]);
            }
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    #pragma unroll
    for (int m = 0; m < D; ++m) {
        #pragma unroll
        for (int n = 0; n < D; ++n) {
            float s = acc[m][n];
            #pragma unroll
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0) part[warp][m * D + n] = s;
        }
    }
    __syncthreads();
    const int o = threadIdx.x;
    if (o < M * N) {
        const int m = o / N, n = o % N;
        float s = part[0][m * D + n];
        #pragma unroll
        for (int w = 1; w < 8; ++w) s += part[w][m * D + n];
        if (gridDim.x == 1) {
            float* c = C + m * ldc + n;
            *c = scaled(s, alpha, beta, c);
        } else {
            W[(long long)blockIdx.x * (M * N) + o] = s;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 2) gg_dots2(GG_SMALL_PARAMS) { dots<2>(M, N, K, kc, rows, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, W); }
extern "C" __global__ void __launch_bounds__(256, 2) gg_dots4(GG_SMALL_PARAMS) { dots<4>(M, N, K, kc, rows, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, W); }
extern "C" __global__ void __launch_bounds__(256, 2) gg_dots8(GG_SMALL_PARAMS) { dots<8>(M, N, K, kc, rows, alpha, A, sam, sak, B, sbk, sbn, beta, C, ldc, W); }

// C[m, n] = alpha * sum_s W[s][m * N + n] + beta * C[m, n] (M * N <= 64): four groups of 64 threads take the
// slices s = g, g + 4, ... in order, then the groups' sums are added in group order.
extern "C" __global__ void __launch_bounds__(256) gg_dots_reduce(
    const int M, const int N, const int S, const float alpha, const float* __restrict__ W, const float beta,
    float* __restrict__ C, const long long ldc)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");   // launched as the programmatic dependent of the slices
#endif
    __shared__ float part[4][64];
    const int o = threadIdx.x & 63, g = threadIdx.x >> 6, MN = M * N;
    float s = 0.0f;
    if (o < MN)
        for (int i = g; i < S; i += 4) s += W[(long long)i * MN + o];
    part[g][o] = s;
    __syncthreads();
    if (g == 0 && o < MN) {
        const float t = ((part[0][o] + part[1][o]) + part[2][o]) + part[3][o];
        float* c = C + (o / N) * ldc + o % N;
        *c = scaled(t, alpha, beta, c);
    }
}
