"""``gemmgen.bench``: time configs against cuBLAS on this GPU, each in an isolated measuring worker.

>>> import gemmgen
>>> rows = gemmgen.bench([gemmgen.preset("v10")], ["2048x2048x2048"])   # doctest: +GPU
>>> len(rows), rows[0].measurement is not None                          # doctest: +GPU
(1, True)

``print(gemmgen.measure.benchmark.table(rows))`` shows them as a table.
"""
from __future__ import annotations

from ..base.shape import Shape
from ..measure.benchmark import Progress, Row, run
from ..measure.worker import MeasureWorker
from ..records.best import resolve_presets


def bench(configs=None, shapes=("4096x4096x4096",), layout: str = "NN", device_id: int = 0,
          progress: Progress | None = None, rep_ms: float = 100.0) -> list[Row]:
    """Time configs (default: every preset, v13 resolved for this GPU as everywhere) against cuBLAS.

    Returns benchmark rows (see gemmgen.measure.benchmark): print ``gemmgen.measure.benchmark.table(rows)``.
    Each config is validated against this GPU in its worker before it is compiled.
    """
    shapes = [s if isinstance(s, Shape) else Shape.parse(s, layout) for s in shapes]
    with MeasureWorker(device_id) as worker:
        worker.call("ping")
        configs = configs if configs is not None else resolve_presets(worker.spec)
        measure = lambda cfg, shape: worker.call("measure", cfg, shape, rep_ms=rep_ms)
        return run(configs, shapes, measure, progress)
