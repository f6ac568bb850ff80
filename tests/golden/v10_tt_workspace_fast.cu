// =====================================================================================================
// gemmgen kernel gg_simt_tt_b128x128x8_w64x32i2x2_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k2w_fast
//   C = alpha * op(A) @ op(B) + beta * C, fp32 in and out, fp32 accumulation.
//   Layout TT: A is column-major MxK (lda >= M),
//                B is column-major KxN (ldb >= K), C is row-major MxN (ldc >= N).
//   Shapes: M % 128 == 0, N % 128 == 0, K % 16 == 0, leading dimensions and pointers aligned to 16 bytes (fast path: no bounds checks)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/128), 1, 2)
//   block = (256, 1, 1)
//   dynamic shared memory = 16640 bytes
//   W: workspace of 2*M*N floats; then gg_simt_tt_b128x128x8_w64x32i2x2_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k2w_fast_reduce<<<ceil(M*N/256), 256>>>(M, N, alpha, beta, C, ldc, W)
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 8, "BM": 128, "BN": 128, "TM": 4, "TN": 4, "WM": 64, "WMITER": 2, "WN": 32, "WNITER": 2,
//    "a_kmajor": true, "async_copy": false, "bounds": "none", "coalesced": true, "dtype": "f32",
//    "family": "simt", "frag": "lds", "label": "", "layout": "TT", "mainloop": "simt",
//    "min_blocks": 1, "pad_a": 4, "pad_b": 0, "partials": true, "prefetch": true, "raster": 8,
//    "reduce": "workspace", "split_k": 2, "stages": 2, "swz_a": 1, "swz_b": 1, "vec": 4}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin
// Produced by: gemmgen emit golden v10_tt_workspace_fast
// =====================================================================================================

// ---- tile geometry -----------------------------------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 8;       // block tile of C, and K step
constexpr int WM = 64, WN = 32;                        // warp tile
constexpr int WMITER = 2, WNITER = 2;        // warp sub-tiles per warp tile
constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;   // one warp sub-tile
constexpr int TM = 4, TN = 4;                        // thread tile per sub-tile
constexpr int TCOLS = WSUBN / TN;                         // threads across a warp sub-tile (4)
constexpr int WARPS_N = BN / WN;                          // warps across the block tile
constexpr int THREADS = 256;
constexpr int VEC = 4;                                       // floats per global load
constexpr int STAGES = 2;
constexpr int AS_LD = 132;   // A's shared row: BM + 4 pad (shifts each row 4 banks so column walks spread over banks)
constexpr int BS_LD = 128;   // B's shared row: BN + 0 pad
constexpr int A_STAGE = 1056, B_STAGE = 1024;  // floats per stage
constexpr int SPLIT_K = 2;                                 // K slices, one per blockIdx.z

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

// Split-K through a workspace: slice z wrote its partial product to W[z][M][N]; this kernel sums the
// slices in a fixed order (deterministic, unlike atomics) and applies the epilogue once.
extern "C" __global__ void gg_simt_tt_b128x128x8_w64x32i2x2_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k2w_fast_reduce(const int M, const int N, const float alpha, const float beta,
                                             float* __restrict__ C, const int ldc, const float* __restrict__ W)
{
#if __CUDA_ARCH__ >= 900
    // Launched as the main kernel's programmatic dependent (Hopper): set up while it finishes, then wait
    // for its slices' partials.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long MN = (long long)M * N;
    if (i >= MN) return;
    float sum = 0.0f;
    #pragma unroll
    for (int z = 0; z < 2; ++z) sum += W[z * MN + i];
    float* p = C + (i / N) * (long long)ldc + (i % N);
    *p = (beta == 0.0f) ? alpha * sum : alpha * sum + beta * *p;
}

// The block computes a 128x128 tile of C with 256 threads (8 warps of 64x32).
// Each thread accumulates 2x2 sub-tiles of 4x4 = 64 values in registers.
// K advances 8 at a time through 2 shared-memory stages (the next tile is loaded into registers while this one is used).
extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_simt_tt_b128x128x8_w64x32i2x2_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k2w_fast(
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
    const int k_per_slice = (((K + SPLIT_K - 1) / SPLIT_K) + BK - 1) / BK * BK;
    const int kBegin = blockIdx.z * k_per_slice;
    const int kEnd = min(K, kBegin + k_per_slice);
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

    float stA[1][VEC], stB[1][VEC];   // staging registers for one tile
    // ---- double buffering through registers: tile kt+1 is fetched into registers before tile kt's
    // FMAs and stored to the other buffer after them, so one barrier per K step suffices.
    if (ktiles > 0) {
        const int k0 = kBegin;
        // A: 8x128 global tile (128 contiguous), 1 vector of 4 per thread into registers.
        {
            const int r = tid / 32, cc = (tid % 32) * VEC;
            const float* p = A + (long long)(k0 + r) * lda + (bm0 + cc);
            ld_vec(stA[0], p);
        }
        // B: 128x8 global tile (8 contiguous), 1 vector of 4 per thread into registers.
        {
            const int r = tid / 2, cc = (tid % 2) * VEC;
            const float* p = B + (long long)(bn0 + r) * ldb + (k0 + cc);
            ld_vec(stB[0], p);
        }
        // A: registers -> shared (4 floats per store).
        {
            const int r = tid / 32, cc = (tid % 32) * VEC;
            float* const base = sA;
            st_vec(base + a_off(r, cc), stA[0]);
        }
        // B: registers -> shared, transposing element by element.
        {
            const int r = tid / 2, cc = (tid % 2) * VEC;
            float* const base = sB;
            #pragma unroll
            for (int e = 0; e < VEC; ++e) base[b_off(cc + e, r)] = stB[0][e];
        }
    }
    __syncthreads();
    for (int kt = 0; kt < ktiles; ++kt) {
        const bool more = kt + 1 < ktiles;
        if (more) {
            const int k0 = kBegin + (kt + 1) * BK;
            // A: 8x128 global tile (128 contiguous), 1 vector of 4 per thread into registers.
            {
                const int r = tid / 32, cc = (tid % 32) * VEC;
                const float* p = A + (long long)(k0 + r) * lda + (bm0 + cc);
                ld_vec(stA[0], p);
            }
            // B: 128x8 global tile (8 contiguous), 1 vector of 4 per thread into registers.
            {
                const int r = tid / 2, cc = (tid % 2) * VEC;
                const float* p = B + (long long)(bn0 + r) * ldb + (k0 + cc);
                ld_vec(stB[0], p);
            }
        }
        {   // Inner product over the 8-deep stage: outer products of a column of A and a row of B.
            const float* const sa = sA + (kt & 1) * A_STAGE;
            const float* const sb = sB + (kt & 1) * B_STAGE;
            // Register prefetch: the fragments of step k+1 are read from shared memory while step k's FMAs run.
            float fa[2][WMITER * TM], fb[2][WNITER * TN];
            #pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
                #pragma unroll
                for (int i = 0; i < TM; i += 4) {   // LDS.128: four rows of A's column at once
                    const float4 t = *reinterpret_cast<const float4*>(&sa[a_off(0, wm0 + wm * WSUBM + tr * TM + i)]);
                    fa[0][wm * TM + i] = t.x; fa[0][wm * TM + i + 1] = t.y; fa[0][wm * TM + i + 2] = t.z; fa[0][wm * TM + i + 3] = t.w;
                }
            #pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
                #pragma unroll
                for (int j = 0; j < TN; j += 4) {   // LDS.128: four columns of B's row at once
                    const float4 t = *reinterpret_cast<const float4*>(&sb[b_off(0, wn0 + wn * WSUBN + tc * TN + j)]);
                    fb[0][wn * TN + j] = t.x; fb[0][wn * TN + j + 1] = t.y; fb[0][wn * TN + j + 2] = t.z; fb[0][wn * TN + j + 3] = t.w;
                }
            #pragma unroll
            for (int k = 0; k < BK; ++k) {
                if (k + 1 < BK) {
                    #pragma unroll
                    for (int wm = 0; wm < WMITER; ++wm)
                        #pragma unroll
                        for (int i = 0; i < TM; i += 4) {   // LDS.128: four rows of A's column at once
                            const float4 t = *reinterpret_cast<const float4*>(&sa[a_off(k + 1, wm0 + wm * WSUBM + tr * TM + i)]);
                            fa[(k + 1) & 1][wm * TM + i] = t.x; fa[(k + 1) & 1][wm * TM + i + 1] = t.y; fa[(k + 1) & 1][wm * TM + i + 2] = t.z; fa[(k + 1) & 1][wm * TM + i + 3] = t.w;
                        }
                    #pragma unroll
                    for (int wn = 0; wn < WNITER; ++wn)
                        #pragma unroll
                        for (int j = 0; j < TN; j += 4) {   // LDS.128: four columns of B's row at once
                            const float4 t = *reinterpret_cast<const float4*>(&sb[b_off(k + 1, wn0 + wn * WSUBN + tc * TN + j)]);
                            fb[(k + 1) & 1][wn * TN + j] = t.x; fb[(k + 1) & 1][wn * TN + j + 1] = t.y; fb[(k + 1) & 1][wn * TN + j + 2] = t.z; fb[(k + 1) & 1][wn * TN + j + 3] = t.w;
                        }
                }
                #pragma unroll
                for (int i = 0; i < WMITER * TM; ++i)
                    #pragma unroll
                    for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
            }
        }
        if (more) {
            // A: registers -> shared (4 floats per store).
            {
                const int r = tid / 32, cc = (tid % 32) * VEC;
                float* const base = sA + ((kt + 1) & 1) * A_STAGE;
                st_vec(base + a_off(r, cc), stA[0]);
            }
            // B: registers -> shared, transposing element by element.
            {
                const int r = tid / 2, cc = (tid % 2) * VEC;
                float* const base = sB + ((kt + 1) & 1) * B_STAGE;
                #pragma unroll
                for (int e = 0; e < VEC; ++e) base[b_off(cc + e, r)] = stB[0][e];
            }
        }
        __syncthreads();
    }

    // ---- epilogue: write the raw partial sum to this slice's workspace.
    float* const out = W + (long long)blockIdx.z * M * N;
    const int ldo = N;
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
                        // 16-byte store (STG.128).
                        float4* const p = reinterpret_cast<float4*>(row + n);
                        *p = make_float4(a[j], a[j + 1], a[j + 2], a[j + 3]);
                    }
                }
            }
        }
}
