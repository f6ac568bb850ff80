"""``gemmgen results export``: a stored winner as a ``.cu`` file and a JSON manifest beside it.

The kernel is rendered again and validated for the GPU that measured it; the manifest says
whether the source still matches the one measured (``source_matches``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..base.devices import ARCHS, UnknownDevice, known
from ..base.files import write_atomic
from ..base.shape import Shape
from ..codegen.render import render
from ..kernel.rules import DeviceLike
from .entry import Entry, ResultsError
from .keys import shape_order
from .lookup import Results, load_device
from .store import DeviceResults


def export(device: str | Mapping, shape_key: str, out_dir: str | os.PathLike,
           results: Results = None) -> tuple[Path, Path]:
    """Write the winner for one shape as ``<name>.cu`` and ``<name>.json`` (manifest); returns both paths.

    ``shape_key`` is 'MxNxK' (layout NN) or 'MxNxK/LAYOUT'. The manifest holds the config, name,
    recorded and re-rendered source hashes, the measured numbers and the launch geometry.

    >>> import tempfile
    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.records.store import record
    >>> folder = tempfile.mkdtemp()
    >>> _ = record({"name": "Example GPU", "cc": "9.0"}, [Entry.new("1024x1024x1024", preset("v6"), 9.0, 10.0, 50, arch="sm_90")], folder)
    >>> cu, manifest = export("Example GPU", "1024x1024x1024", tempfile.mkdtemp(), folder)
    >>> cu.suffix, 'extern "C"' in cu.read_text()
    ('.cu', True)
    """
    dev = load_device(device, results, missing_ok=False)
    entry = _entry(dev, shape_key)
    source = render(entry.kernel_config, _target(dev.device), file=f"{entry.name}.cu")   # its build line names the file
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cu, manifest = out / f"{entry.name}.cu", out / f"{entry.name}.json"
    cu.write_text(source.code)
    write_atomic(manifest, _manifest(dev, entry, source.digest, source.kernel_names, cu.name))
    return cu, manifest


def _entry(dev: DeviceResults, shape_key: str) -> Entry:
    try:
        key = Shape.parse(shape_key).key
    except ValueError as exc:
        raise ResultsError(str(exc)) from None
    if key not in dev.entries:
        tuned = ", ".join(sorted(dev.entries, key=shape_order)) or "none"
        raise ResultsError(f"no tuned entry for {key} on {dev.name!r}; tuned shapes: {tuned}")
    return dev.entries[key]


def _target(device: Mapping) -> DeviceLike:
    """What to validate an exported kernel against: the table's GPU, else the architecture of its cc."""
    try:
        return known(device["name"])
    except UnknownDevice:
        arch = "sm_" + str(device.get("cc", "")).replace(".", "")
    if arch not in ARCHS:
        raise ResultsError(f"cannot tell which target to validate {device['name']!r}'s kernels for: it is not in "
                           f"gemmgen's table and its compute capability {device.get('cc')!r} is none of "
                           f"{', '.join(ARCHS)}")
    return arch


def _manifest(dev: DeviceResults, e: Entry, digest: str, kernels: tuple[str, ...], cu_name: str) -> dict:
    s, c = e.shape, e.kernel_config
    return {
        "name": e.name, "shape": e.key, "device": dev.device, "file": cu_name, "config": e.config,
        "source_hash": e.source_hash, "rendered_hash": digest, "source_matches": digest == e.source_hash,
        "measured": {"tflops": e.tflops, "cublas_tflops": e.cublas_tflops, "ratio": e.ratio,
                     "trials": e.trials, "date": e.date, "env": e.env},
        "launch": {"kernels": list(kernels), "grid": list(c.grid(s.M, s.N, s.K)),
                   "block": list(c.block()), "smem_bytes": c.smem_bytes},
    }
