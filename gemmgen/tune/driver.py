"""The search driver behind ``gemmgen search``: presets first, one trial runner per GPU, then the finalists.

See :func:`run_search` for an example; :mod:`.plan` says what a search is given.
"""
from __future__ import annotations

import multiprocessing
from typing import Any, Sequence

import optuna

from ..kernel.config import KernelConfig
from ..kernel.presets import all_presets
from ..kernel.rules import explain
from .finalists import SearchError, SearchResult, pick_winner
from .plan import MeasureFor, Observer, Prepare, Retime, SearchPlan
from .runner import TrialRunner
from .storage import open_storage
from .studies import fail_dead_trials, open_study
from .trial_stats import progress


def run_search(plan: SearchPlan, measure_for: MeasureFor, *, prepare: Prepare | None = None,
               retime: Retime | None = None, devices: Sequence[int] = (0,),
               observer: Observer | None = None, poll: float = 0.5) -> SearchResult:
    """Search until the plan's budget (resuming its study), then re-time the finalists and pick one.

    One device runs in this process; several start one spawned worker process per device, all
    sharing the study (``measure_for`` and ``prepare`` must then be picklable top-level callables).

    >>> import tempfile
    >>> from gemmgen.base import Measurement, Shape
    >>> from gemmgen.tune.plan import make_plan
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
        stopped = TrialRunner(plan, measure_for, prepare, devices[0] if devices else 0, 0, observer).run()
    else:
        stopped = _run_processes(plan, measure_for, prepare, list(devices), observer, poll)
    return pick_winner(plan, retime, stopped)


def setup_study(plan: SearchPlan) -> optuna.Study:
    """Create or continue the study: fail the trials of dead workers, enqueue presets once.

    >>> from gemmgen.base import Shape
    >>> from gemmgen.tune.plan import make_plan
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

    >>> from gemmgen.base import Shape
    >>> from gemmgen.tune.plan import make_plan
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
    """One spawned search process per device, each running a TrialRunner; returns their stop reasons."""
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
        reasons.put(TrialRunner(plan, measure_for, prepare, device, index).run())
    except KeyboardInterrupt:
        raise SystemExit(130) from None   # trials in flight are recorded; no traceback per worker
