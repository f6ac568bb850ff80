"""The analytic time model: a kernel's time on a GPU predicted from its config and the GPU's datasheet,
with no measurement of that kernel on that GPU. It serves GPUs with no stored timings (out of the box),
where :mod:`.predict` fits each timed kernel to its own measurements instead.

A launch of config ``c`` on shape ``s`` is counted as :func:`.counts.counts` counts it (waves of blocks,
K steps, split-K's reduce), and its time is

    t = max(base + reduce + a * W + b * L + l * R + e * E + p * B,   base + compulsory DRAM bytes / bandwidth)

with ``W`` the busiest SM's FMAs at its unit's peak rate (the FP32 lanes for SIMT, the tensor cores'
mma.sync or wgmma rate for TF32, three passes for 3xTF32), ``L`` its bytes of A and B tiles at its share
of the DRAM bandwidth, ``R`` the K steps of its rounds of resident blocks (a step's latency), ``E`` its
C tiles' bytes at its share of the bandwidth, and ``B`` its blocks. The five coefficients (a, b, l, e, p)
are one set per mainloop kind (:func:`kind`), not per kernel: they are fitted once to many kernels'
recorded times (:func:`fit_coefficients`) and stored with the built-in kernels (:mod:`.builtin`), so
the units above carry each GPU's own rates. Fitted on the H100's 87,000 recorded times, they predict
the H200's with a median error of 14%.

>>> from gemmgen.base.devices import known
>>> from gemmgen.kernel.presets import preset
>>> coef = {"ws": (1.0, 0.25, 0.5, 1.1, 0.0)}
>>> m = Analytic.make(preset("tf32x3-ws"), known("h100"), coef)
>>> round(m.predict(Shape(4096, 4096, 4096)), 2) > round(m.predict(Shape(2048, 2048, 2048)), 2)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from .counts import aligned_for, counts, rounds_steps
from .nnls import nonnegative_least_squares
from .policy import DEFAULT, Policy
from .predict import fma_rate, kind, max_resident, multiply_adds, unaligned_factor

BASE_MS = 0.0045   # what any launch takes, timed as gemmgen times (L2 flushed before): 4.5-4.8 us on Hopper
# Least coefficient of each term (a, b, l, e, p): C tiles are written no faster than the DRAM bandwidth.
# Fitted free, deep-K times dominate and the C-tile term goes to 0, so shallow-K times come out too short.
FLOORS = (0.0, 0.0, 0.0, 1.0, 0.0)


def bandwidth(spec: DeviceSpec) -> float:
    """The datasheet DRAM bandwidth in bytes per ms (at least 100 GB/s: a table entry without one)."""
    return max(spec.mem_gbs, 100.0) * 1e6


def per_block(c: KernelConfig, spec: DeviceSpec) -> tuple[float, float, float]:
    """(ms of one block-step's multiply-adds at the SM's peak, ms of its A and B tile bytes at the SM's share
    of the bandwidth, ms of its C tile's bytes likewise): the units the coefficients multiply."""
    per_sm = bandwidth(spec) / spec.sm_count
    work = multiply_adds(c) / (fma_rate(c, spec) or 1e-9)
    return work, (c.BM + c.BN) * c.BK * c.elem_bytes / per_sm, c.BM * c.BN * 4 / per_sm


def features(c: KernelConfig, s: Shape, spec: DeviceSpec, resident: int,
             policy: Policy = DEFAULT) -> tuple[list[float], float, float]:
    """(the five counted terms the coefficients multiply, the reduce's ms, the compulsory-DRAM floor's ms)
    of ``c`` on ``s``; see the module docstring. The reduce moves at ``policy.reduce_bandwidth`` of the
    datasheet's bandwidth, as the fitted models' does."""
    waves_steps, waves, reduce_bytes, launches = counts(c, s, spec.sm_count)
    work, loads, tile = per_block(c, spec)
    terms = [waves_steps * work, waves_steps * loads, rounds_steps(waves_steps, waves, resident) * 1e-3,
             waves * tile, waves * 1e-3]
    bw = bandwidth(spec)
    fixed = reduce_bytes / (bw * policy.reduce_bandwidth) + launches * policy.launch_ms
    floor = (c.elem_bytes * (s.M * s.K + s.K * s.N) + 4 * s.M * s.N) / bw
    return terms, fixed, floor


@dataclass(frozen=True)
class Analytic:
    """One kernel's analytic model on one GPU, shaped like :class:`.predict.Fitted` (what the dispatch
    ranks): ``predict``, ``serving``, ``measured_near``, ``points`` (none)."""

    config: KernelConfig
    spec: DeviceSpec
    coef: tuple[float, ...]
    resident: int = 1
    factor: float = 1.0
    base: float = BASE_MS
    points: tuple = ()
    margin: float = 1.0              # > 1 where it competes with timed kernels: a model is not a measurement
    policy: Policy = DEFAULT         # the planner's: its unaligned-rows factors and blocks an SM

    @classmethod
    def make(cls, config: KernelConfig, spec: DeviceSpec, coefficients: Mapping[str, Sequence[float]],
             margin: float = 1.0, policy: Policy = DEFAULT) -> "Analytic":
        """``config``'s model on ``spec`` with its kind's coefficients."""
        return cls(config, spec, tuple(coefficients[kind(config)]), max_resident(config, spec, policy=policy),
                   margin=margin, policy=policy)

    @property
    def u(self) -> float:
        """ms a block's K step costs its SM (the throughput terms), as :class:`.predict.Fitted` names it."""
        work, loads, _ = per_block(self.config, self.spec)
        return self.coef[0] * work + self.coef[1] * loads

    @property
    def w(self) -> float:
        """ms of latency a K step of a round of resident blocks costs."""
        return self.coef[2] * 1e-3

    @property
    def v(self) -> float:
        """ms a block costs beside its K steps (its C tile, its start)."""
        return self.coef[3] * per_block(self.config, self.spec)[2] + self.coef[4] * 1e-3

    def fitted(self, s: Shape) -> float:
        """The model's time (ms) on shape ``s``, rows aligned."""
        terms, fixed, floor = features(self.config, s, self.spec, self.resident, self.policy)
        work = sum(k * x for k, x in zip(self.coef, terms))
        return max(self.base + fixed + work, self.base + floor)

    def predict(self, s: Shape, is_aligned: bool = True) -> float:
        """Predicted time (ms) on ``s``: :meth:`fitted`, the share above the launch base slowed by the
        unaligned-rows factor (:func:`.predict.unaligned_factor`) and by ``factor`` (another layout)."""
        ms = self.fitted(Shape(s.M, s.N, s.K))
        slow = (1.0 if is_aligned else unaligned_factor(self.config, self.policy)) * self.factor * self.margin
        return self.base + (ms - self.base) * slow

    def serving(self, layout: str, factor: float) -> "Analytic":
        """This model for the config in another layout, ``factor`` times slower."""
        return replace(self, config=self.config.in_layout(layout), factor=factor)

    def measured_near(self, s: Shape, is_aligned: bool) -> bool:
        """No measurement lies near any shape: the model has none."""
        return False


def fit_coefficients(timed: Iterable[tuple[KernelConfig, int, Mapping[Shape, float]]], spec: DeviceSpec,
                     base: float = BASE_MS) -> dict[str, tuple[float, ...]]:
    """Per mainloop kind, the five coefficients, each at least its :data:`FLOORS` value, that fit every
    measured time of every kernel of that kind best (least squares on relative error), from (config,
    resident blocks or 0, ms by shape) of kernels timed on ``spec``; rows not 16-byte aligned take no
    part (their factor is the dispatch's).

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> spec, c = known("h100"), preset("v10")
    >>> truth = Analytic.make(c, spec, {"simt": (1.3, 0.2, 0.1, 1.5, 0.0)})
    >>> times = {Shape(n, n, k): truth.fitted(Shape(n, n, k)) for n in (512, 1024, 2048, 4096) for k in (256, 4096)}
    >>> refit = Analytic.make(c, spec, fit_coefficients([(c, 0, times)], spec))
    >>> max(abs(refit.fitted(s) / t - 1) for s, t in times.items()) < 0.01   # the terms overlap: the times, not the coefficients, come back
    True
    """
    rows: dict[str, list] = {}
    for config, resident, measured in timed:
        most = max_resident(config, spec, resident)
        for s, ms in measured.items():
            if ms <= base or not aligned_for(config, s):
                continue
            terms, fixed, _ = features(config, s, spec, most)
            floor = sum(f * x for f, x in zip(FLOORS, terms))   # fitted above the floors: x - floor >= 0
            rows.setdefault(kind(config), []).append(([x / ms for x in terms], 1.0 - (base + fixed + floor) / ms))
    return {k: tuple(round(x + f, 4) for x, f in zip(nonnegative_least_squares(r)[1], FLOORS))
            for k, r in sorted(rows.items())}


def log_error(models: Iterable[tuple[Analytic, Mapping[Shape, float]]]) -> float:
    """The median |log(predicted / measured)| over the models' measured times (aligned rows): how far
    the model is from the clock."""
    errors = sorted(abs(math.log(m.fitted(s) / ms)) for m, measured in models for s, ms in measured.items()
                    if ms > 0 and aligned_for(m.config, s))
    return errors[len(errors) // 2] if errors else 0.0
