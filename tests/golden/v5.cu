// =====================================================================================================
// gemmgen kernel gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v1_amp0s1_bp0s1_r1_s1r_flds_k1_chk   (preset v5)
//   C = alpha * op(A) @ op(B) + beta * C, fp32 in and out, fp32 accumulation.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/128), 1, 1)
//   block = (256, 1, 1)
//   dynamic shared memory = 8192 bytes
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 8, "BM": 128, "BN": 128, "TM": 8, "TN": 8, "WM": 16, "WMITER": 1, "WN": 128, "WNITER": 1,
//    "a_kmajor": false, "async_copy": false, "bounds": "checked", "coalesced": true, "dtype": "f32",
//    "family": "simt", "frag": "lds", "label": "v5", "layout": "NN", "mainloop": "simt",
//    "min_blocks": 1, "pad_a": 0, "pad_b": 0, "partials": true, "prefetch": false, "raster": 1,
//    "reduce": "atomic", "split_k": 1, "stages": 1, "swz_a": 1, "swz_b": 1, "vec": 1}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin
// Produced by: gemmgen emit golden v5
// =====================================================================================================

// ---- tile geometry -----------------------------------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 8;       // block tile of C, and K step
constexpr int WM = 16, WN = 128;                        // warp tile
constexpr int WMITER = 1, WNITER = 1;        // warp sub-tiles per warp tile
constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;   // one warp sub-tile
constexpr int TM = 8, TN = 8;                        // thread tile per sub-tile
constexpr int TCOLS = WSUBN / TN;                         // threads across a warp sub-tile (16)
constexpr int WARPS_N = BN / WN;                          // warps across the block tile
constexpr int THREADS = 256;
constexpr int VEC = 1;                                       // floats per global load
constexpr int STAGES = 1;
constexpr int AS_LD = 8;   // A's shared row: BK + 0 pad
constexpr int BS_LD = 128;   // B's shared row: BN + 0 pad
constexpr int A_STAGE = 1024;  // floats per stage

// Shared-memory offsets.
__device__ __forceinline__ int a_off(int k, int m) {
    return m * AS_LD + k;                                                   // A stored [BM][BK]: m-major
}
__device__ __forceinline__ int b_off(int k, int n) {
    return k * BS_LD + n;   // B stored [BK][BN]
}
// Global loads of VEC floats at once (LDG.32) and shared stores of the same width.
__device__ __forceinline__ void ld_vec(float* dst, const float* src) {
    dst[0] = __ldg(src);
}
__device__ __forceinline__ void st_vec(float* dst, const float* src) {
    dst[0] = src[0];
}

// The block computes a 128x128 tile of C with 256 threads (8 warps of 16x128).
// Each thread accumulates 1x1 sub-tiles of 8x8 = 64 values in registers.
// K advances 8 at a time through 1 shared-memory stage.
extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v1_amp0s1_bp0s1_r1_s1r_flds_k1_chk(
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
    const int tiles_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    // Row-major order of tiles: consecutive blocks share a row of A.
    const int bm0 = (pid / tiles_n) * BM;
    const int bn0 = (pid % tiles_n) * BN;

    // ---- the K range of this block's split-K slice ---------------------------------------------------
    const int kBegin = 0, kEnd = K;
    const int ktiles = kEnd > kBegin ? (kEnd - kBegin + BK - 1) / BK : 0;

    // ---- thread coordinates ------------------------------------------------------------------------
    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;   // warp tile inside the block tile
    const int tr = lane / TCOLS, tc = lane % TCOLS;                        // thread inside a warp sub-tile
    // Vector accesses need rows that start on a vector boundary; otherwise fall back to scalars.
    const bool a_vec_ok = VEC == 1 || ((lda % VEC) == 0 && ((size_t)A % (4 * VEC)) == 0);
    const bool b_vec_ok = VEC == 1 || ((ldb % VEC) == 0 && ((size_t)B % (4 * VEC)) == 0);

    float acc[WMITER * TM][WNITER * TN];
    #pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
        #pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;

    float stA[4][VEC], stB[4][VEC];   // staging registers for one tile
    // ---- single buffer: load a tile, wait for every thread, use it, wait again before overwriting.
    for (int kt = 0; kt < ktiles; ++kt) {
        const int k0 = kBegin + kt * BK;
        // A: 128x8 global tile (8 contiguous), 4 vectors of 1 per thread into registers.
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 8, cc = (v % 8) * VEC;
            const float* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
            const bool row_ok = bm0 + r < M;
            if (a_vec_ok && row_ok && k0 + cc + VEC <= kEnd) {
                ld_vec(stA[s], p);
            } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                #pragma unroll
                for (int e = 0; e < VEC; ++e)
                    stA[s][e] = (row_ok && k0 + cc + e < kEnd) ? p[e] : 0.0f;
            }
        }
        // B: 8x128 global tile (128 contiguous), 4 vectors of 1 per thread into registers.
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 128, cc = (v % 128) * VEC;
            const float* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
            const bool row_ok = k0 + r < kEnd;
            if (b_vec_ok && row_ok && bn0 + cc + VEC <= N) {
                ld_vec(stB[s], p);
            } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                #pragma unroll
                for (int e = 0; e < VEC; ++e)
                    stB[s][e] = (row_ok && bn0 + cc + e < N) ? p[e] : 0.0f;
            }
        }
        // A: registers -> shared (1 floats per store).
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 8, cc = (v % 8) * VEC;
            float* const base = sA;
            st_vec(base + a_off(cc, r), stA[s]);
        }
        // B: registers -> shared (1 floats per store).
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int v = tid + s * THREADS;
            const int r = v / 128, cc = (v % 128) * VEC;
            float* const base = sB;
            st_vec(base + b_off(r, cc), stB[s]);
        }
        __syncthreads();
        {   // Inner product over the 8-deep stage: outer products of a column of A and a row of B.
            const float* const sa = sA;
            const float* const sb = sB;
            float fa[WMITER * TM], fb[WNITER * TN];
            #pragma unroll
            for (int k = 0; k < BK; ++k) {
                #pragma unroll
                for (int wm = 0; wm < WMITER; ++wm)
                    #pragma unroll
                    for (int i = 0; i < TM; ++i) fa[wm * TM + i] = sa[a_off(k, wm0 + wm * WSUBM + tr * TM + i)];
                #pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
                    #pragma unroll
                    for (int j = 0; j < TN; j += 4) {   // LDS.128: four columns of B's row at once
                        const float4 t = *reinterpret_cast<const float4*>(&sb[b_off(k, wn0 + wn * WSUBN + tc * TN + j)]);
                        fb[wn * TN + j] = t.x; fb[wn * TN + j + 1] = t.y; fb[wn * TN + j + 2] = t.z; fb[wn * TN + j + 3] = t.w;
                    }
                #pragma unroll
                for (int i = 0; i < WMITER * TM; ++i)
                    #pragma unroll
                    for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
            }
        }
        __syncthreads();
    }

    // ---- epilogue: C = alpha * acc + beta * C; with beta == 0, C is never read.
    float* const out = C;
    const int ldo = ldc;
    const bool read_c = beta != 0.0f;
    (void)read_c;
    const bool c_vec_ok = (ldo % 4) == 0 && ((size_t)out % 16) == 0;
    if (!c_vec_ok) {
        // Rows of C not 16-byte aligned (or atomic adds): 4-byte stores. A warp holds 32 / TCOLS rows x
        // WSUBN columns of each sub-tile, TN consecutive columns per lane; stored as they lie, one
        // instruction touches 32 / TCOLS rows (~20 sectors for 32 floats). Regrouped through shuffles, lane L
        // stores element s * 32 + L of the sub-tile in row-major order: one or two rows of consecutive
        // columns per instruction (a third of the sectors a store: about 3x the store throughput).
        #pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int wn = 0; wn < WNITER; ++wn) {
                    const float* const a = &acc[wm * TM + i][wn * TN];
                    #pragma unroll
                    for (int s = 0; s < TN; ++s) {
                        const int f = s * 32 + lane, r = f / WSUBN, col = f % WSUBN;
                        const int src = r * TCOLS + col / TN, jj = col % TN;
                        float v = 0.0f;
                        #pragma unroll
                        for (int j = 0; j < TN; ++j) {   // every lane sends a[j]; each keeps the one it needs
                            const float t = __shfl_sync(0xffffffffu, a[j], src);
                            if (j == jj) v = t;
                        }
                        const int m = bm0 + wm0 + wm * WSUBM + r * TM + i, n = bn0 + wn0 + wn * WSUBN + col;
                        if (m < M && n < N) { *(out + (long long)m * ldo + n) = read_c ? alpha * (v) + beta * *(out + (long long)m * ldo + n) : alpha * (v); }
                    }
                }
    } else {
    #pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
        #pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int m = bm0 + wm0 + wm * WSUBM + tr * TM + i;
            if (m >= M) continue;
            #pragma unroll
            for (int wn = 0; wn < WNITER; ++wn) {
                const int n0 = bn0 + wn0 + wn * WSUBN + tc * TN;
                float* const row = out + (long long)m * ldo;
                const float* const a = &acc[wm * TM + i][wn * TN];
                #pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int n = n0 + j;
                    if (c_vec_ok && n + 3 < N) {
                        // 16-byte store (STG.128); C is read the same way when beta != 0.
                        float4* const p = reinterpret_cast<float4*>(row + n);
                        float4 r = make_float4(alpha * a[j], alpha * a[j + 1], alpha * a[j + 2], alpha * a[j + 3]);
                        if (read_c) {
                            const float4 o = *p;
                            r.x += beta * o.x; r.y += beta * o.y; r.z += beta * o.z; r.w += beta * o.w;
                        }
                        *p = r;
                    } else {
                        #pragma unroll
                        for (int e = 0; e < 4; ++e)
                            if (n + e < N) { *(row + n + e) = read_c ? alpha * (a[j + e]) + beta * *(row + n + e) : alpha * (a[j + e]); }
                    }
                }
            }
        }
    }
}
