"""The search driver behind ``gemmgen search``: plan, presets first, workers per GPU, finalists, winner.

Measuring is injected: ``measure_for(device_id)`` returns a ``measure(config, shape) -> Measurement``
that raises a :class:`gemmgen.outcome.Failure` for expected failures; ``prepare(config)`` (compile)
runs ahead in a pool; ``retime(configs, shape)`` re-times the finalists before a winner is named.
See :func:`run_search` for an example.
"""
from __future__ import annotations

import math
import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import optuna

from .config import KernelConfig
from .devices import KNOWN, DeviceSpec, UnknownDevice, known, resolve_alias
from .outcome import Failure, Measurement, Shape
from .presets import all_presets
from .rules import explain
from .space import Space, SpaceError, load_space
from .studies import default_storage, fail_dead_trials, make_sampler, open_storage, open_study, study_name
from .trial_stats import Counts, counts, is_measured, progress, top_trials
from .tuner_worker import MeasureFor, Observer, Prepare, Worker

Retime = Callable[[list[KernelConfig], Shape], Sequence["Measurement | Failure"]]


class SearchError(RuntimeError):
    """A search that could not name a winner, or a worker process that died; the message says which."""


class GpuMismatch(ValueError):
    """``--gpu`` names another GPU than the one detected."""


@dataclass(frozen=True)
class SearchPlan:
    """Everything a worker process needs to join a search (picklable: sent to one process per GPU)."""

    storage: str                  # RDB URL: sqlite:///... or postgresql://...
    study: str
    shape: Shape
    device: DeviceSpec
    space: Space
    trials: int = 100             # measured trials in total, across resumes and workers
    sampler: str = "tpe"
    seed: int = 0
    timeout: float | None = None  # seconds of search per worker run; None = until the budget
    lookahead: int = 3            # candidates in flight: one measured, the rest prepared meanwhile
    jobs: int = 2                 # prepare (compile) workers
    pool: str = "thread"          # thread, or process for a prepare() that holds the GIL
    heartbeat: int | None = 30    # seconds; a trial silent for 3 beats is failed by other workers
    presets: bool = True
    finalists: int = 5
    max_skips: int = 500          # invalid or repeated draws in a row before the search counts as stuck


def make_plan(shape: Shape, device: DeviceSpec | str, *, trials: int = 100, storage: str | None = None,
              study: str | None = None, several_shapes: bool = False, space: Space | str | Path | None = None,
              results: str | Path | None = None, family: str | None = None, several_families: bool = False,
              **options: Any) -> SearchPlan:
    """A plan with the defaults a user expects: TPE seeded 0, SQLite in the results directory,
    the shipped space of ``family`` (simt unless ``space`` names another) for the device's
    architecture, study ``<gpu>-<shape>`` (``<gpu>-<family>-<shape>`` for other families than simt).

    >>> make_plan(Shape(4096, 4096, 4096), "h100", storage="sqlite:///:memory:").study
    'h100-4096x4096x4096-NN'
    >>> make_plan(Shape(4096, 4096, 4096), "h100", family="tf32x3", storage="sqlite:///:memory:").study
    'h100-tf32x3-4096x4096x4096-NN'
    """
    dev = device if isinstance(device, DeviceSpec) else known(device)
    if isinstance(space, Space):
        if family is not None and space.family != family:
            raise SpaceError(f"the space {space.source} is of family {space.family!r}, not {family!r}")
    else:
        space = load_space(family if family is not None or space else "simt", dev.arch, space, device=dev)
    name = study_name(dev.key, shape, study, several_shapes, space.family, several_families)
    plan = SearchPlan(storage or default_storage(results), name, shape, dev, space, trials, **options)
    make_sampler(plan.sampler, plan.seed, plan.space)   # an unknown sampler or a huge grid fails here, early
    return plan


# ---- running --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchResult:
    """The winner after re-timing, its finalists, and what the study recorded."""

    study: str
    config: KernelConfig
    measurement: Measurement
    trial: int
    counts: Counts
    stopped: str                                   # budget, timeout, exhausted or stuck (per worker)
    finalists: list = field(default_factory=list)  # (config, Measurement or Failure), best first


def run_search(plan: SearchPlan, measure_for: MeasureFor, *, prepare: Prepare | None = None,
               retime: Retime | None = None, devices: Sequence[int] = (0,),
               observer: Observer | None = None, poll: float = 0.5) -> SearchResult:
    """Search until the plan's budget (resuming its study), then re-time the finalists and pick one.

    One device runs in this process; several start one spawned worker process per device, all
    sharing the study (``measure_for`` and ``prepare`` must then be picklable top-level callables).

    >>> import tempfile
    >>> from gemmgen.outcome import Measurement, Shape
    >>> def measure_for(device):   # a fake GPU where bigger block tiles are faster
    ...     return lambda c, s: Measurement(c.name, s, ms=1 + 1 / c.BM, iqr_ms=0, cublas_ms=1.0, rel_error=0)
    >>> db = f"sqlite:///{tempfile.mkdtemp()}/studies.db"
    >>> plan = make_plan(Shape(512, 512, 512), "h100", trials=12, sampler="random", storage=db)
    >>> result = run_search(plan, measure_for)
    >>> result.counts.measured, result.stopped, pick_winner(plan).config == result.config
    (12, 'budget', True)
    """
    setup_study(plan)
    if len(devices) <= 1:
        stopped = Worker(plan, measure_for, prepare, devices[0] if devices else 0, 0, observer).run()
    else:
        stopped = _run_processes(plan, measure_for, prepare, list(devices), observer, poll)
    return pick_winner(plan, retime, stopped)


def setup_study(plan: SearchPlan) -> optuna.Study:
    """Create or continue the study: fail the trials of dead workers, enqueue presets once.

    >>> plan = make_plan(Shape(4096, 4096, 4096), "h100", storage="sqlite:///:memory:")
    >>> setup_study(plan).user_attrs["presets"][:4]
    ['v2', 'v3', 'v4', 'v5']
    """
    study = open_study(open_storage(plan.storage, plan.heartbeat), plan.study, device=plan.device.name,
                       shape=plan.shape.key, family=plan.space.family)
    fail_dead_trials(study)
    if plan.presets and "presets" not in study.user_attrs:
        study.set_user_attr("presets", enqueue_presets(study, plan))
    return study


def enqueue_presets(study: optuna.Study, plan: SearchPlan) -> list[str]:
    """Enqueue the presets of the space's family that fit the device and shape; returns their labels.

    Measured first, they make the search end no worse than the best preset. A preset the space can
    express is enqueued as its parameters (the sampler learns from it), any other as its config.

    >>> plan = make_plan(Shape(100, 100, 100), "rtx3090", storage="sqlite:///:memory:", study="odd")
    >>> study = optuna.create_study(study_name="odd")   # a fresh in-memory study each time
    >>> enqueue_presets(study, plan)[-2:]   # checked-bounds presets fit any shape
    ['v12', 'v13']
    """
    enqueued, seen = [], set()
    for p in all_presets(plan.device.arch):
        config = p.replace(layout=plan.shape.layout)
        if config.family != plan.space.family or config.name in seen or not _fits(config, plan):
            continue
        params = plan.space.params_of(config)
        attrs = {"preset": p.label} if params else {"preset": p.label, "config": config.to_dict()}
        study.enqueue_trial(params or {}, user_attrs=attrs)
        enqueued.append(p.label)
        seen.add(config.name)
    return enqueued


def _fits(config: KernelConfig, plan: SearchPlan) -> bool:
    s = plan.shape
    return not explain(config, plan.device) and config.accepts(s.M, s.N, s.K) is None


def _run_processes(plan: SearchPlan, measure_for: MeasureFor, prepare: Prepare | None, devices: list[int],
                   observer: Observer | None, poll: float) -> str:
    """One spawned worker process per device; returns their stop reasons, e.g. 'budget'."""
    ctx = multiprocessing.get_context("spawn")   # not fork: each worker opens its own CUDA context
    reasons = ctx.SimpleQueue()
    procs = [ctx.Process(target=_worker_main, args=(plan, measure_for, prepare, dev, i, reasons),
                         name=f"gemmgen-search-gpu{dev}") for i, dev in enumerate(devices)]
    for p in procs:
        p.start()
    try:
        _watch(plan, procs, observer, poll)
    finally:
        for p in procs:   # after Ctrl-C the workers got SIGINT too; give them time to record it
            p.join(10)
            if p.is_alive():
                p.terminate()
    bad = [f"GPU {d}: exit code {p.exitcode}" for d, p in zip(devices, procs) if p.exitcode]
    if bad:
        raise SearchError(f"search worker(s) failed ({'; '.join(bad)}); their trials in flight are marked "
                          "interrupted and the study can be resumed")
    return ",".join(sorted({reasons.get() for _ in procs}))


def _watch(plan: SearchPlan, procs: list, observer: Observer | None, poll: float) -> None:
    """Report the shared study's progress until every worker process has ended."""
    study = optuna.load_study(study_name=plan.study, storage=open_storage(plan.storage))
    while any(p.is_alive() for p in procs):
        if observer:
            observer(progress(study, plan.trials))
        procs[0].join(poll)


def _worker_main(plan: SearchPlan, measure_for: MeasureFor, prepare: Prepare | None, device: int,
                 index: int, reasons: Any) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)   # the parent draws the progress line
    try:
        reasons.put(Worker(plan, measure_for, prepare, device, index).run())
    except KeyboardInterrupt:
        raise SystemExit(130) from None   # trials in flight are recorded; no traceback per worker


# ---- finalists ------------------------------------------------------------------------------
def pick_winner(plan: SearchPlan, retime: Retime | None = None, stopped: str = "budget") -> SearchResult:
    """Re-time the top configs (with ``retime``; else keep their search timings) and return the fastest.

    ``retime(configs, shape)`` returns one Measurement or Failure per config, in order; see
    :func:`run_search` for an example.
    """
    study = optuna.load_study(study_name=plan.study, storage=open_storage(plan.storage))
    trials = study.get_trials(deepcopy=False)
    top = top_trials(study, plan.finalists, trials)
    if not top:
        raise SearchError(f"no candidate of study {plan.study!r} passed: {_failure_digest(trials)}")
    configs = [KernelConfig.from_dict(t.user_attrs["config"]) for t in top]
    timed = list(retime(configs, plan.shape)) if retime else [_recorded(t, plan.shape) for t in top]
    ranked = sorted(zip(configs, timed, top), key=lambda x: -_tflops(x[1]))
    config, best, trial = ranked[0]
    if isinstance(best, Failure):
        raise SearchError(f"every finalist failed its re-timing; first: {best.kind}: {best.reason}")
    study.set_user_attr("finalists", [_finalist(c, m, t) for c, m, t in ranked])
    return SearchResult(plan.study, config, best, trial.number, counts(trials), stopped,
                        [(c, m) for c, m, _ in ranked])


def _finalist(config: KernelConfig, m: Measurement | Failure, trial: optuna.trial.FrozenTrial) -> dict:
    if isinstance(m, Failure):
        return {"name": config.name, "trial": trial.number, "failure": f"{m.kind}: {m.reason}"}
    return {"name": config.name, "trial": trial.number, "tflops": m.tflops, "ratio": m.ratio}


def _tflops(m: Measurement | Failure) -> float:
    return m.tflops if isinstance(m, Measurement) else -math.inf


def _recorded(t: optuna.trial.FrozenTrial, shape: Shape) -> Measurement:
    a = t.user_attrs
    return Measurement(a["name"], shape, ms=a["ms"], iqr_ms=a.get("iqr_ms", 0.0), cublas_ms=a.get("cublas_ms", 0.0),
                       rel_error=a.get("rel_error", 0.0))


def _failure_digest(trials: list) -> str:
    """'4 compile, 5 invalid, 0 interrupted; first reason: ...' (a measured failure's reason first)."""
    tally = counts(trials)
    failed = [t for t in trials if is_measured(t)] + [t for t in trials if t.user_attrs.get("kind") == "invalid"]
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(tally.failed.items())) or "none measured"
    first = f"; first reason: {failed[0].user_attrs.get('reason', '')}" if failed else ""
    return f"{kinds}, {tally.invalid} invalid, {tally.interrupted} interrupted{first}"


# ---- target GPU -----------------------------------------------------------------------------
def match_gpu(requested: str | None, detected: str) -> str:
    """The table key of the detected GPU, checked against ``--gpu`` (any alias) when one is given.

    >>> match_gpu("h100", "NVIDIA H100 80GB HBM3")
    'h100'
    >>> match_gpu("rtx3090", "NVIDIA H100 PCIe")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tuner.GpuMismatch: --gpu rtx3090 is the NVIDIA GeForce RTX 3090 (rtx3090), but the detected GPU ...
    """
    try:
        found = resolve_alias(detected)
    except UnknownDevice:
        found = None
    if requested is None:
        return found or detected
    wanted = resolve_alias(requested)   # an unknown name raises UnknownDevice listing the known ones
    if wanted != found:
        seen = f"{detected} ({found})" if found else f"{detected} (not in gemmgen's table)"
        raise GpuMismatch(f"--gpu {requested} is the {KNOWN[wanted].name} ({wanted}), but the detected GPU is "
                          f"{seen}; leave out --gpu or run on the named GPU")
    return wanted
