"""What a plan's copies cost and where they land: operands copied before the kernel (:mod:`.planner` says
when a copy is allowed and pays).

Two kinds of copy (both predicted with the same bandwidth share, ``Policy.copy_bandwidth``):

- into 16-byte aligned rows of the same layout, for operands whose rows are not (:func:`aligned_copies_ms`);
- into the other layout (a transposing copy), so that a kernel timed in another layout serves the
  request: on Hopper the TMA kernels read NT only (K-major A and B, what TF32 wgmma reads from shared
  memory), and run 2.0-2.3x cuBLAS on large NT shapes where the cp.async kernels of NN, TN and TT run
  1.5-1.65x. Transposing B of a 4096^3 NN product moves 2 x 64 MB (~45 us at 70% of the H100's
  bandwidth), 4% of the product (:func:`copies_ms`).
"""
from __future__ import annotations

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from .arrays import aligned_ld
from .counts import aligned_for
from .policy import DEFAULT, Policy
from .predict import Fitted


def copy_bandwidth(spec: DeviceSpec, policy: Policy = DEFAULT) -> float:
    """Bytes per ms a copy kernel is predicted to move: ``policy.copy_bandwidth`` of the GPU's DRAM bandwidth.

    >>> from gemmgen.base.devices import known
    >>> copy_bandwidth(known("h100")) / 1e9   # GB/ms: 70% of 3.35 TB/s
    2.345
    """
    return max(spec.mem_gbs, 100.0) * 1e6 * policy.copy_bandwidth


def copied_ld(operand: str, letter: str, M: int, N: int, K: int, align: int) -> int:
    """Leading dimension of operand "A" or "B" copied into layout ``letter`` (its stored rows: A 'N' holds
    K, A 'T' M, B 'N' N, B 'T' K elements), rounded up to ``align`` elements.

    >>> copied_ld("A", "N", 100, 7, 4097, 4), copied_ld("B", "T", 100, 7, 4097, 4), copied_ld("B", "N", 100, 7, 4097, 4)
    (4100, 4100, 8)
    """
    n = {("A", "N"): K, ("A", "T"): M, ("B", "N"): N, ("B", "T"): K}[operand, letter]
    return aligned_ld(n, align)


def copy_launches(copy_a: bool, copy_b: bool, policy: Policy = DEFAULT) -> int:
    """Launches the time model counts for the copies of A and/or B: one each, both together
    ``policy.pair_launches`` (they go out as one launch, :class:`.copy_kernels.CopyPair`).

    >>> copy_launches(False, False), copy_launches(True, False), copy_launches(True, True)
    (0, 1, 2)
    """
    return policy.pair_launches if copy_a and copy_b else int(copy_a or copy_b)


def copy_time(elements: float, launches: int, bandwidth: float, elem: int, policy: Policy = DEFAULT) -> float:
    """Predicted ms of copy kernels moving ``elements`` elements of ``elem`` bytes (each read and written
    once, ``bandwidth`` bytes/ms) in ``launches`` launches.

    >>> round(copy_time(4096 * 4096, 1, 2.345e9, 4), 4)
    0.0602
    """
    return elements * 2 * elem / bandwidth + launches * policy.launch_ms


def aligned_copies_ms(want: Shape, lda2: int, ldb2: int, copy_a: bool, copy_b: bool, bandwidth: float, elem: int,
                      policy: Policy = DEFAULT) -> float:
    """Predicted ms of copies of A and/or B into rows of ``lda2`` / ``ldb2`` elements in the request's own
    layout: each read and written once.

    >>> round(aligned_copies_ms(Shape(4097, 4097, 4097), 4100, 4100, True, False, 2.345e9, 4) * 1e3, 1)
    60.3
    """
    a_rows = want.M if want.layout[0] == "N" else want.K
    b_rows = want.K if want.layout[1] == "N" else want.N
    return copy_time(copy_a * a_rows * lda2 + copy_b * b_rows * ldb2, copy_launches(copy_a, copy_b, policy),
                     bandwidth, elem, policy)


def copies_ms(M: int, N: int, K: int, layout: str, run: str, copy_a: bool, copy_b: bool, bandwidth: float,
              elem: int = 4, policy: Policy = DEFAULT) -> float:
    """Predicted ms of a plan's copies of A and/or B from the request's ``layout`` into the layout
    ``run`` the kernel reads (a transposing copy counted ``policy.transpose`` times a straight one's bytes).

    >>> round(copies_ms(4096, 4096, 4096, "NN", "NT", False, True, 2.345e9) * 1e3, 1)   # B transposed
    74.5
    """
    flip_a, flip_b = run[0] != layout[0], run[1] != layout[1]
    t = policy.transpose
    elements = copy_a * M * K * (t if flip_a else 1.0) + copy_b * K * N * (t if flip_b else 1.0)
    return copy_time(elements, copy_launches(copy_a, copy_b, policy), bandwidth, elem, policy)


def plan_ms(fit: Fitted, M: int, N: int, K: int, layout: str, lda: int, ldb: int, copy_a: bool, copy_b: bool,
            bandwidth: float, align: int = 4, elem: int = 4, policy: Policy = DEFAULT) -> float:
    """Predicted ms of a plan that copies the operands ``copy_a`` / ``copy_b`` into the layout ``fit``'s
    kernel reads (leading dimensions ``lda`` and ``ldb`` before): its kernel on the rows as the copies
    leave them (a copied operand's aligned, the other's as they are), plus the copies."""
    run = fit.config.layout
    lda2 = copied_ld("A", run[0], M, N, K, align) if copy_a else lda
    ldb2 = copied_ld("B", run[1], M, N, K, align) if copy_b else ldb
    s = Shape(M, N, K, run)
    return (fit.predict(s, aligned_for(fit.config, s, lda2, ldb2))
            + copies_ms(M, N, K, layout, run, copy_a, copy_b, bandwidth, elem, policy))
