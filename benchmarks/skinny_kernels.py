"""Write the skinny family's candidate kernels as a results file with no times, for ``--winners-from``.

Session 18 timed ``--set s18`` (30 kernels around the ``skinny`` preset: BN 8..32, TM 1-2, BK 16-32,
split-K 1..16) on search/grid-hopper-skinny.json and merged the times into both results files. Session 19
timed ``--set s19`` (64 more) and merged them too: the same 30 swapped (``swap``: few rows of C, preset
``skinny-m``); for BN >= 16, with B's chunks rotated (``swz_b``: B stored with k contiguous); and with A
read straight into registers (``prefetch``: A stored column-major, so they are written in layout TT).
Both sets together are every skinny kernel the results files time; a new set goes here as ``s20``.

    python benchmarks/skinny_kernels.py --gpu h100 --set s19 --out cand/
    gemmgen search --grid search/grid-hopper-skinny.json --family skinny --timings-only \\
        --winners-from cand/nvidia-h100-80gb-hbm3.json --results fresh
    python benchmarks/merge_timings.py results/nvidia-h100-80gb-hbm3.json fresh/nvidia-h100-80gb-hbm3.json --add-shapes
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import GPUS, write  # noqa: E402

from gemmgen.kernel.config import KernelConfig  # noqa: E402
from gemmgen.kernel.presets import preset  # noqa: E402
from gemmgen.kernel.rules.registry import explain  # noqa: E402


def session18() -> list[KernelConfig]:
    """The 30 kernels session 18 timed (their names are in both results files)."""
    base = preset("skinny").replace(label="")
    split = lambda c, k: c.replace(split_k=k, reduce="workspace" if k > 1 else "atomic")
    one_row = dict(TM=1, BM=32)
    out = [split(base.replace(BN=bn), k) for bn in (8, 16, 24, 32) for k in (1, 4, 16)]
    out += [split(base.replace(BN=bn, **one_row), k) for bn in (16, 32) for k in (2, 8)]
    out += [base.replace(BN=32, BK=32), base.replace(BN=16, BK=32, warps_k=8)]
    out += [split(base.replace(BN=bn, BK=32), k) for bn, k in ((16, 2), (16, 6), (24, 2), (24, 6), (32, 2), (32, 6), (24, 16), (8, 6))]
    out += [split(base.replace(BN=24, **one_row), 8), split(base.replace(BN=24, stages=3), 6),
            split(base.replace(BN=32, BK=32, warps_k=8, **one_row), 4), split(base.replace(BN=32, min_blocks=2), 4)]
    return out


def session19() -> list[KernelConfig]:
    """The 64 kernels session 19 timed: session 18's kernels swapped (few rows); with B's chunks rotated where BN >= 16; and,
    for A stored column-major (layout TT: timed in TN and TT), reading A straight into registers 8 and 16
    deep where the rules allow it (prefetch)."""
    mine = session18()
    direct = [c.replace(layout="TT", prefetch=True, BK=bk) for c in mine for bk in (8, 16) if c.BK == 16]
    return ([c.replace(swap=True) for c in mine] + [c.replace(swz_b=c.BN // 4) for c in mine if c.BN >= 16]
            + list({c.name: c for c in direct if not explain(c, "h100")}.values()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", choices=sorted(GPUS), required=True, help="whose results file names the device")
    ap.add_argument("--set", choices=("s18", "s19"), required=True, help="which session's candidates")
    ap.add_argument("--out", type=Path, required=True, help="folder for the file (named as the GPU's results)")
    args = ap.parse_args(argv)
    configs = session18() if args.set == "s18" else session19()
    bad = [(c.name, explain(c, args.gpu)) for c in configs if explain(c, args.gpu)]
    if bad:
        print(f"invalid candidates: {bad[0][0]}: {bad[0][1][0]}", file=sys.stderr)
        return 1
    print(f"{len(configs)} kernels -> {write(configs, args.gpu, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
