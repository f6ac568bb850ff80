// =====================================================================================================
// gemmgen kernel gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk   (preset v6)
//   C = alpha * op(A) @ op(B) + beta * C, fp32 in and out, fp32 accumulation.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/128), 1, 1)
//   block = (256, 1, 1)
//   dynamic shared memory = 8320 bytes
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 8, "BM": 128, "BN": 128, "TM": 8, "TN": 8, "WM": 16, "WMITER": 1, "WN": 128, "WNITER": 1,
//    "a_kmajor": true, "async_copy": false, "bounds": "checked", "coalesced": true, "dtype": "f32",
//    "family": "simt", "frag": "lds", "label": "v6", "layout": "NN", "mainloop": "simt",
//    "min_blocks": 1, "pad_a": 4, "pad_b": 0, "partials": true, "prefetch": false, "raster": 1,
//    "reduce": "atomic", "split_k": 1, "stages": 1, "swz_a": 1, "swz_b": 1, "vec": 4}
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 KERNEL.cu -lcublas -o KERNEL
// Produced by: gemmgen emit golden v6_harness
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
constexpr int STAGES = 1;
constexpr int AS_LD = 132;   // A's shared row: BM + 4 pad (shifts each row 4 banks so column walks spread over banks)
constexpr int BS_LD = 128;   // B's shared row: BN + 0 pad
constexpr int A_STAGE = 1056;  // floats per stage

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
// K advances 8 at a time through 1 shared-memory stage.
extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk(
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

    float stA[1][VEC], stB[1][VEC];   // staging registers for one tile
    // ---- single buffer: load a tile, wait for every thread, use it, wait again before overwriting.
    for (int kt = 0; kt < ktiles; ++kt) {
        const int k0 = kBegin + kt * BK;
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

// =====================================================================================================
// Test harness (gemmgen emit --harness): checks gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk against cuBLAS and times both.
//   build: nvcc -O3 -std=c++17 -arch=sm_90 KERNEL.cu -lcublas -o KERNEL
//          A CUDA toolkit without cuBLAS: use NVIDIA's wheel (in gemmgen[cuda13]; CUDA 12: nvidia-cublas-cu12,
//          nvidia.cublas and libcublas.so.12), CUBLAS=$(python -c "import nvidia.cu13; print(nvidia.cu13.__path__[0])"),
//          and in place of -lcublas: -I$CUBLAS/include -L$CUBLAS/lib -l:libcublas.so.13 -Xlinker=-rpath,$CUBLAS/lib
//   run:   ./KERNEL M N K [alpha [beta]]   (defaults: 4096 4096 4096 1 0)
// It fills A and B with random non-zero values and runs two checks against cublasSgemm:
//   1. beta = 0 with C filled with NaN first: a kernel that reads C when beta == 0, or leaves an
//      element unwritten, shows up as NaN;
//   2. the given beta (0.75 when it is 0) on a random, finite C: the full epilogue.
// Each must have a relative Frobenius error ||C - C_cublas|| / ||C_cublas|| <= 1e-5. Then both are
// timed with CUDA events (warm-up, L2 flushed before each run, median).
// Exit status: 0 correct, 1 wrong result, 2 bad arguments or a shape the kernel does not accept,
// 3 a CUDA or cuBLAS error, or no CUDA GPU or driver on this machine.
// =====================================================================================================
#include <cublas_v2.h>
#include <cuda_runtime.h>

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
constexpr double BOUND = 1e-5;                    // relative Frobenius error allowed (fp32)
constexpr size_t SMEM = 8320;              // dynamic shared memory of the main kernel
constexpr char LABEL[] = "v6";          // the preset, if any

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

// Why the kernel cannot compute this problem, or nullptr (mirrors KernelConfig.accepts).
static const char* rejects(const Problem& p) {
    (void)p;   // checked bounds: any M, N, K >= 1 and any leading dimensions
    return nullptr;
}

// The launch sequence from the header: grid  = (ceil(M/128) * ceil(N/128), 1, 1); block = (256, 1, 1); dynamic shared memory = 8320 bytes.
static void launch(const Problem& p, const float* A, const float* B, float* C, float* W, cudaStream_t s) {
    const dim3 block(256, 1, 1);
    const unsigned tiles = (unsigned)((p.M + 127) / 128) * (unsigned)((p.N + 127) / 128);
    const dim3 grid(tiles, 1, 1);
    gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk<<<grid, block, SMEM, s>>>(p.M, p.N, p.K, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc, W);
    (void)W;
    GG_CHECK(cudaGetLastError());
}

// cuBLAS is column-major. Row-major C (MxN) is column-major C^T (NxM), and C^T = op(B)^T op(A)^T, so
// B goes first. A row-major operand (N) read column-major already is its transpose: CUBLAS_OP_N; a
// column-major one (T) is the matrix itself and needs CUBLAS_OP_T.
static void reference(cublasHandle_t h, const Problem& p, const float* A, const float* B, float* C) {
    GG_CUBLAS(cublasSgemm(h, B_T ? CUBLAS_OP_T : CUBLAS_OP_N, A_T ? CUBLAS_OP_T : CUBLAS_OP_N,
                          p.N, p.M, p.K, &p.alpha, B, p.ldb, A, p.lda, &p.beta, C, p.ldc));
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
    float *A, *B, *C, *R, *C0, *W, *flush;
    size_t a, b, c, w, flush_bytes;   // element counts (flush: bytes)
};

static Buffers allocate(const Problem& p, int l2_bytes) {
    Buffers m{};
    m.a = (size_t)(A_T ? p.K : p.M) * p.lda;
    m.b = (size_t)(B_T ? p.N : p.K) * p.ldb;
    m.c = (size_t)p.M * p.ldc;
    m.w = 0 * (size_t)p.M * p.N;
    m.flush_bytes = std::max((size_t)2 * l2_bytes, (size_t)64 << 20);
    GG_CHECK(cudaMalloc(&m.A, m.a * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.B, m.b * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.C, m.c * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.R, m.c * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.C0, m.c * sizeof(float)));
    if (m.w) GG_CHECK(cudaMalloc(&m.W, m.w * sizeof(float)));
    GG_CHECK(cudaMalloc(&m.flush, m.flush_bytes));
    return m;
}

static void release(Buffers& m) {
    for (float* ptr : {m.A, m.B, m.C, m.R, m.C0, m.W, m.flush})
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
        fprintf(stderr, "gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk does not accept %dx%dx%d: %s\n", p.M, p.N, p.K, why);
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
        fprintf(stderr, "gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk needs %zu bytes of shared memory per block; %s allows %d\n", SMEM, prop.name, optin);
        return 2;
    }
    if (SMEM > 48 * 1024)   // above 48 KB a kernel must opt in to its dynamic shared memory
        GG_CHECK(cudaFuncSetAttribute(gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));

    printf("%s%s%s%s\n", "gg_simt_nn_b128x128x8_w16x128i1x1_t8x8_v4_akp4s1_bp0s1_r1_s1r_flds_k1_chk", LABEL[0] ? " (" : "", LABEL, LABEL[0] ? ")" : "");
    printf("on %s (sm_%d%d): M=%d N=%d K=%d, layout NN, alpha=%g beta=%g\n",
           prop.name, prop.major, prop.minor, p.M, p.N, p.K, p.alpha, p.beta);
    Buffers m = allocate(p, l2);
    fill(m.A, m.a, 1u);
    fill(m.B, m.b, 2u);
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
