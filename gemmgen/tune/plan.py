"""A search plan: what one search tunes (shape, GPU, family's space, budget) and what it is given to
measure with. The plan is a picklable value, sent to one search process per GPU.

Measuring is injected: ``measure_for(device_id)`` returns a ``measure(config, shape) -> Measurement``
that raises a :class:`gemmgen.base.outcome.Failure` for expected failures; ``prepare(config)``
(compile) runs ahead in a pool; ``retime(configs, shape)`` re-times the finalists before a winner is
named (see :mod:`.driver`; :mod:`.gpu` has the GPU-backed ones).

>>> make_plan(Shape(4096, 4096, 4096), "h100", storage="sqlite:///:memory:").space.family
'simt'
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..base.devices import KNOWN, DeviceSpec, UnknownDevice, known, resolve_alias
from ..base.outcome import Failure, Measurement
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from .samplers import make_sampler
from .space import Space, SpaceError, load_space
from .storage import default_storage
from .studies import study_name

Measure = Callable[[KernelConfig, Shape], Measurement]
MeasureFor = Callable[[int], Measure]   # device id -> measure function of that GPU
Prepare = Callable[[KernelConfig], Any]
Retime = Callable[[list[KernelConfig], Shape], Sequence["Measurement | Failure"]]
Observer = Callable[[Any], None]        # receives a trial_stats.Progress


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
    patience: int = 0             # stop after this many sampled trials without a 1% gain (0: never); stopping.py
    stretch_below: float = 0.0    # budget x stretch while the best is below this ratio to cuBLAS (0: never)
    stretch: float = 2.0
    clock: Callable[[], float] = time.monotonic   # what ``timeout`` is measured on (tests pass a fake clock)


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


# ---- target GPU -----------------------------------------------------------------------------
def match_gpu(requested: str | None, detected: str) -> str:
    """The table key of the detected GPU, checked against ``--gpu`` (any alias) when one is given.

    >>> match_gpu("h100", "NVIDIA H100 80GB HBM3")
    'h100'
    >>> match_gpu("rtx3090", "NVIDIA H100 PCIe")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tune.plan.GpuMismatch: --gpu rtx3090 is the NVIDIA GeForce RTX 3090 (rtx3090), but the detected GPU ...
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
