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
[('256x256x256/NN', 'budget', 16), ('512x512x512/NN', 'budget', 16)]
>>> [s.key for s, winner in job.neighbours_of(Task("simt", Shape(512, 512, 512)))]   # warm-started it
['256x256x256/NN']
>>> job.pending()
[]
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import optuna

from ..base.shape import Shape  # noqa: F401  (the example's)
from .driver import run_search, setup_study
from .grid_plan import GridJob, Task, record_state
from .plan import MeasureFor, Prepare, Retime
from .pool import Done, run_on_devices
from .warm import enqueue_warm


@dataclass(frozen=True)
class TuneShape:
    """``work(device, task)``: search one task on one GPU; returns what the progress line and the
    closing table show (picklable, for one worker process per GPU)."""

    job: GridJob
    measure_for: MeasureFor
    prepare: Prepare | None = None
    retime_for: Callable[[int], Retime] | None = None   # device -> retime of the finalists on it

    def __call__(self, device: int, task: Task) -> dict:
        optuna.logging.set_verbosity(optuna.logging.WARNING)   # a worker process's own: the parent prints a line
        job = self.job
        left = None if job.deadline is None else job.deadline - time.time()
        if left is not None and left <= 0:
            return {"skipped": "the grid's --timeout had passed", "family": task.family, "shape": task.shape.key}
        states = job.states()
        plan = job.plan_for(task, timeout=left)
        study = setup_study(plan)
        warm = enqueue_warm(study, plan, job.neighbours_of(task, states))
        retime = self.retime_for(device) if self.retime_for else None
        result = run_search(plan, self.measure_for, prepare=self.prepare, retime=retime, devices=[device])
        state = record_state(plan, result, finished=result.stopped != "timeout")
        return {**state, "study": plan.study, "family": task.family, "shape": task.shape.key,
                "enqueued": len(warm), "counts": asdict(result.counts)}


def run_grid(job: GridJob, work: TuneShape, devices: Sequence[int], *, mode: str = "process",
             on_done: Callable[[Done], None] | None = None) -> list[Done]:
    """Tune every pending task of the job, one worker per device; returns their outcomes as they finished."""
    return run_on_devices(job.pending(), work, devices, mode=mode, on_done=on_done)
