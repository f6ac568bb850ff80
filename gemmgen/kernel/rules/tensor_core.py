"""Rules of the tensor-core families (tf32, tf32x3): mma.sync m16n8k8 with TF32 operands.

:mod:`.registry` runs them with the rest; the shared ones (WARP_TILE, VECTORIZE, SHARED_MEMORY,
SPLIT_K, ...) are in :mod:`.tiled`, the register model in :mod:`.registers`.

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.base.devices import DeviceSpec
>>> from gemmgen.kernel.rules import explain
>>> turing = DeviceSpec("t4", "Tesla T4", (7, 5), 40, 164 * 1024, 164 * 1024)
>>> cfg = KernelConfig(family="tf32x3", BK=32, WM=64, WN=64, stages=3, async_copy=True)
>>> [v.rule for v in explain(cfg, turing)]
['TENSOR_CORE_ARCH']
"""
from __future__ import annotations

from ..config import TENSOR_CORE, KernelConfig
from ..families import RUNS_FROM
from . import registers
from .instructions import MMA_K, MMA_M, MMA_N
from .rule import RuleSet

RULES = RuleSet()
# Parameters of the simt family that the tensor-core kernels do not have (the warp tile is made of
# mma tiles, so there are no thread tiles; shared memory follows the global layout).
UNUSED = ("WMITER", "WNITER", "TM", "TN", "a_kmajor", "prefetch", "frag", "coalesced", "interleave")


def unused(c: KernelConfig) -> tuple[str, ...]:
    """The UNUSED parameters of config c's kernel: all of them, but prefetch for the cp.async wgmma
    kernel (there the next stage's split overlaps this stage's wgmma)."""
    return tuple(k for k in UNUSED if not (k == "prefetch" and c.uses_wgmma and not c.warp_specialized))


def _tc(name):
    return RULES.add(name, *TENSOR_CORE)


@_tc("TENSOR_CORE_DEFAULTS")
def _defaults(c, d):
    ref = KernelConfig()
    diff = [k for k in unused(c) if getattr(c, k) != getattr(ref, k)]
    return (f"the {c.family} family has no parameter {', '.join(diff)} (warp tiles are m16n8k8 mma tiles, "
            "shared memory follows the global layout); leave it at its default") if diff else None


@_tc("TENSOR_CORE_ARCH")
def _arch(c, d):
    if d.cc < RUNS_FROM[c.family]:
        return (f"mma.sync m16n8k8 with .tf32 operands, cvt.rna.tf32.f32 and cp.async need sm_80 or newer; "
                f"the {d.key} is {d.arch}")
    return None


@_tc("MMA_TILE")
def _mma_tile(c, d):
    out = []
    if c.WM % MMA_M or c.WN % MMA_N:
        out.append(f"warp tile {c.WM}x{c.WN} is not a whole number of {MMA_M}x{MMA_N} mma tiles")
    if c.BK % MMA_K:
        out.append(f"BK = {c.BK} is not a multiple of the mma depth {MMA_K}")
    return "; ".join(out) or None


@_tc("PIPELINE")
def _pipeline(c, d):
    if not c.async_copy:
        return "the tensor-core families stage tiles with cp.async only; set async_copy = true"
    if not 2 <= c.stages <= 8:
        return f"stages = {c.stages}; a cp.async ring needs 2 to 8 stages (one lands while another is read)"
    return None


@_tc("TC_PADDING")
def _padding(c, d):
    bad = [f"pad_{op} = {p}" for op, p in (("a", c.pad_a), ("b", c.pad_b)) if p % 4]
    if bad:
        return (f"{', '.join(bad)}: padding must be a multiple of 4 floats so shared rows stay 16-byte "
                "aligned for 16-byte cp.async and ldmatrix")
    return None


def swizzle_ok(kmajor: bool, row_floats: int) -> bool:
    """Whether the 128-byte XOR swizzle fits a shared row of ``row_floats`` (no padding).

    k-major rows (m or n contiguous) must hold whole 128-byte lines; k-contiguous rows (BK floats)
    must be a power of two of at least 8 floats so a 128-byte line holds a whole number of rows.
    """
    if kmajor:
        return row_floats % 32 == 0
    return row_floats >= 8 and row_floats & (row_floats - 1) == 0


@_tc("TC_SWIZZLE")
def _swizzle(c, d):
    out = []
    for op, swz, pad, kmajor, (_, row) in (("a", c.swz_a, c.pad_a, c.a_smem_kmajor, c.a_tile_shape),
                                          ("b", c.swz_b, c.pad_b, c.b_smem_kmajor, c.b_tile_shape)):
        if swz == 1:
            continue
        if swz != 8:
            out.append(f"swz_{op} = {swz}; the tensor-core families take 1 (off) or 8 (XOR over a 128-byte line)")
        elif pad:
            out.append(f"{op.upper()} has both padding ({pad}) and swizzle ({swz}); choose one")
        elif not swizzle_ok(kmajor, row):
            need = "a multiple of 32" if kmajor else "a power of two >= 8"
            out.append(f"{op.upper()}'s shared row of {row} floats cannot be swizzled: it must be {need}")
    return "; ".join(out) or None


@_tc("TC_REGISTERS")
def _registers(c, d):
    if c.uses_wgmma:
        return None   # wgmma.WGMMA_REGISTERS counts the wgmma variant's registers
    return registers.violation(c, d, f"{c.accumulators} accumulators for a {c.WM}x{c.WN} warp tile",
                               ". A smaller warp tile fits")
