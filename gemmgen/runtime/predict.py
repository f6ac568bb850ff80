"""Predicted time of a stored kernel on any shape, from its measured times on the tuning grid.

A kernel's time is modelled as

    t = base + u * waves * steps + w * rounds * steps + v * waves + reduce_bytes / bandwidth + extra_launches * launch_ms

with ``waves = ceil(blocks / SMs)`` (blocks = tiles x split-K slices: the blocks the busiest SM runs),
``rounds = ceil(waves / resident)`` (the blocks an SM holds at once run together: ``resident`` of them
per round), ``steps`` the K steps of one slice, and the reduce term split-K's traffic (workspace: every
slice's partial written and read back; atomics: C scaled, then each slice adds into it). ``u`` is a
block's share of the SM per K step (throughput), ``w`` the latency of one K step that the resident
blocks overlap (copy wait, split, barrier, tensor-core wait: on the H100 a 64x64 cp.async 3xTF32 kernel
alone on an SM takes 1.1 us per 32-deep step, 0.44 us per block-step with eight to an SM), ``v`` a
block's prologue and epilogue, ``base`` what any launch of any kernel takes on the GPU (``floor`` times the
least time measured there in the precision class, not fitted: a kernel timed only on large shapes says
nothing of it; without it such a kernel's fit went to 1.8 us on 16x16x16 where it ran 14 and nothing runs
under 5.3). ``u``, ``w``, ``v`` >= 0 are fitted per kernel to its measured times by least squares on
relative error, for each ``resident`` from 1 (no latency term) to the kernel's resident blocks per SM
(:func:`max_resident`: recorded with the timings, or what is sure from shared memory, threads and launch
bounds), keeping the best; for the wgmma kernels (:func:`latency_bound`), the SIMT ones (``latency_simt``);
the others keep ``w = 0``. The per-step part (``u * waves * steps + w * rounds * steps + v * waves``) is
never less than ``least * waves * steps``, the TF32 tensor cores' time for the busiest SM's multiply-adds
(:func:`least_step`): a kernel timed only on a shallow shape cannot tell ``u`` from ``v``. The fit is then corrected by the
measured/fitted ratios of nearby measured shapes (Gaussian weights over log-distance in M, N, K), so the
prediction on a measured shape is that measurement, and between shapes it follows the counts. Measurements where
split-K slices go empty (fewer K steps than slices: :func:`empty_slices`) take no part in the fit (their time is
a fraction of the modelled reduce; fitted, they drove u = v = 0), only in the correction near them.

Operands whose rows are not 16-byte aligned (an odd K in A's rows, say) take 4-byte copies, a regime of
its own: the fit takes aligned measurements (all for the SIMT kernels, or where too few), measurements
of either kind correct only predictions of their own, and an unaligned request with no unaligned
measurement near is predicted ``unaligned`` times slower (``unaligned_ws`` for the warp-specialized cp.async
kernels, whose producer warpgroup hides the extra copies). For the skinny family only A's rows decide
the regime (:func:`aligned_for`).

>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.base.devices import known
>>> pts = {Shape(4096, 4096, 4096): 1.60, Shape(2048, 2048, 2048): 0.23, Shape(1024, 1024, 1024): 0.045}
>>> model = Fitted.fit(preset("tf32x3-wgmma"), pts, known("h100"))
>>> model.predict(Shape(4096, 4096, 4096)), model.predict(Shape(3000, 3000, 3000)) < 1.60
(1.6, True)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..records.timings import KernelTimes
from .counts import aligned_for, counts, empty_slices, latency_bound, latency_steps, log_distance, rounds_steps
from .nnls import nonnegative_least_squares
from .policy import DEFAULT, Policy

def launch_base(kernels: Iterable[KernelTimes], policy: Policy = DEFAULT) -> float:
    """The model's ``base`` (ms) for a GPU whose kernels (of one precision class) were timed as ``kernels``
    say: ``policy.floor`` times the least time (0 with none; a time of 0 is no launch). On the H100 the least is
    5.3 us (a SIMT kernel on 16x16x16: launch, one block, the timing's L2 flush before it); a kernel
    can't be predicted under it.

    >>> from gemmgen.kernel.presets import preset
    >>> timed = [KernelTimes(preset("v10"), {"16x16x16/NN": 0.0053, "4096x4096x4096/NN": 2.6}),
    ...          KernelTimes(preset("v8"), {"1024x1024x1024/NN": 0.1, "8x8x8/NN": 0.0})]
    >>> round(launch_base(timed) * 1e3, 2), launch_base([])
    (4.77, 0.0)
    """
    return policy.floor * min((t for k in kernels for t in k.ms.values() if t > 0), default=0.0)


def fit_points(c: KernelConfig, measured: Mapping[Shape, float]) -> dict[Shape, float]:
    """The measurements of ``c`` its fit takes: all but those where split-K slices go empty
    (:func:`empty_slices`: their time is a fraction of the modelled reduce; fitted, they drove u = v = 0)."""
    return {s: t for s, t in measured.items() if not empty_slices(c, s)}


def max_resident(c: KernelConfig, spec: DeviceSpec, recorded: int = 0, policy: Policy = DEFAULT) -> int:
    """The most blocks of ``c`` an SM holds at once: ``recorded`` where the timings hold the driver's
    count, else what is sure without the compiled kernel: shared memory (1 KB reserved per block),
    threads, and registers at the most ``__launch_bounds__`` lets the compiler use (255 a thread, fewer
    where ``min_blocks`` asks for more blocks); capped at ``policy.max_resident``.

    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.base.devices import known
    >>> max_resident(preset("tf32x3-wgmma"), known("h100")), max_resident(preset("v1"), known("h100"))
    (1, 1)
    >>> max_resident(preset("v8"), known("h100")), max_resident(preset("v8"), known("h100"), recorded=2)
    (1, 2)
    """
    if recorded > 0:
        return min(recorded, policy.max_resident)
    regs = -(-min(255, spec.regs_per_block // (c.threads * c.min_blocks)) // 8) * 8    # allocated in 8s
    by_regs = max(c.min_blocks, spec.regs_per_sm // (c.threads * regs))
    return max(1, min(spec.smem_per_sm // (c.smem_bytes + 1024), spec.max_threads_per_sm // c.threads, by_regs,
                      policy.max_resident))


def kind(c: KernelConfig) -> str:
    """The mainloop kind whose coefficients a config takes: simt, skinny (FP32 FMA loops), sync
    (mma.sync), wgmma (Hopper's warpgroup MMA, one block of warps) or ws (wgmma fed by a producer
    warpgroup).

    >>> from gemmgen.kernel.presets import preset
    >>> [kind(preset(p)) for p in ("v10", "tf32x3", "tf32x3-wgmma", "tf32x3-ws", "skinny")]
    ['simt', 'sync', 'wgmma', 'ws', 'skinny']
    """
    if c.family in ("simt", "skinny"):
        return c.family
    if c.uses_wgmma:
        return "ws" if c.warp_specialized else "wgmma"
    return "sync"


def fma_rate(c: KernelConfig, spec: DeviceSpec) -> float:
    """FMAs per millisecond one SM issues for ``c``'s products at the boost clock: its FP32 lanes, or its
    tensor cores' TF32 rate (0 where the GPU has none for that kind).

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> round(fma_rate(preset("v10"), known("h100")) / 1980e3), round(fma_rate(preset("tf32x3"), known("h100")) / 1980e3)
    (128, 512)
    >>> fma_rate(preset("tf32x3"), known("t4"))     # Turing: no TF32 tensor cores
    0.0
    """
    k = kind(c)
    if k in ("simt", "skinny"):
        return spec.fma_lanes * spec.clock_mhz * 1e3
    tflops = spec.wgmma_tf32_tflops if k in ("wgmma", "ws") else spec.tf32_mma_tflops
    return tflops * 1e9 / 2 / spec.sm_count   # FLOP/s of the GPU -> FMAs a millisecond of one SM


def multiply_adds(c: KernelConfig) -> int:
    """The multiply-adds one block-step of ``c`` issues: BM x BN x BK, three passes of them for 3xTF32.

    >>> from gemmgen.kernel.presets import preset
    >>> multiply_adds(preset("v10")), multiply_adds(preset("tf32x3"))
    (131072, 786432)
    """
    return (3 if c.family == "tf32x3" else 1) * c.BM * c.BN * c.BK


def peak_step(c: KernelConfig, spec: DeviceSpec) -> float:
    """ms one block-step of ``c``'s multiply-adds (:func:`multiply_adds`) takes its SM at the peak rate for
    them (:func:`fma_rate`); 0 for the half-precision family, whose rate the table does not hold, and
    where the rate is unknown (no clock) or none (no TF32 tensor cores).

    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.base.devices import known
    >>> round(peak_step(preset("v10"), known("h100")) * 1e6, 1)     # 128 x 128 x 8 FMAs at 128 lanes, 1980 MHz
    517.2
    >>> round(peak_step(preset("tf32x3"), known("h100")) * 1e6, 1)  # 3 x 128 x 128 x 16 MMAs at 512 a clock
    775.8
    """
    rate = fma_rate(c, spec) if c.family in ("simt", "skinny", "tf32", "tf32x3") else 0.0
    return multiply_adds(c) / rate if rate > 0 else 0.0


def step_floor(c: KernelConfig, spec: DeviceSpec, policy: Policy = DEFAULT) -> float:
    """The least one block-step of ``c`` can cost its SM (ms) in the fit: ``policy.fma_floor`` times its
    FMAs at the SM's peak (:func:`peak_step`), for the kernels whose products are FP32 FMAs (simt, skinny);
    0 for the tensor-core ones (bounded in the prediction instead: :attr:`Fitted.least`). The fit's
    ``u`` is held at or above it: fitted on shapes of a few K steps, where the per-block term carries the
    time, a kernel's ``u`` went below what the SM can do and won deep plans it ran 1.5x slower than predicted.

    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.base.devices import known
    >>> round(step_floor(preset("v10"), known("h100")) * 1e6, 1), step_floor(preset("tf32x3-wgmma"), known("h100"))
    (698.2, 0.0)
    """
    if c.family not in ("simt", "skinny") or policy.fma_floor <= 0:
        return 0.0
    return policy.fma_floor * peak_step(c, spec)


def least_step(c: KernelConfig, spec: DeviceSpec, policy: Policy = DEFAULT) -> float:
    """The least one block-step of a TF32 tensor-core kernel costs its SM in a prediction (ms):
    ``policy.mma_floor`` times its MMAs at the datasheet's mma.sync or wgmma rate (:func:`peak_step`); 0 for
    the other families. A kernel timed only on shapes of a few K steps has its per-step cost unseen: its
    fit can put the time in the per-block term and predict deep shapes faster than the tensor cores
    multiply. Held in the prediction, not the fit, since the latency term shares the per-step time there.

    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.base.devices import known
    >>> round(least_step(preset("tf32x3"), known("h100")) * 1e6, 1), least_step(preset("v10"), known("h100"))
    (775.8, 0.0)
    """
    if c.family not in ("tf32", "tf32x3") or policy.mma_floor <= 0:
        return 0.0
    return policy.mma_floor * peak_step(c, spec)


def unaligned_factor(c: KernelConfig, policy: Policy = DEFAULT) -> float:
    """How much slower than on aligned rows ``c`` is guessed to run on unaligned ones (4-byte copies)
    where no unaligned measurement lies near: ``unaligned_simt`` for the SIMT kernels, ``unaligned_ws`` for the
    warp-specialized cp.async kernels (``tma`` with ``async_copy``: a producer warpgroup copies),
    ``unaligned`` for the others.

    >>> from gemmgen.kernel.presets import preset
    >>> unaligned_factor(preset("tf32x3-wgmma")) == DEFAULT.unaligned, unaligned_factor(preset("tf32x3-ws")) == DEFAULT.unaligned_ws
    (True, True)
    >>> unaligned_factor(preset("v10")) == DEFAULT.unaligned_simt
    True
    """
    if c.family == "simt":
        return policy.unaligned_simt
    return policy.unaligned_ws if c.mainloop == "ws_cpasync" else policy.unaligned


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
    w: float = 0.0                   # latency per K step of a round of resident blocks
    resident: int = 1                # blocks per SM the fit found
    base: float = 0.0                # what any launch takes (ms): not fitted, see the module docstring
    reach: float = 0.0               # the most K steps (of a slice) any measurement ran, of either alignment
                                     # class (those with empty split-K slices aside); 0: unknown
    policy: Policy = DEFAULT         # the model's thresholds (width, prior, unaligned guesses, ...)
    least: float = 0.0               # the least a block-step costs (ms): :func:`least_step`

    @classmethod
    def fit(cls, config: KernelConfig, measured: Mapping[Shape, float], spec: DeviceSpec,
            resident: int = 0, base: float = 0.0, policy: Policy = DEFAULT) -> "Fitted":
        """Fit u, w and v to the measured times (ms by shape; aligned ones, all for SIMT) by least squares on
        relative error, for each count of resident blocks up to :func:`max_resident` (``resident``: the
        kernel's count as recorded with its timings, 0 where unknown), over what is left of each time
        after ``base`` (ms, :func:`launch_base`); see the module docstring. ``policy``: the thresholds."""
        bw = max(spec.mem_gbs, 100.0) * 1e6 * policy.reduce_bandwidth   # GB/s -> bytes/ms, a share of the datasheet's
        # Shapes with fewer K steps than split-K slices leave slices empty: their times follow the
        # reduce alone, a regime the counts do not model (fitted there, u = w = v = 0 and deep-K times
        # of a few microseconds); they still correct predictions near them.
        whole = fit_points(config, measured) or dict(measured)
        simt = policy.latency_simt and config.family == "simt"      # every point: unaligned rows cost SIMT ~2%
        used = [(s, t) for s, t in whole.items() if simt or aligned_for(config, s) or len(whole) < 3]
        used = used or list(whole.items())                   # no aligned point: fit the unaligned ones
        few = len(used) < policy.min_points                          # too few for a third term
        lat = latency_bound(config) or simt
        most = max_resident(config, spec, resident, policy) if lat and not few else 1
        counted = {s: counts(config, s, spec.sm_count) for s in whole}
        per_point = [(counted[s], t) for s, t in used]
        floor = step_floor(config, spec, policy)                     # u = floor + what the fit finds above it
        best = (0.0, 0.0, 0.0, 0.0, 1)
        for resident in range(1, most + 1):
            rows = [((a / t, rounds_steps(a, b, resident) / t, b / t),
                     1.0 - (base + floor * a + r / bw + n * policy.launch_ms) / t)
                    for (a, b, r, n), t in per_point]
            if not rows:
                break
            residual, (u, w, v) = nonnegative_least_squares(rows)
            if resident == 1 or residual < policy.closer * best[0]:
                best = (residual, u, w, v, resident)
        _, u, w, v, resident = best
        u += floor
        reach = max((a / b for a, b, _, _ in counted.values()), default=0.0)
        probe = cls(config, u, v, (), spec.sm_count, bw, 1.0, w, resident, base, 0.0, policy,
                    least_step(config, spec, policy))
        points = tuple(Point(s, t, t / probe.fitted(s), aligned_for(config, s)) for s, t in measured.items())
        return replace(probe, points=points, reach=reach)

    def serving(self, layout: str, factor: float) -> "Fitted":
        """This kernel's model for its config in another layout, ``factor`` times its time."""
        return replace(self, config=self.config.in_layout(layout), factor=factor)

    def fitted(self, s: Shape) -> float:
        """The model's time on shape s (ms), before the correction."""
        a, b, r, n = counts(self.config, s, self.sm_count)
        lat = latency_steps(self.config, s, self.sm_count, self.resident) if self.w else 0.0
        fixed = self.base + r / self.bandwidth + n * self.policy.launch_ms
        return max(fixed + max(self.u * a + self.w * lat + self.v * b, self.least * a), 1e-6)

    def measured_near(self, s: Shape, is_aligned: bool) -> bool:
        """Whether measurements of s's alignment class lie near s (weight above one half): the prediction
        rests on data of its own regime, not on the fit and the unaligned guess."""
        s = Shape(s.M, s.N, s.K)
        return sum(math.exp(-((log_distance(p.shape, s) / self.policy.width) ** 2))
                   for p in self.points if p.aligned == is_aligned) > 0.5

    def predict(self, s: Shape, is_aligned: bool = True) -> float:
        """Predicted time (ms) on shape s: the fit times the weighted ratio of nearby measurements of
        the same alignment; an exact measurement is returned as it is. Unaligned rows with no unaligned
        measurement near take the fit with the unaligned guess (aligned measurements near do not correct
        them: on held-out seeds 5 of 7 plans that borrowed their ratio ran slower)."""
        s = Shape(s.M, s.N, s.K)
        exact, num, den = self._correction(s, is_aligned)
        if exact is not None:
            return self._scaled(exact, 1.0)
        near = den > 0.5   # measurements of this regime near s; else the fit's extrapolation
        sparse = self.policy.sparse if len(self.points) < self.policy.sparse_points else 0.0
        penalty = ((1.0 if is_aligned or near else unaligned_factor(self.config, self.policy))
                   * (1.0 if near else 1.0 + self.policy.extrapolated + sparse))
        return self._scaled(self.fitted(s) * num / den, penalty * self.deeper(s))

    def deeper(self, s: Shape) -> float:
        """1 + ``policy.reach`` per doubling of s's K steps beyond the most any measurement ran (``reach``),
        counted up to ``policy.steady`` steps (1 within them, and so for a kernel measured that deep)."""
        grow = self.policy.reach
        if not (grow and self.reach):
            return 1.0
        a, b, _, _ = counts(self.config, s, self.sm_count)
        return 1.0 + grow * max(0.0, math.log2(min(a / b, self.policy.steady) / self.reach))

    def _scaled(self, ms: float, penalty: float) -> float:
        """``ms`` with the share above the launch base ``penalty`` and ``factor`` times longer: 4-byte
        copies and another layout slow the kernel's work, not its launch."""
        base = min(self.base, ms)
        return base + (ms - base) * penalty * self.factor

    def _correction(self, s: Shape, is_aligned: bool) -> tuple[float | None, float, float]:
        """(an exact measurement's ms or None, weighted sum of the nearby ratios, sum of weights) over the
        measurements of one alignment class, the prior's weight included."""
        num = den = self.policy.prior
        for p in self.points:
            if p.aligned != is_aligned:
                continue
            d = log_distance(p.shape, s)
            if d == 0.0:
                return p.ms, num, den
            w = math.exp(-((d / self.policy.width) ** 2))
            num, den = num + w * p.ratio, den + w
        return None, num, den
