"""Plain-words description of what a kernel config does, for ``gemmgen explain``.

>>> from gemmgen.kernel.presets import preset
>>> features(preset("v8"))[0]
'each block computes a 128x128 tile of C with 256 threads (8 warps); each thread an 8x8 tile'
>>> features(preset("tf32x3-ws"))[0].startswith("warp-specialized: each block computes a 128x128 tile of C")
True
"""
from __future__ import annotations

from ..kernel.config import KernelConfig

_LAYOUT = {"N": "row-major", "T": "column-major"}


def features(c: KernelConfig) -> list[str]:
    """One sentence per idea the kernel uses, in the order the seed progression adds them."""
    if c.family == "naive":
        return _naive(c)
    if c.family == "skinny":
        return _skinny(c)
    if c.warp_specialized:
        lines = [_ws_tiling(c), _ws_math(c), _ws_pipeline(c), _ws_operands(c)]
        return lines + [text for flag, text in _optional(c) if flag]
    if c.tensor_core:
        lines = [_tc_tiling(c), _tc_math(c), _k_loop(c), _tc_loads(c)]
        return lines + [text for flag, text in _optional(c) if flag]
    lines = [_tiling(c), _k_loop(c), _layout_and_loads(c)]
    lines += [text for flag, text in _optional(c) if flag]
    return lines


def _naive(c: KernelConfig) -> list[str]:
    walk = ("threadIdx.x walks columns of C: a warp reads one row of B and writes one row of C in "
            "single transactions (coalesced)") if c.coalesced else (
            "threadIdx.x walks rows of C: a warp's reads of A and writes of C are a whole row apart "
            "(uncoalesced, 32 transactions each)")
    return [f"one thread per element of C in {c.BM}x{c.BN} blocks; each reads a row of A and a column "
            "of B straight from global memory (no reuse through shared memory)", walk,
            f"operands: A {_LAYOUT[c.layout[0]]}, B {_LAYOUT[c.layout[1]]}, C row-major"]


def _skinny(c: KernelConfig) -> list[str]:
    split = (f"; {c.split_k} K slices in separate blocks, summed by "
             + ("atomics into C pre-scaled by beta" if c.reduce == "atomic" else "a reduce kernel over a workspace")
             if c.split_k > 1 else "")
    a_tile = ("as [BM][BK + 4]: each lane reads a float4 of k from its row, 8 lanes on 8 bank groups"
              if c.skinny_k_contiguous else "as stored, [BK][BM] (rows contiguous)")
    big, small = ("B", "A") if c.swap else ("A", "B")
    staged = small if c.prefetch else "A and B"
    if c.prefetch:
        a_tile = "is not staged: each lane reads its rows of a K step straight into registers, a step ahead"
    rows = (f"M <= {c.BN} (swap): the kernel computes C^T = op(B)^T op(A)^T and stores C transposed; each block "
            f"computes {c.BM} columns of C" if c.swap else f"N <= {c.BN}: each block computes {c.BM} rows of C")
    return [f"{rows} with {c.threads} threads; each lane owns {c.TM} of them and all {c.BN} of the other side "
            f"({c.accumulators} accumulators, fp32 FMA)",
            f"the {c.warps_k} warp(s) of a block take consecutive parts of its K range and sum their partials in "
            f"shared memory at the end{split}",
            f"each warp stages its own tiles of {staged}, {c.BK} deep, through a {c.stages}-buffer cp.async ring "
            f"({'16-byte copies where rows are 16-byte aligned, else ' if c.vec == 4 else ''}4-byte copies; "
            "no block barrier in the main loop)",
            f"{big}'s tile {a_tile}; {small}'s [BK][BN] tile is read as float4 "
            "broadcasts (every lane the same address)",
            f"operands: A {_LAYOUT[c.layout[0]]}, B {_LAYOUT[c.layout[1]]}, C row-major"]


def _tiling(c: KernelConfig) -> str:
    warps = c.threads // 32
    text = (f"each block computes a {c.BM}x{c.BN} tile of C with {c.threads} threads ({warps} warps); "
            f"each thread an {c.WMITER * c.TM}x{c.WNITER * c.TN} tile")
    if c.WMITER * c.WNITER > 1:
        text += f" as {c.WMITER}x{c.WNITER} sub-tiles of {c.TM}x{c.TN} inside a {c.WM}x{c.WN} warp tile"
    return text


def _tc_tiling(c: KernelConfig) -> str:
    if c.uses_wgmma:
        return (f"each block computes a {c.BM}x{c.BN} tile of C with {c.threads} threads ({c.threads // 128} "
                f"warpgroups of 4 warps); each warpgroup a {c.WM}x{c.WN} tile as {c.WM // 64} wgmma.m64n{c.WN}k"
                f"{32 // c.elem_bytes} per step (Hopper's asynchronous warpgroup MMA, B read from shared memory; "
                f"{c.accumulators} fp32 accumulators per thread)")
    return (f"each block computes a {c.BM}x{c.BN} tile of C with {c.threads} threads ({c.threads // 32} warps); "
            f"each warp a {c.WM}x{c.WN} tile of {c.WM // 16}x{c.WN // 8} tensor-core tiles of 16x8 "
            f"(mma.sync m16n8k8, {c.accumulators} fp32 accumulators per thread)")


def _ws_tiling(c: KernelConfig) -> str:
    consumers = c.consumers
    crew = (f"one producer warpgroup and {consumers} consumer warpgroup{'s' if consumers > 1 else ''} "
            f"({c.threads} threads)")
    if c.scheduler == "pingpong":
        work = (f"each block has {crew}; the consumers take its {c.BM}x{c.BN} tiles of C in turn (pingpong), "
                f"one storing its tile while the other multiplies, each tile all {c.WM} rows by all {c.BN} columns")
    else:
        work = (f"each block computes a {c.BM}x{c.BN} tile of C with {crew}; each consumer owns {c.WM} rows by "
                f"all {c.BN} columns")
    return (f"warp-specialized: {work}, {c.WM // 64} wgmma.m64n{c.BN}k{32 // c.elem_bytes} per step "
            f"({c.accumulators} fp32 accumulators per thread), "
            + ("registers moved to the consumers with setmaxnreg" if c.min_blocks == 1 else
               f"{c.min_blocks} blocks an SM, each thread keeping the registers __launch_bounds__ gives it")
            + (f"; a persistent grid of {c.persistent_blocks} blocks walks the tiles" if c.persistent_blocks else ""))


def dtype_word(c: KernelConfig) -> str:
    """The 16-bit input type in words: fp16 or bf16."""
    return {"f16": "fp16", "bf16": "bf16"}.get(c.dtype, c.dtype)


def _ws_math(c: KernelConfig) -> str:
    if c.family == "tf32":
        return ("TF32: the copy engine rounds the operands to 10 mantissa bits on the way in (a TFLOAT32 tensor "
                "map), fp32 accumulation; about 1e-3 relative error")
    if c.family == "tf32x3":
        return _tc_math(c)
    return (f"{dtype_word(c)} inputs, exact products on the tensor cores; "
            + ("each stage sums into a fresh partial added to the fp32 accumulators with round-to-nearest adds"
               if c.partials else "accumulated straight on the tensor cores across K, as cuBLAS does"))


def _ws_pipeline(c: KernelConfig) -> str:
    if c.async_copy:
        copy = ("the producer's 128 threads copy with cp.async (16 bytes where k is contiguous and rows are "
                "16-byte aligned, else 4 bytes, transposed on the way), then split B into big and small parts")
    else:
        copy = "one producer thread issues TMA copies (the copy engine zero-fills the edges)"
    return (f"K advances {c.BK} at a time through {c.stages} shared-memory stages: {copy}; producer and consumers "
            f"meet on mbarriers (full, {'ready, ' if c.family == 'tf32x3' else ''}empty), with no block barrier "
            "in the main loop")


def _ws_operands(c: KernelConfig) -> str:
    a = ("A is read from the stage into registers and split there (3xTF32), B by wgmma from shared memory"
         if c.family == "tf32x3" else "wgmma reads A and B from shared memory")
    if c.a_mmajor_stage:
        stages = ("A as it lies, rows of k padded to BM + 8 (16-byte copies), and B K-major in the 128-byte swizzle "
                  "wgmma's descriptors read")
    elif c.a_kshift_stage:
        stages = ("A unswizzled, rows of BK + 4 (16-byte copies, unaligned rows shifted), and B K-major in the "
                  "128-byte swizzle wgmma's descriptors read")
    else:
        stages = ("K-major tiles in the 128-byte swizzle TMA writes and wgmma's descriptors read"
                  + (" (A transposed by the producer's 4-byte copies: a_kmajor = false)" if c.a_mmajor_choice else ""))
    return f"A is {_LAYOUT[c.layout[0]]} and B {_LAYOUT[c.layout[1]]} in global memory; every stage holds {stages}; {a}"


def _tc_math(c: KernelConfig) -> str:
    if c.family == "tf32x3":
        return ("3xTF32: each operand is split into big (its top 10 mantissa bits) and small = x - big; three "
                "products (small*big, big*small, big*big) per k8 step, summed into fp32 accumulators with "
                "round-to-nearest adds, keep fp32 accuracy")
    return "TF32: operands rounded to 10 mantissa bits (cvt.rna), fp32 accumulation; about 1e-3 relative error"


def _tc_loads(c: KernelConfig) -> str:
    how = {True: "read with scalar LDS (m/n contiguous)", False: "read with ldmatrix (k contiguous)"}
    return (f"A is {_LAYOUT[c.layout[0]]} and B {_LAYOUT[c.layout[1]]}; shared tiles keep that layout so each "
            f"cp.async moves {4 * c.vec} bytes; A fragments {how[c.a_smem_kmajor]}, B fragments {how[c.b_smem_kmajor]}")


def _k_loop(c: KernelConfig) -> str:
    if c.async_copy:
        how = (f"a ring of {c.stages} shared-memory stages filled by cp.async, {c.stages - 1} "
               f"tile{'s' if c.stages > 2 else ''} in flight")
    elif c.stages == 2:
        how = "two shared-memory buffers: the next tile is loaded into registers while this one is used"
    else:
        how = "one shared-memory buffer, loaded and then used between two barriers"
    return f"K advances {c.BK} at a time through {how}"


def _layout_and_loads(c: KernelConfig) -> str:
    store = "transposed (k-major) so a thread's column of A is contiguous" if c.a_kmajor else "as it is read"
    return (f"A is {_LAYOUT[c.layout[0]]} and B {_LAYOUT[c.layout[1]]} in global memory, read {c.vec} "
            f"float{'s' if c.vec > 1 else ''} per load; A is stored in shared memory {store}")


def _optional(c: KernelConfig) -> list[tuple[bool, str]]:
    return [
        (bool(c.pad_a or c.pad_b), f"shared rows padded by {c.pad_a} (A) and {c.pad_b} (B) floats so "
                                   "column walks spread over the 32 banks"),
        (not c.warp_specialized and (c.swz_a > 1 or c.swz_b > 1), f"16-byte chunks XOR-swizzled (period A {c.swz_a}, B {c.swz_b}) "
                                     "against bank conflicts, without padding's wasted space"),
        (c.raster > 1, f"thread-block swizzle: consecutive blocks walk {c.raster} tile rows together "
                       "so resident blocks share A and B in L2"),
        (c.prefetch, "overlapped split: the next stage's tile of A is split (and transposed) into a second buffer "
                     "while this stage's wgmma run" if c.uses_wgmma else
                     "register prefetch: the next k's fragments are read while this k's FMAs run"),
        (c.frag == "shfl", "fragments are exchanged between lanes with __shfl_sync instead of each lane "
                           "reading shared memory"),
        (c.interleave, "interleaved loop: the next tile's copies, their shared stores and the next k's "
                       "fragment loads each ride on a row of FMAs, so no burst of them stalls the FMAs"),
        (c.split_k > 1, f"split-K: {c.split_k} blocks share each tile's K range; partial sums meet "
                        + ("by atomicAdd into C (pre-scaled by beta)" if c.reduce == "atomic" else
                           "in a workspace, summed in a fixed order by a reduce kernel")),
        (c.bounds == "none", "fast path: no bounds checks, only for shapes the tile divides"),
        (c.min_blocks > 1, f"__launch_bounds__ asks for {c.min_blocks} resident blocks per SM"),
        (c.swap, f"swapped: the kernel computes C^T = op(B)^T op(A)^T (layout {c.run_layout}) and stores C transposed "
                 f"from a staged tile, so each block computes {c.BN} rows by {c.BM} columns of C (few rows of C "
                 "fill a narrow tile instead of a mostly empty 64-row one)"),
    ]


def intensity(c: KernelConfig) -> tuple[float, str]:
    """Arithmetic intensity in FLOP per byte of global traffic, and how it was derived.

    >>> intensity(KernelConfig(BM=128, BN=128))[0]
    32.0
    """
    if c.family == "skinny":   # A read once; B (K x N) re-read by every block of rows, through L2
        return 2.0 * c.BN / 4.0, f"2*BN FLOP per 4-byte element of A (BN = {c.BN}): A is read once"
    if c.family == "naive":
        # Every FMA (2 FLOP) loads one float of A and one of B (8 bytes) from global memory.
        return 0.25, "2 FLOP per 8 bytes loaded: no reuse (caches give a few times more in practice)"
    return c.arithmetic_intensity(), f"BM*BN / (2*(BM+BN)) = {c.BM}*{c.BN} / (2*({c.BM}+{c.BN}))"
