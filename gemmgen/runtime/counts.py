"""What a launch of a kernel does on a shape, as the dispatch model counts it: waves of blocks, K steps,
split-K's reduce traffic and launches, rounds of resident blocks; whether operands' rows are 16-byte
aligned (the two regimes the model keeps apart); how far apart two shapes are. Pure functions of a
config and a shape: the fitted model is :mod:`.predict`."""
from __future__ import annotations

import math

from ..base.shape import Shape
from ..kernel.config import KernelConfig


def counts(c: KernelConfig, s: Shape, sm_count: int) -> tuple[float, float, float, int]:
    """(waves * steps, waves, split-K reduce bytes, extra launches) of config ``c`` on shape ``s``.

    >>> from gemmgen.kernel.presets import preset
    >>> counts(preset("tf32x3-wgmma"), Shape(4096, 4096, 4096), 132)   # 1024 tiles: 8 waves of 64 steps
    (512.0, 8.0, 0.0, 0)
    """
    tiles = math.prod(c.tiles(s.M, s.N))
    waves = -(-tiles * c.split_k // sm_count)
    steps = max(1, -(-c.k_per_slice(s.K) // c.BK))
    reduce_bytes, launches = 0.0, 0
    if c.split_k > 1:
        mn = 4.0 * s.M * s.N
        if c.reduce == "workspace":      # slices write partials, the reduce kernel reads them and writes C
            reduce_bytes, launches = mn * (2 * c.split_k + 1), 1
        else:                            # C scaled first, then each slice adds in (read-modify-write);
            # the launch counts even where the kernel scales C itself (config.split_one_launch): counted
            # as none, the picks on 128 measured launch-sized shapes ran 0.4% slower
            reduce_bytes, launches = mn * (2 + 2 * c.split_k), 1
    return float(waves * steps), float(waves), reduce_bytes, launches


def empty_slices(c: KernelConfig, s: Shape) -> bool:
    """Whether some of ``c``'s split-K slices get no K on shape ``s`` (fewer K steps than slices).

    >>> from gemmgen.kernel.presets import preset
    >>> c = preset("tf32x3-wgmma").replace(split_k=8)
    >>> empty_slices(c, Shape(4096, 4096, 21)), empty_slices(c, Shape(4096, 4096, 4096))
    (True, False)
    """
    return c.split_k > 1 and c.split_k * c.k_per_slice(s.K) - s.K >= c.k_per_slice(s.K)


def latency_bound(c: KernelConfig) -> bool:
    """Whether the latency term is fitted for ``c`` by its family's nature: the wgmma kernels (the time
    model adds the SIMT ones where ``Policy.latency_simt``), whose K steps run in turn (copy wait, split,
    barrier, wgmma, wgmma wait; Nsight Compute), so a block alone on an SM is slow per step. The SIMT and
    mma.sync kernels overlap a step's loads with the last step's math in registers; on the shipped H100
    timings the term made their leave-one-out picks worse (pick/best 1.025 -> 1.034), where the wgmma
    kernels' got better (benchmarks/dispatch_loo.py).

    >>> from gemmgen.kernel.presets import preset
    >>> latency_bound(preset("tf32x3-wgmma")), latency_bound(preset("v10"))
    (True, False)
    """
    return c.uses_wgmma


def latency_steps(c: KernelConfig, s: Shape, sm_count: int, resident: int) -> float:
    """rounds * steps: the K steps of the busiest SM's rounds of ``resident`` blocks each.

    >>> from gemmgen.kernel.presets import preset
    >>> latency_steps(preset("tf32x3-wgmma"), Shape(4096, 4096, 4096), 132, 2)   # 8 waves in 4 rounds of 64 steps
    256.0
    """
    waves_steps, waves, _, _ = counts(c, s, sm_count)
    return rounds_steps(waves_steps, waves, resident)


def rounds_steps(waves_steps: float, waves: float, resident: int) -> float:
    """rounds * steps from :func:`counts`' waves * steps and waves."""
    return float(-(-int(waves) // resident) * round(waves_steps / waves))


def aligned(s: Shape, lda: int | None = None, ldb: int | None = None) -> bool:
    """Whether A's and B's rows start on 16-byte boundaries (default leading dimensions: packed rows).

    >>> aligned(Shape(4096, 4096, 4096)), aligned(Shape(4097, 4097, 4097)), aligned(Shape(5, 8, 12, "TN"))
    (True, False, False)
    """
    lda = lda if lda is not None else s.lds[0]
    ldb = ldb if ldb is not None else s.lds[1]
    return lda % 4 == 0 and ldb % 4 == 0


def aligned_for(c: KernelConfig, s: Shape, lda: int | None = None, ldb: int | None = None) -> bool:
    """The alignment class of ``s`` for kernel ``c``: :func:`aligned`, but for the skinny family A's rows
    alone (its B, a few columns, is copied 4 bytes at a time either way; A is all its traffic).

    >>> from gemmgen.kernel.presets import preset
    >>> s = Shape(1738, 22, 5471, "TT")    # A's rows: 1738 floats (not 16 bytes); B's: 5471
    >>> aligned_for(preset("skinny"), s), aligned_for(preset("skinny"), Shape(1600, 22, 5471, "TT")), aligned(Shape(1600, 22, 5471, "TT"))
    (False, True, False)
    """
    if c.family != "skinny":
        return aligned(s, lda, ldb)
    if c.swap:   # the big operand is B
        return (ldb if ldb is not None else s.lds[1]) % 4 == 0
    return (lda if lda is not None else s.lds[0]) % 4 == 0


def log_distance(a: Shape, b: Shape) -> float:
    """sqrt(sum(log(x/y)^2)) over M, N, K: shapes twice as large in every dimension are sqrt(3)*ln2 apart.

    >>> round(log_distance(Shape(1024, 1024, 1024), Shape(2048, 2048, 2048)), 4)
    1.2006
    """
    return math.sqrt(sum(math.log(x / y) ** 2 for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K))))
