"""Measured times of kernels across a GPU's tuning grid: what the dispatch model (runtime.predict) is fitted to.

A results file may carry, beside its per-shape winners, a ``timings`` object: for each kernel (by its
procedural name) its config and its median time in milliseconds on each grid shape it was timed on,
and ``cublas`` with cuBLAS's time on each shape (in the mode of the kernel's precision class; the
dispatch model does not need it, reports do). ``resident``, where known, is how many blocks of the
kernel an SM holds at once (the driver's occupancy calculator on the GPU that timed it; the model's
latency term needs it)::

    "timings": {"kernels": {"gg_tf32x3_nn_...": {"config": {...}, "ms": {"4096x4096x4096/NN": 1.61, ...},
                                                "resident": 1}},
                "cublas": {"fp32": {"4096x4096x4096/NN": 2.64, ...}}}

>>> from gemmgen.kernel.presets import preset
>>> t = Timings.empty().add(preset("v10"), "1024x1024x1024", 0.5).add(preset("v10"), "2048x2048x2048", 3.1)
>>> sorted(t.kernels[preset("v10").name].ms)
['1024x1024x1024/NN', '2048x2048x2048/NN']
>>> Timings.from_dict(t.to_dict()) == t
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..base.shape import Shape
from ..kernel.config import KernelConfig
from .entry import ResultsError


@dataclass(frozen=True)
class KernelTimes:
    """One kernel's config, its measured milliseconds by shape key, and its resident blocks per SM (0:
    unknown)."""

    config: KernelConfig
    ms: dict[str, float] = field(default_factory=dict)
    resident: int = 0

    def shapes(self) -> dict[Shape, float]:
        """The measurements keyed by Shape (what runtime.predict fits)."""
        return {Shape.parse(k): v for k, v in self.ms.items()}


@dataclass(frozen=True)
class Timings:
    """Kernel times of one GPU (by kernel name), and cuBLAS's by precision class and shape key."""

    kernels: dict[str, KernelTimes]
    cublas: dict[str, dict[str, float]]

    @classmethod
    def empty(cls) -> "Timings":
        return cls({}, {})

    def add(self, config: KernelConfig, shape: str | Shape, ms: float, cublas_ms: float | None = None,
            resident: int = 0) -> "Timings":
        """A copy with one more (or a newer) measurement (and the kernel's resident blocks, if known)."""
        key = (shape if isinstance(shape, Shape) else Shape.parse(shape, config.layout)).key
        old = self.kernels.get(config.name)
        kernels = {**self.kernels, config.name: KernelTimes(config, {**(old.ms if old else {}), key: float(ms)},
                                                            resident or (old.resident if old else 0))}
        cublas = self.cublas
        if cublas_ms is not None:
            cls_times = {**cublas.get(config.precision, {}), key: float(cublas_ms)}
            cublas = {**cublas, config.precision: cls_times}
        return Timings(kernels, cublas)

    def merge(self, newer: "Timings") -> "Timings":
        """Both sets; where both timed a kernel on a shape, the newer time."""
        kernels = dict(self.kernels)
        for name, kt in newer.kernels.items():
            old = kernels.get(name)
            kernels[name] = KernelTimes(kt.config, {**(old.ms if old else {}), **kt.ms},
                                        kt.resident or (old.resident if old else 0))
        cublas = {c: {**self.cublas.get(c, {}), **newer.cublas.get(c, {})} for c in {*self.cublas, *newer.cublas}}
        return Timings(kernels, cublas)

    def to_dict(self) -> dict[str, Any]:
        return {"kernels": {n: {"config": k.config.to_dict(), "ms": dict(sorted(k.ms.items())),
                                **({"resident": k.resident} if k.resident else {})}
                            for n, k in sorted(self.kernels.items())},
                "cublas": {c: dict(sorted(t.items())) for c, t in sorted(self.cublas.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "timings") -> "Timings":
        """Parse and check the JSON form; ResultsError names what is wrong."""
        if not isinstance(data, Mapping):
            raise ResultsError(f"{where}: is a {type(data).__name__}, not an object")
        kernels = {}
        for name, item in dict(data.get("kernels", {})).items():
            try:
                config = KernelConfig.from_dict(item["config"])
                ms = {Shape.parse(k, config.layout).key: float(v) for k, v in item["ms"].items()}
                resident = int(item.get("resident", 0))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ResultsError(f"{where}: kernel {name!r} is malformed ({exc})") from None
            if resident < 0:
                raise ResultsError(f"{where}: kernel {name!r} has resident = {resident}; give blocks per SM (>= 1), or leave it out")
            if config.name != name:
                raise ResultsError(f"{where}: kernel {name!r} holds the config of {config.name!r}")
            kernels[name] = KernelTimes(config, ms, resident)
        cublas = {str(c): {str(k): float(v) for k, v in t.items()} for c, t in dict(data.get("cublas", {})).items()}
        return cls(kernels, cublas)

    def of_precision(self, precision: str) -> list[KernelTimes]:
        """The kernels of one precision class (fp32: simt and 3xTF32)."""
        return [k for k in self.kernels.values() if k.config.precision == precision]
