"""Rules of the skinny family (templates/skinny.cu.j2): C with few columns (N <= BN), a lane per row;
with ``swap``, few rows (M <= BN): the same kernel on C^T = op(B)^T op(A)^T, B the big operand.

Each lane owns TM rows of C (BM = 32 * TM rows per warp) and all BN columns, so a lane holds TM * BN
accumulators; the warps of a block split the block's K range, stage their own tiles of A and B
through a cp.async ring of ``stages`` buffers, and sum their partials in shared memory at the end.

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.base.devices import known
>>> _tile(KernelConfig(family="skinny", BM=64, BN=40, BK=16, TM=2), known("h100"))
'BN = 40: the skinny kernel takes BN from 4 to 32 in steps of 4 (each lane holds TM * BN accumulators)'
>>> _rows(KernelConfig(family="skinny", BM=128, BN=16, BK=16, TM=2), known("h100"))
'BM = 128 with TM = 2: a warp covers 32 * TM rows, so BM must be 64 (TM one of 1, 2, 4)'
"""
from __future__ import annotations

from ..accepts import SKINNY_MOST
from ..config import REDUCTIONS, KernelConfig
from ..families import RUNS_FROM
from .rule import RuleSet, choice

RULES = RuleSet()
STEPS = (8, 16, 32)
MAX_SPLIT = 64
MAX_ACCUMULATORS = 96
REGISTER_OVERHEAD = 64   # addresses, loop state and one float4 of B and of A per row beside the accumulators
_OWN = ("layout", "BM", "BN", "BK", "TM", "warps_k", "vec", "stages", "split_k", "min_blocks", "swap", "swz_b",
        "prefetch", "label")


def _skinny(name):
    return RULES.add(name, "skinny")


@_skinny("SKINNY_TILE")
def _tile(c, d):
    if c.BN % 4 or not 4 <= c.BN <= SKINNY_MOST:
        return (f"BN = {c.BN}: the skinny kernel takes BN from 4 to {SKINNY_MOST} in steps of 4 (each lane holds "
                "TM * BN accumulators)")
    return None


@_skinny("SKINNY_ROWS")
def _rows(c, d):
    if c.TM not in (1, 2, 4) or c.BM != 32 * c.TM:
        return (f"BM = {c.BM} with TM = {c.TM}: a warp covers 32 * TM rows, so BM must be {32 * c.TM} "
                "(TM one of 1, 2, 4)")
    return None


@_skinny("SKINNY_SWIZZLE")
def _swizzle(c, d):
    if c.swz_b not in (1, c.BN // 4):
        return (f"swz_b = {c.swz_b}: the skinny kernel rotates the {c.BN // 4} 16-byte chunks of B's rows "
                f"(swz_b = {c.BN // 4}) or not (1)")
    return None


@_skinny("SKINNY_ARCH")
def _arch(c, d):
    if d.cc < RUNS_FROM["skinny"]:
        return f"the skinny kernel fills each warp's ring with cp.async, which needs sm_80 or newer; the {d.key} is {d.arch}"
    return None


@_skinny("SKINNY_STEP")
def _step(c, d):
    return None if c.BK in STEPS else f"BK = {c.BK}: the skinny kernel's K step is one of {', '.join(map(str, STEPS))}"


@_skinny("SKINNY_PIPELINE")
def _pipeline(c, d):
    if not 2 <= c.stages <= 4:
        return f"stages = {c.stages}: each warp's cp.async ring has 2 to 4 buffers"
    if c.warps_k > 16:
        return f"warps_k = {c.warps_k}: at most 16 warps split a block's K range"
    if c.split_k > MAX_SPLIT:
        return f"split_k = {c.split_k}: at most {MAX_SPLIT} K slices (gridDim.z)"
    return None


@_skinny("SKINNY_REGISTERS")
def _registers(c, d):
    """ptxas on sm_90: TM * BN = 128 accumulators spill with 4 stages (and with 2 at min_blocks = 3);
    96 and fewer leave room for the unrolled copies' addresses."""
    if c.accumulators > MAX_ACCUMULATORS:
        return (f"TM * BN = {c.accumulators} accumulators per lane: at most {MAX_ACCUMULATORS} leave registers for "
                "the copies (fewer rows per lane, TM, or a smaller BN)")
    budget = min(255, d.regs_per_sm // (c.threads * c.min_blocks)) if c.min_blocks > 1 else 255
    rows = 2 * c.TM * c.BK if c.prefetch else 0   # prefetch: this step's and the next step's rows of X
    if budget < c.accumulators + rows + REGISTER_OVERHEAD:
        return (f"{c.accumulators} accumulators{f', {rows} prefetched values of X' if rows else ''} and about "
                f"{REGISTER_OVERHEAD} more registers exceed the {budget} a thread has (min_blocks = {c.min_blocks}); "
                "lower TM, BK or min_blocks")
    return None


@_skinny("SKINNY_PREFETCH")
def _prefetch(c, d):
    if c.prefetch and c.skinny_k_contiguous:
        return (f"prefetch = true reads the big operand's rows straight into registers, which needs them contiguous "
                f"({'B stored K x N: layouts NN, TN' if c.swap else 'A stored column-major: layouts TN, TT'}); "
                f"layout {c.layout} stores its k contiguous")
    return None


@_skinny("OCCUPANCY")
def _occupancy(c, d):
    if c.min_blocks * c.smem_bytes > d.smem_per_sm or c.min_blocks * c.threads > d.max_threads_per_sm:
        return (f"min_blocks = {c.min_blocks} blocks of {c.smem_bytes} bytes of shared memory and {c.threads} threads "
                f"exceed an SM of the {d.key} ({d.smem_per_sm} bytes, {d.max_threads_per_sm} threads)")
    return None


@_skinny("SKINNY_COPIES")
def _copies(c, d):
    if c.vec not in (1, 4):
        return f"vec = {c.vec}: the skinny kernel copies 4 bytes (vec = 1) or 16 bytes where rows allow (vec = 4)"
    if c.bounds != "checked":
        return "bounds = 'none': the skinny kernel always checks its edges; leave bounds 'checked'"
    return choice(c.reduce, REDUCTIONS)


@_skinny("SHARED_MEMORY")
def _shared(c, d):
    if c.smem_bytes > d.smem_per_block_optin:
        return (f"{c.smem_bytes} bytes of shared memory ({c.warps_k} warps x {c.stages} stages x {c.smem_per_stage}); "
                f"the {d.key} allows {d.smem_per_block_optin} per block. Fewer warps, stages or a smaller BK fit")
    return None


@_skinny("SKINNY_DEFAULTS")
def _defaults(c, d):
    own = {k: getattr(c, k) for k in _OWN}
    if c.split_k > 1:
        own["reduce"] = c.reduce
    ref = KernelConfig(family="skinny", **own)
    diff = [f.name for f in c.__dataclass_fields__.values() if getattr(c, f.name) != getattr(ref, f.name)]
    return f"the skinny family has no parameter {', '.join(diff)}; leave it at its default" if diff else None
