"""The GPU side of a search: measure, prepare and retime callables backed by isolated measuring workers.

The search driver (driver.py) takes these by injection. They are picklable dataclasses, so that
``--devices 0,1`` can send them to one search process per GPU; each process keeps one
:class:`~gemmgen.measure.worker.MeasureWorker` per device, restarted after any crash or hang.
The trial runner validated every config against the plan's device before handing it over, so
nothing here validates it again.
"""
from __future__ import annotations

import atexit
from dataclasses import dataclass
from typing import Sequence

from ..base.outcome import Failure, Measurement
from ..base.shape import Shape
from ..build.nvrtc import compile_source
from ..codegen.render import render_validated
from ..kernel.config import KernelConfig
from ..measure.worker import MeasureWorker

_WORKERS: dict[int, MeasureWorker] = {}


def worker_for(device_id: int) -> MeasureWorker:
    """This process's measuring worker on a GPU (started on first use, closed at exit)."""
    if device_id not in _WORKERS:
        _WORKERS[device_id] = MeasureWorker(device_id)
        atexit.register(_WORKERS[device_id].close)
    return _WORKERS[device_id]


@dataclass(frozen=True)
class GpuMeasure:
    """``measure_for(device)``: gate then time a config against cuBLAS in the device's worker."""

    rep_ms: float = 100.0

    def __call__(self, device_id: int):
        worker = worker_for(device_id)
        return lambda config, shape: worker.call("measure", config, shape, rep_ms=self.rep_ms, validated=True)


@dataclass(frozen=True)
class NvrtcPrepare:
    """``prepare(config)``: render and compile into the disk cache, so the worker only loads."""

    arch: str

    def __call__(self, config: KernelConfig) -> None:
        compile_source(render_validated(config, self.arch), self.arch)


@dataclass(frozen=True)
class GpuRetime:
    """``retime(configs, shape)``: the finalists timed together, interleaved with cuBLAS.

    Each finalist passed the gate during the search; if one fails now, the others are timed alone.
    """

    device_id: int = 0
    rep_ms: float = 300.0

    def __call__(self, configs: Sequence[KernelConfig], shape: Shape) -> list[Measurement | Failure]:
        worker = worker_for(self.device_id)
        try:
            return worker.call("retime", list(configs), shape, rep_ms=self.rep_ms, validated=True)
        except Failure:
            return [self._one(worker, c, shape) for c in configs]

    def _one(self, worker: MeasureWorker, config: KernelConfig, shape: Shape) -> Measurement | Failure:
        try:
            return worker.call("measure", config, shape, rep_ms=self.rep_ms, validated=True)
        except Failure as exc:
            return exc
