"""What the recorded trials of a search study say: counts, progress, the fastest configs.

Trial states carry the accounting the search needs:

- COMPLETE: measured; value = TFLOP/s;
- FAIL with user attr ``kind`` (compile, runtime, timeout, wrong, invalid): measured and failed;
- PRUNED with ``kind`` invalid (the rules reject it) or duplicate (measured or in flight already,
  ``duplicate_of`` names that trial): drawn, never measured;
- FAIL without ``kind``, or kind interrupted: its worker died or was stopped; not measured.

Only measured trials count toward the trial budget, so resuming continues the same total.

>>> import optuna
>>> study = optuna.create_study(direction="maximize")
>>> study.add_trial(optuna.trial.create_trial(value=40.0, user_attrs={"name": "k1", "ratio": 0.9}))
>>> study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.PRUNED,
...                                           user_attrs={"kind": "invalid", "reason": "THREADS: ..."}))
>>> progress(study, budget=10).line()
'1/10 trials, 0 failed, 1 invalid, best 40.0 TFLOP/s (90% of cuBLAS)'
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

_FAILED_KINDS = ("compile", "runtime", "timeout", "wrong", "invalid", "failure")


def is_measured(t: FrozenTrial) -> bool:
    """True for a trial that cost a measurement (or a compile): it counts toward the budget.

    >>> from optuna.trial import create_trial
    >>> is_measured(create_trial(state=TrialState.FAIL, user_attrs={"kind": "compile"}))
    True
    >>> is_measured(create_trial(state=TrialState.FAIL, user_attrs={"kind": "interrupted"}))
    False
    """
    if "duplicate_of" in t.user_attrs:   # studies of earlier versions told repeats COMPLETE, copied
        return False
    if t.state == TrialState.COMPLETE:
        return True
    return t.state == TrialState.FAIL and t.user_attrs.get("kind") in _FAILED_KINDS


@dataclass(frozen=True)
class Counts:
    measured: int = 0          # counts toward the budget: complete + failed
    complete: int = 0
    failed: dict = field(default_factory=dict)   # kind -> number of measured failures
    invalid: int = 0           # rejected by the rules before compiling
    duplicates: int = 0        # configs measured before or in flight elsewhere
    interrupted: int = 0       # lost with a stopped or killed worker
    running: int = 0


def counts(trials: list[FrozenTrial]) -> Counts:
    """Tally trials by what they cost (see the module docstring).

    >>> from optuna.trial import create_trial
    >>> counts([create_trial(value=1.0), create_trial(state=TrialState.FAIL, user_attrs={"kind": "wrong"})]).failed
    {'wrong': 1}
    """
    kinds = Counter(t.user_attrs.get("kind") for t in trials if t.state == TrialState.FAIL and is_measured(t))
    return Counts(
        measured=sum(map(is_measured, trials)),
        complete=sum(t.state == TrialState.COMPLETE and is_measured(t) for t in trials),
        failed=dict(kinds),
        invalid=sum(t.state == TrialState.PRUNED and t.user_attrs.get("kind") == "invalid" for t in trials),
        duplicates=sum(t.state == TrialState.PRUNED and t.user_attrs.get("kind") == "duplicate" for t in trials),
        interrupted=sum(t.state == TrialState.FAIL and t.user_attrs.get("kind") in (None, "interrupted")
                        for t in trials),
        running=sum(t.state == TrialState.RUNNING for t in trials),
    )


@dataclass(frozen=True)
class Progress:
    """What a progress line shows: trials done of the budget, failures, and the best so far."""

    done: int
    budget: int
    counts: Counts
    best_tflops: float = 0.0
    best_ratio: float = 0.0    # cuBLAS time / kernel time; 1.0 = as fast as cuBLAS
    best_name: str = ""
    best_config: dict | None = None   # the best trial's KernelConfig.to_dict()

    @property
    def failures(self) -> int:
        return sum(self.counts.failed.values())

    def line(self) -> str:
        """One status line, e.g. '37/200 trials, 4 failed, 12 invalid, best 41.2 TFLOP/s (87% of cuBLAS)'."""
        best = "no result yet"
        if self.best_name:
            best = f"best {self.best_tflops:.1f} TFLOP/s ({100 * self.best_ratio:.0f}% of cuBLAS)"
        return f"{self.done}/{self.budget} trials, {self.failures} failed, {self.counts.invalid} invalid, {best}"


def progress(study: optuna.Study, budget: int) -> Progress:
    """The study's progress toward ``budget`` measured trials (see the module docstring)."""
    trials = study.get_trials(deepcopy=False)
    tally = counts(trials)
    top = top_trials(study, 1, trials)
    if not top:
        return Progress(tally.measured, budget, tally)
    t = top[0]
    ratio, name = t.user_attrs.get("ratio", 0.0), t.user_attrs.get("name", "")
    return Progress(tally.measured, budget, tally, t.value, ratio, name, t.user_attrs.get("config"))


def top_trials(study: optuna.Study, top: int = 5, trials: list[FrozenTrial] | None = None
               ) -> list[FrozenTrial]:
    """The ``top`` fastest measured configs, one trial per config name.

    >>> study = optuna.create_study(direction="maximize")
    >>> for v in (3.0, 5.0, 4.0):
    ...     study.add_trial(optuna.trial.create_trial(value=v, user_attrs={"name": f"k{v:g}"}))
    >>> [t.value for t in top_trials(study, 2)]
    [5.0, 4.0]
    """
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    best = sorted((t for t in trials if t.state == TrialState.COMPLETE and is_measured(t)),
                  key=lambda t: (-t.value, t.number))
    unique = {t.user_attrs.get("name", t.number): t for t in reversed(best)}   # keep each name's best
    return sorted(unique.values(), key=lambda t: (-t.value, t.number))[:top]


def summary(study: optuna.Study, top: int = 5) -> list[dict[str, Any]]:
    """Rows for the closing table: rank, trial, name, TFLOP/s, % of cuBLAS, ms, preset label.

    >>> summary(optuna.create_study(direction="maximize"))
    []
    """
    return [
        {"rank": i + 1, "trial": t.number, "name": t.user_attrs.get("name", ""), "tflops": t.value,
         "cublas_tflops": t.user_attrs.get("cublas_tflops", 0.0),
         "pct_cublas": 100 * t.user_attrs.get("ratio", 0.0),
         "ms": t.user_attrs.get("ms", math.nan), "preset": t.user_attrs.get("preset", "")}
        for i, t in enumerate(top_trials(study, top))
    ]
