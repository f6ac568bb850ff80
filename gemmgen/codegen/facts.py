"""The facts templates need beyond the config itself: header lines, and how each tile is read and stored.

Everything here is derived from a :class:`~gemmgen.kernel.config.KernelConfig`; the templates read
it as ``g`` (the config is ``c``). ``gemmgen explain`` shows :func:`accepts_text` and
:func:`launch_lines` too.

>>> from gemmgen.kernel.presets import preset
>>> launch_lines(preset("v12"))[0].endswith("_scale<<<ceil(M*N/256), 256>>>(M, N, beta, C, ldc)")
True
>>> b = operand(preset("v8"), "B")
>>> b.rows_are_k, b.rows, b.cols, b.loads
(True, 8, 128, 1)
"""
from __future__ import annotations

import json
from types import SimpleNamespace

from ..kernel.config import EPILOGUE_LD, HALF, KernelConfig
from ..kernel.rules.registers import tma_partials, tma_registers
from . import smem
from .build_line import PLACEHOLDER, build_line, run_command

TMA_TYPES = {"f32": "FLOAT32", "tf32": "TFLOAT32", "f16": "FLOAT16", "bf16": "BFLOAT16"}   # cuda.h's names
DTYPE_WORDS = {"f16": "fp16 (IEEE binary16)", "bf16": "bf16 (bfloat16)"}   # the header's name of a 16-bit input
_VEC_TYPES = {1: "unsigned short", 2: "unsigned", 4: "uint2", 8: "uint4"}   # VEC halves in one load
RAGGED_MAX_SUMS = 80   # a consumer thread's accumulators, at most, for the separate ragged last stage


def facts(c: KernelConfig, command: str, arch: str, harness: bool = False, file: str = PLACEHOLDER) -> SimpleNamespace:
    """Everything the family's template reads from ``g``; ``arch`` is what the source is built for
    (the config's target: sm_90a for wgmma), ``harness`` whether it is a whole program, ``file``
    where it is written (its build line names it)."""
    g = SimpleNamespace(
        command=command,
        build=build_line(arch, harness, file),
        run=run_command(file),
        accepts=accepts_text(c),
        launch_lines=launch_lines(c),
        config_lines=config_lines(c),
    )
    if c.warp_specialized:
        _ws_facts(c, g)
    elif c.family == "simt":
        _simt_facts(c, g)
    elif c.tensor_core:
        _tensor_core_facts(c, g)
    elif c.family in HALF:
        _half_facts(c, g)
    elif c.family == "skinny":
        _skinny_facts(c, g)
    return g


def config_lines(c: KernelConfig, width: int = 96) -> list[str]:
    """The config's JSON wrapped between its key-value pairs, never inside one: the lines, with
    the comment marks taken off, are the JSON that ``gemmgen emit --config`` reads back.

    >>> lines = config_lines(KernelConfig(label="v5 with BK=16, stages=3"))
    >>> json.loads("\\n".join(lines)) == KernelConfig(label="v5 with BK=16, stages=3").to_dict()
    True
    >>> max(map(len, lines)) <= 96, lines[0][:12]
    (True, '{"BK": 8, "B')
    """
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(c.to_dict().items())]
    lines = ["{" + items[0]]
    for item in items[1:]:
        if len(lines[-1]) + len(item) + 3 > width:   # ", " before it, "," or "}" after
            lines[-1] += ","
            lines.append(" " + item)   # continuation lines line up under the first key
        else:
            lines[-1] += f", {item}"
    lines[-1] += "}"
    return lines


def _simt_facts(c: KernelConfig, g: SimpleNamespace) -> None:
    """Tiles, and whether fragments and C's stores can use 16-byte vectors."""
    g.a, g.b = operand(c, "A"), operand(c, "B")
    g.a_frag_vec = c.frag == "lds" and c.a_kmajor and c.TM % 4 == 0 and c.a_tile_shape[1] % 4 == 0
    g.b_frag_vec = c.frag == "lds" and c.TN % 4 == 0 and c.b_tile_shape[1] % 4 == 0
    g.c_vec = c.TN % 4 == 0 and not c.split_atomic
    g.staged = not c.async_copy   # tiles reach shared memory through registers (ld_vec), not by cp.async
    g.st_vec = g.staged and (g.a.smem_vec or g.b.smem_vec)   # an operand's vectors are stored whole (st_vec)
    # Checked copies test an operand's row alignment (a_vec_ok, b_vec_ok) where they move whole vectors:
    # through registers always, by cp.async only where the vector lands contiguously in shared memory.
    g.a_vec_ok, g.b_vec_ok = (c.bounds == "checked" and (g.staged or d.smem_vec) for d in (g.a, g.b))


def _skinny_facts(c: KernelConfig, g: SimpleNamespace) -> None:
    """Which operand has its k contiguous: the big one X (A; B when swapped) and the small one Y."""
    g.big_k = c.skinny_k_contiguous
    g.small_k = not c.a_transposed if c.swap else c.b_transposed


def _tensor_core_facts(c: KernelConfig, g: SimpleNamespace) -> None:
    """Tiles, their swizzled shared offsets, and which fragments ldmatrix reads."""
    g.a, g.b = operand(c, "A"), operand(c, "B")
    g.a_off, g.b_off = smem.offset(c, "A"), smem.offset(c, "B")
    g.a_ldmatrix, g.b_ldmatrix = smem.uses_ldmatrix(c, "A"), smem.uses_ldmatrix(c, "B")
    ni = c.WN // 8   # mma.sync's n8 tiles across the warp tile
    g.b_pairs = g.b_ldmatrix and ni >= 2        # B's n8 tiles read two at a time (ldmatrix_x4) ...
    g.b_single = g.b_ldmatrix and ni % 2 == 1   # ... and an odd last one alone (ldmatrix_x2)
    g.c_vec = not c.split_atomic   # float2 stores of C
    g.b.shifted = c.uses_wgmma and shifted_rows(c)
    # The plain wgmma kernel's last stage of a ragged K, after the ring's loop over the full stages, issues
    # only its k steps inside K, as the warp-specialized kernels' does: 3xTF32 with BK = 32, one block an SM,
    # without prefetch (H100: 0.95-0.985x the time on 7 of 8 shapes; with BK = 64, 500x2000x70 TT ran 1.09x).
    fits = c.family == "tf32x3" and c.bounds == "checked" and not c.prefetch and c.min_blocks == 1 and c.BK == 32
    g.ragged_steps = "tail" if c.uses_wgmma and fits else None   # as in _ws_facts


def _half_facts(c: KernelConfig, g: SimpleNamespace) -> None:
    """What the wmma template needs beyond the shared facts: element and vector types, fragment
    layouts (row: the contiguous side is k for A, n for B) and the PTX type suffix of the product."""
    g.a, g.b = operand(c, "A"), operand(c, "B")
    g.a_off, g.b_off = smem.offset(c, "A"), smem.offset(c, "B")
    g.elem = f"{c.dtype}_bits"
    g.dtype_words = DTYPE_WORDS.get(c.dtype, c.dtype)
    g.vec_type = _VEC_TYPES.get(c.vec, "uint4")
    g.a_lay = "col" if c.a_smem_kmajor else "row"
    g.b_lay = "row" if c.b_smem_kmajor else "col"
    g.frag_regs = 8 if c.dtype == "f16" else 4        # PTX's fragment of 16x16 f16 (sm_70 layout) / bf16
    g.mma_types = "f32.f32" if c.dtype == "f16" else f"f32.{c.dtype}.{c.dtype}.f32"
    g.epi_ld = EPILOGUE_LD
    g.c_vec = not c.split_atomic   # float4 stores of C


def _ws_facts(c: KernelConfig, g: SimpleNamespace) -> None:
    """The warp-specialized kernels (their producer copies by TMA or cp.async): element type, wgmma's k and
    type, warpgroups and how the block's 64K registers are split between the producer and the consumers
    (setmaxnreg)."""
    g.elem = "float" if c.dtype == "f32" else f"{c.dtype}_bits"
    g.dtype_words = DTYPE_WORDS.get(c.dtype, "fp32")
    g.kstep = 32 // c.elem_bytes                      # wgmma's k: 32 bytes of a row (k8 tf32, k16 halves)
    g.wgmma_type = "tf32" if c.dtype == "f32" else c.dtype
    g.consumers = c.consumers
    g.mi = c.WM // 64
    g.transform = c.family == "tf32x3"       # producer warps 1..3 split each stage (TF32: the copy engine rounds)
    g.tma_type = "CU_TENSOR_MAP_DATA_TYPE_" + TMA_TYPES[c.tma_type]
    g.partials = tma_partials(c)
    g.split_batch = 2 if c.async_copy else 1   # B's float4s a transformer loads before storing (72 or 40 registers)
    g.producer_regs, g.consumer_regs = tma_registers(g.consumers, c.async_copy, c.min_blocks)
    g.rebalance = c.min_blocks == 1         # one block an SM: setmaxnreg moves the producer's registers
    # The last stage of a ragged K issues only its k steps inside K, from a second copy of the stage's code:
    # after the loop ("tail"), or, in persistent cp.async kernels, where that spilled 100-470 bytes and ran
    # 14-18% slower, chosen inside the loop ("branch"; TMA kernels lost 5-6% that way). The others keep the
    # one loop: kernels near their register limit (two blocks an SM: ptxas spilled more or serialized wgmma;
    # over RAGGED_MAX_SUMS sums a consumer thread, BN 176-208: 4-290 more bytes spilled), pingpong (wgmma
    # serialized behind the branch, C7520), and kernels without partials (TF32, f16, bf16: the guarded
    # wgmma beside the previous stage's in flight were serialized, C7515, 13% slower at deep K).
    tight = c.min_blocks > 1 or c.accumulators > RAGGED_MAX_SUMS or c.scheduler == "pingpong" or not g.partials
    g.ragged_steps = None if tight else "branch" if c.persistent_blocks and c.async_copy else "tail"
    # The epilogue stages each consumer's WM x BN tile of C (persistent: in a region of its own; else in
    # the drained stages), then stores rows with consecutive lanes; where the consumers' tiles do not fit
    # in the stages, fragments go straight to C.
    g.c_ld = c.c_ld
    g.c_stage = c.c_staged
    g.run_layout = c.run_layout               # swapped: the layout of C^T = op(B)^T op(A)^T
    g.a_mmajor = c.a_mmajor_stage             # A staged m-major, [BK][BM + 8], read into registers
    g.a_kshift = c.a_kshift_stage             # A staged k-major unswizzled, [BM][BK + 4], rows shifted, read into registers


def operand(c: KernelConfig, op: str) -> SimpleNamespace:
    """How one K step's tile of A or B lies in global memory and lands in shared memory, with the index
    math of its copies (:func:`copy_index`).

    The global tile has ``rows`` x ``cols`` with ``cols`` contiguous; its rows are k when
    ``rows_are_k`` (A stored T, B stored N), else m or n. Each thread moves ``loads`` vectors of
    ``vec`` elements. ``smem_vec`` says whether the vector lands contiguously in shared memory (else
    it is transposed element by element).
    """
    rows_are_k = c.a_transposed if op == "A" else not c.b_transposed
    mn_tile = c.BM if op == "A" else c.BN
    rows, cols = (c.BK, mn_tile) if rows_are_k else (mn_tile, c.BK)
    kmajor, ld = (c.a_smem_kmajor, c.a_tile_shape[1]) if op == "A" else (c.b_smem_kmajor, c.b_tile_shape[1])
    # a vector stays whole in shared memory when the shared tile's rows are the global tile's rows
    smem_vec = kmajor == rows_are_k and ld % c.vec == 0
    return SimpleNamespace(op=op, rows_are_k=rows_are_k, loads=rows * cols // (c.vec * c.threads), rows=rows,
                           cols=cols, smem_vec=smem_vec, vec=c.vec, **copy_index(op, rows_are_k))


def copy_index(op: str, rows_are_k: bool) -> dict[str, str]:
    """The index math (C expressions) of one copy of a K step's tile of ``op``: the copy moves row ``r``,
    columns ``cc`` .. ``cc + VEC - 1`` of the global tile, which starts at row ``row0`` and column ``col0``
    and ends before ``row_end`` and ``col_end``: A[m][k] (N) or A[k][m] (T), B[k][n] (N) or B[n][k] (T).

    >>> d = copy_index("A", False)
    >>> d["gptr"], d["soff"], d["row_ok"]
    ('A + (long long)(bm0 + r) * lda + (k0 + cc)', 'a_off(cc, r)', 'bm0 + r < M')
    >>> copy_index("B", True)["gptr_clamped"]
    'B + (long long)(k0 + r) * ldb + min(bn0 + cc, (N - 1) / VEC * VEC)'
    """
    mn0, mn_end = ("bm0", "M") if op == "A" else ("bn0", "N")
    row0, col0 = ("k0", mn0) if rows_are_k else (mn0, "k0")
    row_end, col_end = ("kEnd", mn_end) if rows_are_k else (mn_end, "kEnd")
    src = f"{op} + (long long)"
    # clamped: a row (or vector) past the edge of M or N is read at the last one inside instead (the
    # interleaved SIMT loop's edges; K is not clamped)
    clamped = (f"{src}({row0} + r) * ld{op.lower()} + min({mn0} + cc, ({mn_end} - 1) / VEC * VEC)" if rows_are_k
               else f"{src}min({mn0} + r, {mn_end} - 1) * ld{op.lower()} + ({col0} + cc)")
    off = f"{op.lower()}_off"
    return dict(
        mn0=mn0,                                          # the block's first m (A) or n (B)
        row0=row0, col0=col0,                             # the global tile's first row and column
        row_end=row_end, col_end=col_end,                 # ... and the row and column past its end
        gptr=f"{src}({row0} + r) * ld{op.lower()} + ({col0} + cc)",   # the copy's source in global memory
        gptr_clamped=clamped,                             # ... with rows (vectors) past M or N read at the last inside
        row_ok=f"{row0} + r < {row_end}",                 # whether the copy's row is inside the matrix
        col=f"{col0} + cc",                               # the copy's first column
        soff=f"{off}(r, cc)" if rows_are_k else f"{off}(cc, r)",   # its first element in shared memory
        soff_e=f"{off}(r, cc + e)" if rows_are_k else f"{off}(cc + e, r)",   # its element e there
    )


def shifted_rows(c: KernelConfig) -> bool:
    """Whether the cp.async wgmma kernel copies B's unaligned rows as the 16-byte chunks around them (a
    row starting up to 3 elements late in its shared row) instead of element by element: B is n
    contiguous (its rows are k, read into registers by index) and its shared rows hold 8 elements of
    padding: room for the one extra chunk, and fragment loads that stay 2-way in bank conflicts when
    shifted (at a padding of 4 they are 2-way unshifted, up to 3-way shifted: H100, 9051x34x2796 TN
    ran 0.87x -> 0.76x of cuBLAS shifted, so those kernels keep element copies), unswizzled (the shift
    is added to the offset), and where launch bounds cap the registers (min_blocks >= 2): without them
    the copies' registers cost a kernel near 170 (3 blocks of 128 threads an SM) a block an SM (the
    unrolled copies: NVRTC 181 registers for the 64x64 preset, nvcc 167; rolled ones: H100, 279x230x7525
    NN, a 64x64 split-K kernel, 1.04x -> 0.88x); and where the block's threads cover whole rows of 16-byte
    chunks, rows a multiple of 4 apart, BK a multiple of that step (the unrolled copies, one shift a
    thread: templates/wgmma_stage.cuh.j2 shifted_copies). (A's rows of k, where A is m contiguous, are
    copied into a stage without padding: WGMMA_SMEM_LAYOUT.)

    >>> from gemmgen.kernel.presets import preset
    >>> c = preset("tf32x3-wgmma").replace(layout="TN", pad_b=8, min_blocks=2)
    >>> shifted_rows(c), shifted_rows(c.replace(pad_b=4)), shifted_rows(c.replace(layout="NT")), shifted_rows(c.replace(min_blocks=1))
    (True, False, False, False)
    """
    d = operand(c, "B")
    chunks = c.BN // 4                                         # 16-byte chunks a row
    step = c.threads // chunks if c.threads % chunks == 0 else 0   # rows apart a thread's chunks lie
    return (d.rows_are_k and d.smem_vec and c.vec == 4 and c.bounds == "checked" and c.elem_bytes == 4
            and c.b_tile_shape[1] - c.BN >= 8 and smem.layout(c, "B")[2] == 1 and c.min_blocks >= 2
            and step > 0 and step % 4 == 0 and c.BK % step == 0)


def launch_lines(c: KernelConfig) -> list[str]:
    """Human-readable launch geometry for the header comment."""
    if c.family == "naive":
        g = "grid  = (ceil(N/{0}), ceil(M/{1}), 1)" if c.coalesced else "grid  = (ceil(M/{1}), ceil(N/{0}), 1)"
        return [g.format(c.BN, c.BM), f"block = {c.block()}", "dynamic shared memory = 0 bytes"]
    rows, cols = ("N", "M") if c.swap else ("M", "N")   # a swapped kernel's rows are N's (KernelConfig.tiles)
    tiles = f"ceil({rows}/{c.BM}) * ceil({cols}/{c.BN})"
    lines = [f"grid  = (min({c.persistent_blocks}, {tiles}), 1, 1)" if c.persistent_blocks else f"grid  = ({tiles}, 1, {c.split_k})",
             f"block = ({c.threads}, 1, 1)",
             f"dynamic shared memory = {c.smem_bytes} bytes"
             + (" (needs cudaFuncAttributeMaxDynamicSharedMemorySize)" if c.smem_bytes > 48 * 1024 else "")]
    if c.split_atomic:
        lines.insert(0, f"first {c.name}_scale<<<ceil(M*N/256), 256>>>(M, N, beta, C, ldc)")
        if c.split_flags:
            lines.insert(1, "  with W = nullptr; or this kernel alone, W = gridDim.x zeroed words of split flags "
                            "(zero again after it)")
    elif c.split_workspace:
        lines.append(f"W: workspace of {c.split_k}*M*N floats; then "
                     f"{c.name}_reduce<<<ceil(M*N/256), 256>>>(M, N, alpha, beta, C, ldc, W)")
    return lines


def accepts_text(c: KernelConfig) -> str:
    """The shapes a config computes correctly, in words (the header and `gemmgen explain` show it).

    >>> from gemmgen.kernel.presets import preset
    >>> accepts_text(preset("v8")).startswith("any M, N, K")
    True
    """
    if c.family == "skinny":
        few, many = ("M", "N") if c.swap else ("N", "M")
        return f"{few} <= {c.BN}, any {many}, K >= 1 and any leading dimensions (edges and misaligned rows are checked)"
    if c.family == "naive" or c.bounds == "checked":
        return "any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)"
    return (f"M % {c.BM} == 0, N % {c.BN} == 0, K % {c.BK * c.split_k} == 0, leading dimensions and "
            f"pointers aligned to 16 bytes (fast path: no bounds checks)")
