"""Rules of the warp-specialized mainloops of the wgmma kernels (``mainloop="ws_tma"`` or ``"ws_cpasync"``).

A producer warpgroup copies tiles of A and B with TMA (ws_tma; or, ws_cpasync, with cp.async from any
layout and row alignment: the 3xTF32 family) into mbarrier stages; BM/WM consumer
warpgroups multiply them with wgmma reading both operands from shared memory, each WM rows by all
BN columns. These configs answer only to the rules every family obeys (:mod:`.common`) and to these:
the other families' tile, copy and register rules describe kernels this one is not.

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.kernel.rules import explain
>>> cfg = KernelConfig(family="wmma", dtype="f16", layout="NT", mainloop="ws_tma", BM=128, BN=256, BK=64,
...                    WM=64, WN=256, vec=8, swz_a=8, swz_b=8, stages=4, partials=False)
>>> explain(cfg, "sm_90")
[]
>>> [v.rule for v in explain(cfg.replace(BN=192, stages=3, layout="NN"), "sm_90")]
['TMA_LAYOUT', 'TMA_TILE']
>>> ws = KernelConfig(family="tf32x3", layout="NN", mainloop="ws_cpasync", BM=128, BN=128, BK=32,
...                   WM=64, WN=128, vec=4, swz_a=8, swz_b=8, stages=4)
>>> explain(ws, "sm_90"), [v.rule for v in explain(ws.replace(family="wmma", dtype="f16", BK=64, vec=8), "sm_90")]
([], ['TMA_COPY'])
>>> explain(ws.replace(swap=True, BN=32, WN=32), "sm_90"), [v.rule for v in explain(ws.replace(mainloop="ws_tma", layout="NT", swap=True), "sm_90")]
([], ['WARPS_K'])
"""
from __future__ import annotations

from ..config import KernelConfig
from ..families import HOPPER
from .registers import tma_partials, tma_registers
from .rule import RuleSet
from .tiled import shared_memory
from .wgmma import hopper_only

RULES = RuleSet()
FAMILIES = ("wmma", "tf32", "tf32x3")   # f16/bf16 inputs (the half family), TF32 and 3xTF32
# Parameters of the cp.async kernels that a TMA kernel has not: the copy engine moves whole boxes.
UNUSED = ("WMITER", "WNITER", "TM", "TN", "a_kmajor", "prefetch", "frag", "coalesced", "interleave",
          "pad_a", "pad_b")
MAX_CONSUMERS = 3
SHARED_OVERHEAD = 48   # registers a thread besides the sums when min_blocks > 1 (see TMA_REGISTERS)
SPILL_ALLOWANCE = 16   # registers over the shared cap accepted (a spill of ~100 bytes, measured fast)
MAX_BLOCKS = 2   # blocks of a warp-specialized kernel per SM (min_blocks): 3, at 56 registers a thread, ran 35-48% slower


def _tma(name):
    return RULES.add(name, "*")


def unused(c: KernelConfig) -> tuple[str, ...]:
    """The UNUSED parameters of TMA config c: all of them, but a_kmajor where the cp.async producer may
    stage an m-contiguous A either way (a_kmajor = False: transposed K-major by its 4-byte copies)."""
    return tuple(k for k in UNUSED if not (k == "a_kmajor" and c.a_mmajor_choice))


@_tma("TMA_KIND")
def _kind(c, d):
    out = []
    if c.family not in FAMILIES:
        out.append(f"the {c.family} family has no warp-specialized kernel; mainloop = {c.mainloop!r} takes "
                   f"{', '.join(FAMILIES)}")
    if d.cc != HOPPER:
        out.append(f"the TMA kernels multiply with wgmma, which exists only on sm_90a (Hopper); {hopper_only(d)}")
    return "; ".join(out) or None


@_tma("TMA_DEFAULTS")
def _defaults(c, d):
    ref = KernelConfig()
    diff = [k for k in unused(c) if getattr(c, k) != getattr(ref, k)]
    want = {"vec": 16 // c.elem_bytes, "swz_a": 8, "swz_b": 8, "bounds": "checked"}
    wrong = [f"{k} = {getattr(c, k)!r} (must be {v!r})" for k, v in want.items() if getattr(c, k) != v]
    out = []
    if diff:
        out.append(f"a TMA kernel has no parameter {', '.join(diff)}; leave it at its default"
                   + (" (a_kmajor = false, A transposed by the producer, is a choice only where the cp.async 3xTF32 "
                      "kernel could stage an m-contiguous A as it lies: A m-contiguous as run, 128 % BM == 0, room "
                      "for its padding)" if "a_kmajor" in diff else ""))
    if wrong:
        out.append(f"{', '.join(wrong)}: TMA moves 16-byte granules into 128-byte swizzled rows and "
                   "zero-fills the edges, the epilogue checks them")
    return "; ".join(out) or None


@_tma("TMA_COPY")
def _copy(c, d):
    if c.mainloop == "ws_cpasync" and c.family != "tf32x3":
        return (f"mainloop = 'ws_cpasync' (the producer copies with cp.async) is built for the tf32x3 family only, "
                f"whose producer splits B anyway; the {c.family} family's warp-specialized kernel copies with TMA "
                "(mainloop = 'ws_tma')")
    return None


@_tma("TMA_LAYOUT")
def _layout(c, d):
    if c.tensor_maps and c.layout != "NT":
        return (f"layout {c.layout}: the TMA kernels read K-major tiles of both operands (A row-major, "
                "B stored N x K), layout NT; mainloop = 'ws_cpasync' copies any layout with cp.async")
    return None


@_tma("TMA_TILE")
def _tile(c, d):
    out = []
    if c.BK * c.elem_bytes != 128:
        out.append(f"BK = {c.BK}: a stage's rows are one 128-byte swizzle row, BK = {128 // c.elem_bytes}")
    if c.WN != c.BN:
        out.append(f"WN = {c.WN}: a consumer warpgroup owns all BN = {c.BN} columns, so WN = BN")
    if c.BN % 8 or not 8 <= c.BN <= 256:
        out.append(f"BN = {c.BN} is wgmma's N: a multiple of 8 from 8 to 256")
    if c.scheduler == "pingpong" and (c.WM != c.BM or c.WM not in (64, 128)):
        out.append(f"pingpong with BM = {c.BM}, WM = {c.WM}: each consumer takes whole tiles of C, so WM = BM, "
                   "64 or 128 rows (wgmma's m64 blocks)")
    elif c.WM not in (64, 128) or c.BM % c.WM or not 1 <= c.BM // c.WM <= MAX_CONSUMERS:
        out.append(f"BM = {c.BM}, WM = {c.WM}: a consumer owns WM = 64 or 128 rows (wgmma's m64 blocks) and "
                   f"BM is 1 to {MAX_CONSUMERS} of them")
    if c.stages < 2:
        out.append(f"stages = {c.stages}: the copy engine needs a stage to fill while another is read (2 or more)")
    return "; ".join(out) or None


@_tma("TMA_SWAP")
def _swap(c, d):
    if c.swap and not c.c_staged:
        return (f"swap = true stores C transposed from a staged tile ({c.c_stage_floats * 4} bytes), which must fit "
                f"in the drained stages ({c.tma_tile_bytes} bytes): more stages, or scheduler = 'persistent'")
    return None


# The stages must fit the block's shared memory: the staged families' check, under a name of its own.
_tma("TMA_SHARED_MEMORY")(shared_memory)


@_tma("TMA_OCCUPANCY")
def _occupancy(c, d):
    if c.min_blocks == 1:
        return None
    out = []
    if not 1 <= c.min_blocks <= MAX_BLOCKS:
        out.append(f"min_blocks = {c.min_blocks}: 1 to {MAX_BLOCKS} blocks of a warp-specialized kernel share an SM")
    if c.min_blocks * (c.smem_bytes + 1024) > d.smem_per_sm:
        out.append(f"min_blocks = {c.min_blocks} blocks x {c.smem_bytes} bytes of shared memory (and 1 KB each the "
                   f"driver keeps) exceed the {d.smem_per_sm} bytes of an SM: fewer stages")
    if c.min_blocks * c.threads > d.max_threads_per_sm:
        out.append(f"min_blocks = {c.min_blocks} x {c.threads} threads exceed {d.max_threads_per_sm} per SM")
    share = tma_registers(c.consumers, True, c.min_blocks)[0]
    if c.mainloop == "ws_cpasync" and share < 72:
        out.append(f"min_blocks = {c.min_blocks} leaves {share} registers a thread, under the 72 the cp.async "
                   f"producer's copy loop needs: {c.consumers} consumers; use BM <= 128 "
                   "or min_blocks = 1")
    return "; ".join(out) or None


@_tma("TMA_REGISTERS")
def _registers(c, d):
    if c.WM not in (64, 128) or not c.BM // c.WM:
        return None
    consumers = c.consumers
    # Besides the sums (and partials), one block an SM keeps ~24 registers a consumer. Two blocks compile
    # the whole kernel (producer and epilogue too) under one cap: ptxas (sm_90a) used 41-48 more with two
    # consumers, ~53 with one (128x32 in 75-80 registers, 64x64 in 117). Up to SPILL_ALLOWANCE over the
    # cap it spills ~100 bytes at most (128x40: 12-36, 128x48: 96-104), and the 128x48 kernels, timed,
    # were the fastest on some few-row and few-column shapes; further over (128x56, 64x96: ~200) is refused.
    sums = c.accumulators * (2 if tma_partials(c) else 1)
    if c.min_blocks == 1:
        need, allowance = sums + 24, 0
    else:
        need, allowance = sums + SHARED_OVERHEAD + (8 if consumers == 1 else 0), SPILL_ALLOWANCE
    have = tma_registers(consumers, c.mainloop == "ws_cpasync", c.min_blocks)[1]
    # ptxas compiles under __launch_bounds__'s cap (64K registers over the block's threads and its
    # min_blocks), not the consumers' setmaxnreg share: one wgmma's BN/2 accumulators and its operands
    # must fit under it.
    cap = 65536 // (c.threads * c.min_blocks) // 8 * 8
    out = []
    if need > have + allowance:
        share = f"{c.min_blocks} blocks an SM" if c.min_blocks > 1 else f"{consumers} consumer warpgroups"
        out.append(f"about {need} registers per consumer thread ({c.accumulators} accumulators"
                   f"{' twice (sum and stage partial)' if tma_partials(c) else ''}); with {share} a "
                   f"consumer thread gets {have}")
    if c.BN // 2 + 26 > cap:
        out.append(f"one wgmma of N = {c.BN} needs about {c.BN // 2 + 26} registers; ptxas compiles "
                   f"{c.threads} threads under a cap of {cap}")
    if out:
        fix = ", or partials = false" if c.partials and c.family == "wmma" else ""
        fix += ", or min_blocks = 1" if c.min_blocks > 1 else ""
        return "; ".join(out) + f". Use a smaller BN or fewer consumers{fix}"
    return None
