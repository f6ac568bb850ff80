"""Write candidate kernels of the cp.async-producer 3xTF32 pipeline (``tma = true, async_copy = true``,
preset ``tf32x3-ws``) as a results file with no times, for ``gemmgen search --timings-only
--winners-from``: how the variant was first timed on the Hopper grids (session 20, both GPUs; see
docs/PERFORMANCE.md).

The set: the block tiles the TMA kernels win with (BM 64 or 128 rows of consumers, BN 64..192), the
stages that fit, split-K 1/2/4/8 by atomics and 4/8 through a workspace for small M x N, and the
persistent grid (132 blocks) for shallow K; each in the four layouts (a grid shape times only its
layout's kernels).

    python benchmarks/ws_kernels.py --gpu h100 --out cand/                  # the first set (timed)
    python benchmarks/ws_kernels.py --gpu h100 --out cand/ --set shallow    # 64-row and persistent
    python benchmarks/ws_kernels.py --gpu h100 --out cand/ --set narrow     # few columns: BN 32
    python benchmarks/ws_kernels.py --gpu h100 --out cand/ --set swapped    # few rows: C^T computed
    python benchmarks/ws_kernels.py --gpu h100 --out cand/ --set narrow-o2  # few columns, two blocks an SM
    python benchmarks/ws_kernels.py --gpu h100 --out cand/ --set swapped-o2 # few rows, two blocks an SM
    python benchmarks/ws_kernels.py --gpu h100 --out cand/ --set deep       # few tiles, deep K: 24..64 slices
    gemmgen search --grid search/grid-hopper.json --family tf32x3 --timings-only \\
        --winners-from cand/nvidia-h100-80gb-hbm3.json --results fresh
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json fresh/nvidia-h100-80gb-hbm3.json --add-shapes
    python benchmarks/ab_plans.py --results-a old/nvidia-h100-80gb-hbm3.json \\
        --results-b results/nvidia-h100-80gb-hbm3.json --random 24 --seed 1 --seed 2 --only-changed
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import GPUS, write  # noqa: E402

from gemmgen.kernel.config import KernelConfig  # noqa: E402
from gemmgen.kernel.families import LAYOUTS  # noqa: E402
from gemmgen.kernel.presets import preset  # noqa: E402
from gemmgen.kernel.rules.registry import explain  # noqa: E402


def candidates(gpu: str = "h100", group: str = "first") -> list[KernelConfig]:
    """The candidate configs of ``group`` in every layout, those the rules accept on ``gpu``."""
    base = preset("tf32x3-ws").replace(label="")
    if group == "shallow":
        return shallow(base, gpu)
    if group in ("narrow", "swapped"):
        return few(base, gpu, swap=group == "swapped")
    if group in ("narrow-o2", "swapped-o2"):
        return two_blocks(base, gpu, swap=group == "swapped-o2")
    if group == "deep":
        return deep(base, gpu)
    tiles = [dict(BM=128, BN=bn, WN=bn, stages=s) for bn, s in ((128, 4), (160, 3), (192, 3), (96, 5), (64, 6))]
    tiles += [dict(BM=64, BN=bn, WN=bn, stages=s) for bn, s in ((128, 5), (192, 4), (64, 8))]
    splits = [dict(split_k=1), dict(split_k=2), dict(split_k=4), dict(split_k=8),
              dict(split_k=4, reduce="workspace"), dict(split_k=8, reduce="workspace")]
    out = []
    for layout in LAYOUTS:
        for t in tiles:
            for s in splits:
                out.append(base.replace(layout=layout, **t, **s))
        out.append(base.replace(layout=layout, BN=128, WN=128, stages=2, persistent=132))
        out.append(base.replace(layout=layout, BN=176, WN=176, stages=2, persistent=132))
    return valid(out, gpu)


def shallow(base: KernelConfig, gpu: str) -> list[KernelConfig]:
    """Session 20's next group, for shallow K and few tiles (where the first group's 128-row tiles
    left rows under 0.9x cuBLAS: 4873x3590x17 TN, 655x4687x71 TN): 64-row tiles of one consumer, two
    blocks to an SM where shared memory allows, with 2-3 stages, unsplit and as a persistent grid of one
    or two blocks per SM; 128-row persistent grids of the other widths."""
    tiles = [dict(BM=64, BN=bn, WN=bn, stages=s) for bn in (64, 96, 128, 160, 192) for s in (2, 3)]
    out = []
    for layout in LAYOUTS:
        for t in tiles:
            for persistent in (0, 132, 264):
                out.append(base.replace(layout=layout, persistent=persistent, **t))
        for bn in (96, 160, 192):
            out.append(base.replace(layout=layout, BN=bn, WN=bn, stages=2, persistent=132))
    return valid(out, gpu)


def few(base: KernelConfig, gpu: str, swap: bool) -> list[KernelConfig]:
    """Session 21's groups for few columns (``narrow``: BN = 32, N up to ~32) and few rows (``swapped``:
    C^T = op(B)^T op(A)^T computed with BN = 32 or 64 over C's M, C stored transposed), where the 64-row
    wgmma tiles were mostly empty or too wide (20x4971x4190 NN 0.81x, 11144x26x652 TT 0.85x cuBLAS):
    BM 64 (4 stages, two or three blocks an SM) or 128 (6 stages), split-K 1..16 by atomics (few tiles,
    deep K). Time ``narrow`` on shapes with few columns and ``swapped`` on shapes with few rows."""
    widths = (32, 64) if swap else (32,)
    out = []
    for layout in LAYOUTS:
        for bn in widths:
            for bm, stages in ((64, 4), (128, 6)):
                for split in (1, 2, 4, 8, 16):
                    out.append(base.replace(layout=layout, BM=bm, BN=bn, WN=bn, stages=stages, split_k=split,
                                            swap=swap))
    return valid(out, gpu)


def two_blocks(base: KernelConfig, gpu: str, swap: bool) -> list[KernelConfig]:
    """Session 22's groups: the narrow and swapped tiles with two blocks an SM (``min_blocks = 2``, no
    setmaxnreg). One block of the 6-stage 128x32 kernel left the H200's DRAM 26% busy on 2680x28x10796
    (Nsight Compute: 1 block an SM by registers, 2.55 waves); two 4-stage blocks ran it in 69.0 us instead
    of 79.5, and 60.3 us with split-K 12 (one wave of 252 blocks). BM 128 (BN 32, 4 stages; BN 48, 3)
    or 64 (BN 32 or 64, 4 stages), split-K 1..16 by atomics."""
    tiles = [dict(BM=128, BN=32, stages=4), dict(BM=128, BN=48, stages=3), dict(BM=64, BN=32, stages=4),
             dict(BM=64, BN=64, stages=4)]
    out = []
    for layout in LAYOUTS:
        for t in tiles:
            for split in (1, 2, 4, 8, 12, 16):
                out.append(base.replace(layout=layout, WN=t["BN"], split_k=split, swap=swap, min_blocks=2, **t))
    return valid(out, gpu)


def deep(base: KernelConfig, gpu: str) -> list[KernelConfig]:
    """Session 32's group, for few tiles and deep K, where the space's 16 slices leave SMs idle: 28x82x11931
    NN runs 3 tiles x 16 slices = 48 blocks on 132 SMs (0.68-0.71x cuBLAS), 43x49x5355 TN 0.91-0.96x
    at best on the launch grid. The narrow and swapped tiles of two blocks an SM (BM 64 or 128, BN 32;
    BN 64 swapped), split-K 24, 32, 48 and 64 by atomics, and 32 through a workspace (what deterministic
    PyTorch runs)."""
    tiles = [dict(BM=128, BN=32, stages=4, swap=False), dict(BM=64, BN=32, stages=4, swap=False),
             dict(BM=128, BN=32, stages=4, swap=True), dict(BM=64, BN=32, stages=4, swap=True),
             dict(BM=64, BN=64, stages=4, swap=True)]
    splits = [dict(split_k=k) for k in (24, 32, 48, 64)] + [dict(split_k=32, reduce="workspace")]
    out = []
    for layout in LAYOUTS:
        for t in tiles:
            for s in splits:
                out.append(base.replace(layout=layout, WN=t["BN"], min_blocks=2, **t, **s))
    return valid(out, gpu)


def valid(configs: list[KernelConfig], gpu: str) -> list[KernelConfig]:
    """``configs`` the rules accept on ``gpu``, each name once, in order."""
    return list({c.name: c for c in configs if not explain(c, gpu)}.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", choices=sorted(GPUS), required=True, help="whose results file names the device")
    ap.add_argument("--out", type=Path, required=True, help="folder for the file (named as the GPU's results)")
    ap.add_argument("--set", dest="group", choices=("first", "shallow", "narrow", "swapped", "narrow-o2", "swapped-o2", "deep"),
                    default="first",
                    help="first: the timing set of session 20 (default); shallow: 64-row tiles and persistent "
                         "grids for shallow K and few tiles; narrow: 32-column tiles for few columns; swapped: "
                         "C^T computed, for few rows; narrow-o2, swapped-o2: those with two blocks an SM; deep: "
                         "24..64 K slices of those, for few tiles and deep K")
    args = ap.parse_args(argv)
    configs = candidates(args.gpu, args.group)
    path = write(configs, args.gpu, args.out)
    print(f"{len(configs)} kernels ({len(configs) // len(LAYOUTS)} a layout) -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
