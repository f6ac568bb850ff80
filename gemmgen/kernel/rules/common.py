"""Rules every family obeys (names, types, threads per block), and the naive family's one rule.

The first three (FAMILY, LAYOUT, POSITIVE) are structural: later rules divide by these values, so
:func:`~gemmgen.kernel.rules.registry.explain` stops after the first of them that fails.

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.base.devices import known
>>> [r.name for r in RULES][:3], _threads(KernelConfig(BM=256, BN=256, WM=16, WN=16), known("h100"))
(['FAMILY', 'LAYOUT', 'POSITIVE'], '8192 threads per block; the h100 takes a multiple of 32 from 32 to 1024')
"""
from __future__ import annotations

from ..config import DTYPES, FAMILIES, FAMILY_MAINLOOP, HALF, LAYOUTS, MAINLOOPS, SCHEDULERS, KernelConfig
from .rule import ANY_FAMILY, RuleSet, choice

RULES = RuleSet()
STRUCTURAL = ("FAMILY", "LAYOUT", "POSITIVE")
_COUNTS = ("BM", "BN", "BK", "WM", "WN", "WMITER", "WNITER", "TM", "TN", "vec", "stages", "split_k", "raster",
           "min_blocks", "warps_k")


@RULES.add("FAMILY", ANY_FAMILY)   # an unknown family too: no other rule applies to it
def _family(c, d):
    return choice(c.family, FAMILIES)


@RULES.add("LAYOUT")
def _layout(c, d):
    return choice(c.layout, LAYOUTS)


@RULES.add("POSITIVE")
def _positive(c, d):
    bad = [f"{k} = {getattr(c, k)}" for k in _COUNTS if getattr(c, k) < 1]
    return f"{', '.join(bad)} must be at least 1" if bad else None


@RULES.add("DTYPE")
def _dtype(c, d):
    bad = choice(c.dtype, DTYPES)
    if bad:
        return bad
    if c.family in HALF and c.dtype == "f32":
        return f"the {c.family} family multiplies fp16 or bf16 inputs; set dtype to f16 or bf16"
    if c.family not in HALF and c.dtype != "f32":
        return (f"the {c.family} family reads fp32 A and B; dtype = {c.dtype!r} needs the half family "
                f"({', '.join(HALF)})")
    return None


@RULES.add("PARTIALS")
def _partials(c, d):
    if c.family not in HALF and not c.partials:
        return (f"partials = false applies to the half family ({', '.join(HALF)}) only; the {c.family} family "
                "has no such choice, leave it true")
    return None


def _axis(c, key: str, valid: tuple[str, ...]) -> str | None:
    """A named axis of the config (mainloop, scheduler) holding none of its values: the sentence listing them."""
    bad = choice(getattr(c, key), valid)
    return f"{key} = {bad}" if bad else None


@RULES.add("MAINLOOP")
def _mainloop(c, d):
    if _axis(c, "mainloop", MAINLOOPS):
        return _axis(c, "mainloop", MAINLOOPS)
    own = FAMILY_MAINLOOP.get(c.family)
    if own == "simt" and c.mainloop != "simt":
        return (f"mainloop = {c.mainloop!r}: the {c.family} family multiplies with FMA on the CUDA cores, "
                "mainloop = 'simt'")
    if own != "simt" and c.mainloop == "simt":
        return (f"mainloop = 'simt' is the FMA families' (naive, simt, skinny); the {c.family} family multiplies "
                f"on the tensor cores: mainloop = 'mma_sync'"
                + (" or 'ws_tma'" if c.family in HALF else ", 'wgmma', 'ws_cpasync' or 'ws_tma'"))
    if c.family in HALF and c.mainloop == "wgmma":
        return ("mainloop = 'wgmma' (on a cp.async ring) is the TF32 families'; the wmma family takes "
                "mainloop = 'mma_sync' (warp-level WMMA) or 'ws_tma'")
    return None


@RULES.add("SCHEDULER")
def _scheduler(c, d):
    if _axis(c, "scheduler", SCHEDULERS):
        return _axis(c, "scheduler", SCHEDULERS)
    if c.scheduler == "plain":
        if c.persistent_blocks:
            return (f"persistent_blocks = {c.persistent_blocks} with scheduler = 'plain' (a block per tile of C): it counts a "
                    "persistent grid's; leave it 0, or scheduler = 'persistent' or 'pingpong'")
        return None
    if c.persistent_blocks < 1:
        return (f"scheduler = {c.scheduler!r} with persistent_blocks = {c.persistent_blocks}: the persistent grid's blocks, 1 or more "
                "(or scheduler = 'plain', a block per tile of C)")
    if not c.warp_specialized:
        return (f"scheduler = {c.scheduler!r}: only the warp-specialized kernels (mainloop = 'ws_cpasync' or "
                "'ws_tma') walk tiles in a persistent grid; use scheduler = 'plain'")
    if c.split_k > 1:
        return (f"scheduler = {c.scheduler!r} with split_k = {c.split_k}: a persistent grid walks whole tiles "
                "of C; use split_k = 1 or scheduler = 'plain'")
    if c.scheduler == "pingpong" and c.swap:
        return ("scheduler = 'pingpong' with swap = true: the swapped kernel has no pingpong variant; "
                "scheduler = 'persistent' or swap = false")
    return None


@RULES.add("THREADS")
def _threads(c, d):
    t = c.threads if min(c.BM, c.BN, c.WM, c.WN) > 0 else 0
    if not 32 <= t <= d.max_threads_per_block or t % 32:
        return f"{t} threads per block; the {d.key} takes a multiple of 32 from 32 to {d.max_threads_per_block}"
    return None


@RULES.add("WARPS_K")
def _warps_k(c, d):
    if c.warps_k != 1 and c.family != "skinny":
        return f"warps_k = {c.warps_k} applies to the skinny family only (warps splitting K); leave it 1"
    if c.swap and not (c.family == "skinny" or c.mainloop == "ws_cpasync"):
        return ("swap = true applies to the skinny family and the cp.async warp-specialized 3xTF32 kernel "
                "(tf32x3, mainloop = 'ws_cpasync') only (C^T = op(B)^T op(A)^T, C stored transposed); "
                "leave it false")
    return None


# ---- naive family ---------------------------------------------------------------------------
@RULES.add("NAIVE_DEFAULTS", "naive")
def _naive_defaults(c, d):
    ref = KernelConfig(family="naive", layout=c.layout, BM=c.BM, BN=c.BN, coalesced=c.coalesced, label=c.label)
    diff = [f.name for f in c.__dataclass_fields__.values() if getattr(c, f.name) != getattr(ref, f.name)]
    return f"the naive family has no parameter {', '.join(diff)}; leave it at its default" if diff else None
