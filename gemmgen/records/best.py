"""What a preset name means on a target, resolved once for every entry point (emit, bench, the runtime).

``v13`` is "autotuned": the fastest stored fp32 winner of layout NN for the target GPU (shipped or
the user's results), else the built-in best for its architecture. Every other preset is built in.
``gemmgen emit --preset v13``, ``gemmgen bench --preset v13``, :func:`gemmgen.bench` and the
runtime's fallback all call :func:`resolve_preset`, so one name is one kernel on one GPU.

>>> from gemmgen.kernel.presets import preset
>>> resolve_preset("v13", "rtx3090", entries={}) == preset("v13", "sm_86")   # nothing stored: built in
True
>>> resolve_preset("v8", "h100").name == preset("v8").name
True
"""
from __future__ import annotations

from typing import Mapping, Optional

from ..base.devices import DeviceSpec
from ..kernel.config import KernelConfig
from ..kernel.presets import names, preset, runs_on
from ..kernel.rules import DeviceLike, as_device
from .entry import Entry
from .keys import FP32
from .lookup import Results, load_device

Entries = Optional[Mapping[str, Entry]]   # a GPU's stored entries; None reads them from the results folders


def stored_best(target: DeviceSpec, entries: Entries = None, results: Results = None) -> KernelConfig | None:
    """v13's tuned config: the fastest stored fp32 winner of layout NN for ``target``, if any.

    ``entries`` are the GPU's stored entries (the runtime has them loaded); by default they are read
    from the shipped and the user's results (``results`` names another user folder).

    >>> from gemmgen.base.devices import known
    >>> stored_best(known("rtx3090"), entries={}) is None
    True
    """
    if entries is None:
        entries = load_device(target.name, results, missing_ok=True).entries
    fp32_nn = [e for e in entries.values() if e.shape.layout == "NN" and e.precision == FP32]
    return max(fp32_nn, key=lambda e: e.tflops).kernel_config if fp32_nn else None


def resolve_preset(name: str, target: DeviceLike, entries: Entries = None, results: Results = None) -> KernelConfig:
    """The config a preset name means on ``target`` (a DeviceSpec, GPU name or sm_XX); see the module."""
    device = as_device(target)
    tuned = stored_best(device, entries, results) if name == "v13" else None
    return preset(name, device.arch, tuned=tuned)


def resolve_presets(target: DeviceLike, entries: Entries = None, results: Results = None) -> list[KernelConfig]:
    """Every preset that exists on ``target``'s architecture, v13 resolved as :func:`resolve_preset` does."""
    device = as_device(target)
    return [resolve_preset(n, device, entries, results) for n in names() if runs_on(n, device.arch)]
