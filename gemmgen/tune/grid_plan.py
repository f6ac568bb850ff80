"""What a grid search tunes: one task per (family, shape), each in its own study, and what those
studies say (finished or not, their winners).

A finished task records user attr ``grid`` in its study: the budget it finished (``done``), why it
stopped, and its winner. A rerun skips a task whose ``done`` reaches ``--trials`` and continues the
others (a larger ``--trials`` continues every one); a winner is recorded even when the search was cut
short, so warm starts and timings can use it.

>>> import tempfile
>>> from gemmgen.base.devices import known
>>> from gemmgen.tune.grid import Grid
>>> grid = Grid("demo", (Shape(512, 512, 512), Shape(64, 64, 64)))
>>> job = GridJob(grid, ("simt", "tf32x3"), known("h100"), f"sqlite:///{tempfile.mkdtemp()}/s.db", trials=20)
>>> [(t.family, t.shape.key) for t in job.tasks()][:3]   # by value: the larger shape of the regime first
[('simt', '512x512x512/NN'), ('tf32x3', '512x512x512/NN'), ('simt', '64x64x64/NN')]
>>> job.plan_for(job.tasks()[1]).study, len(job.pending())
('h100-tf32x3-512x512x512-NN', 4)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import optuna

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.accepts import family_refuses
from ..kernel.config import KernelConfig
from .grid import Grid, nearest
from .shapeset import LAYOUTS, order_by_value
from .plan import SearchPlan, make_plan
from .storage import open_storage
from .studies import study_name

ATTR = "grid"


@dataclass(frozen=True)
class Task:
    """One family on one shape of the grid: one study, tuned on one GPU."""

    family: str
    shape: Shape

    def __str__(self) -> str:
        return f"{self.family} {self.shape.key}"


@dataclass(frozen=True)
class GridJob:
    """A grid search: the grid, its families, the GPU kind, the studies' storage and the budgets
    (picklable: sent to one worker process per GPU)."""

    grid: Grid
    families: tuple[str, ...]
    device: DeviceSpec
    storage: str
    trials: int = 24              # measured trials per task (enqueued ones included), before stretching
    patience: int = 8             # stopping.plateaued; 0 never stops early
    stretch_below: float = 1.2    # budget x 2 while the best is below this ratio to cuBLAS; 0 never
    neighbours: int = 4           # finished neighbour studies whose winners warm-start a task
    space: str | None = None      # --space FILE (one family) instead of the shipped space
    study: str | None = None      # --study base name
    deadline: float | None = None   # clock() after which no task starts and running ones stop (the tuning share)
    options: Mapping[str, Any] = field(default_factory=dict)   # sampler, seed, jobs, lookahead, finalists
    limit: int | None = None      # tune only the first this many tasks (what the budget affords); None: all
    timeout: float | None = None  # seconds a task may run at most (--timeout), besides its share of the budget
    devices: int = 1              # GPUs tuning at once: a task's share of the time left is per GPU
    clock: Callable[[], float] = time.time   # wall clock of the deadline (tests pass a fake one)
    # task -> the built-in kernels of its family predicted fastest on its shape: its first warm starts
    builtins: Mapping[Task, tuple[KernelConfig, ...]] = field(default_factory=dict)

    def shapes(self) -> list[Shape]:
        """The grid's shapes by value (.shapeset.order_by_value, or a derived grid's own order)."""
        return list(self.grid.shapes) if self.grid.ordered else order_by_value(self.grid.shapes, self.device)

    def timing_shapes(self) -> list[Shape]:
        """The shapes the timings stage times: :meth:`shapes`, then, for a grid timed in every layout (a
        derived one), each of them in the other three layouts, by value. The dispatch predicts a request
        from timings in its own layout, and a derived grid tunes each shape in one layout only.

        >>> from gemmgen.base.devices import known
        >>> from gemmgen.tune.grid import Grid
        >>> grid = Grid("demo", (Shape(512, 512, 512, "NT"),), every_layout=True)
        >>> [s.key for s in GridJob(grid, ("simt",), known("h100"), "sqlite:///:memory:").timing_shapes()]
        ['512x512x512/NT', '512x512x512/NN', '512x512x512/TN', '512x512x512/TT']
        """
        shapes = self.shapes()
        if not self.grid.every_layout:
            return shapes
        others = [Shape(s.M, s.N, s.K, lay) for s in shapes for lay in LAYOUTS if lay != s.layout]
        return list(dict.fromkeys([*shapes, *order_by_value(others, self.device)]))

    def tasks(self) -> list[Task]:
        """Every task in the order the queue hands them out: shapes by value (.shapeset.order_by_value, or a
        derived grid's own order), each shape's families in the order given, but for a family none of whose
        kernels computes the shape (skinny)."""
        return [Task(f, s) for s in self.shapes() for f in self.families if family_refuses(f, s.M, s.N) is None]

    def tuned(self, states: Mapping[str, dict] | None = None) -> list[Task]:
        """The tasks this run may tune: the first ``limit`` in order that have not finished this budget of
        trials (the rest are only timed; a rerun goes on to the next ones)."""
        states = self.states() if states is None else states
        return [t for t in self.tasks() if not self.done(t, states)][:self.limit]

    def plan_for(self, task: Task, timeout: float | None = None) -> SearchPlan:
        """The task's search plan (study ``<gpu>-<family>-<shape>``, simt ``<gpu>-<shape>``); its presets
        are enqueued with the warm starts (:func:`.warm.enqueue_warm`), not by the driver."""
        return make_plan(task.shape, self.device, trials=self.trials, storage=self.storage, study=self.study,
                         several_shapes=True, space=self.space, family=task.family,
                         several_families=len(self.families) > 1, timeout=timeout, patience=self.patience,
                         stretch_below=self.stretch_below, presets=False, clock=self.clock, **dict(self.options))

    def study_of(self, task: Task) -> str:
        return study_name(self.device.key, task.shape, self.study, True, task.family, len(self.families) > 1)

    def states(self) -> dict[str, dict]:
        """The ``grid`` attr of every study in the storage that has one, by study name (one query; none,
        and no database made, where an SQLite file does not exist yet)."""
        path = self.storage[len("sqlite:///"):] if self.storage.startswith("sqlite:///") else ""
        if path and path != ":memory:" and not Path(path).exists():
            return {}
        storage = open_storage(self.storage)
        return {s.study_name: dict(s.user_attrs[ATTR]) for s in storage.get_all_studies() if ATTR in s.user_attrs}

    def done(self, task: Task, states: Mapping[str, dict] | None = None) -> bool:
        """Finished with at least this job's budget (a resumed grid skips it)."""
        state = (self.states() if states is None else states).get(self.study_of(task), {})
        return state.get("done", 0) >= self.trials

    def pending(self, states: Mapping[str, dict] | None = None) -> list[Task]:
        """The tasks to tune that have not finished this budget of trials, in order."""
        states = self.states() if states is None else states
        return self.tuned(states)

    def winners(self, states: Mapping[str, dict] | None = None) -> dict[Task, dict]:
        """The recorded winner (``grid`` attr) of every task that has one, in task order."""
        states = self.states() if states is None else states
        out = {}
        for task in self.tasks():
            state = states.get(self.study_of(task), {})
            if "config" in state:
                out[task] = state
        return out

    def neighbours_of(self, task: Task, states: Mapping[str, dict] | None = None
                      ) -> list[tuple[Shape, KernelConfig]]:
        """(shape, winner) of the ``neighbours`` nearest finished tasks of the same family, nearest first."""
        finished = {t.shape: KernelConfig.from_dict(s["config"]) for t, s in self.winners(states).items()
                    if t.family == task.family and s.get("done")}
        return [(s, finished[s]) for s in nearest(task.shape, list(finished), self.neighbours)]


def next_round(job: GridJob, cap: int, states: Mapping[str, dict] | None = None) -> GridJob | None:
    """The job a search's tuning share goes on with once every pending task is done: the same job while
    tasks the plan left untuned remain (``limit`` counts the unfinished), then every task to twice its
    trials (at most ``cap``); None when every task has ``cap`` trials.

    >>> import tempfile
    >>> from gemmgen.base.devices import known
    >>> from gemmgen.tune.grid import Grid
    >>> grid = Grid("demo", (Shape(512, 512, 512), Shape(64, 64, 64)))
    >>> job = GridJob(grid, ("simt",), known("h100"), f"sqlite:///{tempfile.mkdtemp()}/s.db", trials=8, limit=1)
    >>> next_round(job, 20) is job                       # one of two tuned: the other is next
    True
    >>> done = GridJob(grid, ("simt",), known("h100"), "sqlite:///:memory:", trials=16, limit=1)
    >>> nothing = {done.study_of(t): {"done": 16} for t in done.tasks()}
    >>> (r := next_round(done, 20, nothing)).trials, r.limit, next_round(r, 20, {k: {"done": 20} for k in nothing})
    (20, None, None)
    """
    states = job.states() if states is None else states
    if any(not job.done(t, states) for t in job.tasks()):
        return job
    if job.trials >= cap:
        return None
    return replace(job, trials=min(cap, 2 * job.trials), limit=None)


def record_state(plan: SearchPlan, result: Any, finished: bool) -> dict:
    """Write a search result into its study's ``grid`` attr (``done``: the budget it finished, when it did)."""
    m = result.measurement
    state = {"config": result.config.to_dict(), "name": result.config.name, "tflops": m.tflops,
             "cublas_tflops": m.cublas_tflops, "ratio": m.ratio, "measured": result.counts.measured,
             "stopped": result.stopped}
    study = optuna.load_study(study_name=plan.study, storage=open_storage(plan.storage))
    old = study.user_attrs.get(ATTR, {})
    state["done"] = max(plan.trials, old.get("done", 0)) if finished else old.get("done", 0)
    study.set_user_attr(ATTR, state)
    return state
