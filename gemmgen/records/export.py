"""``gemmgen results export``: the fastest kernel measured at a shape as a ``.cu`` file and a JSON manifest.

The kernel is the fastest fp32 one measured at the shape: the search's stored winner, or a kernel the
tuning grid timed there (:func:`gemmgen.records.best.fastest_at`); at 4096x4096x4096 in layout NN it is
v13. It is rendered again and validated for the GPU that measured it; the manifest says whether the
source still matches the one the search measured (``source_matches``; null for a grid-timed kernel).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import math

from ..base.devices import ARCHS, UnknownDevice, known
from ..base.files import write_atomic
from ..base.shape import Shape
from ..codegen.render import render
from ..kernel.rules import DeviceLike
from .best import Measured, fastest_at
from .entry import ResultsError
from .keys import FP32, parse_key
from .lookup import Results, load_device
from .store import DeviceResults

NEAREST = 4   # tuned shapes an unknown shape's message names


def export(device: str | Mapping, shape_key: str, out_dir: str | os.PathLike,
           results: Results = None) -> tuple[Path, Path]:
    """Write the winner for one shape as ``<name>.cu`` and ``<name>.json`` (manifest); returns both paths.

    ``shape_key`` is 'MxNxK' (layout NN) or 'MxNxK/LAYOUT'. The manifest holds the config, name,
    recorded and re-rendered source hashes, the measured numbers and the launch geometry.

    >>> import tempfile
    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.records.entry import Entry
    >>> from gemmgen.records.store import record
    >>> folder = tempfile.mkdtemp()
    >>> _ = record({"name": "Example GPU", "cc": "9.0"}, [Entry.new("1024x1024x1024", preset("v6"), 9.0, 10.0, 50, arch="sm_90")], folder)
    >>> cu, manifest = export("Example GPU", "1024x1024x1024", tempfile.mkdtemp(), folder)
    >>> cu.suffix, 'extern "C"' in cu.read_text()
    ('.cu', True)
    """
    dev = load_device(device, results, missing_ok=False)
    key, best = _fastest(dev, shape_key)
    source = render(best.config, _target(dev.device), file=f"{best.config.name}.cu")   # its build line names the file
    out = Path(out_dir)
    name = best.config.name
    cu, manifest = out / f"{name}.cu", out / f"{name}.json"
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        cu.write_text(source.code)
        write_atomic(manifest, _manifest(dev, key, best, source.digest, source.kernel_names, cu.name))
    except OSError as err:   # nothing half-written is left behind
        cu.unlink(missing_ok=True)
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise ResultsError(f"cannot write into {str(out_dir)!r}: {err.strerror or err}; give a folder you can "
                           "write to (--out)") from None
    return cu, manifest


def measured_keys(dev: DeviceResults) -> set[str]:
    """The fp32 keys with a measured kernel: the tuned shapes and the tuning grid's."""
    keys = {k for k, e in dev.entries.items() if e.precision == FP32}
    return keys | {k for kt in dev.timings.kernels.values() if kt.config.precision == FP32
                   for k in kt.ms if Shape.parse(k).layout == kt.config.layout}


def _fastest(dev: DeviceResults, shape_key: str) -> tuple[str, Measured]:
    try:
        shape = Shape.parse(shape_key)
    except ValueError as exc:
        raise ResultsError(str(exc)) from None
    best = fastest_at(shape.key, dev.entries, dev.timings)
    if best is None:
        keys = measured_keys(dev)
        near = sorted(keys, key=lambda k: _distance(parse_key(k)[0], shape))[:NEAREST]
        raise ResultsError(f"no kernel of {dev.name!r} was measured at {shape.key}; nearest of its {len(keys)} measured "
                           f"shapes: {', '.join(near) or 'none'} (`gemmgen results show GPU` lists its "
                           f"{len(dev.entries)} tuned shapes)")
    return shape.key, best


def _distance(a: Shape, b: Shape) -> tuple[float, bool]:
    """How far apart two shapes are: another layout first, then the summed log-ratios of M, N, K."""
    return (a.layout != b.layout, sum(abs(math.log(x / y)) for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K))))


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


def _manifest(dev: DeviceResults, key: str, best: Measured, digest: str, kernels: tuple[str, ...],
              cu_name: str) -> dict:
    s, c, e = Shape.parse(key), best.config, best.entry
    if e is not None:
        measured = {"by": "search", "ms": best.ms, "tflops": e.tflops, "cublas_tflops": e.cublas_tflops,
                    "ratio": e.ratio, "trials": e.trials, "date": e.date, "env": e.env}
    else:
        cublas_ms = dev.timings.cublas.get(FP32, {}).get(key)
        tflops = s.flops / (best.ms * 1e9)
        measured = {"by": "tuning grid", "ms": best.ms, "tflops": tflops,
                    "cublas_tflops": s.flops / (cublas_ms * 1e9) if cublas_ms else None,
                    "ratio": cublas_ms / best.ms if cublas_ms else None, "trials": None, "date": None, "env": {}}
    return {
        "name": c.name, "shape": key, "device": dev.device, "file": cu_name, "config": c.to_dict(),
        "source_hash": e.source_hash if e else None, "rendered_hash": digest,
        "source_matches": digest == e.source_hash if e else None,
        "measured": measured,
        "launch": {"kernels": list(kernels), "grid": list(c.grid(s.M, s.N, s.K)),
                   "block": list(c.block()), "smem_bytes": c.smem_bytes},
    }
