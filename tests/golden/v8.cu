// =====================================================================================================
// gemmgen kernel gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r8_s2r_flds_k1_chk   (preset v8)
//   C = alpha * op(A) @ op(B) + beta * C, fp32 in and out, fp32 accumulation.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/128), 1, 1)
//   block = (256, 1, 1)
//   dynamic shared memory = 16640 bytes
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 8, "BM": 128, "BN": 128, "TM": 8, "TN": 8, "WM": 16, "WMITER": 1, "WN": 128, "WNITER": 1,
//    "a_kmajor": true, "async_copy": false, "bounds": "checked", "coalesced": true, "dtype": "f32",
//    "family": "simt", "frag": "lds", "label": "v8", "layout": "NN", "mainloop": "simt",
//    "min_blocks": 1, "pad_a": 4, "pad_b": 0, "partials": true, "prefetch": false, "raster": 8,
//    "reduce": "atomic", "split_k": 1, "stages": 2, "swz_a": 1, "swz_b": 1, "vec": 4}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin
// Produced by: gemmgen emit golden v8
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
constexpr int VEC = 4;                                       // floats per global load
constexpr int STAGES = 2;
constexpr int AS_LD = 132;   // A's shared row: BM + 4 pad (shifts each row 4 banks so column walks spread over banks)
constexpr int BS_LD = 128;   // B's shared row: BN + 0 pad
constexpr int A_STAGE = 1056, B_STAGE = 1024;  // floats per stage

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

// The block computes a 128x128 tile of C with 256 threads (8 warps of 16x128).
// Each thread accumulates 1x1 sub-tiles of 8x8 = 64 values in registers.
// K advances 8 at a time through 2 shared-memory stages (the next tile is loaded into registers while this one is used).
extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r8_s2r_flds_k1_chk(
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
    // Vector accesses need rows that start on a vector boundary; otherwise fall back to scalars.
    const bool a_vec_ok = VEC == 1 || ((lda % VEC) == 0 && ((size_t)A % (4 * VEC)) == 0);
    const bool b_vec_ok = VEC == 1 || ((ldb % VEC) == 0 && ((size_t)B % (4 * VEC)) == 0);

    float acc[WMITER * TM][WNITER * TN];
    #pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
        #pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.0f;

    float stA[1][VEC], stB[1][VEC];   // staging registers for one tile
    // ---- double buffering through registers: tile kt+1 is fetched into registers before tile kt's
    // FMAs and stored to the other buffer after them, so one barrier per K step suffices.
    if (ktiles > 0) {
        const int k0 = kBegin;
        // A: 128x8 global tile (8 contiguous), 1 vector of 4 per thread into registers.
        {
            const int r = tid / 2, cc = (tid % 2) * VEC;
            const float* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
            const bool row_ok = bm0 + r < M;
            if (a_vec_ok && row_ok && k0 + cc + VEC <= kEnd) {
                ld_vec(stA[0], p);
            } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                #pragma unroll
                for (int e = 0; e < VEC; ++e)
                    stA[0][e] = (row_ok && k0 + cc + e < kEnd) ? p[e] : 0.0f;
            }
        }
        // B: 8x128 global tile (128 contiguous), 1 vector of 4 per thread into registers.
        {
            const int r = tid / 32, cc = (tid % 32) * VEC;
            const float* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
            const bool row_ok = k0 + r < kEnd;
            if (b_vec_ok && row_ok && bn0 + cc + VEC <= N) {
                ld_vec(stB[0], p);
            } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                #pragma unroll
                for (int e = 0; e < VEC; ++e)
                    stB[0][e] = (row_ok && bn0 + cc + e < N) ? p[e] : 0.0f;
            }
        }
        // A: registers -> shared, transposing element by element.
        {
            const int r = tid / 2, cc = (tid % 2) * VEC;
            float* const base = sA;
            #pragma unroll
            for (int e = 0; e < VEC; ++e) base[a_off(cc + e, r)] = stA[0][e];
        }
        // B: registers -> shared (4 floats per store).
        {
            const int r = tid / 32, cc = (tid % 32) * VEC;
            float* const base = sB;
            st_vec(base + b_off(r, cc), stB[0]);
        }
    }
    __syncthreads();
    for (int kt = 0; kt < ktiles; ++kt) {
        const bool more = kt + 1 < ktiles;
        if (more) {
            const int k0 = kBegin + (kt + 1) * BK;
            // A: 128x8 global tile (8 contiguous), 1 vector of 4 per thread into registers.
            {
                const int r = tid / 2, cc = (tid % 2) * VEC;
                const float* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
                const bool row_ok = bm0 + r < M;
                if (a_vec_ok && row_ok && k0 + cc + VEC <= kEnd) {
                    ld_vec(stA[0], p);
                } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                    #pragma unroll
                    for (int e = 0; e < VEC; ++e)
                        stA[0][e] = (row_ok && k0 + cc + e < kEnd) ? p[e] : 0.0f;
                }
            }
            // B: 8x128 global tile (128 contiguous), 1 vector of 4 per thread into registers.
            {
                const int r = tid / 32, cc = (tid % 32) * VEC;
                const float* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
                const bool row_ok = k0 + r < kEnd;
                if (b_vec_ok && row_ok && bn0 + cc + VEC <= N) {
                    ld_vec(stB[0], p);
                } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                    #pragma unroll
                    for (int e = 0; e < VEC; ++e)
                        stB[0][e] = (row_ok && bn0 + cc + e < N) ? p[e] : 0.0f;
                }
            }
        }
        {   // Inner product over the 8-deep stage: outer products of a column of A and a row of B.
            const float* const sa = sA + (kt & 1) * A_STAGE;
            const float* const sb = sB + (kt & 1) * B_STAGE;
            float fa[WMITER * TM], fb[WNITER * TN];
            #pragma unroll
            for (int k = 0; k < BK; ++k) {
                #pragma unroll
                for (int wm = 0; wm < WMITER; ++wm)
                    #pragma unroll
                    for (int i = 0; i < TM; i += 4) {   // LDS.128: four rows of A's column at once
                        const float4 t = *reinterpret_cast<const float4*>(&sa[a_off(k, wm0 + wm * WSUBM + tr * TM + i)]);
                        fa[wm * TM + i] = t.x; fa[wm * TM + i + 1] = t.y; fa[wm * TM + i + 2] = t.z; fa[wm * TM + i + 3] = t.w;
                    }
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
        if (more) {
            // A: registers -> shared, transposing element by element.
            {
                const int r = tid / 2, cc = (tid % 2) * VEC;
                float* const base = sA + ((kt + 1) & 1) * A_STAGE;
                #pragma unroll
                for (int e = 0; e < VEC; ++e) base[a_off(cc + e, r)] = stA[0][e];
            }
            // B: registers -> shared (4 floats per store).
            {
                const int r = tid / 32, cc = (tid % 32) * VEC;
                float* const base = sB + ((kt + 1) & 1) * B_STAGE;
                st_vec(base + b_off(r, cc), stB[0]);
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
