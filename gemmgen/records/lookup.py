"""Reading the tuned-kernel database: both results folders, one GPU's results by name, fingerprint or alias.

Lookups see the folder shipped with gemmgen (read only) and the user folder (or ``--results``);
where both hold the same GPU, the better entry per shape wins. (Which entry serves a request is
the runtime's dispatch rule, :mod:`gemmgen.runtime.dispatch`.)

>>> import tempfile
>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.records.entry import Entry
>>> from gemmgen.records.store import record
>>> folder = tempfile.mkdtemp()
>>> _ = record({"name": "Example GPU"}, [Entry.new("256x256x256", preset("v6"), 1.5, 3.0, 9, arch="sm_90")], folder)
>>> list(load_device("Example GPU", folder).entries)
['256x256x256/NN']
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ..base.devices import UnknownDevice, resolve_alias
from ..base.paths import user_results_dir
from . import store
from .entry import ResultsError
from .store import DeviceResults, check_same_device, load_file, merge, slug

Results = str | os.PathLike | None   # a --results folder, or None for the user folder


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
    """One GPU's results from several folders: the better entry per key, the last fingerprint, the
    timings of all (the user's folder, read last, wins where both timed a kernel on a shape), the policy
    fields of all (the user's win)."""
    out = parts[0]
    for part in parts[1:]:
        check_same_device(out.device, part.device, part.path)
        out = DeviceResults({**out.device, **part.device}, merge(out.entries, part.entries.values()),
                            part.path, out.timings.merge(part.timings), {**out.policy, **part.policy})
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
    gives empty entries; otherwise ResultsError lists the GPUs that have results. A name that is
    neither a GPU with results nor one in gemmgen's table is a ResultsError either way.

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
    if missing_ok and (isinstance(device, Mapping) or _alias_of(name)):
        return DeviceResults(dict(device) if isinstance(device, Mapping) else {"name": name}, {})
    have = ", ".join(load_all(results)) or "none"
    if not isinstance(device, Mapping) and not _alias_of(name):   # a typo, not a GPU without results
        from ..base.devices import KNOWN

        raise ResultsError(f"unknown GPU {name!r}: no results under that name and not in gemmgen's table "
                           f"({', '.join(KNOWN)}); GPUs with results: {have}")
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
