// =====================================================================================================
// gemmgen kernel gg_simt_nn_b256x128x16_w64x64i2x4_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k1_fast
//   C = alpha * op(A) @ op(B) + beta * C, fp32 in and out, fp32 accumulation.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Shapes: M % 256 == 0, N % 128 == 0, K % 16 == 0, leading dimensions and pointers aligned to 16 bytes (fast path: no bounds checks)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/256) * ceil(N/128), 1, 1)
//   block = (256, 1, 1)
//   dynamic shared memory = 49664 bytes (needs cudaFuncAttributeMaxDynamicSharedMemorySize)
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 16, "BM": 256, "BN": 128, "TM": 4, "TN": 4, "WM": 64, "WMITER": 2, "WN": 64, "WNITER": 4,
//    "a_kmajor": true, "async_copy": false, "bounds": "none", "coalesced": true, "dtype": "f32",
//    "family": "simt", "frag": "lds", "label": "", "layout": "NN", "min_blocks": 1, "mma": "sync",
//    "pad_a": 4, "pad_b": 0, "partials": true, "prefetch": true, "raster": 8, "reduce": "atomic",
//    "split_k": 1, "stages": 2, "swz_a": 1, "swz_b": 1, "tma": false, "vec": 4}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 k.cu -o k.cubin
// Produced by: gemmgen emit --config <json of gg_simt_nn_b256x128x16_w64x64i2x4_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k1_fast>
// =====================================================================================================

// ---- tile geometry -----------------------------------------------------------------------------------
constexpr int BM = 256, BN = 128, BK = 16;       // block tile of C, and K step
constexpr int WM = 64, WN = 64;                        // warp tile
constexpr int WMITER = 2, WNITER = 4;        // warp sub-tiles per warp tile
constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;   // one warp sub-tile
constexpr int TM = 4, TN = 4;                        // thread tile per sub-tile
constexpr int TCOLS = WSUBN / TN;                         // threads across a warp sub-tile (4)
constexpr int WARPS_N = BN / WN;                          // warps across the block tile
constexpr int THREADS = 256;
constexpr int VEC = 4;                                       // floats per global load
constexpr int STAGES = 2;
constexpr int AS_LD = 260;   // A's shared row: BM + 4 pad (shifts each row 4 banks so column walks spread over banks)
constexpr int BS_LD = 128;   // B's shared row: BN + 0 pad
constexpr int A_STAGE = 4160, B_STAGE = 2048;  // floats per stage

// Shared-memory offsets.
__device__ __forceinline__ int a_off(int k, int m) {
    return k * AS_LD + m;   // A stored [BK][BM]: k-major
}
__device__ __forceinline__ int b_off(int k, int n) {
    return k * BS_LD + n;   // B stored [BK][BN]
}
// Global loads of VEC floats at once (LDG.128) and shared stores of the same width.
__device__ __forceinline__ void ld_vec(float* dst, const float* src) {
    const float4 t = __ldg(reinterpret_cast<const float4*>(src));
    dst[0] = t.x; dst[1] = t.y; dst[2] = t.z; dst[3] = t.w;
}
__device__ __forceinline__ void st_vec(float* dst, const float* src) {
    *reinterpret_cast<float4*>(dst) = make_float4(src[0], src[1], src[2], src[3]);
}

// The block computes a 256x128 tile of C with 256 threads (8 warps of 64x64).
// Each thread accumulates 2x4 sub-tiles of 4x4 = 128 values in registers.
// K advances 16 at a time through 2 shared-memory stages (the next tile is loaded into registers while this one is used).
extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_simt_nn_b256x128x16_w64x64i2x4_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k1_fast(
    const int M, const int N, const int K, const float alpha,
    const float* __restrict__ A, const int lda,
    const float* __restrict__ B, const int ldb,
    const float beta, float* __restrict__ C, const int ldc,
    float* __restrict__ W)
{
    extern __shared__ __align__(16) float smem[];
    float* const sA = smem;                           // STAGES tiles of A, then STAGES tiles of B
    float* const sB = smem + STAGES * A_STAGE;

    // ---- which tile of C this block owns ------------------------------------------------------------
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    // Thread-block swizzle: consecutive blocks walk 8 tile rows column by column, so blocks
    // resident together share the same columns of B and few rows of A in L2.
    const int group = 8 * tiles_n;
    const int first_m = (pid / group) * 8;
    const int group_m = min(tiles_m - first_m, 8);
    const int bm0 = (first_m + (pid % group) % group_m) * BM;
    const int bn0 = ((pid % group) / group_m) * BN;

    // ---- the K range of this block's split-K slice ---------------------------------------------------
    const int kBegin = 0, kEnd = K;
    const int ktiles = kEnd > kBegin ? (kEnd - kBegin + BK - 1) / BK : 0;

    // ---- thread coordinates ------------------------------------------------------------------------
    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;   // warp tile inside the block tile
    const int tr = lane / TCOLS, tc = lane % TCOLS;                        // thread inside a warp sub-tile

    float acc[WMITER * TM][WNITER * TN];
    #pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
        #pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;

    float stA[4][VEC], stB[2][VEC];   // staging registers for one tile
    // ---- double buffering through registers: tile kt+1 is fetched into registers before tile kt's
    // FMAs and stored to the other buffer after them, so one barrier per K step suffices.
    if (ktiles > 0) {
        const int k0 = kBegin;
        // A: 256x16 global tile (16 contiguous), 4 vectors of 4 per thread into registers.
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 4, cc = (v % 4) * VEC;
            const float* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
            ld_vec(stA[s], p);
        }
        // B: 16x128 global tile (128 contiguous), 2 vectors of 4 per thread into registers.
        #pragma unroll
        for (int s = 0; s < 2; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 32, cc = (v % 32) * VEC;
            const float* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
            ld_vec(stB[s], p);
        }
        // A: registers -> shared, transposing element by element.
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 4, cc = (v % 4) * VEC;
            float* const base = sA;
            #pragma unroll
            for (int e = 0; e < VEC; ++e) base[a_off(cc + e, r)] = stA[s][e];
        }
        // B: registers -> shared (4 floats per store).
        #pragma unroll
        for (int s = 0; s < 2; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 32, cc = (v % 32) * VEC;
            float* const base = sB;
            st_vec(base + b_off(r, cc), stB[s]);
        }
    }
    __syncthreads();
    const float* gA[4]; const float* gB[2];
    #pragma unroll
    for (int s = 0; s < 4; ++s) { const int v = tid + s * THREADS; const int r = v / 4, cc = (v % 4) * VEC;
        gA[s] = A + (long long)(bm0 + r) * lda + (kBegin + BK + cc); }
    #pragma unroll
    for (int s = 0; s < 2; ++s) { const int v = tid + s * THREADS; const int r = v / 32, cc = (v % 32) * VEC;
        gB[s] = B + (long long)(kBegin + BK + r) * ldb + (bn0 + cc); }
    const long long bstep = (long long)BK * ldb;
    for (int kt = 0; kt < ktiles; ++kt) {
        const bool more = kt + 1 < ktiles;
        {
            const float* const sa = sA + (kt & 1) * A_STAGE;
            const float* const sb = sB + (kt & 1) * B_STAGE;
            float* const da = sA + ((kt + 1) & 1) * A_STAGE;
            float* const db = sB + ((kt + 1) & 1) * B_STAGE;
            float fa[2][WMITER * TM], fb[2][WNITER * TN];
            #pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
                #pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    const float4 t = *reinterpret_cast<const float4*>(&sa[a_off(0, wm0 + wm * WSUBM + tr * TM + i)]);
                    fa[0][wm * TM + i] = t.x; fa[0][wm * TM + i + 1] = t.y; fa[0][wm * TM + i + 2] = t.z; fa[0][wm * TM + i + 3] = t.w;
                }
            #pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
                #pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const float4 t = *reinterpret_cast<const float4*>(&sb[b_off(0, wn0 + wn * WSUBN + tc * TN + j)]);
                    fb[0][wn * TN + j] = t.x; fb[0][wn * TN + j + 1] = t.y; fb[0][wn * TN + j + 2] = t.z; fb[0][wn * TN + j + 3] = t.w;
                }
            #pragma unroll
            for (int k = 0; k < BK; ++k) {
                #pragma unroll
                for (int i = 0; i < WMITER * TM; ++i) {
                    if (k + 1 < BK && i < 6) {
                        if (i < 2) {
                            const int wm = i, ii = 0;
                            const float4 t = *reinterpret_cast<const float4*>(&sa[a_off(k + 1, wm0 + wm * WSUBM + tr * TM + ii)]);
                            fa[(k + 1) & 1][wm * TM + ii] = t.x; fa[(k + 1) & 1][wm * TM + ii + 1] = t.y; fa[(k + 1) & 1][wm * TM + ii + 2] = t.z; fa[(k + 1) & 1][wm * TM + ii + 3] = t.w;
                        } else {
                            const int wn = i - 2, jj = 0;
                            const float4 t = *reinterpret_cast<const float4*>(&sb[b_off(k + 1, wn0 + wn * WSUBN + tc * TN + jj)]);
                            fb[(k + 1) & 1][wn * TN + jj] = t.x; fb[(k + 1) & 1][wn * TN + jj + 1] = t.y; fb[(k + 1) & 1][wn * TN + jj + 2] = t.z; fb[(k + 1) & 1][wn * TN + jj + 3] = t.w;
                        }
                    }
                    if (k == 1 && more) {
                        if (i < 4) ld_vec(stA[i], gA[i]);
                        else if (i < 6) ld_vec(stB[i - 4], gB[i - 4]);
                    }
                    if (k >= BK - 4 && k < BK - 1 && more) {   // spread the 18 stores over 3 k-steps x 6 rows
                        const int n = (k - (BK - 4)) * 6 + i;    // 0..17
                        if (i < 6) {
                            if (n < 16) { const int s = n / 4, e = n % 4; const int v = tid + s * THREADS; const int r = v / 4, cc = (v % 4) * VEC;
                                da[a_off(cc + e, r)] = stA[s][e]; }
                            else { const int s = n - 16; const int v = tid + s * THREADS; const int r = v / 32, cc = (v % 32) * VEC;
                                st_vec(db + b_off(r, cc), stB[s]); }
                        }
                    }
                    #pragma unroll
                    for (int jx = 0; jx < WNITER * TN; ++jx) {
                        const int j = (i & 1) ? (WNITER * TN - 1 - jx) : jx;
                        acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
                    }
                }
            }
        }
        #pragma unroll
        for (int s = 0; s < 4; ++s) gA[s] += BK;
        #pragma unroll
        for (int s = 0; s < 2; ++s) gB[s] += bstep;
        __syncthreads();
    }

    // ---- epilogue: C = alpha * acc + beta * C; with beta == 0, C is never read.
    float* const out = C;
    const int ldo = ldc;
    const bool read_c = beta != 0.0f;
    (void)read_c;
    #pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int m = bm0 + wm0 + wm * WSUBM + tr * TM + i;
            #pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int n0 = bn0 + wn0 + wn * WSUBN + tc * TN;
                float* const row = out + (long long)m * ldo;
                const float* const a = &acc[wm * TM + i][wn * TN];
                #pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int n = n0 + j;
                    {
                        // 16-byte store (STG.128); C is read the same way when beta != 0.
                        float4* const p = reinterpret_cast<float4*>(row + n);
                        float4 r = make_float4(alpha * a[j], alpha * a[j + 1], alpha * a[j + 2], alpha * a[j + 3]);
                        if (read_c) {
                            const float4 o = *p;
                            r.x += beta * o.x; r.y += beta * o.y; r.z += beta * o.z; r.w += beta * o.w;
                        }
                        *p = r;
                    }
                }
            }
        }
}
