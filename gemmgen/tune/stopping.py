"""When a search stops drawing: its trial budget (stretched for shapes still short of cuBLAS), or a
plateau of its sampled trials.

A grid search (``gemmgen search --grid``) tunes many shapes on a few minutes of GPU time, so trials
go where they pay. A shape stops early once its last ``patience`` sampled trials (drawn in this run,
after the enqueued presets and warm starts) improved the best by no more than ``GAIN``; a shape whose
best is still below ``stretch_below`` x cuBLAS when its budget is spent may go on up to ``stretch``
times the budget. A plain search sets neither and stops at its budget, as before.

>>> import optuna
>>> study = optuna.create_study(direction="maximize")
>>> for v in (10.0, 20.0, 20.1, 20.0, 19.0):
...     study.add_trial(optuna.trial.create_trial(value=v, user_attrs={"ratio": v / 20}))
>>> trials = study.get_trials(deepcopy=False)
>>> plateaued(trials, patience=3), plateaued(trials, patience=4)   # 20.1 is within 1% of 20.0
(True, False)
>>> budget(trials, 4, stretch_below=1.2), budget(trials, 4, stretch_below=0.0)
(8, 4)
"""
from __future__ import annotations

from typing import Any, Sequence

from optuna.trial import FrozenTrial, TrialState

from .trial_stats import is_measured

GAIN = 0.01                      # an improvement of more than 1% resets the patience
ENQUEUED = ("preset", "warm")    # user attrs of trials enqueued before the sampler runs


def enqueued(t: FrozenTrial) -> bool:
    """True for a preset or a warm start (a neighbour's winner, a split-K variant): not a sampled draw."""
    return any(k in t.user_attrs for k in ENQUEUED)


def budget(trials: Sequence[FrozenTrial], trials_budget: int, stretch_below: float = 0.0,
           stretch: float = 2.0) -> int:
    """The measured trials this study may use: ``trials_budget``, or ``stretch`` times it while the
    best measured ratio to cuBLAS is below ``stretch_below`` (0 turns stretching off)."""
    if stretch_below <= 0:
        return trials_budget
    best = max((t.user_attrs.get("ratio", 0.0) for t in trials if t.state == TrialState.COMPLETE), default=0.0)
    return trials_budget if best >= stretch_below else int(trials_budget * stretch)


def plateaued(trials: Sequence[FrozenTrial], patience: int, since: int = 0) -> bool:
    """Whether the last ``patience`` measured, sampled trials numbered ``since`` or later left the best
    within ``GAIN`` of the best before them (failed trials count: they were measured, and gained nothing)."""
    measured = sorted((t for t in trials if is_measured(t)), key=lambda t: t.number)
    recent = [t for t in measured if t.number >= since and not enqueued(t)]
    if patience < 1 or len(recent) < patience:
        return False
    window = {t.number for t in recent[-patience:]}
    before = _best(t for t in measured if t.number not in window)
    after = _best(t for t in measured if t.number in window)
    return after <= before * (1 + GAIN)


def stop_reason(plan: Any, trials: Sequence[FrozenTrial], in_flight: int, since: int = 0) -> str | None:
    """'budget' or 'plateau' when a search should draw no more candidates (``plan``: a SearchPlan)."""
    limit = budget(trials, plan.trials, plan.stretch_below, plan.stretch)
    if sum(map(is_measured, trials)) + in_flight >= limit:
        return "budget"
    if plan.patience and plateaued(trials, plan.patience, since):
        return "plateau"
    return None


def _best(trials: Any) -> float:
    return max((t.value for t in trials if t.state == TrialState.COMPLETE and t.value is not None), default=0.0)
