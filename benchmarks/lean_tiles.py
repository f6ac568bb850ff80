"""Write cuBLAS-like small SIMT tiles (warp tiles of 32x16 or 16x32 with 4x4 thread tiles, fragments
loaded from shared memory) as a results file with no times, for ``gemmgen search --timings-only
--winners-from``.

Why (H100, session 36, Nsight Compute): on mid-sized products with shallow K (1469x199x74 NN,
151x1873x102 NN, 223x4980x38 NN, 836x235x30 TN) cuBLAS SGEMM runs
``sm80_xmma_gemm_..._tilesize32x32x8_stage3_warpsize1x2x1_ffma``: 32x32 tiles of 64 threads, two warps of
32x16, 80-90 registers, hundreds of blocks at once. The stored 32x32x8 tile of 64 threads
(``..._w32x16i2x1_t2x4_..._fshfl_..._o12``) has the same grid and threads but hands fragments through
warp shuffles (8 SHFL a k-step beside 16 FFMA) and took 6987 active SM cycles at 836x235x30 TN where
cuBLAS took 5879; where it is not stored, the dispatch runs 64x64 and 128x32 3xTF32 tiles of 75-92
blocks there (8.19 us against cuBLAS's 7.01 at 1469x199x74 NN). A 4x4 thread tile reads its
fragments with one 16-byte shared load each for A and B (2 LDS.128 a k-step), as cuBLAS's does.

The set, per layout: block tiles 32x32 (one or two warps along N), 64x32, 32x64 and 64x64, each made
of 32x16 or 16x32 warp tiles of 4x4 thread tiles; BK 8 with 4 stages or 16 with 3; register
fragments double-buffered across k or not; ``min_blocks`` capping registers near 80 a thread (64
threads: 12 blocks an SM). What the rules refuse on the GPU is left out.

Outcome (H100, session 36): rejected, none is shipped. The 56 kernels were timed on the mid-shallow,
launch-shallow, launch, shallow and deep grids (360 shapes) and merged; the dispatch then picked them for
20 of 168 launch-sized random shapes (seeds 7 8 61 11 12 71 72, 2^15..2^27 multiply-adds), and those
ran 1.173x -> 1.089x cuBLAS (20x404x262 TN 1.24 -> 0.91x, 217x34x166 NT 1.23 -> 1.05x): each was
predicted a little faster than the kernel it displaced and ran a little slower. The script stays so the
experiment can be rerun on another GPU.

    python benchmarks/lean_tiles.py --gpu h100 --out cand/
    gemmgen search --grid hopper-mid-shallow --family simt --timings-only \\
        --winners-from cand/nvidia-h100-80gb-hbm3.json --results fresh
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json fresh/nvidia-h100-80gb-hbm3.json
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import main_for  # noqa: E402
from simt_occupancy import blocks_for  # noqa: E402

from gemmgen.base.devices import known  # noqa: E402
from gemmgen.kernel.config import KernelConfig  # noqa: E402
from gemmgen.kernel.rules.registry import explain  # noqa: E402

LAYOUTS = ("NN", "NT", "TN", "TT")
# (BM, BN, WM, WN): the block tile and its warp tile; warps = BM*BN / (WM*WN)
TILES = ((32, 32, 32, 16), (32, 32, 16, 32), (64, 32, 32, 16), (32, 64, 32, 16), (64, 64, 32, 16))
DEPTHS = ((8, 4), (16, 3))     # (BK, stages)
REGS = 80                      # registers a thread the min_blocks cap aims at


def lean(layout: str, BM: int, BN: int, WM: int, WN: int, BK: int, stages: int, prefetch: bool,
         regs_per_sm: int = 65536) -> KernelConfig:
    """One lean tile: 4x4 thread tiles, one warp sub-tile per warp tile, fragments by LDS.128.

    >>> c = lean("TN", 32, 32, 32, 16, 8, 4, False)
    >>> c.threads, c.min_blocks, c.frag
    (64, 12, 'lds')
    """
    threads = BM * BN // (WM * WN) * 32
    return KernelConfig(family="simt", layout=layout, BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, WMITER=1, WNITER=1,
                        TM=4, TN=4, vec=4, a_kmajor=True, pad_a=4, pad_b=4, swz_a=1, swz_b=1, raster=16,
                        stages=stages, async_copy=True, prefetch=prefetch, frag="lds", split_k=1,
                        bounds="checked", min_blocks=blocks_for(threads, REGS, regs_per_sm))


def candidates(gpu: str, have: set[str] = frozenset()) -> list[KernelConfig]:
    """Every lean tile the rules accept on ``gpu``, none of ``have`` (names already stored)."""
    out, regs = {}, known(gpu).regs_per_sm
    for layout in LAYOUTS:
        for BM, BN, WM, WN in TILES:
            for BK, stages in DEPTHS:
                for prefetch in (False, True):
                    c = lean(layout, BM, BN, WM, WN, BK, stages, prefetch, regs)
                    if c.name not in have and not explain(c, gpu):
                        out[c.name] = c
    return list(out.values())


def main(argv=None) -> int:
    return main_for(lambda gpu, stored: candidates(gpu, {c.name for c in stored}), __doc__.split("\n\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
