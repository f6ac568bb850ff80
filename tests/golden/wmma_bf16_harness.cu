// =====================================================================================================
// gemmgen kernel gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16   (preset wmma-bf16)
//   C = alpha * op(A) @ op(B) + beta * C: A and B bf16 (bfloat16), fp32 accumulation, C fp32.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Leading dimensions count elements. Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/256), 1, 1)
//   block = (256, 1, 1)
//   dynamic shared memory = 81408 bytes (needs cudaFuncAttributeMaxDynamicSharedMemorySize)
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 32, "BM": 128, "BN": 256, "TM": 8, "TN": 8, "WM": 64, "WMITER": 1, "WN": 64, "WNITER": 1,
//    "a_kmajor": true, "async_copy": true, "bounds": "checked", "coalesced": true, "dtype": "bf16",
//    "family": "wmma", "frag": "lds", "label": "wmma-bf16", "layout": "NN", "mainloop": "mma_sync",
//    "min_blocks": 1, "pad_a": 8, "pad_b": 8, "partials": true, "prefetch": false, "raster": 8,
//    "reduce": "atomic", "split_k": 1, "stages": 3, "swz_a": 1, "swz_b": 1, "vec": 8}
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 KERNEL.cu -lcublas -o KERNEL
// Produced by: gemmgen emit golden wmma_bf16_harness
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
constexpr int A_LD = 40, B_LD = 264;                   // shared row lengths in halves, padding included
constexpr int A_STAGE = 5120, B_STAGE = 8448;  // halves per stage: A 128x40, B 32x264
constexpr int EPI_LD = 20;                                  // floats per row of a warp's 16x16 epilogue slot

// A and B hold bf16 (bfloat16) values, passed as their 16-bit patterns: the kernel only moves them
// into shared memory and the tensor cores, so it needs neither cuda_fp16.h nor cuda_bf16.h.
typedef unsigned short bf16_bits;
typedef bf16_bits elem_t;

// Fragments of one 16x16x16 WMMA tile as PTX declares them: A and B 4 registers of two bf16
// values, the fp32 accumulator 8 floats per lane. The element
// order inside a fragment is the hardware's, so C leaves through shared memory (wmma.store).
struct FragA { unsigned x[4]; };
struct FragB { unsigned x[4]; };
struct FragC { float x[8]; };

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// A tile at p: row-major (k contiguous), rows of A_LD = 40 halves. On sm_80+ this is one ldmatrix.x4.
__device__ __forceinline__ void wmma_load_a(FragA& f, const elem_t* p) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(smem_addr(p)), "n"(A_LD));
}
// B tile at p: row-major (n contiguous), rows of B_LD = 264 halves.
__device__ __forceinline__ void wmma_load_b(FragB& f, const elem_t* p) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(smem_addr(p)), "n"(B_LD));
}
// d += a * b on the tensor cores: a 16x16x16 product, exact bf16 products summed in fp32.
__device__ __forceinline__ void wmma_mma(FragC& d, const FragA& a, const FragB& b) {
    asm("wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, {%0, %1, %2, %3, %4, %5, %6, %7};\n"
        : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3]), "+f"(d.x[4]), "+f"(d.x[5]), "+f"(d.x[6]), "+f"(d.x[7])
        : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]),
          "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]));
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

// Shared-memory offsets (in halves) of one stage. Tiles keep their global layout, A [BM][BK] (k contiguous) and
// B [BK][BN] (n contiguous), rows padded by 8 (A) and 8 (B) halves: the 8 rows of 16 bytes that
// one ldmatrix phase reads then fall in different bank groups.
__device__ __forceinline__ int a_off(int k, int m) { return (m) * 40 + (k); }
__device__ __forceinline__ int b_off(int k, int n) { return (k) * 264 + (n); }

// The block computes a 128x256 tile of C with 256 threads (8 warps of 64x64); each warp tile is
// 4x4 wmma tiles of 16x16, 128 fp32 accumulators per thread. K advances 32 at a time through
// 3 shared-memory stages filled by cp.async; each stage is 2 k16 steps per tile,
// summed 2 at a time into a fresh partial and then added to the accumulators: the tensor cores
// truncate their running sums, so the long sum over K is kept in round-to-nearest fp32 adds instead.

extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16(
    const int M, const int N, const int K, const float alpha,
    const bf16_bits* __restrict__ A, const int lda,
    const bf16_bits* __restrict__ B, const int ldb,
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
    const int kBegin = 0, kEnd = K;
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
                    const int r = v / 4, cc = (v % 4) * VEC;
                    const elem_t* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
                    elem_t* const dst = sA + st * A_STAGE + a_off(cc, r);
                    cp_async<2 * VEC>(dst, p, 2 * VEC);
                }
            } else {
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 4, cc = (v % 4) * VEC;
                    const elem_t* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
                    elem_t* const dst = sA + st * A_STAGE + a_off(cc, r);
                    const bool row_ok = bm0 + r < M;
                    if (a_vec_ok) {   // aligned rows: one copy, zero-filled past the edge of the matrix
                        const int n = row_ok ? min(max(kEnd - (k0 + cc), 0), VEC) : 0;
                        cp_async<2 * VEC>(dst, n > 0 ? p : A, 2 * n);
                    } else {                  // misaligned rows: element by element (cp.async cannot copy 2 bytes)
                        #pragma unroll
                        for (int x = 0; x < VEC; ++x)
                            dst[x] = (row_ok && k0 + cc + x < kEnd) ? p[x] : elem_t(0);
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
                    const int r = v / 4, cc = (v % 4) * VEC;
                    const elem_t* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
                    elem_t* const dst = sA + write_stage * A_STAGE + a_off(cc, r);
                    cp_async<2 * VEC>(dst, p, 2 * VEC);
                }
            } else {
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int v = tid + s * THREADS;
                    const int r = v / 4, cc = (v % 4) * VEC;
                    const elem_t* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
                    elem_t* const dst = sA + write_stage * A_STAGE + a_off(cc, r);
                    const bool row_ok = bm0 + r < M;
                    if (a_vec_ok) {   // aligned rows: one copy, zero-filled past the edge of the matrix
                        const int n = row_ok ? min(max(kEnd - (k0 + cc), 0), VEC) : 0;
                        cp_async<2 * VEC>(dst, n > 0 ? p : A, 2 * n);
                    } else {                  // misaligned rows: element by element (cp.async cannot copy 2 bytes)
                        #pragma unroll
                        for (int x = 0; x < VEC; ++x)
                            dst[x] = (row_ok && k0 + cc + x < kEnd) ? p[x] : elem_t(0);
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

    // ---- epilogue: C = alpha * acc + beta * C; with beta == 0, C is never read.
    // Each 16x16 tile goes to this warp's slot of shared memory (wmma.store), then every lane writes 4
    // consecutive floats of a row: 8 rows of 64 bytes per instruction, whole 32-byte sectors.
    float* const out = C;
    const int ldo = ldc;
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
                    float4 r = make_float4(alpha * a[0], alpha * a[1], alpha * a[2], alpha * a[3]);
                    if (read_c) {
                        const float4 o = *p;
                        r.x += beta * o.x; r.y += beta * o.y; r.z += beta * o.z; r.w += beta * o.w;
                    }
                    *p = r;
                } else {
                    #pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (n + e < N) { *(row + n + e) = read_c ? alpha * (a[e]) + beta * *(row + n + e) : alpha * (a[e]); }
                }
            }
            __syncwarp();   // every lane has read the slot before the next tile overwrites it
        }
}

// =====================================================================================================
// Test harness (gemmgen emit --harness): checks gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16 against cuBLAS and times both.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 KERNEL.cu -lcublas -o KERNEL
//          A CUDA toolkit without cuBLAS: use NVIDIA's wheel (in gemmgen[cuda13]; CUDA 12: nvidia-cublas-cu12,
//          nvidia.cublas and libcublas.so.12), CUBLAS=$(python -c "import nvidia.cu13; print(nvidia.cu13.__path__[0])"),
//          and in place of -lcublas: -I$CUBLAS/include -L$CUBLAS/lib -l:libcublas.so.13 -Xlinker=-rpath,$CUBLAS/lib
//   run:   ./KERNEL M N K [alpha [beta]]   (defaults: 4096 4096 4096 1 0)
// It fills A and B with random non-zero bf16 values and runs two checks against cublasGemmEx
// (CUDA_R_16BF A and B, CUDA_R_32F C, CUBLAS_COMPUTE_32F: the same products, fp32 accumulation):
//   1. beta = 0 with C filled with NaN first: a kernel that reads C when beta == 0, or leaves an
//      element unwritten, shows up as NaN;
//   2. the given beta (0.75 when it is 0) on a random, finite C: the full epilogue.
// Each must have a relative Frobenius error ||C - C_cublas|| / ||C_cublas|| <= 1e-4. Then both are
// timed with CUDA events (warm-up, L2 flushed before each run, median).
// Exit status: 0 correct, 1 wrong result, 2 bad arguments or a shape the kernel does not accept,
// 3 a CUDA or cuBLAS error, or no CUDA GPU or driver on this machine.
// =====================================================================================================
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define GG_CHECK(call)                                                                               \
    do {                                                                                             \
        const cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "CUDA error %s in %s (line %d): %s\n", cudaGetErrorName(e_), #call,     \
                    __LINE__, cudaGetErrorString(e_));                                               \
            exit(3);                                                                                 \
        }                                                                                            \
    } while (0)
#define GG_CUBLAS(call)                                                                              \
    do {                                                                                             \
        const cublasStatus_t s_ = (call);                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                           \
            fprintf(stderr, "cuBLAS error %s in %s (line %d)\n", cublasGetStatusString(s_), #call,  \
                    __LINE__);                                                                       \
            exit(3);                                                                                 \
        }                                                                                            \
    } while (0)

namespace gemmgen_harness {

constexpr bool A_T = false, B_T = false;   // layout NN: T means stored column-major
// fp32 accumulation of exact products on both sides, in different orders; cuBLAS's tensor cores
// truncate their running sums (~1e-5 at K=8192). A wrong index or a lost k step errs by 1e-2 or more.
constexpr double BOUND = 1e-4;                    // relative Frobenius error allowed (f16/bf16 inputs, gemmgen.gate)
constexpr size_t SMEM = 81408;              // dynamic shared memory of the main kernel
constexpr char LABEL[] = "wmma-bf16";          // the preset, if any

struct Problem {
    int M, N, K;
    int lda, ldb, ldc;   // tight: a row (or column, for T) is exactly as long as the matrix
    float alpha, beta;
};

// Random values in +-[0.1, 1): never zero, so a missing product term cannot hide. A hash of the
// index rather than a generator's sequence, so each element is independent and the fill is parallel.
__global__ void fill_random(float* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ (unsigned)(i >> 32) * 40503u ^ seed;
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        const float u = (h >> 8) * (1.0f / 16777216.0f);                  // [0, 1)
        p[i] = (h & 1u) ? 0.1f + 0.9f * u : -(0.1f + 0.9f * u);
    }
}

static void fill(float* p, size_t n, unsigned seed) {
    fill_random<<<1024, 256>>>(p, n, seed);
    GG_CHECK(cudaGetLastError());
}

// A and B in bf16: random floats rounded to nearest, stored as the 16-bit patterns the kernel takes.
__global__ void to_input(const float* src, bf16_bits* dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
}

static void fill(float* scratch, bf16_bits* p, size_t n, unsigned seed) {
    fill(scratch, n, seed);
    to_input<<<1024, 256>>>(scratch, p, n);
    GG_CHECK(cudaGetLastError());
}

// Why the kernel cannot compute this problem, or nullptr (mirrors KernelConfig.accepts).
static const char* rejects(const Problem& p) {
    (void)p;   // checked bounds: any M, N, K >= 1 and any leading dimensions
    return nullptr;
}

// The launch sequence from the header: grid  = (ceil(M/128) * ceil(N/256), 1, 1); block = (256, 1, 1); dynamic shared memory = 81408 bytes (needs cudaFuncAttributeMaxDynamicSharedMemorySize).
static void launch(const Problem& p, const bf16_bits* A, const bf16_bits* B, float* C, float* W, cudaStream_t s) {
    const dim3 block(256, 1, 1);
    const unsigned tiles = (unsigned)((p.M + 127) / 128) * (unsigned)((p.N + 255) / 256);
    const dim3 grid(tiles, 1, 1);
    gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16<<<grid, block, SMEM, s>>>(p.M, p.N, p.K, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc, W);
    (void)W;
    GG_CHECK(cudaGetLastError());
}

// cuBLAS is column-major. Row-major C (MxN) is column-major C^T (NxM), and C^T = op(B)^T op(A)^T, so
// B goes first. A row-major operand (N) read column-major already is its transpose: CUBLAS_OP_N; a
// column-major one (T) is the matrix itself and needs CUBLAS_OP_T.
static void reference(cublasHandle_t h, const Problem& p, const bf16_bits* A, const bf16_bits* B, float* C) {
    GG_CUBLAS(cublasGemmEx(h, B_T ? CUBLAS_OP_T : CUBLAS_OP_N, A_T ? CUBLAS_OP_T : CUBLAS_OP_N,
                           p.N, p.M, p.K, &p.alpha, B, CUDA_R_16BF, p.ldb, A, CUDA_R_16BF, p.lda, &p.beta,
                           C, CUDA_R_32F, p.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// ||C - R||_F / ||R||_F in double; a NaN or Inf anywhere in C fails outright.
static double rel_error(const float* dC, const float* dR, size_t n, size_t* bad) {
    std::vector<float> c(n), r(n);
    GG_CHECK(cudaMemcpy(c.data(), dC, n * sizeof(float), cudaMemcpyDeviceToHost));
    GG_CHECK(cudaMemcpy(r.data(), dR, n * sizeof(float), cudaMemcpyDeviceToHost));
    double diff = 0.0, norm = 0.0;
    *bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(c[i])) { ++*bad; continue; }
        const double d = (double)c[i] - (double)r[i];
        diff += d * d;
        norm += (double)r[i] * r[i];
    }
    return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Median time in ms of run(), like Triton's do_bench: warm up for about 25 ms, then repeat for about
// 100 ms, flushing L2 before every run so each one reads its operands from DRAM.
template <class Run>
static double bench_ms(Run run, float* flush, size_t flush_bytes, int* reps_out) {
    cudaEvent_t t0, t1;
    GG_CHECK(cudaEventCreate(&t0));
    GG_CHECK(cudaEventCreate(&t1));
    GG_CHECK(cudaEventRecord(t0));
    run();
    GG_CHECK(cudaEventRecord(t1));
    GG_CHECK(cudaEventSynchronize(t1));
    float first = 0.0f;
    GG_CHECK(cudaEventElapsedTime(&first, t0, t1));
    const int warm = std::max(1, std::min(100, (int)(25.0f / std::max(first, 1e-3f))));
    for (int i = 0; i < warm; ++i) run();
    const int reps = std::max(5, std::min(1000, (int)(100.0f / std::max(first, 1e-3f))));
    std::vector<cudaEvent_t> start(reps), stop(reps);
    for (int i = 0; i < reps; ++i) {
        GG_CHECK(cudaEventCreate(&start[i]));
        GG_CHECK(cudaEventCreate(&stop[i]));
        GG_CHECK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));   // evict A, B and C from L2
        GG_CHECK(cudaEventRecord(start[i]));
        run();
        GG_CHECK(cudaEventRecord(stop[i]));
    }
    GG_CHECK(cudaEventSynchronize(stop[reps - 1]));
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; ++i) {
        GG_CHECK(cudaEventElapsedTime(&ms[i], start[i], stop[i]));
        GG_CHECK(cudaEventDestroy(start[i]));
        GG_CHECK(cudaEventDestroy(stop[i]));
    }
    GG_CHECK(cudaEventDestroy(t0));
    GG_CHECK(cudaEventDestroy(t1));
    std::sort(ms.begin(), ms.end());
    *reps_out = reps;
    return reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
}

static bool parse_args(int argc, char** argv, Problem* p) {
    long dims[3] = {4096, 4096, 4096};
    double scal[2] = {1.0, 0.0};
    if (argc > 6) return false;
    for (int i = 1; i < argc; ++i) {
        char* end = nullptr;
        if (i <= 3) dims[i - 1] = strtol(argv[i], &end, 10);
        else scal[i - 4] = strtod(argv[i], &end);
        if (end == argv[i] || *end != '\0') return false;
    }
    for (long d : dims)
        if (d < 1 || d > 1L << 30) return false;
    p->M = (int)dims[0]; p->N = (int)dims[1]; p->K = (int)dims[2];
    p->lda = A_T ? p->M : p->K;
    p->ldb = B_T ? p->K : p->N;
    p->ldc = p->N;
    p->alpha = (float)scal[0]; p->beta = (float)scal[1];
    return true;
}

struct Buffers {
    bf16_bits *A, *B;
    float *C, *R, *C0, *W, *flush;
    size_t a, b, c, w, flush_bytes;   // element counts (flush: bytes)
};

static Buffers allocate(const Problem& p, int l2_bytes) {
    Buffers m{};
    m.a = (size_t)(A_T ? p.K : p.M) * p.lda;
    m.b = (size_t)(B_T ? p.N : p.K) * p.ldb;
    m.c = (size_t)p.M * p.ldc;
    m.w = 0 * (size_t)p.M * p.N;
    m.flush_bytes = std::max((size_t)2 * l2_bytes, (size_t)64 << 20);
    GG_CHECK(cudaMalloc(&m.A, m.a * sizeof(bf16_bits)));
    GG_CHECK(cudaMalloc(&m.B, m.b * sizeof(bf16_bits)));
    GG_CHECK(cudaMalloc(&m.C, m.c * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.R, m.c * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.C0, m.c * sizeof(float)));
    if (m.w) GG_CHECK(cudaMalloc(&m.W, m.w * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.flush, m.flush_bytes));
    return m;
}

static void release(Buffers& m) {
    for (void* ptr : {(void*)m.A, (void*)m.B, (void*)m.C, (void*)m.R, (void*)m.C0, (void*)m.W, (void*)m.flush})
        if (ptr) GG_CHECK(cudaFree(ptr));
}

// Run the kernel and cuBLAS on the same inputs; C starts as NaN (beta == 0) or as the random C0.
static bool check(cublasHandle_t h, const Problem& p, Buffers& m, const char* what) {
    const size_t bytes = m.c * sizeof(float);
    if (p.beta == 0.0f) {
        GG_CHECK(cudaMemset(m.C, 0xff, bytes));   // all bits set: NaN
        GG_CHECK(cudaMemset(m.R, 0xff, bytes));   // cuBLAS must not read C either
    } else {
        GG_CHECK(cudaMemcpy(m.C, m.C0, bytes, cudaMemcpyDeviceToDevice));
        GG_CHECK(cudaMemcpy(m.R, m.C0, bytes, cudaMemcpyDeviceToDevice));
    }
    launch(p, m.A, m.B, m.C, m.W, 0);
    reference(h, p, m.A, m.B, m.R);
    GG_CHECK(cudaDeviceSynchronize());
    size_t bad = 0;
    const double err = rel_error(m.C, m.R, m.c, &bad);
    const bool ok = bad == 0 && err <= BOUND;
    printf("check %-34s rel. Frobenius error %.2e (bound %.0e)", what, err, BOUND);
    if (bad) printf(", %zu elements NaN or Inf", bad);
    printf("  %s\n", ok ? "ok" : "WRONG");
    return ok;
}

}  // namespace gemmgen_harness

int main(int argc, char** argv) {
    using namespace gemmgen_harness;
    Problem p{};
    if (!parse_args(argc, argv, &p)) {
        fprintf(stderr, "usage: %s [M N K [alpha [beta]]]   (positive integers M, N, K; default 4096 4096 4096 1 0)\n", argv[0]);
        return 2;
    }
    if (const char* why = rejects(p)) {
        fprintf(stderr, "gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16 does not accept %dx%dx%d: %s\n", p.M, p.N, p.K, why);
        return 2;
    }
    // The first CUDA call says whether there is a GPU at all; without a driver the runtime's own words
    // ("driver version is insufficient for CUDA runtime version") do not say that.
    int count = 0;
    const cudaError_t found = cudaGetDeviceCount(&count);
    if (found != cudaSuccess || count == 0) {
        const char* why = found == cudaErrorInsufficientDriver
                              ? "the NVIDIA driver is missing, or older than the CUDA this program was built with"
                              : found == cudaErrorNoDevice || found == cudaSuccess ? "the driver sees no device"
                                                                                   : cudaGetErrorString(found);
        fprintf(stderr, "no CUDA GPU/driver found: %s (%s)\n", why, cudaGetErrorName(found));
        return 3;
    }
    int dev = 0, l2 = 0, optin = 0;
    GG_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    GG_CHECK(cudaGetDeviceProperties(&prop, dev));
    GG_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    GG_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if ((long long)SMEM > (long long)optin) {
        fprintf(stderr, "gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16 needs %zu bytes of shared memory per block; %s allows %d\n", SMEM, prop.name, optin);
        return 2;
    }
    if (SMEM > 48 * 1024)   // above 48 KB a kernel must opt in to its dynamic shared memory
        GG_CHECK(cudaFuncSetAttribute(gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));

    printf("%s%s%s%s\n", "gg_wmma_nn_b128x256x32_w64x64_v8_ap8s1_bp8s1_r8_s3c_k1_chk_bf16", LABEL[0] ? " (" : "", LABEL, LABEL[0] ? ")" : "");
    printf("on %s (sm_%d%d): M=%d N=%d K=%d, layout NN, alpha=%g beta=%g\n",
           prop.name, prop.major, prop.minor, p.M, p.N, p.K, p.alpha, p.beta);
    Buffers m = allocate(p, l2);
    float* scratch = nullptr;   // random floats before rounding to bf16
    GG_CHECK(cudaMalloc(&scratch, std::max(m.a, m.b) * sizeof(float)));
    fill(scratch, m.A, m.a, 1u);
    fill(scratch, m.B, m.b, 2u);
    GG_CHECK(cudaFree(scratch));
    fill(m.C0, m.c, 3u);
    cublasHandle_t h;
    GG_CUBLAS(cublasCreate(&h));
    GG_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));   // true fp32: no TF32 tensor cores

    Problem p0 = p, p1 = p;
    p0.beta = 0.0f;
    p1.beta = p.beta != 0.0f ? p.beta : 0.75f;
    char what1[64];
    snprintf(what1, sizeof what1, "beta=%g on random C:", p1.beta);
    bool ok = check(h, p0, m, "beta=0 on C filled with NaN:");
    ok = check(h, p1, m, what1) && ok;

    int reps_k = 0, reps_b = 0;
    const double ms_k = bench_ms([&] { launch(p, m.A, m.B, m.C, m.W, 0); }, m.flush, m.flush_bytes, &reps_k);
    const double ms_b = bench_ms([&] { reference(h, p, m.A, m.B, m.R); }, m.flush, m.flush_bytes, &reps_b);
    const double flop = 2.0 * p.M * p.N * (double)p.K;
    printf("time gemmgen %10.4f ms  %9.1f GFLOP/s  (median of %d)\n", ms_k, flop / ms_k * 1e-6, reps_k);
    printf("time cuBLAS  %10.4f ms  %9.1f GFLOP/s  (median of %d)\n", ms_b, flop / ms_b * 1e-6, reps_b);
    printf("gemmgen / cuBLAS: %.1f%% of cuBLAS's speed\n", 100.0 * ms_b / ms_k);
    printf("%s\n", ok ? "PASS" : "FAIL: wrong result");

    GG_CUBLAS(cublasDestroy(h));
    release(m);
    return ok ? 0 : 1;
}
