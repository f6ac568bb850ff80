"""``gemmgen.bench``: time configs against cuBLAS on this GPU, each in an isolated measuring worker.

>>> import gemmgen
>>> rows = gemmgen.bench([gemmgen.preset("v10")], ["2048x2048x2048"])   # doctest: +GPU
>>> len(rows), rows[0].measurement is not None                          # doctest: +GPU
(1, True)

``print(gemmgen.measure.benchmark.table(rows))`` shows them as a table. The worker is a spawned process,
which imports the calling script again: in a script, call bench() under ``if __name__ == "__main__":``.
"""
from __future__ import annotations

import multiprocessing

from ..base.devices import require_gpu
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..measure.benchmark import Progress, Row, run
from ..measure.worker import MeasureWorker
from ..records.best import resolve_presets

GUARD = ("gemmgen.bench() runs its measuring worker in a spawned process, which imports your script again: "
         "put the call under `if __name__ == \"__main__\":`")


def bench(configs=None, shapes=("4096x4096x4096",), layout: str = "NN", device_id: int = 0,
          progress: Progress | None = None, rep_ms: float = 100.0) -> list[Row]:
    """Time configs (default: every preset, v13 resolved for this GPU as everywhere) against cuBLAS.

    Returns benchmark rows (see gemmgen.measure.benchmark): print ``gemmgen.measure.benchmark.table(rows)``.
    Each config is validated against this GPU in its worker before it is compiled. Bad arguments raise
    TypeError or ValueError, and a machine without a usable GPU NoGpu, before any process starts.
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):   # this is the worker importing a script
        raise RuntimeError(GUARD)
    shapes = [s if isinstance(s, Shape) else Shape.parse(s, layout) for s in shapes]
    if configs is not None:
        configs = list(configs)
        bad = [c for c in configs if not isinstance(c, KernelConfig)]
        if bad:
            raise TypeError(f"bench takes KernelConfigs (e.g. gemmgen.preset('v8')), got {type(bad[0]).__name__} "
                            f"{bad[0]!r:.40}")
    if not (isinstance(rep_ms, (int, float)) and rep_ms > 0):
        raise ValueError(f"rep_ms = {rep_ms!r}: give a timing budget in milliseconds above 0")
    require_gpu(device_id)   # NoGpu in one line, before a worker is spawned
    with MeasureWorker(device_id) as worker:
        try:
            worker.call("ping")
        except EOFError:     # the worker died while starting: most often a script without the guard
            raise RuntimeError(f"the measuring worker died while starting; {GUARD}") from None
        configs = configs if configs is not None else resolve_presets(worker.spec)
        measure = lambda cfg, shape: worker.call("measure", cfg, shape, rep_ms=rep_ms)
        return run(configs, shapes, measure, progress)
