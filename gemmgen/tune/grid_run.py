"""Tuning a grid: every pending (family, shape) task searched on the next free GPU, warm-started from
its finished neighbours, stopped where more trials stop paying.

:class:`TuneShape` is the work one GPU's worker does for one task (see :mod:`.pool` for the queue):
the study is set up, its presets and warm starts (:mod:`.warm`) are enqueued once, the
search runs on that GPU alone, and the result is recorded in the study (:func:`.grid_plan.record_state`),
so a rerun skips the finished task and the tasks after it find its winner.

>>> import tempfile
>>> from gemmgen.base import Measurement
>>> from gemmgen.base.devices import known
>>> from gemmgen.tune.grid import Grid
>>> def measure_for(device):   # a fake GPU where bigger block tiles are faster
...     return lambda c, s: Measurement(c.name, s, ms=1 + 1 / c.BM, iqr_ms=0, cublas_ms=2.0, rel_error=0)
>>> grid = Grid("demo", (Shape(256, 256, 256), Shape(512, 512, 512)))
>>> job = GridJob(grid, ("simt",), known("h100"), f"sqlite:///{tempfile.mkdtemp()}/s.db", trials=16,
...               options={"sampler": "random"})
>>> done = run_grid(job, TuneShape(job, measure_for), [0], mode="inline")
>>> [(d.item.shape.key, d.result["stopped"], d.result["measured"]) for d in done]
[('512x512x512/NN', 'plateau', 15), ('256x256x256/NN', 'plateau', 15)]
>>> [s.key for s, winner in job.neighbours_of(Task("simt", Shape(256, 256, 256)))]   # warm-started it
['512x512x512/NN']
>>> job.pending()
[]
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import optuna

from ..base.shape import Shape  # noqa: F401  (the example's)
from .budget import task_timeout
from .driver import run_search, setup_study
from .grid_plan import GridJob, Task, record_state
from .plan import MeasureFor, Prepare, Retime
from .pool import Done, run_on_devices
from .trial_stats import Progress
from .warm import enqueue_warm


@dataclass(frozen=True)
class TuneShape:
    """``work(device, task)``: search one task on one GPU; returns what the progress line and the
    closing table show (picklable, for one worker process per GPU)."""

    job: GridJob
    measure_for: MeasureFor
    prepare: Prepare | None = None
    retime_for: Callable[[int], Retime] | None = None   # device -> retime of the finalists on it
    keep: Callable[[Task, Progress], None] | None = None   # called with each new best, as soon as it is measured

    def __call__(self, device: int, task: Task) -> dict:
        optuna.logging.set_verbosity(optuna.logging.WARNING)   # a worker process's own: the parent prints a line
        job = self.job
        states = job.states()
        timeout = self._timeout(task, states)
        if timeout is not None and timeout <= 0:
            return {"skipped": "the budget's tuning share had passed", "family": task.family, "shape": task.shape.key}
        plan = job.plan_for(task, timeout=timeout)
        study = setup_study(plan)
        warm = enqueue_warm(study, plan, job.neighbours_of(task, states), job.builtins.get(task, ()))
        retime = self.retime_for(device) if self.retime_for else None
        result = run_search(plan, self.measure_for, prepare=self.prepare, retime=retime, devices=[device],
                            observer=_NewBest(task, self.keep) if self.keep else None)
        state = record_state(plan, result, finished=result.stopped != "timeout")
        return {**state, "study": plan.study, "family": task.family, "shape": task.shape.key,
                "enqueued": len(warm), "counts": asdict(result.counts)}


    def _timeout(self, task: Task, states: dict) -> float | None:
        """The task's seconds: its share of the tuning time left (:func:`.budget.task_timeout`), at most
        ``job.timeout``; None without either."""
        job, share = self.job, None
        if job.deadline is not None:
            left = [t for t in job.pending(states) if t != task]
            share = task_timeout(job.deadline - job.clock(), len(left) + 1, job.devices)
        limits = [x for x in (share, job.timeout) if x is not None]
        return min(limits) if limits else None


class _NewBest:
    """An observer of a task's search that hands each new best (by name) to ``keep`` at once."""

    def __init__(self, task: Task, keep: Callable[[Task, Progress], None]):
        self.task, self.keep, self.best = task, keep, ""

    def __call__(self, progress: Progress) -> None:
        if progress.best_config and progress.best_name != self.best:
            self.best = progress.best_name
            self.keep(self.task, progress)


def run_grid(job: GridJob, work: TuneShape, devices: Sequence[int], *, mode: str = "process",
             on_done: Callable[[Done], None] | None = None) -> list[Done]:
    """Tune every pending task of the job, one worker per device; returns their outcomes as they finished."""
    return run_on_devices(job.pending(), work, devices, mode=mode, on_done=on_done)
