// =====================================================================================================
// gemmgen kernel gg_wmma_nn_b128x128x32_w32x32_v8_ap8s1_bp8s1_r1_s1r_k1_chk_f16   (preset wmma)
//   C = alpha * op(A) @ op(B) + beta * C: A and B fp16 (IEEE binary16), fp32 accumulation, C fp32.
//   Layout NN: A is row-major MxK (lda >= K),
//                B is row-major KxN (ldb >= N), C is row-major MxN (ldc >= N).
//   Leading dimensions count elements. Shapes: any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)
//
// Launch geometry (M, N, K are the problem's sizes):
//   grid  = (ceil(M/128) * ceil(N/128), 1, 1)
//   block = (512, 1, 1)
//   dynamic shared memory = 20480 bytes
//
// Config (JSON, one key-value pair never split: `gemmgen emit --config FILE` reads it back):
//   {"BK": 32, "BM": 128, "BN": 128, "TM": 8, "TN": 8, "WM": 32, "WMITER": 1, "WN": 32, "WNITER": 1,
//    "a_kmajor": true, "async_copy": false, "bounds": "checked", "coalesced": true, "dtype": "f16",
//    "family": "wmma", "frag": "lds", "label": "wmma", "layout": "NN", "mainloop": "mma_sync",
//    "min_blocks": 1, "pad_a": 8, "pad_b": 8, "partials": true, "prefetch": false, "raster": 1,
//    "reduce": "atomic", "split_k": 1, "stages": 1, "swz_a": 1, "swz_b": 1, "vec": 8}
//
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin
// Produced by: gemmgen emit golden wmma
// =====================================================================================================

// ---- tile geometry -----------------------------------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 32;       // block tile of C, and K step
constexpr int WM = 32, WN = 32;                        // warp tile
constexpr int MI = WM / 16, NI = WN / 16, KS = BK / 16;   // wmma tiles per warp tile (2x2), k16 steps per stage (2)
constexpr int KP = KS < 2 ? KS : 2;                       // k16 steps summed into one fresh partial
constexpr int WARPS_N = BN / WN;                          // warps across the block tile
constexpr int THREADS = 512;
constexpr int VEC = 8;                                       // halves per global load / cp.async
constexpr int STAGES = 1;
constexpr int A_LD = 40, B_LD = 136;                   // shared row lengths in halves, padding included
constexpr int A_STAGE = 5120;  // halves per stage: A 128x40, B 32x136
constexpr int EPI_LD = 20;                                  // floats per row of a warp's 16x16 epilogue slot

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
// A tile at p: row-major (k contiguous), rows of A_LD = 40 halves. On sm_80+ this is one ldmatrix.x4.
__device__ __forceinline__ void wmma_load_a(FragA& f, const elem_t* p) {
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(smem_addr(p)), "n"(A_LD));
}
// B tile at p: row-major (n contiguous), rows of B_LD = 136 halves.
__device__ __forceinline__ void wmma_load_b(FragB& f, const elem_t* p) {
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(smem_addr(p)), "n"(B_LD));
}
// d += a * b on the tensor cores: a 16x16x16 product, exact f16 products summed in fp32.
__device__ __forceinline__ void wmma_mma(FragC& d, const FragA& a, const FragB& b) {
    asm("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};\n"
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

// Shared-memory offsets (in halves) of one stage. Tiles keep their global layout, A [BM][BK] (k contiguous) and
// B [BK][BN] (n contiguous), rows padded by 8 (A) and 8 (B) halves: the 8 rows of 16 bytes that
// one ldmatrix phase reads then fall in different bank groups.
__device__ __forceinline__ int a_off(int k, int m) { return (m) * 40 + (k); }
__device__ __forceinline__ int b_off(int k, int n) { return (k) * 136 + (n); }

// The block computes a 128x128 tile of C with 512 threads (16 warps of 32x32); each warp tile is
// 2x2 wmma tiles of 16x16, 32 fp32 accumulators per thread. K advances 32 at a time through
// one shared-memory buffer (load, barrier, compute, barrier); each stage is 2 k16 steps per tile,
// summed 2 at a time into a fresh partial and then added to the accumulators: the tensor cores
// truncate their running sums, so the long sum over K is kept in round-to-nearest fp32 adds instead.

extern "C" __global__ void __launch_bounds__(THREADS, 1) gg_wmma_nn_b128x128x32_w32x32_v8_ap8s1_bp8s1_r1_s1r_k1_chk_f16(
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
    // Vector copies need rows that start on a vector boundary; otherwise element by element.
    const bool a_vec_ok = VEC == 1 || ((lda % VEC) == 0 && ((size_t)A % (2 * VEC)) == 0);
    const bool b_vec_ok = VEC == 1 || ((ldb % VEC) == 0 && ((size_t)B % (2 * VEC)) == 0);

    FragC acc[MI][NI];
    #pragma unroll
    for (int i = 0; i < MI; ++i)
        #pragma unroll
        for (int j = 0; j < NI; ++j)
            #pragma unroll
            for (int t = 0; t < 8; ++t) acc[i][j].x[t] = 0.0f;

    // ---- single buffer (seed 004): load a tile, wait for every thread, use it, wait again.
    vec_t stA[1], stB[1];   // staging registers for one tile
    for (int kt = 0; kt < ktiles; ++kt) {
        const int k0 = kBegin + kt * BK;
        // A: 128x32 global tile (32 contiguous), 1 vector of 8 halves per thread into registers.
        {
            const int r = tid / 4, cc = (tid % 4) * VEC;
            const elem_t* p = A + (long long)(bm0 + r) * lda + (k0 + cc);
            const bool row_ok = bm0 + r < M;
            if (a_vec_ok && row_ok && k0 + cc + VEC <= kEnd) {
                stA[0] = __ldg(reinterpret_cast<const vec_t*>(p));
            } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                VecBits t;
                #pragma unroll
                for (int x = 0; x < VEC; ++x) t.e[x] = (row_ok && k0 + cc + x < kEnd) ? p[x] : elem_t(0);
                stA[0] = t.v;
            }
        }
        // B: 32x128 global tile (128 contiguous), 1 vector of 8 halves per thread into registers.
        {
            const int r = tid / 16, cc = (tid % 16) * VEC;
            const elem_t* p = B + (long long)(k0 + r) * ldb + (bn0 + cc);
            const bool row_ok = k0 + r < kEnd;
            if (b_vec_ok && row_ok && bn0 + cc + VEC <= N) {
                stB[0] = __ldg(reinterpret_cast<const vec_t*>(p));
            } else {  // edge or misaligned rows: element by element, zeros outside the matrix
                VecBits t;
                #pragma unroll
                for (int x = 0; x < VEC; ++x) t.e[x] = (row_ok && bn0 + cc + x < N) ? p[x] : elem_t(0);
                stB[0] = t.v;
            }
        }
        // A: registers -> shared, 16 bytes per store.
        {
            const int r = tid / 4, cc = (tid % 4) * VEC;
            *reinterpret_cast<vec_t*>(sA + a_off(cc, r)) = stA[0];
        }
        // B: registers -> shared, 16 bytes per store.
        {
            const int r = tid / 16, cc = (tid % 16) * VEC;
            *reinterpret_cast<vec_t*>(sB + b_off(r, cc)) = stB[0];
        }
        __syncthreads();
        {   // Tensor-core product of the 32-deep stage.
            const elem_t* const sa = sA;
            const elem_t* const sb = sB;
            #pragma unroll
            for (int kg = 0; kg < KS; kg += KP) {   // 1 group of KP = 2 k16 steps
                FragA fa[MI][KP];   // the warp's rows of A for the group's k16 steps
                #pragma unroll
                for (int i = 0; i < MI; ++i)
                    #pragma unroll
                    for (int ks = 0; ks < KP; ++ks) wmma_load_a(fa[i][ks], sa + a_off((kg + ks) * 16, wm0 + i * 16));
                #pragma unroll
                for (int j = 0; j < NI; ++j) {
                    FragB fb[KP];   // one 16-column strip of B at a time: 8 live registers, not 16
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
        __syncthreads();   // also frees shared memory for the epilogue after the last tile
    }

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
