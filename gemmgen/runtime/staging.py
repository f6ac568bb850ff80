"""Copies before the kernel: which operands to copy, and into which layout, for a request.

Two kinds of copy can pay (both predicted from the same time models as the kernels, :mod:`.predict`):

- into 16-byte aligned rows of the same layout, for operands whose rows are not (:func:`.dispatch.pack_plan`);
- into the other layout (a transposing copy), so that a kernel timed in another layout serves the
  request: on Hopper the TMA kernels read NT only (K-major A and B, what TF32 wgmma reads from shared
  memory), and run 2.0-2.3x cuBLAS on large NT shapes where the cp.async kernels of NN, TN and TT run
  1.5-1.65x. Transposing B of a 4096^3 NN product moves 2 x 64 MB (~45 us at 70% of the H100's
  bandwidth), 4% of the product.

A layout change is taken where the predicted kernel time in the other layout plus the copies beats the
best plan in the request's own layout by MARGIN, the request is large enough for copies to pay
(:func:`.dispatch.small_copy_ok`: tiny products never copy), and the other layout's prediction rests
on aligned measurements near the shape, or is a TMA kernel's where the own layout's rests on none
either (the TMA fits extrapolate well: measured/predicted 1.01-1.06 off the grid).
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..base.shape import Shape
from .arrays import aligned_ld
from .counts import aligned_for
from .dispatch import LAYOUTS, MIN_PACK_MS, best, copy_launches, copy_time, pack_choice, small_copy_ok
from .predict import Fitted

MARGIN = 0.05      # a layout change must win by this share: a second copy and its host time
TRANSPOSE = 1.25   # a tiled transposing copy's time over a straight copy's of the same bytes


def copied_ld(operand: str, letter: str, M: int, N: int, K: int, align: int) -> int:
    """Leading dimension of operand "A" or "B" copied into layout ``letter`` (its stored rows: A 'N' holds
    K, A 'T' M, B 'N' N, B 'T' K elements), rounded up to ``align`` elements.

    >>> copied_ld("A", "N", 100, 7, 4097, 4), copied_ld("B", "T", 100, 7, 4097, 4), copied_ld("B", "N", 100, 7, 4097, 4)
    (4100, 4100, 8)
    """
    n = {("A", "N"): K, ("A", "T"): M, ("B", "N"): N, ("B", "T"): K}[operand, letter]
    return aligned_ld(n, align)


def copies_ms(M: int, N: int, K: int, layout: str, run: str, copy_a: bool, copy_b: bool, bandwidth: float,
              elem: int = 4) -> float:
    """Predicted ms of a plan's copies of A and/or B from the request's ``layout`` into the layout
    ``run`` the kernel reads (a transposing copy counted TRANSPOSE times a straight one's bytes).

    >>> round(copies_ms(4096, 4096, 4096, "NN", "NT", False, True, 2.345e9) * 1e3, 1)   # B transposed
    74.5
    """
    flip_a, flip_b = run[0] != layout[0], run[1] != layout[1]
    elements = copy_a * M * K * (TRANSPOSE if flip_a else 1.0) + copy_b * K * N * (TRANSPOSE if flip_b else 1.0)
    return copy_time(elements, copy_launches(copy_a, copy_b), bandwidth, elem)


def plan_ms(fit: Fitted, M: int, N: int, K: int, layout: str, lda: int, ldb: int, copy_a: bool, copy_b: bool,
            bandwidth: float, align: int = 4, elem: int = 4) -> float:
    """Predicted ms of a plan (:func:`stage_plan`'s answer for operands of leading dimensions ``lda`` and
    ``ldb``): its kernel on the rows as the copies leave them (a copied operand's aligned, the other's
    as they are), plus the copies."""
    run = fit.config.layout
    lda2 = copied_ld("A", run[0], M, N, K, align) if copy_a else lda
    ldb2 = copied_ld("B", run[1], M, N, K, align) if copy_b else ldb
    s = Shape(M, N, K, run)
    return (fit.predict(s, aligned_for(fit.config, s, lda2, ldb2))
            + copies_ms(M, N, K, layout, run, copy_a, copy_b, bandwidth, elem))


def stage_plan(fits_for: Callable[[str], Sequence[Fitted]], M: int, N: int, K: int, layout: str, lda: int,
               ldb: int, ldc: int, bandwidth: float, align: int = 4, elem: int = 4,
               rows_aligned: bool = True) -> tuple[bool, bool, Fitted | None]:
    """(copy A, copy B, candidate): the kernel to run and which operands to copy first into the layout it
    reads (``candidate.config.layout``; where that is the request's, copies only align rows). ``fits_for``
    gives the competing time models of a layout (the library's candidates)."""
    pack_a, pack_b, fit, own = pack_choice(fits_for(layout), M, N, K, layout, lda, ldb, ldc, bandwidth, align,
                                           elem, rows_aligned)
    if fit is None or elem != 4 or own < MIN_PACK_MS:
        return pack_a, pack_b, fit
    choice, least = (pack_a, pack_b, fit), own * (1.0 - MARGIN)
    # The other layout's prediction must rest on measurements near the shape. A TMA kernel's may be its
    # fit's extrapolation where the request's own is one too: the TMA fits predict within 1-6% on shapes
    # off the grid, the cp.async kernels' within -30%..+30%.
    here = Shape(M, N, K)
    own_near = fit.measured_near(here, True)
    for other in LAYOUTS:
        if other == layout:
            continue
        flip_a, flip_b = other[0] != layout[0], other[1] != layout[1]
        # a flipped operand is copied (aligned); the other is copied only if its rows are not aligned
        copy_a = flip_a or not rows_aligned or lda % align != 0
        copy_b = flip_b or not rows_aligned or ldb % align != 0
        lda2 = copied_ld("A", other[0], M, N, K, align) if copy_a else lda
        ldb2 = copied_ld("B", other[1], M, N, K, align) if copy_b else ldb
        # only kernels whose prediction may compete: the best of all could be an extrapolation that
        # hides a measured one just behind it
        fair = [f for f in fits_for(other) if f.measured_near(here, True) or (f.config.tma and not own_near)]
        found = best(fair, M, N, K, other, lda2, ldb2, ldc, True)
        if found is None:
            continue
        copy_ms = copies_ms(M, N, K, layout, other, copy_a, copy_b, bandwidth, elem)
        total = found[0] + copy_ms
        if total < least and small_copy_ok(own, copy_ms, found[0], K, found[1].config.tma,
                                                  found[1].config.split_k > 1):
            choice, least = (copy_a, copy_b, found[1]), total
    return choice
