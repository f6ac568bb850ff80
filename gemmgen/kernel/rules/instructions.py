"""Tile shapes of the tensor-core instructions the kernels are built from.

- ``mma.sync.aligned.m16n8k8`` with .tf32 operands (tf32, tf32x3): one warp, 16x8 of C per k8 step;
- ``wmma`` m16n16k16 on fp16/bf16 (the half family): one warp, a 16x16 tile of C per k16 step;
- ``wgmma.mma_async.m64nNk8`` (the Hopper variant): one warpgroup, 64 columns of C and N = BM rows.
"""
MMA_M, MMA_N, MMA_K = 16, 8, 8
WMMA_M = WMMA_N = WMMA_K = 16
FRAGMENT_REGS = 4      # 32-bit registers of one 16x16 half fragment per thread (256 x 2 B / 32 lanes)
WG_N = 64              # columns of C (rows of C^T) one warpgroup owns: wgmma's M is 64
MAX_WGMMA_N = 256      # wgmma's N (our BM) is a multiple of 8 up to 256
