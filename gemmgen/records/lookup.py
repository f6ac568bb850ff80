"""Reading the tuned-kernel database: both results folders, the dispatch rule, list/show rows, export.

Lookups see the folder shipped with gemmgen (read only) and the user folder (or ``--results``);
where both hold the same GPU, the better entry per shape wins.

Dispatch rule (what :func:`dispatch` returns for M x N x K in a layout):

1. the exact tuned shape, if its kernel accepts the request;
2. else the entry of the nearest tuned shape, by log-distance sqrt(sum(log(x/y)^2)) over M, N, K,
   among those of the same layout whose kernel accepts the request;
3. else None (the caller falls back to the presets).

>>> from gemmgen.presets import preset
>>> tuned = {e.key: e for e in [Entry.new("4096x4096x4096", preset("v10"), 20.0, 25.0, 200, "x"),
...                             Entry.new("512x512x512", preset("v6"), 5.0, 9.0, 100, "y")]}
>>> dispatch(tuned, 3000, 4000, 5000).key
'4096x4096x4096/NN'
>>> dispatch(tuned, 3000, 4000, 5000, "NT") is None
True
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Mapping

from .devices import ARCHS, UnknownDevice, known, resolve_alias
from .outcome import Shape
from . import store
from .atomic import write_atomic
from .paths import user_results_dir
from .store import (DeviceResults, Entry, ResultsError, check_same_device, load_file, merge,
                    shape_order, slug)

Results = str | os.PathLike | None   # a --results folder, or None for the user folder
LIST_COLUMNS = ("device", "cc", "sm_count", "shapes", "best_tflops", "best_ratio", "files")
SHOW_COLUMNS = ("shape", "name", "tflops", "cublas_tflops", "ratio", "trials", "date", "origin")


# ---- folders and devices --------------------------------------------------------------------------
def result_dirs(results: Results = None) -> list[Path]:
    """Folders lookups read, shipped first: the shipped folder (if present) and ``results`` or the user folder.

    >>> result_dirs("/tmp/mine")[-1]
    PosixPath('/tmp/mine')
    """
    user = Path(results) if results is not None else user_results_dir()
    shipped = store.shipped_dir()
    if shipped is None or shipped.resolve() == user.resolve():
        return [user]
    return [shipped, user]


def _combine(parts: list[DeviceResults]) -> DeviceResults:
    """One GPU's results from several folders: the better entry per key, the last fingerprint."""
    out = parts[0]
    for part in parts[1:]:
        check_same_device(out.device, part.device, part.path)
        out = DeviceResults({**out.device, **part.device}, merge(out.entries, part.entries.values()),
                            part.path)
    return out


def _files(stem: str, results: Results) -> list[Path]:
    return [p for d in result_dirs(results) if (p := d / f"{stem}.json").is_file()]


def load_all(results: Results = None) -> dict[str, DeviceResults]:
    """Every GPU with results in either folder, by device name (a bad file raises ResultsError)."""
    stems = sorted({p.stem for d in result_dirs(results) if d.is_dir() for p in d.glob("*.json")})
    found = [_combine([load_file(p) for p in _files(stem, results)]) for stem in stems]
    return {dev.name: dev for dev in found}


def load_device(device: str | Mapping, results: Results = None, *, missing_ok: bool = True) -> DeviceResults:
    """One GPU's results, by fingerprint dict, driver name, file stem or alias ('h100').

    A fingerprint (what the API passes) matches its own name only, never another part of the same
    alias (an H100 PCIe does not get H100 SXM results). With ``missing_ok`` a GPU without results
    gives empty entries; otherwise ResultsError lists the GPUs that have results.

    >>> import tempfile
    >>> load_device({"name": "Example GPU"}, tempfile.mkdtemp()).entries
    {}
    """
    name = device["name"] if isinstance(device, Mapping) else str(device)
    files = _files(slug(name), results)
    if files:
        found = _combine([load_file(p) for p in files])
    else:
        found = None if isinstance(device, Mapping) else _by_alias(name, load_all(results))
    if found is not None:
        if isinstance(device, Mapping):
            check_same_device(found.device, device, found.path)
        return found
    if missing_ok:
        return DeviceResults(dict(device) if isinstance(device, Mapping) else {"name": name}, {})
    have = ", ".join(load_all(results)) or "none"
    raise ResultsError(f"no tuned results for {name!r} in {', '.join(map(str, result_dirs(results)))}; "
                       f"GPUs with results: {have}")


def _by_alias(name: str, devices: dict[str, DeviceResults]) -> DeviceResults | None:
    try:
        key = resolve_alias(name)
    except UnknownDevice:
        return None
    hits = [d for d in devices.values() if _alias_of(d.name) == key]
    if len(hits) > 1:
        raise ResultsError(f"{name!r} matches several GPUs with results: "
                           f"{', '.join(d.name for d in hits)}; name one of them")
    return hits[0] if hits else None


def _alias_of(device_name: str) -> str | None:
    try:
        return resolve_alias(device_name)
    except UnknownDevice:
        return None


# ---- dispatch -------------------------------------------------------------------------------------
def log_distance(a: Shape, b: Shape) -> float:
    """sqrt(sum(log(x/y)^2)) over M, N, K: shapes twice as large in every dimension are sqrt(3)*ln2 apart.

    >>> round(log_distance(Shape(1024, 1024, 1024), Shape(2048, 2048, 2048)), 4)
    1.2006
    """
    return math.sqrt(sum(math.log(x / y) ** 2 for x, y in ((a.M, b.M), (a.N, b.N), (a.K, b.K))))


def dispatch(entries: Mapping[str, Entry], M: int, N: int, K: int, layout: str = "NN",
             lda: int | None = None, ldb: int | None = None, ldc: int | None = None) -> Entry | None:
    """The tuned entry to run for a request, per the rule in the module docstring (see its example).

    Entries are matched by their shape, not by their key, so keys may carry more than shape and
    layout (a precision class, say); callers pass the entries of one precision class. The exact
    shape is at distance 0; ties in distance go to the faster entry, then to the smaller key, so
    the answer is stable.
    """
    want = Shape(M, N, K, layout.upper())
    near = [e for e in entries.values()
            if e.shape.layout == want.layout and e.kernel_config.accepts(M, N, K, lda, ldb, ldc) is None]
    return min(near, key=lambda e: (log_distance(e.shape, want), -e.tflops, e.key), default=None)


# ---- rows for `gemmgen results list|show` ---------------------------------------------------------
def list_rows(results: Results = None) -> list[dict[str, Any]]:
    """One row per GPU with results (columns LIST_COLUMNS), for `gemmgen results list`.

    >>> import tempfile
    >>> from gemmgen.presets import preset
    >>> from gemmgen.store import record
    >>> folder = tempfile.mkdtemp()
    >>> _ = record({"name": "Example GPU"}, [Entry.new("256x256x256", preset("v6"), 1.5, 3.0, 9)], folder)
    >>> [(r["shapes"], r["best_ratio"]) for r in list_rows(folder) if r["device"] == "Example GPU"]
    [(1, 0.5)]
    """
    rows = []
    for dev in load_all(results).values():
        best = max(dev.entries.values(), key=lambda e: e.tflops, default=None)
        files = sorted({e.origin for e in dev.entries.values()} or {str(dev.path)})
        rows.append({"device": dev.name, "cc": dev.device.get("cc", ""),
                     "sm_count": dev.device.get("sm_count", ""), "shapes": len(dev.entries),
                     "best_tflops": round(best.tflops, 2) if best else None,
                     "best_ratio": round(best.ratio, 3) if best else None, "files": files})
    return rows


def show_rows(device: str | Mapping, results: Results = None) -> list[dict[str, Any]]:
    """One row per tuned shape of a GPU (columns SHOW_COLUMNS), for `gemmgen results show`.

    An unknown GPU raises ResultsError listing those with results. ``--json`` can print
    ``load_device(device, results, missing_ok=False).to_dict()`` for the full entries.
    """
    dev = load_device(device, results, missing_ok=False)
    return [{"shape": e.key, "name": e.name, "tflops": round(e.tflops, 2),
             "cublas_tflops": round(e.cublas_tflops, 2), "ratio": round(e.ratio, 3),
             "trials": e.trials, "date": e.date, "origin": e.origin}
            for e in sorted(dev.entries.values(), key=lambda e: shape_order(e.key))]


# ---- export ---------------------------------------------------------------------------------------
def export(device: str | Mapping, shape_key: str, out_dir: str | os.PathLike,
           results: Results = None) -> tuple[Path, Path]:
    """Write the winner for one shape as ``<name>.cu`` and ``<name>.json`` (manifest); returns both paths.

    ``shape_key`` is 'MxNxK' (layout NN) or 'MxNxK/LAYOUT'. The manifest holds the config, name,
    recorded and re-rendered source hashes, the measured numbers and the launch geometry.

    >>> import tempfile
    >>> from gemmgen.presets import preset
    >>> from gemmgen.store import record
    >>> folder = tempfile.mkdtemp()
    >>> _ = record({"name": "Example GPU"}, [Entry.new("1024x1024x1024", preset("v6"), 9.0, 10.0, 50)], folder)
    >>> cu, manifest = export("Example GPU", "1024x1024x1024", tempfile.mkdtemp(), folder)
    >>> cu.suffix, 'extern "C"' in cu.read_text()
    ('.cu', True)
    """
    from .render import render  # rendering is only needed to export
    dev = load_device(device, results, missing_ok=False)
    entry = _entry(dev, shape_key)
    source = render(entry.kernel_config, _target(dev.device))
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


def _target(device: Mapping) -> Any:
    """What to validate an exported kernel against: the table's GPU, else its sm_XX, else sm_90."""
    try:
        return known(device["name"])
    except UnknownDevice:
        arch = "sm_" + str(device.get("cc", "")).replace(".", "")
        return arch if arch in ARCHS else None


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

