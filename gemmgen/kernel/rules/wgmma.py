"""Rules of the Hopper wgmma mainloop (``mainloop="wgmma"``) of the TF32 tensor-core families.

The variant computes C^T = B^T A^T with ``wgmma.mma_async.m64nBMk8``: a warpgroup (128 threads) owns 64
columns of C and all BM rows, A is read by the tensor cores from shared memory (K-major, 128-byte
swizzle; a column-major A is transposed into that tile stage by stage) and B from registers, in every
layout. :mod:`.registry` runs these rules after the tensor-core families' own.

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.base.devices import for_arch
>>> from gemmgen.kernel.rules import explain
>>> cfg = KernelConfig(family="tf32x3", mainloop="wgmma", BM=128, BN=128, BK=64, WM=128, WN=64, swz_a=8,
...                    pad_b=8, stages=2, async_copy=True)
>>> explain(cfg, for_arch("sm_90"))
[]
>>> [v.rule for v in explain(cfg, for_arch("sm_80"))]   # and 168 KB of stages do not fit an A100
['SHARED_MEMORY', 'WGMMA_ARCH']
"""
from __future__ import annotations

from ..config import TENSOR_CORE
from ..families import HOPPER
from . import registers
from .instructions import MAX_WGMMA_N, WG_N
from .rule import RuleSet

RULES = RuleSet()


def _wg(name):
    """A rule of the wgmma mainloop: checked for the tensor-core families when mainloop == 'wgmma'."""
    def deco(fn):
        return RULES.add(name, *TENSOR_CORE)(lambda c, d: fn(c, d) if c.uses_wgmma else None)
    return deco


def hopper_only(d) -> str:
    """Why a wgmma kernel does not run on device d (not sm_90), in words.

    >>> from gemmgen.base.devices import known
    >>> hopper_only(known("b200"))
    "the b200 is sm_100: Blackwell's tensor cores take tcgen05 (datacenter) or mma.sync, not wgmma"
    """
    why = (": Blackwell's tensor cores take tcgen05 (datacenter) or mma.sync, not wgmma" if d.cc >= (10, 0)
           else "")
    return f"the {d.key} is {d.arch}{why}"


@_wg("WGMMA_ARCH")
def _arch(c, d):
    if d.cc != HOPPER:
        return (f"wgmma.mma_async exists only on sm_90a (Hopper); {hopper_only(d)}. "
                "Use mainloop = 'mma_sync' (mma.sync, sm_80+)")
    return None


@_wg("WGMMA_TILE")
def _tile(c, d):
    out = []
    if c.WM != c.BM or c.WN != WG_N:
        out.append(f"warp tile {c.WM}x{c.WN}: a warpgroup owns all BM rows and {WG_N} columns, so WM = BM = "
                   f"{c.BM} and WN = {WG_N}")
    if c.BM % 16 or not 16 <= c.BM <= MAX_WGMMA_N:
        out.append(f"BM = {c.BM} is wgmma's N: a multiple of 16 from 16 to {MAX_WGMMA_N}")
    if c.BK % 32:
        out.append(f"BK = {c.BK}: A's shared rows are 128-byte swizzle rows of 32 floats, so BK is a multiple of 32")
    elif c.threads and (c.BM * c.BK // 4) % c.threads:
        out.append(f"the A tile's {c.BM * c.BK // 4} float4 do not divide over {c.threads} threads for the "
                   "per-stage split; use a larger BM or BK")
    if c.vec != 4:
        out.append(f"vec = {c.vec}: the variant copies 16-byte chunks (vec = 4)")
    return "; ".join(out) or None


@_wg("WGMMA_SMEM_LAYOUT")
def _smem(c, d):
    out = []
    if c.swz_a != 8 or c.pad_a:
        out.append(f"swz_a = {c.swz_a}, pad_a = {c.pad_a}: A is laid out as wgmma's descriptor names it "
                   "(128-byte swizzle, no padding): swz_a = 8, pad_a = 0")
    if c.swz_b != 1:
        out.append(f"swz_b = {c.swz_b}: B is read into registers from padded rows; swz_b = 1 (use pad_b = 8 for layout xN, 4 for xT)")
    return "; ".join(out) or None


@_wg("WGMMA_REGISTERS")
def _registers(c, d):
    what = (f"{c.accumulators} accumulators{' twice (sum and stage partial)' if c.family == 'tf32x3' else ''}, "
            f"{c.BK // 8} k8 steps of fragments")
    return registers.violation(c, d, what, ". Use a smaller BM or BK")
