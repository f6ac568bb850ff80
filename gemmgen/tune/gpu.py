"""The GPU side of a search: measure, prepare and retime callables backed by isolated workers.

The search driver (tuner.py) takes these by injection. They are picklable dataclasses, so that
``--devices 0,1`` can send them to one search process per GPU; each process keeps one measuring
worker (worker.py) per device, restarted after any crash or hang.
"""
from __future__ import annotations

import atexit
from dataclasses import dataclass
from typing import Sequence

from .config import KernelConfig
from .outcome import Failure, Measurement, Shape
from .worker import Worker

_WORKERS: dict[int, Worker] = {}


def worker_for(device_id: int) -> Worker:
    """This process's measuring worker on a GPU (started on first use, closed at exit)."""
    if device_id not in _WORKERS:
        _WORKERS[device_id] = Worker(device_id)
        atexit.register(_WORKERS[device_id].close)
    return _WORKERS[device_id]


@dataclass(frozen=True)
class GpuMeasure:
    """``measure_for(device)``: gate then time a config against cuBLAS in the device's worker."""

    rep_ms: float = 100.0

    def __call__(self, device_id: int):
        worker = worker_for(device_id)
        return lambda config, shape: worker.call("measure", config, shape, rep_ms=self.rep_ms)


@dataclass(frozen=True)
class NvrtcPrepare:
    """``prepare(config)``: render and compile into the disk cache, so the worker only loads."""

    arch: str

    def __call__(self, config: KernelConfig) -> None:
        from .compile import compile_source
        from .render import render

        compile_source(render(config), self.arch)


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
            return worker.call("retime", list(configs), shape, rep_ms=self.rep_ms)
        except Failure:
            return [self._one(worker, c, shape) for c in configs]

    def _one(self, worker: Worker, config: KernelConfig, shape: Shape) -> Measurement | Failure:
        try:
            return worker.call("measure", config, shape, rep_ms=self.rep_ms)
        except Failure as exc:
            return exc
