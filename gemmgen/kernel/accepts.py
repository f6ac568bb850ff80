"""Which shapes a kernel config computes correctly: :meth:`KernelConfig.accepts` asks :func:`refusal`.

Checked-bounds kernels take every shape and leading dimension (misaligned operands fall back to
scalar loads inside the kernel), but for the interleaved SIMT loop, whose copies are vectors with no
fallback (16-byte rows); TMA kernels need 16-byte rows of A and B; the fast path needs whole tiles
and aligned rows. All of those also need A and B to start on 16-byte boundaries, which only the
caller knows (``aligned``). This module reads only the config's attributes (it imports nothing).

>>> from gemmgen.kernel.config import KernelConfig
>>> KernelConfig().accepts(100, 100, 100) is None, KernelConfig(bounds="none").accepts(100, 128, 8)
(True, 'fast path needs M % 128 == 0 and N % 128 == 0, got M=100, N=128')
>>> KernelConfig(bounds="none").accepts(128, 128, 8, aligned=False)
'fast path reads A and B from 16-byte aligned addresses; these operands start elsewhere'
"""
from __future__ import annotations


SKINNY_MOST = 32   # the skinny family's widest BN (rule SKINNY_TILE): its kernels take N, or M swapped, up to it


def family_refuses(family: str, M: int, N: int) -> str | None:
    """Why no kernel of ``family`` computes an M x N result, or None (the skinny family: neither side small).

    >>> family_refuses("skinny", 512, 512), family_refuses("skinny", 20, 4971), family_refuses("simt", 512, 512)
    ('the skinny kernels compute N <= 32 (or M <= 32, swapped); 512x512 is neither', None, None)
    """
    if family == "skinny" and min(M, N) > SKINNY_MOST:
        return f"the skinny kernels compute N <= {SKINNY_MOST} (or M <= {SKINNY_MOST}, swapped); {M}x{N} is neither"
    return None


def needs_aligned_pointers(c) -> bool:
    """Whether the kernel reads A and B from 16-byte aligned first elements without checking them
    (TMA descriptors, the fast path's and the interleaved SIMT loop's vector loads)."""
    return c.tensor_maps or (c.family != "naive" and c.bounds != "checked") or c.interleave


def refusal(c, M: int, N: int, K: int, lda: int | None = None, ldb: int | None = None,
            ldc: int | None = None, aligned: bool = True) -> str | None:
    """None when this kernel computes the shape correctly, else the reason it does not.

    ``c`` is a KernelConfig; ``lda``/``ldb``/``ldc`` default to the operands' row lengths; ``aligned``
    says whether A's and B's first elements are 16-byte aligned.
    """
    if min(M, N, K) < 1:
        return f"shape {M}x{N}x{K} has a dimension below 1"
    rows = {"lda": M if c.a_transposed else K, "ldb": K if c.b_transposed else N, "ldc": N}
    lds = {name: rows[name] if ld is None else ld for name, ld in (("lda", lda), ("ldb", ldb), ("ldc", ldc))}
    short = next((f"{name} = {ld} is below its row length {rows[name]}"
                  for name, ld in lds.items() if ld < rows[name]), None)
    if short:
        return short
    if c.family == "skinny" and (M if c.swap else N) > c.BN:
        few, n = ("M", M) if c.swap else ("N", N)
        return f"the skinny kernel computes {few} <= {c.BN} (BN), got {few}={n}"
    if not aligned and needs_aligned_pointers(c):
        return (f"{'TMA' if c.tensor_maps else 'fast path'} reads A and B from 16-byte aligned addresses; "
                "these operands start elsewhere")
    if c.tensor_maps:   # the copy engine reads rows that start 16 bytes apart (edges read as zeros)
        per = 16 // c.elem_bytes
        return next((f"TMA needs {name} % {per} == 0 (16-byte rows), got {name}={lds[name]}"
                     for name in ("lda", "ldb") if lds[name] % per), None)
    if c.interleave and c.bounds == "checked":   # vector loads with no fallback; edges are checked
        return next((f"the interleaved loop reads 16-byte rows: needs {name} % {16 // c.elem_bytes} == 0, "
                     f"got {name}={lds[name]}" for name in ("lda", "ldb") if lds[name] % (16 // c.elem_bytes)), None)
    if c.family == "naive" or c.bounds == "checked":
        return None
    return _fast_path_refuses(c, M, N, K, lds)


def _fast_path_refuses(c, M: int, N: int, K: int, lds: dict[str, int]) -> str | None:
    """Why a kernel without bounds checks cannot compute this shape (whole tiles, 16-byte rows), or None."""
    if M % c.BM or N % c.BN:
        return f"fast path needs M % {c.BM} == 0 and N % {c.BN} == 0, got M={M}, N={N}"
    if K % (c.BK * c.split_k):
        return f"fast path needs K % {c.BK * c.split_k} == 0 (BK*split_k), got K={K}"
    align = 16 // c.elem_bytes   # elements per 16 bytes: vector loads of A and B
    for name, per in (("lda", align), ("ldb", align), ("ldc", 4)):
        if lds[name] % per:  # 16-byte rows: vector loads of A and B, float4 stores of C
            return f"fast path needs {name} % {per} == 0 (16-byte rows), got {name}={lds[name]}"
    return None
