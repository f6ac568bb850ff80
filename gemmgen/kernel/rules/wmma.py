"""Rules of the half family (wmma): fp16/bf16 inputs on the tensor cores in 16x16x16 WMMA tiles.

:mod:`.registry` runs them with the rest; the shared ones (WARP_TILE, VECTORIZE, SHARED_MEMORY,
SPLIT_K, BOUNDS, OCCUPANCY, DTYPE) are in :mod:`.tiled` and :mod:`.common`, the register model in
:mod:`.registers`.

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.base.devices import DeviceSpec
>>> from gemmgen.kernel.rules import explain
>>> turing = DeviceSpec("t4", "Tesla T4", (7, 5), 40, 64 * 1024, 64 * 1024, max_threads_per_sm=1024)
>>> cfg = KernelConfig(family="wmma", dtype="bf16", BK=32, WM=64, WN=64, vec=8, pad_a=8, pad_b=8)
>>> [v.rule for v in explain(cfg, turing)]
['WMMA_ARCH']
"""
from __future__ import annotations

from ..config import HALF, KernelConfig
from . import registers
from .instructions import WMMA_K, WMMA_M, WMMA_N
from .rule import RuleSet

RULES = RuleSet()
# Parameters of the simt family that the wmma kernels do not have: the warp tile is made of wmma
# tiles (no thread tiles), shared memory follows the global layout (no a_kmajor), and the WMMA load
# instructions read a strided matrix, so its 16-byte chunks cannot be XOR-swizzled (padding instead).
UNUSED = ("WMITER", "WNITER", "TM", "TN", "a_kmajor", "prefetch", "frag", "coalesced", "interleave", "swz_a",
          "swz_b")


def _wmma(name):
    return RULES.add(name, *HALF)


@_wmma("WMMA_DEFAULTS")
def _defaults(c, d):
    ref = KernelConfig()
    diff = [k for k in UNUSED if getattr(c, k) != getattr(ref, k)]
    return (f"the {c.family} family has no parameter {', '.join(diff)} (warp tiles are 16x16x16 wmma tiles, "
            "shared memory follows the global layout and is padded, not swizzled); leave it at its default"
            ) if diff else None


@_wmma("WMMA_ARCH")
def _arch(c, d):
    out = []
    if c.dtype == "bf16" and d.cc < (8, 0):
        out.append("wmma with bf16 operands needs sm_80 or newer")
    elif d.cc < (7, 0):
        out.append("wmma needs tensor cores (sm_70 or newer)")
    if c.async_copy and d.cc < (8, 0):
        out.append("cp.async needs sm_80 or newer")
    return f"{'; '.join(out)}; the {d.key} is {d.arch}" if out else None


@_wmma("WMMA_TILE")
def _tile(c, d):
    out = []
    if c.WM % WMMA_M or c.WN % WMMA_N:
        out.append(f"warp tile {c.WM}x{c.WN} is not a whole number of {WMMA_M}x{WMMA_N} wmma tiles")
    if c.BK % WMMA_K:
        out.append(f"BK = {c.BK} is not a multiple of the wmma depth {WMMA_K}")
    return "; ".join(out) or None


@_wmma("WMMA_VECTOR")
def _vector(c, d):
    if c.vec not in (1, 2, 4, 8):
        return f"vec = {c.vec}; the wmma family loads 1, 2, 4 or 8 halves (2 to 16 bytes) at a time"
    if c.async_copy and c.vec == 1:
        return "vec = 1 with async_copy: cp.async copies 4, 8 or 16 bytes, not one 2-byte half; use vec >= 2"
    return None


@_wmma("WMMA_PIPELINE")
def _pipeline(c, d):
    if not 1 <= c.stages <= 4:
        return f"stages = {c.stages}; the wmma family runs 1 (single buffer) to 4 cp.async stages"
    if c.stages > 1 and not c.async_copy:
        return f"stages = {c.stages} needs async_copy (the wmma family fills extra stages with cp.async)"
    if c.async_copy and c.stages < 2:
        return "async_copy needs stages >= 2 (a copy must have a buffer to land in while another is read)"
    return None


@_wmma("WMMA_PADDING")
def _padding(c, d):
    bad = [f"pad_{op} = {p}" for op, p in (("a", c.pad_a), ("b", c.pad_b)) if p % 8 or not 0 <= p <= 64]
    if bad:
        return (f"{', '.join(bad)}: padding must be 0 to 64 halves in steps of 8, so every shared row starts "
                "on 16 bytes (WMMA loads take a stride of whole 16-byte units; cp.async copies 16 bytes)")
    return None


@_wmma("WMMA_REGISTERS")
def _registers(c, d):
    what = (f"{c.accumulators} accumulators for a {c.WM}x{c.WN} warp tile, "
            f"{c.WM // WMMA_M * min(c.BK // WMMA_K, 2)} A fragments at a time")
    return registers.violation(c, d, what, ". A smaller warp tile or BK fits")
