"""Write the stored small-tile SIMT kernels with more blocks an SM (``min_blocks``) as a results file with
no times, for ``gemmgen search --timings-only --winners-from``.

Why (H100, session 35, Nsight Compute on 72x9349x37 NN): the 32x32x16 SIMT tile of 128 threads that
Optuna found for launch-sized shallow shapes compiles to 118 registers a thread (the unrolled K loop
keeps every fragment of the 16-deep step live), so 4 blocks fit an SM and its 879 blocks run in 1.66
waves: 9.6 us. cuBLAS runs the same 32x32 tiles as 64-thread blocks of 80 registers, 12 an SM, all 879
at once: 7.6 us. ``__launch_bounds__(threads, min_blocks)`` caps the registers; the search space drew
``min_blocks`` 1..2 only (before 6b1d35a), so no stored kernel asked for more. (Registers as NVRTC built
the stored kernels; nvcc -arch=sm_90a gives 107 for that tile: docs/PERFORMANCE.md, session 35.)

The set: every stored SIMT kernel that does not split K, whose block tile is at most 64x64, whose
threads are at most 256 and whose ``min_blocks`` is 1 or 2 (a larger one the search chose, session 36),
with ``min_blocks`` at the two counts that cap the registers near 80 and at 64 a thread (128 threads: 6
and 8), where the rules accept it (shared memory, threads per SM). Split-K
variants are left out: timed on the launch grids only, their fits miss the deep K their originals were
timed on (H100, session 35: a 6-way split one was picked for 20x1291x2520 TT and ran 0.80x where the
plan before ran 1.44x).

All of them are merged, slower ones too: with a layout's variant left out, the dispatch serves that
layout from another layout's times of the same config (H100, session 35: pruning the variants whose
median time was not 3% under their original's, 1.271x -> 1.257x over 60 changed plans, the 32x32 NN
variants chosen on their TT times and 10-25% slower than predicted; merging all, 1.288x -> 1.339x over 56).

    python benchmarks/simt_occupancy.py --gpu h100 --out cand/
    gemmgen search --grid hopper-launch-shallow --family simt --timings-only \\
        --winners-from cand/nvidia-h100-80gb-hbm3.json --results ls
    gemmgen search --grid hopper-launch --family simt --timings-only \\
        --winners-from cand/nvidia-h100-80gb-hbm3.json --results l
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json ls/nvidia-h100-80gb-hbm3.json
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json l/nvidia-h100-80gb-hbm3.json --add-shapes
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import RESULTS, main_for  # noqa: E402

from gemmgen.base.devices import known  # noqa: E402
from gemmgen.kernel.config import KernelConfig  # noqa: E402
from gemmgen.kernel.rules.registry import explain  # noqa: E402

CAPS = (80, 64)          # registers a thread the two variants aim at


def blocks_for(threads: int, cap: int, regs_per_sm: int = 65536) -> int:
    """The ``min_blocks`` (2 at least) that caps a block of ``threads`` at about ``cap`` registers a
    thread, of an SM's ``regs_per_sm`` (ptxas rounds down to the allocation's 8).

    >>> blocks_for(128, 80), blocks_for(64, 80), blocks_for(256, 64)
    (6, 12, 4)
    """
    return max(2, regs_per_sm // (threads * cap))


def counts_for(threads: int, regs_per_sm: int = 65536) -> list[int]:
    """The ``min_blocks`` that cap a block of ``threads`` at about CAPS registers a thread (128 threads:
    6 -> 80 and 8 -> 64).

    >>> counts_for(128), counts_for(64), counts_for(256)
    ([6, 8], [12, 16], [3, 4])
    """
    return sorted({blocks_for(threads, cap, regs_per_sm) for cap in CAPS})


def candidates(stored: list[KernelConfig], gpu: str) -> list[KernelConfig]:
    """The variants of ``stored``'s small-tile SIMT kernels (see the module docstring), each name once,
    none already stored and none the rules refuse on ``gpu``."""
    have = {c.name for c in stored}
    regs = known(gpu).regs_per_sm
    out = {}
    for c in stored:
        if c.family != "simt" or c.split_k > 1 or c.BM * c.BN > 64 * 64 or c.threads > 256 or c.min_blocks > 2:
            continue   # min_blocks > 2: a variant, or the search's own choice (search/simt.json's `blocks`)
        for mb in counts_for(c.threads, regs):
            v = c.replace(min_blocks=mb)
            if v.name not in have and not explain(v, gpu):
                out[v.name] = v
    return list(out.values())


def main(argv=None) -> int:
    return main_for(lambda gpu, stored: candidates(stored, gpu), __doc__.split("\n\n")[0], argv, RESULTS)


if __name__ == "__main__":
    raise SystemExit(main())
