"""One search process's loop on one GPU: ask Optuna for candidates, reject and dedupe them, prepare
ahead, measure, tell.

The runner keeps ``lookahead`` candidates in flight: while the GPU measures the oldest, a pool
prepares (compiles) the next ones. Every trial is told as soon as its outcome is known (ask/tell),
so a killed worker loses only the trials in flight; a heartbeat lets other processes fail those.

>>> from gemmgen.tune.plan import make_plan
>>> from gemmgen.base import Measurement, Shape
>>> plan = make_plan(Shape(256, 256, 256), "h100", trials=3, storage="sqlite:///:memory:")
>>> fake = lambda c, s: Measurement(c.name, s, ms=1.0 + c.BK / 100, iqr_ms=0, cublas_ms=1.0, rel_error=0)
>>> TrialRunner(plan, lambda device: fake).run()
'budget'
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import math
import threading
import time
import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState

from ..base.outcome import Failure, Measurement
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from .plan import Measure, MeasureFor, Observer, Prepare, SearchPlan
from .samplers import AskTellGrid, make_sampler, worker_seed
from .stopping import stop_reason
from .storage import open_storage
from .studies import fail_dead_trials, open_study, worker_tag
from .trial_stats import is_measured, progress

_REASON_CHARS = 2000               # a compile log can be long; the trial keeps its head


class TrialRunner:
    """Runs trials of one plan's study on one device until the budget, time or space runs out.

    Each trial's config is validated here, once, against the plan's device (``_invalid``); the
    prepare and measure functions receive only configs that passed.
    """

    def __init__(self, plan: SearchPlan, measure_for: MeasureFor, prepare: Prepare | None = None, device: int = 0,
                 index: int = 0, observer: Observer | None = None):
        self.plan, self.measure_for, self.prepare, self.observer = plan, measure_for, prepare, observer
        self.device = device
        self.storage = open_storage(plan.storage, plan.heartbeat)
        self.study = open_study(self.storage, plan.study, device=plan.device.name, shape=plan.shape.key,
                                family=plan.space.family)
        self.since = len(self.study.get_trials(deepcopy=False))   # a plateau counts only this run's draws
        seed = worker_seed(plan.seed, index, self.since)
        self.study.sampler = make_sampler(plan.sampler, seed, plan.space)
        self.pending: collections.deque = collections.deque()   # (trial, config, prepare future)
        self.running: tuple | None = None                       # (trial, config, measure future)
        self.skips = 0                                          # invalid or repeated draws in a row

    # ---- main loop ----------------------------------------------------------------------
    def run(self) -> str:
        """Work until done; returns why it stopped: budget, plateau, timeout, exhausted or stuck."""
        self.started, self.swept = self.plan.clock(), time.monotonic()
        fail_dead_trials(self.study)
        # one GPU thread builds the measure function and makes every call: CUDA's current device is
        # per thread, and sampling (database round trips) overlaps the measurement it waits for
        with self._pool() as pool, cf.ThreadPoolExecutor(1, thread_name_prefix="gemmgen-gpu") as gpu, \
                _Heartbeat(self.storage, self.plan.heartbeat) as beat:
            self._gpu, self._measure = gpu, gpu.submit(self.measure_for, self.device).result()
            try:
                return self._loop(pool, beat)
            except BaseException:
                self._abandon()   # Ctrl-C or a bug: record the trials in flight as interrupted
                raise

    def _loop(self, pool: cf.Executor, beat: "_Heartbeat") -> str:
        while True:
            self._start()
            reason = self._fill(pool, beat)   # draws the next candidates while the GPU measures
            if self.running is None:
                if not self.pending:
                    return reason or "budget"
                continue
            self._finish(beat)
            if self.plan.patience and self._stop_reason(self.study.get_trials(deepcopy=False)) == "plateau":
                self._drop(beat)

    def _start(self) -> None:
        """Hand the oldest waiting candidate to the GPU thread when it is idle."""
        if self.running is None and self.pending:
            trial, config, prepared = self.pending.popleft()
            future = self._gpu.submit(_outcome, self._measure, config, self.plan.shape, prepared)
            self.running = (trial, config, future)

    def _pool(self) -> cf.Executor:
        jobs = max(1, self.plan.jobs)
        if self.plan.pool == "process":
            import multiprocessing

            return cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
        return cf.ThreadPoolExecutor(jobs, thread_name_prefix="gemmgen-prepare")

    def _fill(self, pool: cf.Executor, beat: "_Heartbeat") -> str | None:
        """Ask for candidates until ``lookahead`` wait; the stop reason when no more may start."""
        while len(self.pending) < max(1, self.plan.lookahead):
            if self.running is not None and self.running[2].done():
                return None   # tell the finished one and feed the GPU before drawing on
            trials = self.study.get_trials(deepcopy=False)
            reason = self._stop_reason(trials)
            if reason:
                return reason
            trial = self._ask()
            trial.set_user_attr("worker", worker_tag())   # at once: lets a resumed search fail it if we die
            beat.add(trial._trial_id)
            config = self._draw(trial)
            if config is None:
                beat.discard(trial._trial_id)
                self.skips += 1
                continue
            self.skips = 0
            future = pool.submit(self.prepare, config) if self.prepare else None
            self.pending.append((trial, config, future))
        return None

    def _stop_reason(self, trials: list[FrozenTrial]) -> str | None:
        plan = self.plan
        if time.monotonic() - self.swept > (plan.heartbeat or 30):   # other workers may have died
            self.swept = time.monotonic()
            fail_dead_trials(self.study)
        if plan.timeout is not None and plan.clock() - self.started > plan.timeout:
            return "timeout"
        reason = stop_reason(plan, trials, len(self.pending) + (self.running is not None), self.since)
        if reason:   # budget (stretched while short of cuBLAS, if the plan says so) or plateau
            return reason
        if isinstance(self.study.sampler, AskTellGrid) and self.study.sampler.is_exhausted(self.study):
            return "exhausted"
        if self.skips >= plan.max_skips:   # the sampler only proposes rejected or known configs
            return "stuck"
        return None

    def _ask(self) -> Trial:
        with warnings.catch_warnings():   # heartbeats are recorded by _Heartbeat, not by optimize()
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            return self.study.ask()

    # ---- one candidate ------------------------------------------------------------------
    def _draw(self, trial: Trial) -> KernelConfig | None:
        """The trial's config to measure, or None when it was told here (invalid or known)."""
        fixed = trial.user_attrs.get("config")   # a preset the space cannot express
        config = KernelConfig.from_dict(fixed) if fixed else self.plan.space.sample(trial, self.plan.shape.layout)
        reason = self._invalid(config)
        if reason:
            _tell(self.study, trial, TrialState.PRUNED, kind="invalid", reason=reason)
            return None
        trial.set_user_attr("name", config.name)
        # read after writing the name: of two workers drawing the same config at once, at least one
        # sees the other and defers, so no config is measured twice (rarely, both defer)
        prior = _prior(config.name, trial.number, self.study.get_trials(deepcopy=False))
        if prior is None:
            return config
        _copy_prior(self.study, trial, prior)
        if prior.state == TrialState.RUNNING and prior.user_attrs.get("worker") != worker_tag():
            time.sleep(0.2)   # the space is nearly spent and another worker holds what is left
        return None

    def _invalid(self, config: KernelConfig) -> str | None:
        """Why the config cannot run this shape on this device (its own rules, checked before compiling)."""
        shape = self.plan.shape
        if config.layout != shape.layout:
            return f"layout {config.layout} differs from the shape's {shape.layout}"
        violations = explain(config, self.plan.device)
        if violations:
            return "; ".join(map(str, violations))
        return config.accepts(shape.M, shape.N, shape.K)

    def _finish(self, beat: "_Heartbeat") -> None:
        """Wait for the measurement running on the GPU thread and tell its outcome."""
        trial, config, future = self.running
        outcome = future.result()   # anything but a Failure propagates from here
        self.running = None
        self._start()               # keep the GPU busy while this outcome is written to the database
        beat.discard(trial._trial_id)
        if isinstance(outcome, Failure):
            reason = outcome.reason[:_REASON_CHARS]
            _tell(self.study, trial, TrialState.FAIL, config=config.to_dict(), kind=outcome.kind, reason=reason)
        else:
            _tell(self.study, trial, TrialState.COMPLETE, outcome.tflops, config=config.to_dict(),
                  **_result_attrs(outcome))
        if self.observer:
            self.observer(progress(self.study, self.plan.trials))

    def _drop(self, beat: "_Heartbeat") -> None:
        """A plateau: the candidates prepared but not yet measured are told, never measured."""
        while self.pending:
            trial, _, future = self.pending.popleft()
            if future is not None:
                future.cancel()
            beat.discard(trial._trial_id)
            _tell(self.study, trial, TrialState.PRUNED, kind="dropped", reason="the search stopped on a plateau")

    def _abandon(self) -> None:
        flying = [*self.pending, *([self.running] if self.running else [])]
        self.pending.clear()
        self.running = None
        for trial, _, future in flying:
            if future is not None:
                future.cancel()
            try:
                _tell(self.study, trial, TrialState.FAIL, kind="interrupted", reason="the worker was stopped")
            except Exception:   # best effort (the database may be what failed); heartbeats catch the rest
                pass


# ---- helpers --------------------------------------------------------------------------------
def _outcome(measure: Measure, config: KernelConfig, shape: Shape, prepared: cf.Future | None
             ) -> Measurement | Failure:
    """Run on the GPU thread: wait for the candidate's preparation, then measure it."""
    try:
        if prepared is not None:
            prepared.result()
        m = measure(config, shape)
        if not m.ms > 0 or not math.isfinite(m.tflops):
            raise Failure(f"the measure returned an unusable time of {m.ms} ms")
        return m
    except Failure as f:
        return f


def _prior(name: str, number: int, trials: list[FrozenTrial]) -> FrozenTrial | None:
    """Another trial of the same config: measured (preferred) or in flight (here or in another worker)."""
    same = [t for t in trials if t.number != number and t.user_attrs.get("name") == name]
    done = [t for t in same if is_measured(t)]
    running = [t for t in same if t.state == TrialState.RUNNING]
    return (done or running or [None])[0]


def _tell(study: optuna.Study, trial: Trial, state: TrialState, value: float | None = None, **attrs: Any) -> None:
    for key, v in attrs.items():
        trial.set_user_attr(key, v)
    study.tell(trial, value, state=state, skip_if_finished=True)


def _result_attrs(m: Measurement) -> dict[str, Any]:
    return {"ms": m.ms, "iqr_ms": m.iqr_ms, "cublas_ms": m.cublas_ms, "cublas_tflops": m.cublas_tflops,
            "ratio": m.ratio, "rel_error": m.rel_error}


def _copy_prior(study: optuna.Study, trial: Trial, prior: FrozenTrial) -> None:
    """Record a repeated config as pruned instead of measuring it again.

    Pruned, not a copy of the earlier value: TPE then ranks this exact point low while its measured
    twin stays good, which steers it to the neighbours instead of proposing the same kernel again.
    """
    status = "still being measured" if prior.state == TrialState.RUNNING else "already measured"
    _tell(study, trial, TrialState.PRUNED, duplicate_of=prior.number, kind="duplicate",
          reason=f"same config as trial {prior.number}, {status}")


class _Heartbeat:
    """Records heartbeats of this worker's trials in flight, so other processes can tell it died."""

    def __init__(self, storage: Any, interval: int | None):
        self.storage, self.interval = storage, interval
        self.ids: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="gemmgen-heartbeat", daemon=True)

    def __enter__(self) -> "_Heartbeat":
        if self.interval:
            self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def add(self, trial_id: int) -> None:
        self.ids.add(trial_id)
        if self.interval:   # at once: a trial without any heartbeat never counts as stale
            self.storage.record_heartbeat(trial_id)

    def discard(self, trial_id: int) -> None:
        self.ids.discard(trial_id)

    def _loop(self) -> None:
        while not self.stop.wait(self.interval):
            for trial_id in list(self.ids):
                self.storage.record_heartbeat(trial_id)
