// =====================================================================================================
// gemmgen kernel gg_wmma_tn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k2w_chk_f16
//   C = alpha * op(A) @ op(B) + beta * C: A and B fp16 (IEEE binary16), fp32 accumulation, C fp32.
//   Layout TN: A is column-major MxK (lda >= M),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Leading dimensions count elements. Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/256), 1, 2)
//   block = (256, 1, 1)
//   dynamic shared memory = 76800 bytes (needs cudaFuncAttributeMaxDynamicSharedMemorySize)
//   W: workspace of 2*M*N floats; then gg_wmma_tn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k2w_chk_f16_reduce<<<ceil(M*N/256), 256>>>(M, N, alpha, beta, C, ldc, W)
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 32, "BM": 128, "BN": 256, "TM": 8, "TN": 8, "WM": 64, "WMITER": 1, "WN": 64, "WNITER": 1,
//    "a_kmajor": true, "async_copy": true, "bounds": "checked", "coalesced": true, "dtype": "f16",
//    "family": "wmma", "frag": "lds", "label": "", "layout": "TN", "mainloop": "mma_sync",
//    "min_blocks": 1, "pad_a": 8, "pad_b": 8, "partials": true, "prefetch": false, "raster": 8,
//    "reduce": "workspace", "split_k": 2, "stages": 3, "swz_a": 1, "swz_b": 1, "vec": 8}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin
// Produced by: gemmgen emit golden wmma_fast_tn_workspace
// =====================================================================================================

// ---- tile geometry -----------------------------------------------------------------------------------
constexpr int BM = 128, BN = 256, BK = 32;       // block tile of C, and K step
constexpr int WM = 64, WN = 64;                        // warp tile
constexpr int MI = WM / 16, NI = WN / 16, KS = BK / 16;   // wmma tiles per warp tile (4x4), k16 steps per stage (2)
constexpr int KP = KS < 2 ? KS : 2;                       // k16 steps summed into one fresh partial
constexpr int WARPS_N = BN / WN;                          // warps across the block tile
constexpr int THREADS = 256;
constexpr int VEC = 8;                                       // halves per global load / cp.async
constexpr int STAGES = 3;
constexpr int A_LD = 136, B_LD = 264;                   // shared row lengths in halves, padding included
constexpr int A_STAGE = 4352, B_STAGE = 8448;  // halves per stage: A 32x136, B 32x264
constexpr int EPI_LD = 20;                                  // floats per row of a warp's 16x16 epilogue slot
constexpr int SPLIT_K = 2;                                 // K slices, one per blockIdx.z

// A and B hold fp16 (IEEE binary16) values, passed as their 16-bit patterns: the kernel only moves them
// into shared memory and the tensor cores, so it needs neither cuda_fp16.h nor cuda_bf16.h.
typedef unsigned short f16_bits;
typedef f16_bits elem_t;

// Fragments of one 16x16x16 WMMA tile as PTX declares them: A and B 8 registers of two f16
// values (the sm_70 layout; ptxas keeps 4 on sm_80+), the fp32 accumulator 8 floats per lane. The element
// order inside a fragment is the hardware's, so C leaves through shared memory (wmma.store).
struct FragA { unsigned x[8]; };
struct FragB { unsigned x[8]; };
struct FragC { float x[8]; };

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// A tile at p: column-major (m contiguous), rows of A_LD = 136 halves. On sm_80+ this is one ldmatrix.x4.
__device__ __forceinline__ void wmma_load_a(FragA& f, const elem_t* p) {
    asm volatile("wmma.load.a.sync.aligned.col.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(smem_addr(p)), "n"(A_LD));
}
// B tile at p: row-major (n contiguous), rows of B_LD = 264 halves.
__device__ __forceinline__ void wmma_load_b(FragB& f, const elem_t* p) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(smem_addr(p)), "n"(B_LD));
}
// d += a * b on the tensor cores: a 16x16x16 product, exact f16 products summed in fp32.
__device__ __forceinline__ void wmma_mma(FragC& d, const FragA& a, const FragB& b) {
    asm("wmma.mma.sync.aligned.col.row.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3]), "+f"(d.x[4]), "+f"(d.x[5]), "+f"(d.x[6]), "+f"(d.x[7])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(a.x[4]), "r"(a.x[5]), "r"(a.x[6]), "r"(a.x[7]),
          "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]), "r"(b.x[4]), "r"(b.x[5]), "r"(b.x[6]), "r"(b.x[7]));
}
// The accumulator tile to shared memory, row-major with rows of EPI_LD floats ("memory": the lanes
// read it back with plain loads, which must not move above this store).
__device__ __forceinline__ void wmma_store_c(float* p, const FragC& f) {
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n"
                 :: "r"(smem_addr(p)), "f"(f.x[0]), "f"(f.x[1]), "f"(f.x[2]), "f"(f.x[3]), "f"(f.x[4]), "f"(f.x[5]), "f"(f.x[6]), "f"(f.x[7]), "n"(EPI_LD) : "memory");
}
// One global load moves VEC = 8 halves (16 bytes) as a uint4.
typedef uint4 vec_t;
union VecBits { vec_t v; elem_t e[VEC]; };   // a vector assembled element by element at edges
// cp.async copies global memory straight into shared memory without passing through registers
// (sm_80+). src_bytes < BYTES zero-fills the rest: that is how tile edges read zeros.
template <int BYTES>
__device__ __forceinline__ void cp_async(elem_t* dst, const elem_t* src, int src_bytes) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if constexpr (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(src), "n"(BYTES), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Shared-memory offsets (in halves) of one stage. Tiles keep their global layout, A [BK][BM] (m contiguous) and
// B [BK][BN] (n contiguous), rows padded by 8 (A) and 8 (B) halves: the 8 rows of 16 bytes that
// one ldmatrix phase reads then fall in different bank groups.
__device__ __forceinline__ int a_off(int k, int m) { return (k) * 136 + (m); }
__device__ __forceinline__ int b_off(int k, int n) { return (k) * 264 + (n); }
// Split-K through a workspace: slice z wrote its partial product to W[z][M][N]; this kernel sums the
// slices in a fixed order (deterministic, unlike atomics) and applies the epilogue once.
extern "C" __global__ void gg_wmma_tn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k2w_chk_f16_reduce(const int M, const int N, const float alpha, const float beta,
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

// The block computes a 128x256 tile of C with 256 threads (8 warps of 64x64); each warp tile is
// 4x4 wmma tiles of 16x16, 128 fp32 accumulators per thread. K advances 32 at a time through
// 3 shared-memory stages filled by cp.async; each stage is 2 k16 steps per tile,
// summed 2 at a time into a fresh partial and then added to the accumulators: the tensor cores
// truncate their running sums, so the long sum over K is kept in round-to-nearest fp32 adds instead.

extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_wmma_tn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k2w_chk_f16(
    const int M, const int N, const int K, const float alpha,
    const f16_bits* __restrict__ A, const int lda,
    const f16_bits* __restrict__ B, const int ldb,
    const float beta, float* __restrict__ C, const int ldc,
    float* __restrict__ W)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    elem_t* const sA = reinterpret_cast<elem_t*>(smem_raw);   // STAGES tiles of A, then STAGES tiles of B
    elem_t* const sB = sA + STAGES * A_STAGE;

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
    // Vector copies need rows that start on a vector boundary; otherwise element by element.
    const bool a_vec_ok = VEC == 1 || ((lda % VEC) == 0 && ((size_t)A % (2 * VEC)) == 0);
    const bool b_vec_ok = VEC == 1 || ((ldb % VEC) == 0 && ((size_t)B % (2 * VEC)) == 0);
    // Tiles of aligned rows wholly inside the matrix (and, per K step, inside the K range) need no checks.
    const bool a_whole = a_vec_ok && bm0 + BM <= M, b_whole = b_vec_ok && bn0 + BN <= N;

    FragC acc[MI][NI];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int t = 0; t < 8; ++t) acc[i][j].x[t] = 0.0f;

    // ---- 3-stage cp.async pipeline: tiles kt+1 .. kt+2 are in flight while tile kt is used.
    #pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        if (st < ktiles) {
            const int k0 = kBegin + st * BK;
            const bool k_whole = k0 + BK <= kEnd;
            // A: cp.async global -> shared, 2 copies of 16 bytes per thread.
            if (a_whole && k_whole) {   // an interior tile (the same for the whole block): no checks
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 16, cc = (v % 16) * VEC;
                    const elem_t* p = A + (long long)(k0 + r) * lda + (bm0 + cc);
                    elem_t* const dst = sA + st * A_STAGE + a_off(r, cc);
                    cp_async<2 * VEC>(dst, p, 2 * VEC);
                }
            } else {
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 16, cc = (v % 16) * VEC;
                    const elem_t* p = A + (long long)(k0 + r) * lda + (bm0 + cc);
                    elem_t* const dst = sA + st * A_STAGE + a_off(r, cc);
                    const bool row_ok = k0 + r < kEnd;
                    if (a_vec_ok) {   // aligned rows: one copy, zero-filled past the edge of the matrix
                        const int n = row_ok ? min(max(M - (bm0 + cc), 0), VEC) : 0;
                        cp_async<2 * VEC>(dst, n > 0 ? p : A, 2 * n);
                    } else {                  // misaligned rows: element by element (cp.async cannot copy 2 bytes)
                        #pragma unroll
                        for (int x = 0; x < VEC; ++x)
                            dst[x] = (row_ok && bm0 + cc + x < M) ? p[x] : elem_t(0);
                    }
                }
            }
            // B: cp.async global -> shared, 4 copies of 16 bytes per thread.
            if (b_whole && k_whole) {   // an interior tile (the same for the whole block): no checks
                #pragma unroll
                for (int s = 0; s < 4; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 32, cc = (v % 32) * VEC;
                    const elem_t* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
                    elem_t* const dst = sB + st * B_STAGE + b_off(r, cc);
                    cp_async<2 * VEC>(dst, p, 2 * VEC);
                }
            } else {
                #pragma unroll
                for (int s = 0; s < 4; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 32, cc = (v % 32) * VEC;
                    const elem_t* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
                    elem_t* const dst = sB + st * B_STAGE + b_off(r, cc);
                    const bool row_ok = k0 + r < kEnd;
                    if (b_vec_ok) {   // aligned rows: one copy, zero-filled past the edge of the matrix
                        const int n = row_ok ? min(max(N - (bn0 + cc), 0), VEC) : 0;
                        cp_async<2 * VEC>(dst, n > 0 ? p : B, 2 * n);
                    } else {                  // misaligned rows: element by element (cp.async cannot copy 2 bytes)
                        #pragma unroll
                        for (int x = 0; x < VEC; ++x)
                            dst[x] = (row_ok && bn0 + cc + x < N) ? p[x] : elem_t(0);
                    }
                }
            }
        }
        cp_async_commit();   // commit even when empty so the group count stays in step
    }
    int read_stage = 0, write_stage = STAGES - 1;
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();   // tile kt has landed ...
        __syncthreads();               // ... for every thread, and all are done reading tile kt-1's stage
        if (kt + STAGES - 1 < ktiles) {
            const int k0 = kBegin + (kt + STAGES - 1) * BK;
            const bool k_whole = k0 + BK <= kEnd;
            // A: cp.async global -> shared, 2 copies of 16 bytes per thread.
            if (a_whole && k_whole) {   // an interior tile (the same for the whole block): no checks
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 16, cc = (v % 16) * VEC;
                    const elem_t* p = A + (long long)(k0 + r) * lda + (bm0 + cc);
                    elem_t* const dst = sA + write_stage * A_STAGE + a_off(r, cc);
                    cp_async<2 * VEC>(dst, p, 2 * VEC);
                }
            } else {
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 16, cc = (v % 16) * VEC;
                    const elem_t* p = A + (long long)(k0 + r) * lda + (bm0 + cc);
                    elem_t* const dst = sA + write_stage * A_STAGE + a_off(r, cc);
                    const bool row_ok = k0 + r < kEnd;
                    if (a_vec_ok) {   // aligned rows: one copy, zero-filled past the edge of the matrix
                        const int n = row_ok ? min(max(M - (bm0 + cc), 0), VEC) : 0;
                        cp_async<2 * VEC>(dst, n > 0 ? p : A, 2 * n);
                    } else {                  // misaligned rows: element by element (cp.async cannot copy 2 bytes)
                        #pragma unroll
                        for (int x = 0; x < VEC; ++x)
                            dst[x] = (row_ok && bm0 + cc + x < M) ? p[x] : elem_t(0);
                    }
                }
            }
            // B: cp.async global -> shared, 4 copies of 16 bytes per thread.
            if (b_whole && k_whole) {   // an interior tile (the same for the whole block): no checks
                #pragma unroll
                for (int s = 0; s < 4; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 32, cc = (v % 32) * VEC;
                    const elem_t* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
                    elem_t* const dst = sB + write_stage * B_STAGE + b_off(r, cc);
                    cp_async<2 * VEC>(dst, p, 2 * VEC);
                }
            } else {
                #pragma unroll
                for (int s = 0; s < 4; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 32, cc = (v % 32) * VEC;
                    const elem_t* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
                    elem_t* const dst = sB + write_stage * B_STAGE + b_off(r, cc);
                    const bool row_ok = k0 + r < kEnd;
                    if (b_vec_ok) {   // aligned rows: one copy, zero-filled past the edge of the matrix
                        const int n = row_ok ? min(max(N - (bn0 + cc), 0), VEC) : 0;
                        cp_async<2 * VEC>(dst, n > 0 ? p : B, 2 * n);
                    } else {                  // misaligned rows: element by element (cp.async cannot copy 2 bytes)
                        #pragma unroll
                        for (int x = 0; x < VEC; ++x)
                            dst[x] = (row_ok && bn0 + cc + x < N) ? p[x] : elem_t(0);
                    }
                }
            }
        }
        cp_async_commit();
        {   // Tensor-core product of the 32-deep stage.
            const elem_t* const sa = sA + read_stage * A_STAGE;
            const elem_t* const sb = sB + read_stage * B_STAGE;
            #pragma unroll
            for (int kg = 0; kg < KS; kg += KP) {   // 1 group of KP = 2 k16 steps
                FragA fa[MI][KP];   // the warp's rows of A for the group's k16 steps
                #pragma unroll
                for (int i = 0; i < MI; ++i)
                    #pragma unroll
                    for (int ks = 0; ks < KP; ++ks) wmma_load_a(fa[i][ks], sa + a_off((kg + ks) * 16, wm0 + i * 16));
                #pragma unroll
                for (int j = 0; j < NI; ++j) {
                    FragB fb[KP];   // one 16-column strip of B at a time: 8 live registers, not 32
                    #pragma unroll
                    for (int ks = 0; ks < KP; ++ks) wmma_load_b(fb[ks], sb + b_off((kg + ks) * 16, wn0 + j * 16));
                    #pragma unroll
                    for (int i = 0; i < MI; ++i) {
                        // The tensor core truncates its fp32 running sum; summing each group into a fresh
                        // partial and adding that with round-to-nearest FADDs keeps the error of a K=4096
                        // product near SGEMM's instead of growing with the number of k16 steps.
                        FragC p;
                        #pragma unroll
                        for (int t = 0; t < 8; ++t) p.x[t] = 0.0f;
                        #pragma unroll
                        for (int ks = 0; ks < KP; ++ks) wmma_mma(p, fa[i][ks], fb[ks]);
                        #pragma unroll
                        for (int t = 0; t < 8; ++t) acc[i][j].x[t] += p.x[t];   // same fragment type: same element order
                    }
                }
            }
        }
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
    }
    cp_async_wait<0>();   // nothing may land in shared memory once the epilogue reuses it
    __syncthreads();      // every warp is done with the last stage

    // ---- epilogue: write the raw partial sum to this slice's workspace.
    // Each 16x16 tile goes to this warp's slot of shared memory (wmma.store), then every lane writes 4
    // consecutive floats of a row: 8 rows of 64 bytes per instruction, whole 32-byte sectors.
    float* const out = W + (long long)blockIdx.z * M * N;
    const int ldo = N;
    const bool read_c = beta != 0.0f;
    (void)read_c;
    const bool c_vec_ok = (ldo % 4) == 0 && ((size_t)out % 16) == 0;
    float* const slot = reinterpret_cast<float*>(smem_raw) + warp * 16 * EPI_LD;
    const int er = lane / 4, ec = (lane % 4) * 4;   // this lane's row (and row + 8) and first column
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j) {
            wmma_store_c(slot, acc[i][j]);
            __syncwarp();
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int m = bm0 + wm0 + i * 16 + h * 8 + er, n = bn0 + wn0 + j * 16 + ec;
                const float4 t = *reinterpret_cast<const float4*>(slot + (h * 8 + er) * EPI_LD + ec);
                const float a[4] = {t.x, t.y, t.z, t.w};
                float* const row = out + (long long)m * ldo;
                if (m >= M) continue;
                if (c_vec_ok && n + 3 < N) {
                    float4* const p = reinterpret_cast<float4*>(row + n);
                    *p = t;
                } else {
                    #pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (n + e < N) { *(row + n + e) = a[e]; }
                }
            }
            __syncwarp();   // every lane has read the slot before the next tile overwrites it
        }
}
