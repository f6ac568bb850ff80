"""The hand-written routes (gemv, small) on exact-size cudaMalloc buffers (no memory pool), for
compute-sanitizer's memcheck to see every byte read or written past an operand: odd lengths (the shifted
vector loads), misaligned starts, every layout, a C read with beta. Run by test_memcheck_gpu.py as

    compute-sanitizer --tool memcheck --error-exitcode 3 python tests/gpu/memcheck_routes.py
"""
import cupy as cp
import numpy as np

import gemmgen
from gemmgen.measure.gate import allowed, rel_error

SHAPES = {"gemv": ((3001, 1, 3001), (1, 3001, 2500), (777, 1, 1025), (5, 1, 7), (1, 9, 13), (1027, 1, 70001),
                   (4096, 1, 1000), (1, 4096, 1003)),   # rows 16 bytes apart: gg_gemv_cols' 16-byte loads at shift 0
          "small": ((2, 3, 50001), (8, 8, 4099), (5, 7, 39), (1000, 999, 7), (9, 1003, 8), (1003, 9, 4),
                    (2, 513, 5), (2049, 4099, 13))}


def operand(rng, rows, cols, letter, shift):
    """rows x cols, row-major (N) or column-major (T), ``shift`` floats into a buffer of exactly its size."""
    outer, inner = (rows, cols) if letter == "N" else (cols, rows)
    buf = cp.asarray(rng.uniform(-1, 1, outer * inner + shift).astype(np.float32))
    store = buf[shift:].reshape(outer, inner)
    return store if letter == "N" else store.T


def main() -> None:
    cp.cuda.set_allocator(None)
    rng = np.random.default_rng(0)
    library = gemmgen.load()
    for family, shapes in SHAPES.items():
        for M, N, K in shapes:
            for layout in ("NN", "NT", "TN", "TT"):
                for shift in (0, 1, 3):
                    A, B = operand(rng, M, K, layout[0], shift), operand(rng, K, N, layout[1], (shift + 1) % 4)
                    lds = [(x.strides[0] if c == "N" else x.strides[1]) // 4 for x, c in zip((A, B), layout)]
                    got = library.kernel_for(M, N, K, layout, *lds, N).family
                    assert got == family, f"{M}x{N}x{K} {layout}: {got}, not {family}"
                    out = cp.asarray(rng.uniform(-1, 1, M * N + shift).astype(np.float32))
                    C0 = out[shift:].reshape(M, N).copy()
                    C = gemmgen.matmul(A, B, out=out[shift:].reshape(M, N), beta=0.5)
                    ref = A.astype(cp.float64) @ B.astype(cp.float64) + 0.5 * C0
                    cublas = A @ B + 0.5 * C0
                    err, bound = rel_error(C, ref), allowed("fp32", rel_error(cublas, ref))
                    assert err <= bound, (M, N, K, layout, shift, err, bound)
    print("memcheck routes: done")


if __name__ == "__main__":
    main()
