// gemmgen's matrix-vector kernels: C = alpha * A @ B + beta * C where M == 1 or N == 1 (gemmgen/runtime/gemv.py
// says which requests take them and how the layouts map onto X, v and y). X is the operand read once and
// whole, v the vector of K elements, y the row or column of C. Plain fp32 products and sums, as SGEMM's.
// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 gemv.cu

__device__ __forceinline__ void put(float* __restrict__ y, const float acc, const float alpha, const float beta) {
    *y = beta == 0.0f ? alpha * acc : alpha * acc + beta * *y;   // beta == 0: C is never read
}

// v[k .. k + 3]. S == 0: v contiguous and v + k on 16 bytes, one 16-byte load. S = 1..3: v contiguous and
// v + k S elements past a 16-byte boundary, two aligned 16-byte loads (v[k - S .. k - S + 7]) and a shift,
// instead of four 4-byte ones (the rows of an odd-length X). S < 0: v strided, four loads.
template <int S>
__device__ __forceinline__ float4 vec4(const float* __restrict__ v, const long long k, const long long incv) {
    if constexpr (S == 0) {
        return __ldg(reinterpret_cast<const float4*>(v + k));
    } else if constexpr (S > 0) {
        const float4 lo = __ldg(reinterpret_cast<const float4*>(v + k - S)), hi = __ldg(reinterpret_cast<const float4*>(v + k - S + 4));
        if constexpr (S == 1) return make_float4(lo.y, lo.z, lo.w, hi.x);
        if constexpr (S == 2) return make_float4(lo.z, lo.w, hi.x, hi.y);
        return make_float4(lo.w, hi.x, hi.y, hi.z);
    } else {
        return make_float4(__ldg(v + k * incv), __ldg(v + (k + 1) * incv), __ldg(v + (k + 2) * incv), __ldg(v + (k + 3) * incv));
    }
}

__device__ __forceinline__ float dot4(const float4 a, const float4 b, float s) {
    return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, s))));
}

// One lane's part of x[kb .. kb + 4 * n4) . v[kb ..]: lanes l, l + tpr, ... of the 16-byte groups, D loads
// in flight (the last fewer than D loaded together too), D partial sums added pairwise at the end.
template <int S, int D>
__device__ __forceinline__ float row_part(const float4* __restrict__ x4, const float* __restrict__ v, const long long kb,
                                          const long long incv, const int n4, const int l, const int tpr) {
    float s[D];
    #pragma unroll
    for (int u = 0; u < D; ++u) s[u] = 0.0f;
    int i = l;
    for (; i + (D - 1) * tpr < n4; i += D * tpr) {
        float4 a[D];
        #pragma unroll
        for (int u = 0; u < D; ++u) a[u] = __ldcs(x4 + i + u * tpr);
        #pragma unroll
        for (int u = 0; u < D; ++u) s[u] = dot4(a[u], vec4<S>(v, kb + 4LL * (i + u * tpr), incv), s[u]);
    }
    if (i < n4) {
        float4 a[D - 1];
        #pragma unroll
        for (int u = 0; u < D - 1; ++u) a[u] = i + u * tpr < n4 ? __ldcs(x4 + i + u * tpr) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        #pragma unroll
        for (int u = 0; u < D - 1; ++u)
            if (i + u * tpr < n4) s[u] = dot4(a[u], vec4<S>(v, kb + 4LL * (i + u * tpr), incv), s[u]);
    }
    #pragma unroll
    for (int w = 1; w < D; w *= 2) {
        #pragma unroll
        for (int u = 0; u < D; u += 2 * w) s[u] += s[u + w];
    }
    return s[0];
}

// y[r] (r < R) = alpha * X[r, :] . v + beta * y[r], X's rows contiguous along k (ldx apart). `tpr` lanes
// (4 .. 256, a power of two; past 32 a row spans warps) a row, 8 warps a block. Slice blockIdx.y of K goes to W[slice][r] when W is
// given. A row's first elements up to a 16-byte boundary are read one by one, the rest 16 bytes at a time.
template <int D, bool SHIFT, bool WIDE>
__device__ __forceinline__ void rows(
    const int R, const int K, const int kchunk, const int tpr, const float alpha, const float* __restrict__ X,
    const long long ldx, const float* __restrict__ v, const long long incv, const float beta, float* __restrict__ y,
    const long long incy, float* __restrict__ W)
{
    const int l = threadIdx.x & (tpr - 1), r = (blockIdx.x * 256 + threadIdx.x) / tpr;
    const int k0 = blockIdx.y * kchunk, k1 = min(K, k0 + kchunk);
    const float* __restrict__ x = X + min(r, R - 1) * ldx;   // rows past R read row R - 1, never stored
    const int head = min(k1 - k0, (int)(((16 - (reinterpret_cast<size_t>(x + k0) & 15)) & 15) >> 2));
    const int kb = k0 + head, s = (int)((reinterpret_cast<size_t>(v + kb) & 15) >> 2);
    int n4 = (k1 - kb) >> 2;
    if (SHIFT && s != 0 && n4 > 0 && kb + 4 * n4 + 4 - s > K) --n4;   // shifted: the last group's second load stays in v
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + kb);
    float acc;
    if (incv != 1 || kb < s || (s != 0 && !SHIFT)) acc = row_part<-1, D>(x4, v, kb, incv, n4, l, tpr);   // kb < s: v[kb - s] is before v
    else if (s == 0) acc = row_part<0, D>(x4, v, kb, incv, n4, l, tpr);
    else if (s == 1) acc = row_part<1, D>(x4, v, kb, incv, n4, l, tpr);
    else if (s == 2) acc = row_part<2, D>(x4, v, kb, incv, n4, l, tpr);
    else acc = row_part<3, D>(x4, v, kb, incv, n4, l, tpr);
    if (l < head) acc = fmaf(x[k0 + l], __ldg(v + (long long)(k0 + l) * incv), acc);
    for (int k = kb + 4 * n4 + l; k < k1; k += tpr) acc = fmaf(x[k], __ldg(v + (long long)k * incv), acc);
    for (int o = (WIDE ? min(tpr, 32) : tpr) >> 1; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (WIDE && tpr > 32) {   // a row across warps: their sums meet in shared memory, in warp order
        __shared__ float warp_sum[8];
        if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = acc;
        __syncthreads();
        if (l == 0)
            for (int w = 1; w < tpr / 32; ++w) acc += warp_sum[(threadIdx.x >> 5) + w];
    }
    if (l == 0 && r < R) {
        if (W != nullptr) W[(long long)blockIdx.y * R + r] = acc;
        else put(y + r * incy, acc, alpha, beta);
    }
}

#define GG_GEMV_ROWS_PARAMS                                                                                   \
    const int R, const int K, const int kchunk, const int tpr, const float alpha, const float* __restrict__ X,  \
    const long long ldx, const float* __restrict__ v, const long long incv, const float beta,                   \
    float* __restrict__ y, const long long incy, float* __restrict__ W
extern "C" __global__ void __launch_bounds__(256) gg_gemv_rows(GG_GEMV_ROWS_PARAMS) {
    rows<4, false, false>(R, K, kchunk, tpr, alpha, X, ldx, v, incv, beta, y, incy, W);
}
// With the vector's shifted 16-byte loads, for X's rows not 16 bytes apart (50 -> 54 registers: kept out of
// gg_gemv_rows, whose aligned rows lost 3-8% at four blocks an SM instead of five).
extern "C" __global__ void __launch_bounds__(256) gg_gemv_rows_odd(GG_GEMV_ROWS_PARAMS) {
    rows<4, true, false>(R, K, kchunk, tpr, alpha, X, ldx, v, incv, beta, y, incy, W);
}
// Eight loads in flight a lane (and the shifted loads): for few blocks (fewer than three an SM), where four
// loads leave the memory idle.
extern "C" __global__ void __launch_bounds__(256) gg_gemv_rows8(GG_GEMV_ROWS_PARAMS) {
    rows<8, true, false>(R, K, kchunk, tpr, alpha, X, ldx, v, incv, beta, y, incy, W);
}
// A row across 2..8 warps (tpr 64..256; eight loads in flight a lane, the shifted loads): few rows of long
// K, where the other kernels would split K and add a reduce kernel (the barrier kept out of gg_gemv_rows8:
// ptxas gives that 64 registers instead of 80 with it).
extern "C" __global__ void __launch_bounds__(256) gg_gemv_rows_wide(GG_GEMV_ROWS_PARAMS) {
    rows<8, true, true>(R, K, kchunk, tpr, alpha, X, ldx, v, incv, beta, y, incy, W);
}

// gg_gemv_cols' step: rows k, k + groups, ... k + 7 groups of X (four outputs, 16 bytes) times v's entries,
// all eight loaded before the first product; `last`: rows from k1 on are read as zeros.
template <bool last>
__device__ __forceinline__ void cols8(float4& acc, const float* __restrict__ x, const long long ldx,
                                      const float* __restrict__ v, const long long incv, const int k,
                                      const int groups, const int k1) {
    float4 a[8];
    float b[8];
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
        const bool in = !last || k + u * groups < k1;
        a[u] = in ? __ldcs(reinterpret_cast<const float4*>(x + (long long)(k + u * groups) * ldx)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        b[u] = in ? __ldg(v + (long long)(k + u * groups) * incv) : 0.0f;
    }
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
        acc.x = fmaf(a[u].x, b[u], acc.x); acc.y = fmaf(a[u].y, b[u], acc.y);
        acc.z = fmaf(a[u].z, b[u], acc.z); acc.w = fmaf(a[u].w, b[u], acc.w);
    }
}

// y[r] (r < R) = alpha * sum_k X[k, r] v[k] + beta * y[r], X's rows are k (ldx apart), r contiguous. A block
// is `rt` threads across (4 outputs each) by 256 / rt k-groups; group g walks k = k0 + g, k0 + g + 256 / rt,
// ... of slice blockIdx.y, eight rows of X in flight, and the groups' sums meet in shared memory in group
// order. W given: the block's sums go to W[slice][r].
extern "C" __global__ void __launch_bounds__(256, 4) gg_gemv_cols(
    const int R, const int K, const int kchunk, const int rt, const float alpha, const float* __restrict__ X,
    const long long ldx, const float* __restrict__ v, const long long incv, const float beta, float* __restrict__ y,
    const long long incy, float* __restrict__ W)
{
    __shared__ float4 part[256];
    const int t = threadIdx.x % rt, g = threadIdx.x / rt, groups = 256 / rt;
    const int r0 = (blockIdx.x * rt + t) * 4;
    const int k0 = blockIdx.y * kchunk, k1 = min(K, k0 + kchunk);
    const float* __restrict__ x = X + min(r0, R - 1);
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r0 + 4 <= R && (reinterpret_cast<size_t>(x) & 15) == 0 && (ldx & 3) == 0) {
        int k = k0 + g;
        for (; k + 7 * groups < k1; k += 8 * groups) cols8<false>(acc, x, ldx, v, incv, k, groups, k1);
        if (k < k1) cols8<true>(acc, x, ldx, v, incv, k, groups, k1);   // the last fewer than eight rows
    } else if (r0 < R) {   // 4-byte loads: rows not 16-byte aligned, or the last outputs
        const int n = min(4, R - r0);
        float a4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int k = k0 + g;
        for (; k + 3 * groups < k1; k += 4 * groups) {   // four rows in flight
            float a[4][4], b[4];
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                const float* __restrict__ row = x + (long long)(k + u * groups) * ldx;
                b[u] = __ldg(v + (long long)(k + u * groups) * incv);
                #pragma unroll
                for (int e = 0; e < 4; ++e) a[u][e] = e < n ? __ldcs(row + e) : 0.0f;
            }
            #pragma unroll
            for (int u = 0; u < 4; ++u) {
                #pragma unroll
                for (int e = 0; e < 4; ++e) a4[e] = fmaf(a[u][e], b[u], a4[e]);
            }
        }
        for (; k < k1; k += groups) {
            const float b = __ldg(v + (long long)k * incv);
            const float* __restrict__ row = x + (long long)k * ldx;
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                if (e < n) a4[e] = fmaf(__ldcs(row + e), b, a4[e]);
        }
        acc = make_float4(a4[0], a4[1], a4[2], a4[3]);
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    if (g == 0 && r0 < R) {
        float4 sum = part[t];
        for (int i = 1; i < groups; ++i) {
            const float4 p = part[i * rt + t];
            sum.x += p.x; sum.y += p.y; sum.z += p.z; sum.w += p.w;
        }
        const float out[4] = {sum.x, sum.y, sum.z, sum.w};
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (r0 + e >= R) break;
            if (W != nullptr) W[(long long)blockIdx.y * R + r0 + e] = out[e];
            else put(y + (r0 + e) * incy, out[e], alpha, beta);
        }
    }
}

// y[r] = alpha * (sum of the S slices' partials W[s][r], in slice order) + beta * y[r]: 32 outputs a
// block, 8 threads each summing every 8th slice, then those 8 sums in a fixed order.
extern "C" __global__ void __launch_bounds__(256) gg_gemv_reduce(
    const int R, const int S, const float alpha, const float* __restrict__ W, const float beta,
    float* __restrict__ y, const long long incy)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");   // launched as the programmatic dependent of the slices
#endif
    __shared__ float part[8][33];
    const int c = threadIdx.x & 31, g = threadIdx.x >> 5, r = blockIdx.x * 32 + c;
    float s = 0.0f;
    if (r < R)
        for (int i = g; i < S; i += 8) s += W[(long long)i * R + r];
    part[g][c] = s;
    __syncthreads();
    if (g == 0 && r < R) {
        float t = part[0][c];
        #pragma unroll
        for (int i = 1; i < 8; ++i) t += part[i][c];
        put(y + r * incy, t, alpha, beta);
    }
}
