"""What a preset name means on a target, resolved once for every entry point (emit, bench, the runtime).

``v13`` is "autotuned": on a GPU with stored results (shipped or the user's), the fastest fp32 kernel
measured at 4096x4096x4096 in layout NN (:data:`V13_SHAPE`), among the search's winner for that shape
and the kernels the tuning grid timed there; that is the kernel ``gemmgen results export GPU
4096x4096x4096`` writes and the first of ``gemmgen results plan GPU 4096x4096x4096``'s candidates in NN.
Where the results lack that shape, the fastest stored fp32 winner of layout NN; without results, the
built-in best for the GPU's architecture. Every other preset is built in. ``gemmgen presets``,
``gemmgen emit --preset v13``, ``gemmgen bench --preset v13``, :func:`gemmgen.bench` and the runtime's
fallback all call :func:`resolve_preset`, so one name is one kernel on one GPU.

>>> from gemmgen.kernel.presets import preset
>>> resolve_preset("v13", "rtx3090", entries={}) == preset("v13", "sm_86")   # nothing stored: built in
True
>>> resolve_preset("v8", "h100").name == preset("v8").name
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.presets import names, preset, runs_on
from ..kernel.rules import DeviceLike, as_device
from .entry import Entry
from .keys import FP32
from .lookup import Results, load_device
from .timings import Timings

Entries = Optional[Mapping[str, Entry]]   # a GPU's stored entries; None reads them from the results folders
# The shape v13 is the fastest kernel of: the progression's benchmark size (seed 001's table), square and
# large enough that every GPU is compute-bound there.
V13_SHAPE = "4096x4096x4096/NN"


@dataclass(frozen=True)
class Measured:
    """The fastest fp32 kernel measured at one shape: its config, time, and the stored winner if it is one
    (None: a kernel the tuning grid timed, whose time comes from the results' timings)."""

    config: KernelConfig
    ms: float
    entry: Entry | None


def fastest_at(key: str, entries: Mapping[str, Entry], timings: Timings = Timings.empty()) -> Measured | None:
    """The fastest fp32 kernel measured at the results key ``key`` ('MxNxK/LAYOUT'): the search's winner
    stored for it, or a kernel the tuning grid timed there in the same layout, whichever took less time
    (the stored winner on a tie); None where neither has the shape.

    >>> from gemmgen.kernel.presets import preset
    >>> t = Timings.empty().add(preset("v10"), "1024x1024x1024", 0.5).add(preset("v8"), "1024x1024x1024", 0.7)
    >>> fastest_at("1024x1024x1024/NN", {}, t).config.name == preset("v10").name
    True
    """
    shape = Shape.parse(key)
    found = []
    if key in entries and entries[key].precision == FP32:
        e = entries[key]
        found.append((shape.flops / (e.tflops * 1e9), 0, e.kernel_config, e))
    for name, kt in sorted(timings.kernels.items()):
        if key in kt.ms and kt.config.precision == FP32 and kt.config.layout == shape.layout:
            found.append((kt.ms[key], 1, kt.config, None))
    if not found:
        return None
    ms, _, config, entry = min(found, key=lambda f: (f[0], f[1]))
    return Measured(config, ms, entry)


def stored_best(target: DeviceSpec, entries: Entries = None, results: Results = None,
                timings: Timings | None = None) -> KernelConfig | None:
    """v13's tuned config for ``target``, if its results have one (see the module).

    ``entries`` and ``timings`` are the GPU's stored entries and tuning-grid times (the runtime has
    them loaded); by default both are read from the shipped and the user's results (``results`` names
    another user folder).

    >>> from gemmgen.base.devices import known
    >>> stored_best(known("rtx3090"), entries={}) is None
    True
    """
    if entries is None:
        found = _results_of(target, results)
        entries, timings = found.entries, found.timings
    at = fastest_at(V13_SHAPE, entries, timings or Timings.empty())
    if at is not None:
        return at.config
    fp32_nn = [e for e in entries.values() if e.shape.layout == "NN" and e.precision == FP32]
    return max(fp32_nn, key=lambda e: e.tflops).kernel_config if fp32_nn else None


def _results_of(device: DeviceSpec, results: Results):
    """The stored results of a GPU in gemmgen's table (by name or alias), or of a detected one (its name only)."""
    from ..base.devices import KNOWN

    return load_device(device.name if device.key in KNOWN else {"name": device.name}, results, missing_ok=True)


def v13_origin(target: DeviceLike, results: Results = None) -> str:
    """Where ``target``'s v13 comes from, in words (for ``gemmgen presets`` and ``explain``).

    >>> v13_origin("rtx3090", results="/nonexistent")
    'built in for sm_86 (no stored results for NVIDIA GeForce RTX 3090)'
    """
    device = as_device(target)
    found = _results_of(device, results)
    if fastest_at(V13_SHAPE, found.entries, found.timings) is not None:
        return f"the fastest measured at {V13_SHAPE} on {found.name}"
    if any(e.shape.layout == "NN" and e.precision == FP32 for e in found.entries.values()):
        return f"the fastest stored NN winner of {found.name} (none measured at {V13_SHAPE})"
    return f"built in for {device.arch} (no stored results for {device.name})"


def resolve_preset(name: str, target: DeviceLike, entries: Entries = None, results: Results = None,
                   timings: Timings | None = None) -> KernelConfig:
    """The config a preset name means on ``target`` (a DeviceSpec, GPU name or sm_XX); see the module.
    ``entries`` and ``timings``: the GPU's results where the caller has them loaded."""
    device = as_device(target)
    tuned = stored_best(device, entries, results, timings) if name == "v13" else None
    return preset(name, device.arch, tuned=tuned)


def resolve_presets(target: DeviceLike, entries: Entries = None, results: Results = None) -> list[KernelConfig]:
    """Every preset that exists on ``target``'s architecture, v13 resolved as :func:`resolve_preset` does."""
    device = as_device(target)
    return [resolve_preset(n, device, entries, results) for n in names() if runs_on(n, device.arch)]
