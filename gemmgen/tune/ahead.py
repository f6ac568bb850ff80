"""Compiling ahead: kernels a grid stage will need, built into the compile cache by background threads
while the GPUs measure others, so a worker that reaches them loads a cached cubin instead of waiting.

NVRTC needs no GPU and releases the GIL, so threads of the parent process compile in parallel with
the measuring workers (which find the cubins in the shared disk cache). A kernel a worker reaches
first is compiled there as before; a kernel that fails to compile fails again where it is measured,
and is recorded there.

>>> from gemmgen.kernel.presets import preset
>>> built = []
>>> with CompileAhead(lambda c: built.append(c.name), [preset("v10"), preset("v10"), preset("v11")], 2, wait=True):
...     pass
>>> sorted(built) == sorted({preset("v10").name, preset("v11").name})
True
"""
from __future__ import annotations

import concurrent.futures as cf
import os
from typing import Any, Iterable

from ..base.outcome import Failure
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from .plan import Prepare
from .warm import fill_split_k, space_presets, split_choices, transfer

AHEAD = 32   # most background compiles at once (each NVRTC holds ~200 MB)


def cores() -> int:
    """CPU cores this process may run on (its affinity mask: a container's share, not the host's count).

    >>> cores() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 2


class CompileAhead:
    """A context: ``prepare`` every config (once per name, in order) on ``threads`` background threads;
    on leaving, compiles not yet started are dropped (``wait``: finish them first)."""

    def __init__(self, prepare: Prepare | None, configs: Iterable[KernelConfig], threads: int, wait: bool = False):
        self.prepare, self.threads, self.wait = prepare, max(1, threads), wait
        self.configs = list({c.name: c for c in configs}.values()) if prepare else []
        self.pool: cf.ThreadPoolExecutor | None = None

    def __enter__(self) -> "CompileAhead":
        if self.configs:
            self.pool = cf.ThreadPoolExecutor(self.threads, thread_name_prefix="gemmgen-ahead")
            for config in self.configs:
                self.pool.submit(self._one, config)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=self.wait, cancel_futures=not self.wait)

    def _one(self, config: KernelConfig) -> None:
        try:
            self.prepare(config)
        except Failure:
            pass   # measured where it is drawn, and recorded there as a compile failure


def warm_kernels(job: Any, tasks: Iterable[Any]) -> list[KernelConfig]:
    """What the tasks will enqueue first whatever their neighbours win: the built-ins predicted fastest on
    them, the presets their spaces hold, in each shape's layout, and their split-K variants for the shape
    (see :mod:`.warm`)."""
    out = []
    for task in tasks:
        space = job.plan_for(task).space
        shape: Shape = task.shape
        out += [c for c in (transfer(b, shape, job.device) for b in job.builtins.get(task, ())) if c is not None]
        for p in space_presets(space, job.device.arch):
            moved = transfer(p, shape, job.device)
            if moved is not None:
                variant = fill_split_k(moved, shape, job.device, split_choices(space))
                out += [moved, *([variant] if variant else [])]
    return out
