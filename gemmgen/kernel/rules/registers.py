"""Registers per thread, estimated before compiling: one model per family, and the one check they share.

A thread has at most 255 registers and a block at most ``DeviceSpec.regs_per_block``; past either,
ptxas spills to local memory (each spilled accumulator turns an FMA into a memory round trip) or
the launch fails. The estimates are rough (ptxas decides), but they keep a search from compiling
kernels that cannot fit.

>>> from gemmgen.kernel.presets import preset
>>> [register_estimate(preset(n)) for n in ("v10", "tf32x3", "wmma-fast", "tf32x3-wgmma")]
[132, 152, 216, 232]
>>> register_estimate(preset("v1")) is None      # naive: one accumulator, nothing to estimate
True
"""
from __future__ import annotations

from typing import Callable

from ...base.devices import DeviceSpec
from ..config import HALF, KernelConfig
from .instructions import FRAGMENT_REGS, MMA_M, MMA_N, WMMA_K, WMMA_M, WMMA_N

MAX_PER_THREAD = 255


def _simt(c: KernelConfig) -> int:
    """Accumulators, fragments (twice with prefetch), register staging of the next tile, addressing."""
    frags = (c.WMITER * c.TM + c.WNITER * c.TN) * (2 if c.prefetch else 1)
    staging = 0 if c.async_copy else (c.BM * c.BK + c.BN * c.BK) // max(c.threads, 1)
    pointers = 2 * staging // max(c.vec, 1) if c.interleave else 0   # a 64-bit pointer per copy
    return c.accumulators + frags + staging + pointers + 28


def _tensor_core(c: KernelConfig) -> int:
    """Accumulators, A and B fragments of a warp tile (twice for 3xTF32's big and small parts), addressing."""
    frags = (c.WM // MMA_M) * 4 + (c.WN // MMA_N) * 2
    return c.accumulators + frags * (2 if c.family == "tf32x3" else 1) + 40


def _wmma(c: KernelConfig) -> int:
    """Accumulators, the A fragments of one partial sum's k16 steps (two at most), one column of B
    fragments, the fresh partial sum of one tile (without partials: one k16 step of A and B
    fragments), single-stage staging registers, and addressing."""
    ks = min(max(c.BK // WMMA_K, 1), 2)
    frags = (c.WM // WMMA_M) * ks * FRAGMENT_REGS + ks * FRAGMENT_REGS + 8
    if not c.partials:   # straight into the accumulators: one k16 step of A and B fragments at a time
        frags = (c.WM // WMMA_M + c.WN // WMMA_N) * FRAGMENT_REGS
    per_reg = 2 if c.vec > 1 else 1                 # halves per staging register
    staging = 0 if c.async_copy else (c.BM + c.BN) * c.BK // (per_reg * max(c.threads, 1))
    return c.accumulators + frags + staging + 40


def _wgmma(c: KernelConfig) -> int:
    """Accumulators (and the stage's partial sums for 3xTF32), B's fragments, addressing."""
    acc = c.accumulators * (2 if c.family == "tf32x3" else 1)
    frags = (c.BK // 8) * 4 * (2 if c.family == "tf32x3" else 1)
    return acc + frags + 40


MODELS: dict[str, Callable[[KernelConfig], int]] = {"simt": _simt, "tensor_core": _tensor_core,
                                                    "wmma": _wmma, "wgmma": _wgmma}


def tma_partials(c: KernelConfig) -> bool:
    """Whether a TMA kernel sums each stage into a fresh partial (3xTF32 always, f16/bf16 with
    partials = true); TF32 accumulates straight on the tensor cores, as cuBLAS's TF32 mode does."""
    return c.family == "tf32x3" or (c.family in HALF and c.partials)


def tma_registers(consumers: int, async_copy: bool = False, min_blocks: int = 1) -> tuple[int, int]:
    """Registers per thread of the producer and of each consumer warpgroup: with one block per SM, after
    setmaxnreg, all of the SM's 64K for the block, in multiples of 8, a consumer at most 240 (a
    cp.async producer (``async_copy``) computes every copy's addresses: under 72 registers ptxas
    spilled its loop); with ``min_blocks`` > 1 blocks sharing an SM, no setmaxnreg: every thread keeps
    the share ``__launch_bounds__`` gives it.

    >>> tma_registers(1), tma_registers(2), tma_registers(3), tma_registers(2, True)
    ((40, 240), (40, 232), (24, 160), (72, 216))
    >>> tma_registers(2, True, min_blocks=2), tma_registers(1, True, min_blocks=2)
    ((80, 80), (128, 128))
    """
    if min_blocks > 1:
        share = 65536 // (128 * (consumers + 1) * min_blocks) // 8 * 8
        return share, share
    producer = 72 if async_copy else 40 if consumers <= 2 else 24
    return producer, min(240, (512 - producer) // consumers // 8 * 8)


def model_of(c: KernelConfig) -> str | None:
    """The name of the model that estimates a config's registers (None for the naive family)."""
    if c.uses_wgmma:
        return "wgmma"
    if c.tensor_core:
        return "tensor_core"
    if c.family in HALF:
        return "wmma"
    return "simt" if c.family == "simt" else None


def register_estimate(c: KernelConfig) -> int | None:
    """Rough registers per thread of a config, from its family's model (None for naive kernels)."""
    model = model_of(c)
    return MODELS[model](c) if model else None


def violation(c: KernelConfig, d: DeviceSpec, what: str, hint: str = "") -> str | None:
    """The REGISTERS rules' shared check: ``what`` names where the registers go, ``hint`` the fix."""
    est = register_estimate(c)
    if est > MAX_PER_THREAD:
        return f"about {est} registers per thread ({what}); a thread has at most {MAX_PER_THREAD}{hint}"
    if est * c.threads > d.regs_per_block:
        return f"about {est} registers x {c.threads} threads = {est * c.threads}; a block has {d.regs_per_block}"
    return None
