"""Where the tensor-core families put each element of a tile in shared memory, as C expressions.

A tile keeps its global layout (so every cp.async moves 16 contiguous bytes): A is ``[BM][BK]``
for layout N (k contiguous) or ``[BK][BM]`` for T; B is ``[BK][BN]`` for N or ``[BN][BK]`` for T.
Bank conflicts of the fragment loads are avoided by padding each row, or by XOR-swizzling the
16-byte chunks of a row (a chunk stays whole for cp.async and ldmatrix):

* k-contiguous rows (read with ``ldmatrix``: 8 rows at the same k chunk per 8x4 matrix): the chunk
  is XORed with the row's 128-byte line number, so 8 consecutive rows hit 8 different bank groups.
* k-major rows (read with scalar LDS: lanes t=0..3 read rows k..k+3, lanes g=0..7 eight m/n):
  the chunk is XORed with ``2 * (k mod 4)``, so the 4 rows x 2 chunks land in 8 bank groups.

The same strings are rendered into the kernel (``a_off``/``b_off``) and evaluated by the tests,
which check that each offset map is a bijection and that the loads are conflict-free.

>>> from gemmgen.kernel.config import KernelConfig
>>> offset(KernelConfig(family="tf32", BK=32, swz_a=8, async_copy=True, stages=3), "A")
'(m) * 32 + (((((k) >> 2) ^ (((m) >> 0) & 7)) << 2) | ((k) & 3))'
"""
from __future__ import annotations

from ..kernel.config import KernelConfig


def layout(c: KernelConfig, op: str) -> tuple[bool, int, int]:
    """(k-major?, row length in floats incl. padding, XOR swizzle 8 or 1) of A or B's shared tile."""
    if op == "A":
        return c.a_smem_kmajor, c.a_tile_shape[1], c.swz_a
    return c.b_smem_kmajor, c.b_tile_shape[1], c.swz_b


def offset(c: KernelConfig, op: str) -> str:
    """C expression of the float offset of element (k, m) of A or (k, n) of B inside one stage."""
    kmajor, ld, swz = layout(c, op)
    other = "m" if op == "A" else "n"
    row, col = ("k", other) if kmajor else (other, "k")
    if swz == 1:
        return f"({row}) * {ld} + ({col})"
    return f"({row}) * {ld} + ((((({col}) >> 2) ^ {_xor(kmajor, ld, row)}) << 2) | (({col}) & 3))"


def _xor(kmajor: bool, ld: int, row: str) -> str:
    """The value XORed into the 16-byte chunk index of ``row`` (kernel.rules.tensor_core.swizzle_ok holds)."""
    if kmajor:
        return f"((({row}) & 3) << 1)"      # rows of whole 128-byte lines: 4 rows x 2 chunks -> 8 groups
    rows_per_line = max(1, 32 // ld)        # k-contiguous rows of 8, 16 floats share a 128-byte line
    chunks = min(ld // 4, 8)
    return f"((({row}) >> {rows_per_line.bit_length() - 1}) & {chunks - 1})"


def uses_ldmatrix(c: KernelConfig, op: str) -> bool:
    """k-contiguous tiles are read with ldmatrix: an 8x(4 floats) matrix is exactly the TF32 fragment."""
    return not layout(c, op)[0]
