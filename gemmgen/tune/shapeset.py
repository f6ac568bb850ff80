"""The shapes a search tunes on a GPU when none are given: derived from the GPU's SM count, one list per
regime, ordered by value so a short budget still reaches every regime.

Regimes (:data:`REGIMES`): ``waves`` (large products whose 128x128 tiles fill the SMs 1, 2, 4 or many
times over), ``skinny`` (M or N of 16..128 against a long other side), ``deep-k`` (a fraction of a wave
of tiles over a deep K: split-K pays), ``shallow-k`` (K of 16..128: the epilogue and launch weigh),
``small`` (every side at most 512: launch-bound) and ``ragged`` (sides that are not multiples of 16:
the checked edges). Each regime's shapes walk the four layouts. The set is a pure function of the
DeviceSpec, so two runs on one kind of GPU tune the same shapes and share their studies.

>>> from gemmgen.base.devices import known
>>> shapes = derived_shapes(known("h100"))
>>> [regime_of(s, known("h100")) for s in shapes[:6]]
['waves', 'skinny', 'deep-k', 'shallow-k', 'small', 'ragged']
>>> shapes[0].key, len(shapes)
('4096x4096x4096/NN', 42)
"""
from __future__ import annotations

import itertools
import math
from typing import Iterable, Sequence

from ..base.devices import DeviceSpec
from ..base.shape import Shape

REGIMES = ("waves", "skinny", "deep-k", "shallow-k", "small", "ragged")
LAYOUTS = ("NN", "NT", "TN", "TT")
TILE = 128      # the block tile the waves are counted in: the common large tile of every family
SMALL = 512     # every side at most this: launch-bound
THIN = 128      # M or N at most this (with the other side longer): skinny
SHALLOW = 128   # K at most this: shallow


def tiles(M: int, N: int) -> int:
    """128x128 tiles of an M x N output.

    >>> tiles(1000, 1000)
    64
    """
    return math.ceil(M / TILE) * math.ceil(N / TILE)


def regime_of(shape: Shape, device: DeviceSpec) -> str:
    """The regime a shape belongs to on a device (the first that applies, in this order: small, skinny,
    shallow-k, deep-k, ragged, waves).

    >>> from gemmgen.base.devices import known
    >>> [regime_of(Shape.parse(s), known("h100")) for s in ("64x64x64", "16x8192x4096", "4096x4096x32",
    ...                                                      "256x256x16384", "1000x1000x1000", "4096x4096x4096")]
    ['small', 'skinny', 'shallow-k', 'deep-k', 'ragged', 'waves']
    """
    M, N, K = shape.M, shape.N, shape.K
    if max(M, N, K) <= SMALL:
        return "small"
    if min(M, N) <= THIN:
        return "skinny"
    if K <= SHALLOW:
        return "shallow-k"
    if tiles(M, N) < device.sm_count and K >= 4 * max(M, N):
        return "deep-k"
    if any(x % 16 for x in (M, N, K)):
        return "ragged"
    return "waves"


def _grid_of(count: int) -> tuple[int, int]:
    """Tile rows and columns whose product comes closest to ``count`` (rows <= columns)."""
    rows = max(1, math.isqrt(max(1, count)))
    return rows, max(1, round(count / rows))


def _wave(device: DeviceSpec, waves: float) -> tuple[int, int]:
    """M and N whose 128x128 tiles make ``waves`` waves on the device's SMs."""
    rows, cols = _grid_of(round(waves * device.sm_count))
    return TILE * rows, TILE * cols


def _regime_shapes(device: DeviceSpec) -> dict[str, list[tuple[int, int, int]]]:
    """(M, N, K) per regime, most valuable first (large and common before rare)."""
    sm = device.sm_count
    w1, w2, w4 = _wave(device, 1), _wave(device, 2), _wave(device, 4)
    long = TILE * max(8, round(sm / 2))        # the long side of a skinny product: about half a wave of rows
    deep = [tuple(max(2 * TILE, x) for x in _wave(device, f)) for f in (1 / 4, 1 / 8, 1 / 2, 1 / 16)]
    return {
        "waves": [(4096, 4096, 4096), (*w1, 4096), (*w2, 2048), (*w4, 1024), (2048, 2048, 2048),
                  (8192, 8192, 1024), (*w1, 1024)],
        "skinny": [(16, long, 4096), (long, 32, 4096), (64, long, 2048), (long, 128, 2048), (long, 16, 8192),
                   (32, 2 * long, 1024), (128, long // 2, 16384)],
        "deep-k": [(*deep[0], 16384), (*deep[1], 32768), (*deep[2], 8192), (*deep[3], 16384),
                   (512, 512, 65536), (*deep[0], 32768), (1024, 512, 8192)],
        "shallow-k": [(*w4, 64), (*w2, 128), (*w1, 32), (*w4, 16), (4096, 4096, 128), (*w2, 96), (8192, 2048, 48)],
        "small": [(512, 512, 512), (256, 256, 256), (128, 128, 128), (512, 256, 128), (64, 64, 64), (32, 32, 32),
                  (16, 16, 16)],
        # 1000^3 first, so in NN: the commonest odd size in the commonest layout, whose winner rarely transfers
        "ragged": [(1000, 1000, 1000), (w1[0] - 3, w1[1] + 5, 1023), (w2[0] + 7, w2[1] - 1, 777),
                   (3001, 2999, 1499), (w4[0] - 9, w4[1] + 3, 513), (1531, 1023, 2047), (4095, 4097, 4099)],
    }


def derived_shapes(device: DeviceSpec) -> list[Shape]:
    """The default shapes a search tunes on this GPU, about seven a regime (each regime's walking the four
    layouts), round-robin over the regimes, each regime's common shapes first. Deterministic for a DeviceSpec.

    >>> from gemmgen.base.devices import known
    >>> sorted({s.layout for s in derived_shapes(known("rtx3090"))})
    ['NN', 'NT', 'TN', 'TT']
    """
    lists = [[Shape(M, N, K, LAYOUTS[i % len(LAYOUTS)]) for i, (M, N, K) in enumerate(triples)]
             for triples in _regime_shapes(device).values()]
    return list(dict.fromkeys(_round_robin(lists)))   # each regime's own order: the common shapes first


def order_by_value(shapes: Iterable[Shape], device: DeviceSpec) -> list[Shape]:
    """Round-robin over :data:`REGIMES`, each regime's shapes largest (FLOPs) first: the first dozen shapes
    already cover every regime, so a budget that ends early has tuned a bit of each.

    >>> from gemmgen.base.devices import known
    >>> [s.key for s in order_by_value([Shape(64, 64, 64), Shape(128, 128, 128), Shape(4096, 16, 4096)],
    ...                                known("h100"))]
    ['4096x16x4096/NN', '128x128x128/NN', '64x64x64/NN']
    """
    by: dict[str, list[Shape]] = {r: [] for r in REGIMES}
    for s in shapes:
        by[regime_of(s, device)].append(s)
    return _round_robin([sorted(v, key=lambda s: (-s.flops, LAYOUTS.index(s.layout), s.M, s.N, s.K))
                         for v in by.values()])


def _round_robin(lists: Sequence[Sequence[Shape]]) -> list[Shape]:
    return [s for row in itertools.zip_longest(*lists) for s in row if s is not None]


def regime_counts(shapes: Sequence[Shape], device: DeviceSpec) -> dict[str, int]:
    """Shapes per regime, in REGIMES order (regimes with none left out).

    >>> from gemmgen.base.devices import known
    >>> regime_counts([Shape(64, 64, 64), Shape(32, 32, 32)], known("h100"))
    {'small': 2}
    """
    counts = {r: 0 for r in REGIMES}
    for s in shapes:
        counts[regime_of(s, device)] += 1
    return {r: n for r, n in counts.items() if n}
