"""Predicted time of a stored kernel on any shape, from its measured times on the tuning grid.

A kernel's time is modelled as

    t = u * waves * steps + v * waves + reduce_bytes / bandwidth + extra_launches * LAUNCH_MS

with ``waves = ceil(blocks / SMs)`` (blocks = tiles x split-K slices; the SM with the most blocks ends
last), ``steps`` the K steps of one slice, and the reduce term split-K's traffic (workspace: every
slice's partial written and read back; atomics: C scaled, then each slice adds into it). ``u`` (time per
K step of a block) and ``v`` (its prologue and epilogue) are fitted per kernel to its measured times by
least squares on relative error. The fit is then corrected by the measured/fitted ratios of nearby
measured shapes (Gaussian weights over log-distance in M, N, K), so the prediction on a measured shape
is that measurement, and between shapes it follows the wave and step counts.

Operands whose rows are not 16-byte aligned (an odd K in A's rows, say) take 4-byte copies, a regime
of its own: measurements of aligned and unaligned shapes correct only predictions of their own kind,
and an unaligned request with no unaligned measurement nearby is predicted UNALIGNED times slower.

>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.base.devices import known
>>> pts = {Shape(4096, 4096, 4096): 1.60, Shape(2048, 2048, 2048): 0.23, Shape(1024, 1024, 1024): 0.045}
>>> model = Fitted.fit(preset("tf32x3-wgmma"), pts, known("h100"))
>>> model.predict(Shape(4096, 4096, 4096)), model.predict(Shape(3000, 3000, 3000)) < 1.60
(1.6, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig

LAUNCH_MS = 0.003      # one more kernel launch in the sequence (split-K's scale or reduce kernel)
WIDTH = 0.6            # width of the Gaussian over log-distance for the correction (e^0.6 = 1.8x apart)
PRIOR = 0.05           # weight of "the fit is right" against the measured neighbours' ratios
UNALIGNED = 1.5        # unaligned rows with no unaligned measurement near: 4-byte copies (4097^3: 1.4-1.6x)


def counts(c: KernelConfig, s: Shape, sm_count: int) -> tuple[float, float, float, int]:
    """(waves * steps, waves, split-K reduce bytes, extra launches) of config ``c`` on shape ``s``.

    >>> from gemmgen.kernel.presets import preset
    >>> counts(preset("tf32x3-wgmma"), Shape(4096, 4096, 4096), 132)   # 1024 tiles: 8 waves of 64 steps
    (512.0, 8.0, 0.0, 0)
    """
    tiles = -(-s.M // c.BM) * -(-s.N // c.BN)
    waves = -(-tiles * c.split_k // sm_count)
    steps = max(1, -(-c.k_per_slice(s.K) // c.BK))
    reduce_bytes, launches = 0.0, 0
    if c.split_k > 1:
        mn = 4.0 * s.M * s.N
        if c.reduce == "workspace":      # slices write partials, the reduce kernel reads them and writes C
            reduce_bytes, launches = mn * (2 * c.split_k + 1), 1
        else:                            # C scaled first, then each slice adds in (read-modify-write)
            reduce_bytes, launches = mn * (2 + 2 * c.split_k), 1
    return float(waves * steps), float(waves), reduce_bytes, launches


def aligned(s: Shape, lda: int | None = None, ldb: int | None = None) -> bool:
    """Whether A's and B's rows start on 16-byte boundaries (default leading dimensions: packed rows).

    >>> aligned(Shape(4096, 4096, 4096)), aligned(Shape(4097, 4097, 4097)), aligned(Shape(5, 8, 12, "TN"))
    (True, False, False)
    """
    lda = lda if lda is not None else (s.K if s.layout[0] == "N" else s.M)
    ldb = ldb if ldb is not None else (s.N if s.layout[1] == "N" else s.K)
    return lda % 4 == 0 and ldb % 4 == 0


def log_distance(a: Shape, b: Shape) -> float:
    """sqrt(sum(log(x/y)^2)) over M, N, K."""
    return math.sqrt(sum(math.log(x / y) ** 2 for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K))))


@dataclass(frozen=True)
class Point:
    shape: Shape
    ms: float
    ratio: float        # measured / fitted
    aligned: bool


@dataclass(frozen=True)
class Fitted:
    """One kernel's time model: fitted coefficients plus its measured points for the correction."""

    config: KernelConfig
    u: float
    v: float
    points: tuple[Point, ...]
    sm_count: int
    bandwidth: float                 # bytes per ms
    factor: float = 1.0              # a kernel of another layout serving this one: its time ratio

    @classmethod
    def fit(cls, config: KernelConfig, measured: Mapping[Shape, float], spec: DeviceSpec) -> "Fitted":
        """Fit u and v to the measured times (ms by shape; aligned shapes only) by least squares on
        relative error."""
        bw = max(spec.mem_gbs, 100.0) * 1e6 * 0.8          # GB/s -> bytes/ms, at 80% of the datasheet
        rows = []
        for s, t in measured.items():
            if aligned(s) or len(measured) < 3:
                a, b, r, n = counts(config, s, spec.sm_count)
                rows.append((a / t, b / t, 1.0 - (r / bw + n * LAUNCH_MS) / t))
        probe = cls(config, *_least_squares(rows), (), spec.sm_count, bw)
        points = tuple(Point(s, t, t / probe.fitted(s), aligned(s)) for s, t in measured.items())
        return cls(config, probe.u, probe.v, points, spec.sm_count, bw)

    def serving(self, layout: str, factor: float) -> "Fitted":
        """This kernel's model for its config in another layout, ``factor`` times its time."""
        return Fitted(self.config.replace(layout=layout), self.u, self.v, self.points, self.sm_count,
                      self.bandwidth, factor)

    def fitted(self, s: Shape) -> float:
        """The model's time on shape s (ms), before the correction."""
        a, b, r, n = counts(self.config, s, self.sm_count)
        return max(self.u * a + self.v * b + r / self.bandwidth + n * LAUNCH_MS, 1e-6)

    def measured_near(self, s: Shape, is_aligned: bool) -> bool:
        """Whether measurements of s's alignment class lie near s (weight above one half): the prediction
        rests on data of its own regime, not on the fit and the UNALIGNED guess."""
        s = Shape(s.M, s.N, s.K)
        return sum(math.exp(-((log_distance(p.shape, s) / WIDTH) ** 2))
                   for p in self.points if p.aligned == is_aligned) > 0.5

    def predict(self, s: Shape, is_aligned: bool = True) -> float:
        """Predicted time (ms) on shape s: the fit times the weighted ratio of nearby measurements of
        the same alignment; an exact measurement is returned as it is."""
        s = Shape(s.M, s.N, s.K)
        num = den = PRIOR
        for p in self.points:
            if p.aligned != is_aligned:
                continue
            d = log_distance(p.shape, s)
            if d == 0.0:
                return p.ms * self.factor
            w = math.exp(-((d / WIDTH) ** 2))
            num, den = num + w * p.ratio, den + w
        penalty = 1.0 if is_aligned or den > 0.5 else UNALIGNED
        return self.fitted(s) * num / den * penalty * self.factor


def _least_squares(rows: Iterable[tuple[float, float, float]]) -> tuple[float, float]:
    """argmin over u, v >= 0 of sum (u*a + v*b - y)^2 for rows (a, b, y).

    >>> _least_squares([(1.0, 0.0, 2.0), (0.0, 1.0, 3.0)])
    (2.0, 3.0)
    """
    rows = list(rows)
    saa, sbb = sum(a * a for a, _, _ in rows), sum(b * b for _, b, _ in rows)
    sab, say, sby = sum(a * b for a, b, _ in rows), sum(a * y for a, _, y in rows), sum(b * y for _, b, y in rows)
    det = saa * sbb - sab * sab
    if det > 1e-12 * max(saa * sbb, 1e-300):
        u, v = (say * sbb - sby * sab) / det, (sby * saa - say * sab) / det
        if u >= 0 and v >= 0:
            return u, v
    fits = []   # one coefficient at zero: the better of the two one-parameter fits
    if saa > 0:
        u = max(say / saa, 0.0)
        fits.append((sum((u * a - y) ** 2 for a, _, y in rows), u, 0.0))
    if sbb > 0:
        v = max(sby / sbb, 0.0)
        fits.append((sum((v * b - y) ** 2 for _, b, y in rows), 0.0, v))
    return min(fits)[1:] if fits else (0.0, 0.0)
