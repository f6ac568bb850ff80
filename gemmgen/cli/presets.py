"""``gemmgen presets``: the progression v0..v13 and the tensor-core presets, one line each.

>>> row("v8", preset("v8"))[:6]
('v8', '128x128x8', '16x128', '8x8', '4', '2')
"""
from __future__ import annotations

import argparse
import json
import sys

from ..base.devices import ARCHS, target
from ..kernel.config import HALF, KernelConfig
from ..kernel.presets import describe, names, preset
from .command import Command
from .options import DEFAULT_ARCH


COLUMNS = ("preset", "block", "warp", "thread", "vec", "stages", "other", "what it adds")


def row(name: str, c: KernelConfig) -> tuple[str, ...]:
    """The table row of one preset: the parameters that tell presets apart."""
    if c.family == "naive":
        walk = "coalesced" if c.coalesced else "uncoalesced"
        return (name, f"{c.BM}x{c.BN}", "-", "1x1", "1", "-", f"naive, {walk}", describe(name))
    if c.family == "skinny":   # a lane per row: no warp tile, warps split K
        return (name, f"{c.BM}x{c.BN}x{c.BK}", f"{c.warps_k} on K", f"{c.TM}x{c.BN}", f"{c.vec}",
                f"{c.stages} cp.async", "skinny" + (f" k{c.split_k}" if c.split_k > 1 else ""), describe(name))
    if c.family in HALF:   # a warp tile of 16x16x16 wmma tiles; vec counts halves
        stages = f"{c.stages} cp.async" if c.async_copy else f"{c.stages}"
        return (name, f"{c.BM}x{c.BN}x{c.BK}", f"{c.WM}x{c.WN}", "wmma16x16x16", f"{c.vec}", stages,
                " ".join([c.dtype] + (["direct"] if not c.partials else []) + [w for w in _extras(c) if w != "A^T"]),
                describe(name))
    if c.tensor_core:   # a warp tile of m16n8k8 mma tiles: no thread tile
        return (name, f"{c.BM}x{c.BN}x{c.BK}", f"{c.WM}x{c.WN}", "mma16x8x8", f"{c.vec}",
                f"{c.stages} cp.async", " ".join([c.family] + [w for w in _extras(c) if w != "A^T"]), describe(name))
    warp = f"{c.WM}x{c.WN}" + (f" ({c.WMITER}x{c.WNITER})" if c.WMITER * c.WNITER > 1 else "")
    stages = f"{c.stages}" + (" cp.async" if c.async_copy else "")
    return (name, f"{c.BM}x{c.BN}x{c.BK}", warp, f"{c.WMITER * c.TM}x{c.WNITER * c.TN}", f"{c.vec}",
            stages, " ".join(_extras(c)) or "-", describe(name))


def _extras(c: KernelConfig) -> list[str]:
    flags = [(c.a_kmajor, "A^T"), (c.pad_a > 0, f"padA{c.pad_a}"), (c.pad_b > 0, f"padB{c.pad_b}"),
             (c.swz_a > 1, f"swzA{c.swz_a}"), (c.swz_b > 1, f"swzB{c.swz_b}"),
             (c.raster > 1, f"raster{c.raster}"), (c.prefetch, "prefetch"), (c.interleave, "interleave"),
             (c.frag == "shfl", "shfl"),
             (c.split_k > 1, f"splitK{c.split_k}-{c.reduce}"), (c.bounds == "none", "fast-path"),
             (c.layout != "NN", c.layout)]
    return [word for flag, word in flags if flag]


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns under a header; the last column is left ragged.

    >>> table([("a", "bb"), ("ccc", "d")])
    ['a    bb', 'ccc  d']
    """
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[-1] for r in rows]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", metavar="TARGET",
                        help=f"architecture or GPU name for v13's built-in choice ({', '.join(ARCHS)}); "
                             f"default: the GPU present, else {DEFAULT_ARCH}")
    parser.add_argument("--json", action="store_true", help="print a JSON list of the presets' configs")


def run(args: argparse.Namespace) -> int:
    arch = target(args.arch, say=getattr(args, "notes", []).append).arch   # no --arch: the GPU present, else the H100, noted
    rows = [(name, preset(name, arch)) for name in names()]
    if args.json:
        json.dump([_record(name, c) for name, c in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print("\n".join(table([COLUMNS] + [row(name, c) for name, c in rows])))
    return 0


def _record(name: str, c: KernelConfig) -> dict:
    return {"preset": name, "description": describe(name), "kernel": c.name, "threads": c.threads,
            "smem_bytes": c.smem_bytes, "config": c.to_dict()}


COMMAND = Command(
    name="presets",
    help="list the presets (v0..v13, tf32, tf32x3, wmma...) with their key parameters",
    description="The built-in kernels, following the classic SGEMM progression: each adds one idea to "
                "the one before. Emit one with `gemmgen emit --preset NAME`.",
    configure=configure,
    run=run,
    epilog="examples:\n  gemmgen presets\n  gemmgen presets --json | python -m json.tool\n"
           "  gemmgen presets --arch sm_86        (v13's built-in choice for Ampere)",
)
