"""The timings stage of a grid search: every kernel worth dispatching, timed on every grid shape it runs.

After the shapes are tuned, each distinct winner of each family (and the presets its space holds,
:func:`.warm.space_presets`) is timed on each grid shape, moved to the shape's layout where it stays valid there,
each shape's most valuable pairs first (the caller's: the built-ins predicted fastest there and its own
winners); the dispatch model (runtime) is fitted to these times. A shape's kernels are timed together in batches,
interleaved with cuBLAS (``retime``: the isolated measuring worker with the correctness gate), on
the next free GPU (:mod:`.pool`); the records stage stores them (``Timings``).

>>> from gemmgen.base.devices import known
>>> from gemmgen.kernel.presets import preset
>>> shapes = [Shape(4096, 4096, 4096), Shape(1000, 1000, 1000, "TT")]
>>> batches = timing_batches([preset("tf32x3-wgmma"), preset("v13")], shapes, known("h100"))
>>> [(b.shape.key, len(b.configs)) for b in batches]
[('4096x4096x4096/NN', 2), ('1000x1000x1000/TT', 2)]
>>> done = {(preset("v13").name, "4096x4096x4096/NN")}   # timed before
>>> timing_batches([preset("v13")], shapes, known("h100"), skip=done)[0].shape.key
'1000x1000x1000/TT'
"""
from __future__ import annotations

import concurrent.futures as cf
import itertools
import time
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Mapping, Sequence

from ..base.devices import DeviceSpec
from ..base.outcome import Failure, Measurement
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from .plan import Prepare, Retime
from .warm import in_layout

BATCH = 12   # kernels timed together on one shape: one problem and one cuBLAS run per round


@dataclass(frozen=True)
class Batch:
    """Kernels to time together on one shape (each already in the shape's layout and valid for it)."""

    shape: Shape
    configs: tuple[KernelConfig, ...]


def timing_batches(configs: Iterable[KernelConfig], shapes: Sequence[Shape], device: DeviceSpec, *,
                   skip: Collection[tuple[str, str]] = (), size: int = BATCH,
                   only: Mapping[str, Collection[str]] | None = None,
                   first: Mapping[str, Sequence[KernelConfig]] | None = None) -> list[Batch]:
    """Every (kernel, shape) pair to time, moved to the shape's layout, without the pairs in ``skip``
    ((kernel name, shape key): timed already) and those that do not run. ``only`` (shape key -> kernel
    names in the shape's layout) keeps just those names on the shapes it holds. ``first`` (shape key ->
    configs in its layout) are a shape's most valuable pairs: they lead its list, whatever ``only`` says.

    Each shape's list is cut into batches of ``size``, and the batches go round-robin over ``shapes``
    (in their order, by value): a stage the budget stops has timed the first batch of every shape
    before the second of any.

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> two = [Shape(512, 512, 512), Shape(64, 64, 64)]
    >>> v10, v11, v12 = (preset(p) for p in ("v10", "v11", "v12"))
    >>> batches = timing_batches([v10, v11, v12], two, known("h100"), size=2, first={"64x64x64/NN": [v12]})
    >>> names = {v10.name: "v10", v11.name: "v11", v12.name: "v12"}
    >>> [(b.shape.key, [names[c.name] for c in b.configs]) for b in batches]
    [('512x512x512/NN', ['v10', 'v11']), ('64x64x64/NN', ['v12', 'v10']), ('512x512x512/NN', ['v12']), ('64x64x64/NN', ['v11'])]
    """
    configs = list({c.name: c for c in configs}.values())
    moved = {lay: in_layout(configs, lay, device) for lay in {s.layout for s in shapes}}   # warm.transfer, per layout
    valid: dict[str, bool] = {c.name: True for cs in moved.values() for c in cs}
    lists = []
    for shape in shapes:
        wanted = only.get(shape.key) if only is not None else None
        lead = [c.replace(label="") for c in (first or {}).get(shape.key, ()) if c.layout == shape.layout
                and valid.setdefault(c.name, not explain(c, device))]
        rest = [c for c in moved[shape.layout] if wanted is None or c.name in wanted]
        here: dict[str, KernelConfig] = {}
        for config in [*lead, *rest]:
            if config.accepts(shape.M, shape.N, shape.K) is None and (config.name, shape.key) not in skip:
                here.setdefault(config.name, config)
        todo = list(here.values())
        lists.append([Batch(shape, tuple(todo[i:i + size])) for i in range(0, len(todo), size)])
    return [b for row in itertools.zip_longest(*lists) for b in row if b is not None]


@dataclass(frozen=True)
class TimeShape:
    """``work(device, batch)``: compile the batch (``jobs`` at once), then time it on that GPU.

    Returns (config, Measurement or Failure) per kernel; a kernel that fails to compile or its gate
    is a Failure, and its batch's other kernels are still timed.
    """

    retime_for: Callable[[int], Retime]
    prepare: Prepare | None = None
    jobs: int = 2
    deadline: float | None = None   # time.time() after which batches are skipped (a rerun times them)

    def __call__(self, device: int, batch: Batch) -> list[tuple[KernelConfig, Measurement | Failure]]:
        if self.deadline is not None and time.time() > self.deadline:
            return []
        built = dict(zip(batch.configs, self._compile(batch.configs)))
        ok = [c for c in batch.configs if built[c] is None]
        timed = dict(zip(ok, self.retime_for(device)(ok, batch.shape))) if ok else {}
        return [(c, built[c] or timed[c]) for c in batch.configs]

    def _compile(self, configs: Sequence[KernelConfig]) -> list[Failure | None]:
        if self.prepare is None:
            return [None] * len(configs)
        with cf.ThreadPoolExecutor(max(1, self.jobs), thread_name_prefix="gemmgen-prepare") as pool:
            return list(pool.map(self._one, configs))   # NVRTC releases the GIL: threads compile in parallel

    def _one(self, config: KernelConfig) -> Failure | None:
        try:
            self.prepare(config)
            return None
        except Failure as f:
            return f
