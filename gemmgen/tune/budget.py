"""A search's time budget: parsed from ``--budget``, split between tuning and timing, and turned into how
many (shape, family) tasks get tuned with how many trials each, with an estimate of both stages.

The budget is wall time for the whole run, all GPUs together. Tuning gets :attr:`Costs.tune_share` of it
(the rest, and whatever tuning leaves, goes to timing every winner and preset on every shape, which the
dispatch is fitted to: that stage always runs). Tasks are tuned in value order (:mod:`.shapeset`); where
the tuning share cannot give every task :attr:`Costs.min_trials`, the first tasks are tuned and the rest
are still timed with the winners and presets.

>>> parse_budget("1h30m"), parse_budget("90s"), parse_budget("10m")
(5400.0, 90.0, 600.0)
>>> split = plan_budget(1200, tasks=80, trials=200, devices=1)
>>> split.tune_s, split.time_s, split.tasks_tuned, split.trials
(720.0, 480.0, 80, 22)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

_PART = re.compile(r"(\d+)([hms])")


class BudgetError(ValueError):
    """A ``--budget`` value that is not a duration; the message names it and what is valid."""


def parse_budget(text: str) -> float:
    """Seconds in a duration such as 90s, 10m, 1h or 1h30m (hours, minutes, seconds, in that order).

    >>> parse_budget("2h")
    7200.0
    >>> parse_budget("30")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tune.budget.BudgetError: --budget '30': give a duration with units, e.g. 90s, 10m, 1h or 1h30m
    """
    t = text.strip().lower()
    parts = _PART.findall(t)
    units = [u for _, u in parts]
    ok = bool(parts) and "".join(f"{n}{u}" for n, u in parts) == t and units == sorted(units, key="hms".index) \
        and len(set(units)) == len(units)
    seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts) if ok else 0
    if not ok or seconds <= 0:
        raise BudgetError(f"--budget {text!r}: give a duration with units, e.g. 90s, 10m, 1h or 1h30m")
    return float(seconds)


@dataclass(frozen=True)
class Costs:
    """What a run costs, in seconds of one GPU: the figures the estimate uses (measured on an H100 with 16
    cores: 738 trials of 50 ms in 203 s, and the timings stage timed 1,417 pairs at 20 ms each in 45 s;
    a host with fewer cores compiles slower, which the rounds after the plan absorb)."""

    trial_s: float = 0.4      # one measured trial (compiled ahead, gated, timed)
    pair_s: float = 0.05      # one kernel timed on one shape in the timings stage
    tune_share: float = 0.6   # of the budget, for tuning; timing gets the rest
    min_trials: int = 8       # fewer a task and the sampler has not started: tune fewer tasks instead


@dataclass(frozen=True)
class BudgetPlan:
    """How a budget is spent: the split, the tasks tuned and their trials, and the estimates."""

    budget_s: float
    tune_s: float
    time_s: float
    tasks: int                # (shape, family) tasks to tune, before the budget
    tasks_tuned: int          # the first this many, in value order
    trials: int               # measured trials per tuned task (at most --trials)
    devices: int
    costs: Costs

    @property
    def tune_estimate_s(self) -> float:
        """Tuning's expected wall time: tasks x trials x cost of a trial, over the GPUs (at most its share)."""
        return min(self.tune_s, self.tasks_tuned * self.trials * self.costs.trial_s / self.devices)

    def time_estimate_s(self, pairs: int) -> float:
        """The timings stage's expected wall time for ``pairs`` kernel-shape pairs (at most what is left)."""
        return min(self.budget_s - self.tune_estimate_s, pairs * self.costs.pair_s / self.devices)

    def pairs_within(self, pairs: int) -> int:
        """How many of ``pairs`` the timings stage can time in what the budget leaves it."""
        left = self.budget_s - self.tune_estimate_s
        return min(pairs, int(left * self.devices / self.costs.pair_s))

    def to_dict(self) -> dict:
        return {"budget_s": self.budget_s, "tune_s": self.tune_s, "time_s": self.time_s, "tasks": self.tasks,
                "tasks_tuned": self.tasks_tuned, "trials": self.trials, "devices": self.devices,
                "tune_estimate_s": self.tune_estimate_s}


def plan_budget(budget_s: float, *, tasks: int, trials: int, devices: int = 1, costs: Costs = Costs(),
                tune: bool = True) -> BudgetPlan:
    """Split ``budget_s`` (wall seconds) for ``tasks`` tasks of at most ``trials`` trials on ``devices`` GPUs.
    Without tuning (``tune`` False: a timings-only run) the whole budget goes to timing.

    >>> p = plan_budget(300, tasks=84, trials=24, devices=1)   # 5 minutes: 56 of 84 tasks, 8 trials each
    >>> p.tasks_tuned, p.trials, round(p.tune_estimate_s)
    (56, 8, 179)
    >>> plan_budget(36000, tasks=84, trials=24, devices=4).trials   # 10 hours on 4 GPUs: --trials caps it
    24
    """
    if not tune or tasks == 0:
        return BudgetPlan(budget_s, 0.0, budget_s, tasks, 0, 0, devices, costs)
    tune_s = budget_s * costs.tune_share
    fit = math.floor(tune_s * devices / (tasks * costs.trial_s))   # trials a task if every task is tuned
    per = max(1, min(trials, max(costs.min_trials, fit)))
    tuned = min(tasks, max(1, math.floor(tune_s * devices / (per * costs.trial_s))))
    return BudgetPlan(budget_s, tune_s, budget_s - tune_s, tasks, tuned, per, devices, costs)


def task_timeout(left_s: float, tasks_left: int, devices: int) -> float:
    """Seconds the next task may run: its share of the tuning time left, over the tasks left (itself
    included) and the GPUs working on them; a task that finishes early leaves its time to the others.

    >>> task_timeout(600, 10, 2), task_timeout(600, 1, 4)   # never past the tuning time left
    (120.0, 600.0)
    """
    left_s = max(0.0, float(left_s))
    return min(left_s, left_s * max(1, devices) / max(1, tasks_left))
