"""Rules of the tiled families: the simt family's, and those it shares with the tensor-core families
(``_tiled``) and with the half family too (``_staged``: its element sizes differ, so it has its own
VECTOR and PADDING rules).

>>> from gemmgen.kernel.config import KernelConfig
>>> from gemmgen.base.devices import known
>>> _warp_tile(KernelConfig(BM=96, WM=64), known("h100"))
'block tile 96x128 is not a whole number of 64x32 warp tiles'
"""
from __future__ import annotations

from ..config import BOUNDS, FRAGMENT_LOADS, HALF, REDUCTIONS, TENSOR_CORE, KernelConfig
from . import registers
from .rule import RuleSet, choice

RULES = RuleSet()


def _simt(name):
    return RULES.add(name, "simt")


def _tiled(name):
    return RULES.add(name, "simt", *TENSOR_CORE)


def _staged(name):
    return RULES.add(name, "simt", *TENSOR_CORE, *HALF)


@_staged("WARP_TILE")
def _warp_tile(c, d):
    if c.BM % c.WM or c.BN % c.WN:
        return f"block tile {c.BM}x{c.BN} is not a whole number of {c.WM}x{c.WN} warp tiles"
    return None


@_simt("WARP_ITER")
def _warp_iter(c, d):
    if c.WM % c.WMITER or c.WN % c.WNITER:
        return f"warp tile {c.WM}x{c.WN} does not split into {c.WMITER}x{c.WNITER} sub-tiles"
    return None


@_simt("THREAD_TILE")
def _thread_tile(c, d):
    sm, sn = c.WM // c.WMITER, c.WN // c.WNITER
    if sm % c.TM or sn % c.TN:
        return f"warp sub-tile {sm}x{sn} is not a whole number of {c.TM}x{c.TN} thread tiles"
    if (sm // c.TM) * (sn // c.TN) != 32:
        return (f"warp sub-tile {sm}x{sn} / thread tile {c.TM}x{c.TN} gives "
                f"{(sm // c.TM) * (sn // c.TN)} threads, a warp has 32")
    return None


@_tiled("VECTOR")
def _vector(c, d):
    return choice(c.vec, (1, 2, 4))


@_staged("VECTORIZE")
def _vectorize(c, d):
    if c.threads < 32:   # THREADS names it; a warp tile larger than the block gives 0 threads
        return None
    out = []
    for op, rows, cols in (("A", *_global_tile(c, "A")), ("B", *_global_tile(c, "B"))):
        if cols % c.vec:
            out.append(f"{op}'s contiguous tile side {cols} is not a multiple of vec={c.vec}")
        elif (rows * cols) % (c.vec * c.threads):
            out.append(f"{op} tile {rows}*{cols} = {rows * cols} is not a multiple of "
                       f"{c.vec}*threads = {c.vec * c.threads}")
    return "; ".join(out) or None


def _global_tile(c: KernelConfig, op: str) -> tuple[int, int]:
    """(rows, contiguous columns) of one K step's tile of A or B as it lies in global memory."""
    if op == "A":
        return (c.BK, c.BM) if c.a_transposed else (c.BM, c.BK)
    return (c.BN, c.BK) if c.b_transposed else (c.BK, c.BN)


@_tiled("PADDING")
def _padding(c, d):
    if c.pad_a < 0 or c.pad_b < 0 or c.pad_a > 32 or c.pad_b > 32:
        return f"pad_a = {c.pad_a}, pad_b = {c.pad_b}; padding runs from 0 to 32 floats"
    return None


@_simt("SWIZZLE")
def _swizzle(c, d):
    out = []
    for op, swz, pad, (_, row) in (("A", c.swz_a, c.pad_a, c.a_tile_shape), ("B", c.swz_b, c.pad_b, c.b_tile_shape)):
        if swz == 1:
            continue
        if swz not in (2, 4, 8, 16, 32):
            out.append(f"swz_{op.lower()} = {swz}; valid: 1 (off), 2, 4, 8, 16, 32")
        elif pad:
            out.append(f"{op} has both padding ({pad}) and swizzle ({swz}); choose one")
        elif row % (4 * swz):
            out.append(f"{op}'s shared row of {row} floats holds {row // 4} 16-byte chunks, "
                       f"not a multiple of swz_{op.lower()} = {swz}")
    if c.swz_a > 1 and not c.a_kmajor:
        out.append("swz_a needs a_kmajor (the swizzle permutes 16-byte chunks of M)")
    return "; ".join(out) or None


@_simt("STAGES")
def _stages(c, d):
    if c.stages > 8:
        return f"stages = {c.stages}; at most 8"
    if c.stages > 2 and not c.async_copy:
        return f"stages = {c.stages} needs async_copy (register staging double-buffers at most)"
    if c.async_copy and c.stages < 2:
        return "async_copy needs stages >= 2 (a copy must have a buffer to land in while another is read)"
    return None


@_simt("ASYNC_ARCH")
def _async_arch(c, d):
    if c.async_copy and d.cc < (8, 0):
        return f"cp.async needs sm_80 or newer; the {d.key} is {d.arch}"
    return None


@_staged("SHARED_MEMORY")
def shared_memory(c, d):
    if c.smem_bytes > d.smem_per_block_optin:
        c_tile = f" and C's {c.BM}x{c.c_ld} staging tile" if c.persistent_blocks else ""
        return (f"{c.smem_bytes} bytes of shared memory ({c.stages} stages x {c.smem_per_stage}{c_tile}); "
                f"the {d.key} allows {d.smem_per_block_optin} per block. Fewer stages or a smaller tile fit")
    return None


@_simt("REGISTERS")
def _registers(c, d):
    return registers.violation(c, d, f"{c.accumulators} accumulators")


@_simt("FRAGMENTS")
def _fragments(c, d):
    bad = choice(c.frag, FRAGMENT_LOADS)
    if bad:
        return bad
    sm, sn = c.WM // max(c.WMITER, 1), c.WN // max(c.WNITER, 1)
    if c.frag == "shfl" and (sm > 32 or sn > 32):
        return f"shfl fragments need warp sub-tiles of at most 32x32 (one value per lane), got {sm}x{sn}"
    return None


@_staged("SPLIT_K")
def _split_k(c, d):
    if c.split_k > 64:
        return f"split_k = {c.split_k}; at most 64"
    return choice(c.reduce, REDUCTIONS)


@_simt("INTERLEAVE")
def _interleave(c, d):
    """The interleaved loop rides on the register-staged double buffer with fragment prefetch: its copies
    go out at K step 1 and its stores come before the last step, so BK leaves room for both."""
    if not c.interleave:
        return None
    if c.stages != 2 or c.async_copy or not c.prefetch or c.frag != "lds":
        return ("interleave needs the register-staged double buffer with prefetched shared-memory fragments "
                f"(stages = 2, async_copy = false, prefetch = true, frag = 'lds'); got "
                f"stages = {c.stages}, async_copy = {str(c.async_copy).lower()}, prefetch = {str(c.prefetch).lower()}, "
                f"frag = {c.frag!r}")
    rows = c.WMITER * c.TM
    staged = (c.BM * c.BK + c.BN * c.BK) // max(c.threads, 1)   # floats a thread stages: at most one store each
    steps = -(-staged // max(rows, 1))
    if c.BK - 1 - steps < 2:
        return (f"interleave spreads {staged} stores over {rows} FMA rows a K step ({steps} steps) after the copies of "
                f"step 1, before the last step: BK = {c.BK} is too shallow; use a deeper BK")
    return None


@_simt("SIMT_DEFAULTS")
def _simt_defaults(c, d):
    # coalesced only changes the naive kernels; a simt config that set it would share its name
    return None if c.coalesced else "coalesced = false applies to the naive family only; leave it true"


@_staged("BOUNDS")
def _bounds(c, d):
    return choice(c.bounds, BOUNDS)


@_staged("OCCUPANCY")
def _occupancy(c, d):
    if c.min_blocks > 1 and c.min_blocks * c.smem_bytes > d.smem_per_sm:
        return (f"min_blocks = {c.min_blocks} blocks x {c.smem_bytes} bytes of shared memory exceed the "
                f"{d.smem_per_sm} bytes of an SM")
    if c.min_blocks * c.threads > d.max_threads_per_sm:
        return f"min_blocks = {c.min_blocks} x {c.threads} threads exceed {d.max_threads_per_sm} per SM"
    return None
