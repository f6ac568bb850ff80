"""``gemmgen presets``: the progression v0..v13 and the tensor-core presets, one line each.

>>> row("v8", preset("v8"))[:6]
('v8', '128x128x8', '16x128', '8x8', '4', '2')
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from ..base.devices import ARCHS, target
from ..kernel.config import HALF, KernelConfig
from ..kernel.presets import describe, names, preset
from ..records.best import resolve_preset, v13_origin
from .command import Command
from .options import DEFAULT_ARCH

COLUMNS = ("preset", "block", "warp", "thread", "vec", "stages", "other", "what it adds")
WIDTH = 100   # columns of a terminal the tables fit by default; --wide prints whole lines


def row(name: str, c: KernelConfig) -> tuple[str, ...]:
    """The table row of one preset: the parameters that tell presets apart."""
    if c.family == "naive":
        walk = "coalesced" if c.coalesced else "uncoalesced"
        return (name, f"{c.BM}x{c.BN}", "-", "1x1", "1", "-", f"naive, {walk}", describe(name))
    if c.family == "skinny":   # a lane per row: no warp tile, warps split K
        return (name, f"{c.BM}x{c.BN}x{c.BK}", f"{c.warps_k} on K", f"{c.TM}x{c.BN}", f"{c.vec}",
                f"{c.stages} async", "skinny" + (f" k{c.split_k}" if c.split_k > 1 else ""), describe(name))
    if c.family in HALF:   # a warp tile of 16x16x16 wmma tiles; vec counts halves
        stages = f"{c.stages} async" if c.async_copy else f"{c.stages}"
        return (name, f"{c.BM}x{c.BN}x{c.BK}", f"{c.WM}x{c.WN}", "wmma", f"{c.vec}", stages,
                " ".join([c.dtype] + (["direct"] if not c.partials else []) + [w for w in _extras(c) if w != "A^T"]),
                describe(name))
    if c.tensor_core:   # a warp (wgmma: warpgroup) tile of m16n8k8 mma or m64nNk8 wgmma tiles: no thread tile
        return (name, f"{c.BM}x{c.BN}x{c.BK}", f"{c.WM}x{c.WN}", "wgmma" if c.uses_wgmma else "mma", f"{c.vec}",
                f"{c.stages} async", " ".join([c.family] + [w for w in _extras(c) if w != "A^T"]), describe(name))
    warp = f"{c.WM}x{c.WN}" + (f"/{c.WMITER}x{c.WNITER}" if c.WMITER * c.WNITER > 1 else "")
    stages = f"{c.stages}" + (" async" if c.async_copy else "")
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


def wrapped(text: str, wide: bool = False, indent: str = "    ", first: str = "", width: int = WIDTH) -> list[str]:
    """``text`` as lines of at most ``width`` columns (one line if ``wide``), broken at spaces only,
    so a kernel name or a path is never cut.

    >>> wrapped("a-b " * 30, width=20)[:2]
    ['a-b a-b a-b a-b a-b', '    a-b a-b a-b a-b']
    """
    if wide:
        return [first + text]
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def narrow(rows: list[tuple[str, ...]], width: int = WIDTH) -> list[str]:
    """A table whose last column is printed under each row instead, wrapped and indented: a table
    of long descriptions that fits ``width`` columns.

    >>> narrow([("name", "what"), ("v8", "double buffering")])
    ['name', 'v8', '    double buffering']
    """
    lines = table([r[:-1] + ("",) for r in rows])
    out = [lines[0].rstrip()]
    for line, r in zip(lines[1:], rows[1:]):
        out += [line.rstrip(), *wrapped(r[-1], first="    ", width=width)]
    return out


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", metavar="TARGET",
                        help=f"the GPU (or architecture: {', '.join(ARCHS)}) whose v13 to show; "
                             f"default: the GPU present, else {DEFAULT_ARCH}")
    parser.add_argument("--wide", action="store_true", help=f"whole lines (default: cut at {WIDTH} columns)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of the presets' configs")


def run(args: argparse.Namespace) -> int:
    device = target(args.arch, say=getattr(args, "notes", []).append)   # no --arch: the GPU present, else the H100, noted
    rows = [(name, resolve_preset(name, device)) for name in names()]
    if args.json:
        json.dump([_record(name, c, device) for name, c in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    cells = [COLUMNS] + [row(name, c) for name, c in rows]
    print("\n".join(table(cells) if args.wide else narrow(cells)))
    v13 = f"v13 on {device.key}: {v13_origin(device)}: {rows[names().index('v13')][1].name}"
    print("\n" + "\n".join(wrapped(v13, args.wide)))
    return 0


def _record(name: str, c: KernelConfig, device) -> dict:
    what = f"{describe(name)}; on {device.key}: {v13_origin(device)}" if name == "v13" else describe(name)
    return {"preset": name, "description": what, "kernel": c.name, "threads": c.threads,
            "smem_bytes": c.smem_bytes, "config": c.to_dict()}


COMMAND = Command(
    name="presets",
    help="list the presets (v0..v13, tf32, tf32x3, wmma...) with their key parameters",
    description="The built-in kernels, following the classic SGEMM progression: each adds one idea to "
                "the one before. Emit one with `gemmgen emit --preset NAME`.",
    configure=configure,
    run=run,
    epilog="examples:\n  gemmgen presets\n  gemmgen presets --wide               (whole descriptions)\n"
           "  gemmgen presets --json | python -m json.tool\n"
           "  gemmgen presets --arch h200          (v13 as the H200's results define it)\n"
           "  gemmgen presets --arch sm_86         (v13 for Ampere: built in, no stored results)\n\n"
           "v13 on a GPU is the fastest fp32 kernel measured at 4096x4096x4096, layout NN, in its results (the\n"
           "kernel `gemmgen results export GPU 4096x4096x4096` writes, the first of `gemmgen results plan GPU\n"
           "4096x4096x4096`'s candidates in NN); else the fastest stored NN winner; without results, the\n"
           "built-in best for the architecture. emit, explain and bench mean the same kernel by it.",
)
