"""The end of a search: re-time the fastest configs of the study and name the winner.

>>> from gemmgen.tune.plan import make_plan
>>> plan = make_plan(Shape(64, 64, 64), "h100", storage="sqlite:///:memory:", study="empty")
>>> import optuna; from gemmgen.tune.storage import open_storage
>>> _ = optuna.create_study(storage=open_storage(plan.storage), study_name="empty")
>>> pick_winner(plan)
Traceback (most recent call last):
gemmgen.tune.finalists.SearchError: no candidate of study 'empty' passed: none measured, 0 invalid, 0 interrupted
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import optuna

from ..base.outcome import Failure, Measurement
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from .plan import Retime, SearchPlan
from .storage import open_storage
from .trial_stats import Counts, counts, is_measured, top_trials


class SearchError(RuntimeError):
    """A search that could not name a winner, or a worker process that died; the message says which."""


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


def pick_winner(plan: SearchPlan, retime: Retime | None = None, stopped: str = "budget") -> SearchResult:
    """Re-time the top configs (with ``retime``; else keep their search timings) and return the fastest.

    ``retime(configs, shape)`` returns one Measurement or Failure per config, in order; see
    :func:`gemmgen.tune.driver.run_search` for an example.
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
