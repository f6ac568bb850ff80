"""Where 3xTF32's error comes from: the split, and the tensor core's truncating sums. One warp a 16x8 tile
of C, mma.sync m16n8k8, K in stages of --stage k with a fresh partial sum each (as the wgmma kernels),
the big part of A and B truncated or rounded to nearest, the small part exact or rounded, and a stage's
products either in turn per k8 step or small ones first. Prints the relative error against float64 of
each variant beside cuBLAS SGEMM's and gemmgen.matmul's tf32x3 kernel, on uniform(-1, 1) operands.

    python benchmarks/split_error.py                      # M = N = 512, K 16..4096, stage 32
    python benchmarks/split_error.py --stage 64 --k 16,64,1024 --json rows.json

Not a fast kernel: it reads its fragments from global memory. The mma.sync sums match the wgmma
kernels' (3.43e-7 both at 512x512x16, session 30, docs/PERFORMANCE.md).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("CUPY_TF32", "0")   # cuBLAS as strict SGEMM

SRC = r'''
__device__ __forceinline__ unsigned rna(float x){unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r;}
__device__ __forceinline__ void split(float x, unsigned& b, unsigned& s, int big_rna, int small_rna){
  b = big_rna ? rna(x) : (__float_as_uint(x) & 0xffffe000u);
  float sm = x - __uint_as_float(b);
  s = small_rna ? rna(sm) : __float_as_uint(sm);
}
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]){
 asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
   : "+f"(d[0]),"+f"(d[1]),"+f"(d[2]),"+f"(d[3]) : "r"(a[0]),"r"(a[1]),"r"(a[2]),"r"(a[3]),"r"(b[0]),"r"(b[1]));
}
extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N, int K){
  int lane=threadIdx.x, grp=lane/4, tig=lane%4;
  int m0=blockIdx.y*16, n0=blockIdx.x*8;
  float acc[4]={0,0,0,0};
  for(int s0=0;s0<K;s0+=STAGE){
    unsigned ab[STAGE/8][4],as[STAGE/8][4],bb[STAGE/8][2],bs[STAGE/8][2];
    for(int ks=0;ks<STAGE/8;++ks){ int k0=s0+ks*8;
      float a[4]={0,0,0,0}, b[2]={0,0};
      if(k0<K){ a[0]=A[(m0+grp)*K+k0+tig]; a[1]=A[(m0+grp+8)*K+k0+tig]; a[2]=A[(m0+grp)*K+k0+tig+4]; a[3]=A[(m0+grp+8)*K+k0+tig+4];
                b[0]=B[(k0+tig)*N+n0+grp]; b[1]=B[(k0+tig+4)*N+n0+grp]; }
      for(int e=0;e<4;++e) split(a[e],ab[ks][e],as[ks][e],ABIG,ASMALL);
      for(int e=0;e<2;++e) split(b[e],bb[ks][e],bs[ks][e],BBIG,BSMALL);
    }
    float t[4]={0,0,0,0};
#if ORDER==0
    for(int ks=0;ks<STAGE/8;++ks){ mma(t,as[ks],bb[ks]); mma(t,ab[ks],bs[ks]); mma(t,ab[ks],bb[ks]); }
#else
    for(int ks=0;ks<STAGE/8;++ks){ mma(t,as[ks],bb[ks]); mma(t,ab[ks],bs[ks]); }
    for(int ks=0;ks<STAGE/8;++ks){ mma(t,ab[ks],bb[ks]); }
#endif
    for(int e=0;e<4;++e) acc[e]+=t[e];
  }
  C[(m0+grp)*N+n0+2*tig]=acc[0]; C[(m0+grp)*N+n0+2*tig+1]=acc[1];
  C[(m0+grp+8)*N+n0+2*tig]=acc[2]; C[(m0+grp+8)*N+n0+2*tig+1]=acc[3];
}
'''
VARIANTS = {   # name: big part of A rounded, small of A rounded, the same for B, small products first
    "truncated, in turn (the shipped kernels)": dict(ABIG=0, ASMALL=0, BBIG=0, BSMALL=0, ORDER=0),
    "truncated, small first": dict(ABIG=0, ASMALL=0, BBIG=0, BSMALL=0, ORDER=1),
    "both big rounded, in turn": dict(ABIG=1, ASMALL=0, BBIG=1, BSMALL=0, ORDER=0),
    "both big rounded, small first": dict(ABIG=1, ASMALL=0, BBIG=1, BSMALL=0, ORDER=1),
    "A's big rounded, small first (branch split-rounding, ws)": dict(ABIG=1, ASMALL=0, BBIG=0, BSMALL=0, ORDER=1),
    "A's big rounded, B's small rounded, small first": dict(ABIG=1, ASMALL=0, BBIG=0, BSMALL=1, ORDER=1),
    "A's small rounded, big truncated (sign-safe), small first": dict(ABIG=0, ASMALL=1, BBIG=0, BSMALL=0, ORDER=1),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--size", type=int, default=512, help="M = N (a multiple of 16)")
    ap.add_argument("--k", default="16,17,32,64,256,1024,4096", help="comma-separated K values")
    ap.add_argument("--stage", type=int, default=32, choices=(8, 16, 32, 64), help="k per fresh partial sum")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    try:
        ks = [int(k) for k in args.k.split(",")]
        if args.size % 16 or args.size <= 0 or min(ks) <= 0:
            raise ValueError
    except ValueError:
        print(f"split_error: --size must be a positive multiple of 16 and --k positive integers, got "
              f"--size {args.size} --k {args.k}", file=sys.stderr)
        return 2
    import cupy as cp

    import gemmgen
    from gemmgen.measure.gate import rel_error

    kernels = {n: cp.RawKernel(SRC, "k", options=tuple(f"-D{k}={v}" for k, v in d.items()) + (f"-DSTAGE={args.stage}",))
               for n, d in VARIANTS.items()}
    rng, M = cp.random.default_rng(0), args.size
    rows = []
    for K in ks:
        A = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
        B = rng.uniform(-1, 1, (K, M), dtype=cp.float32)
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        err = lambda c: rel_error(c, ref)
        row = {"M": M, "N": M, "K": K, "stage": args.stage, "cublas sgemm": err(A @ B),
               "gemmgen tf32x3": err(gemmgen.matmul(A, B, family="tf32x3"))}
        Kp = -(-K // 8) * 8   # zeros past K, as the kernels' tiles
        A2 = cp.zeros((M, Kp), cp.float32); A2[:, :K] = A
        B2 = cp.zeros((Kp, M), cp.float32); B2[:K] = B
        C = cp.empty((M, M), cp.float32)
        for name, kernel in kernels.items():
            C.fill(cp.nan)
            kernel((M // 8, M // 16), (32,), (A2, B2, C, cp.int32(M), cp.int32(M), cp.int32(Kp)))
            row[name] = err(C)
        rows.append(row)
        print(f"K = {K}: " + ", ".join(f"{k} {v:.2e}" for k, v in row.items() if isinstance(v, float)), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
