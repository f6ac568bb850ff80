"""The tuned-kernel database: one JSON file per GPU, written atomically under a file lock.

A results folder holds ``<slug of the device name>.json`` per GPU (``NVIDIA H100 80GB HBM3`` ->
``nvidia-h100-80gb-hbm3.json``)::

    {"schema": 1,
     "device": {"name": ..., "cc": "9.0", "sm_count": 132, "driver": ..., "cuda": ..., "gemmgen": ...},
     "entries": {"4096x4096x4096/NN": {"config": {...}, "name": ..., "source_hash": ..., "tflops": ...,
                                       "cublas_tflops": ..., "ratio": ..., "date": ..., "trials": ...,
                                       "env": {"driver": ..., "cuda": ..., "gemmgen": ...},
                                       "precision": "fp32"},
                 "4096x4096x4096/NN/tf32": {...}}}

Beside the entries a file may hold ``timings`` (:mod:`.timings`): the times of many kernels on the GPU's
tuning grid, which the runtime's dispatch model is fitted to; and ``policy``: an object of named
thresholds that override the runtime planner's defaults for this GPU (``gemmgen.runtime.policy.Policy``
checks the names when the library loads).

An entry is the best kernel of one shape, layout and accuracy class (``KernelConfig.precision``).
fp32-accurate kernels (simt and 3xTF32 alike) compete for the plain ``<shape>/<layout>`` key, so
the faster of them is what an fp32 request gets; other classes are keyed ``<shape>/<layout>/<precision>``
(tf32; f16 and bf16 for half inputs). Files written before precisions existed have only plain keys
and no ``precision`` field; they load unchanged.

Searches write the per-user folder (:func:`writable_dir`); the folder shipped with gemmgen is read
only. Results of different GPUs are never mixed in one file.

>>> import tempfile
>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.records.entry import Entry
>>> fp = {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "sm_count": 132}
>>> e = Entry.new("4096x4096x4096/NN", preset("v10"), tflops=21.0, cublas_tflops=25.0, trials=200, arch="sm_90")
>>> saved = record(fp, [e], results=tempfile.mkdtemp())
>>> saved.path.name, saved.entries["4096x4096x4096/NN"].ratio
('nvidia-h100-80gb-hbm3.json', 0.84)
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..base.files import locked, write_atomic
from ..base.paths import data_dir, user_results_dir
from .entry import Entry, ResultsError, parse_entry
from .keys import shape_order
from .timings import Timings

SCHEMA = 1
SOFTWARE = ("driver", "cuda", "gemmgen")   # fingerprint fields that change without a new GPU
HARDWARE = ("name", "cc", "sm_count")      # fingerprint fields that must agree within one file


def slug(device_name: str) -> str:
    """File stem of a device's results: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'.

    >>> slug("NVIDIA GeForce RTX 3090")
    'nvidia-geforce-rtx-3090'
    """
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")


@dataclass(frozen=True)
class DeviceResults:
    """Every entry of one GPU, with the GPU's fingerprint and the file it came from."""

    device: dict
    entries: dict[str, Entry]
    path: Path | None = None
    timings: Timings = Timings.empty()
    policy: dict = field(default_factory=dict)   # planner thresholds for this GPU (field name -> value)

    @property
    def name(self) -> str:
        return self.device["name"]

    def to_dict(self) -> dict[str, Any]:
        """The file's JSON form, entries sorted by key."""
        entries = {k: self.entries[k].to_dict() for k in sorted(self.entries, key=shape_order)}
        out = {"schema": SCHEMA, "device": self.device, "entries": entries}
        if self.timings.kernels:
            out["timings"] = self.timings.to_dict()
        if self.policy:
            out["policy"] = dict(self.policy)
        return out


# ---- reading -----------------------------------------------------------------------------------
def load_file(path: str | os.PathLike) -> DeviceResults:
    """Read and validate one results file; any problem raises ResultsError naming the file.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "nvidia-l4.json"
    >>> _ = p.write_text('{"schema": 2}')
    >>> load_file(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.records.entry.ResultsError: .../nvidia-l4.json: schema 2, but this gemmgen reads schema 1 ...
    """
    path = Path(path)
    data = _read_json(path)
    _check_schema(data.get("schema"), path)
    device = _check_device(data.get("device"), path)
    entries = data.get("entries", {})
    if not isinstance(entries, dict):
        raise ResultsError(f"{path}: 'entries' is a {type(entries).__name__}, not an object")
    parsed = [parse_entry(k, v, str(path)) for k, v in entries.items()]
    timings = Timings.from_dict(data["timings"], f"{path}: timings") if "timings" in data else Timings.empty()
    policy = data.get("policy", {})
    if not isinstance(policy, dict):
        raise ResultsError(f"{path}: 'policy' is a {type(policy).__name__}, not an object of field: value")
    return DeviceResults(device, {e.key: e for e in parsed}, path, timings, policy)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: holds a {type(data).__name__}, not a results object")
    return data


def _check_schema(schema: Any, path: Path) -> None:
    if schema != SCHEMA:
        hint = "upgrade gemmgen" if isinstance(schema, int) and schema > SCHEMA else "re-run the search"
        raise ResultsError(f"{path}: schema {schema!r}, but this gemmgen reads schema {SCHEMA} ({hint})")


def _check_device(device: Any, path: Path) -> dict:
    if not isinstance(device, dict) or not isinstance(device.get("name"), str):
        raise ResultsError(f"{path}: has no device fingerprint with a 'name'")
    if path.stem != slug(device["name"]):  # a copied or renamed file would mix GPUs
        raise ResultsError(f"{path}: holds results of {device['name']!r}, whose file is "
                           f"{slug(device['name'])}.json; results of different GPUs are never mixed")
    return device


def check_same_device(recorded: Mapping, fingerprint: Mapping, where: Any) -> None:
    """Raise ResultsError when two fingerprints name different GPUs (name, cc or SM count)."""
    for key in HARDWARE:
        if key in recorded and key in fingerprint and recorded[key] != fingerprint[key]:
            raise ResultsError(
                f"{where}: holds results of {recorded.get('name')!r} ({key} {recorded[key]!r}), not of "
                f"{fingerprint.get('name')!r} ({key} {fingerprint[key]!r}); results of different GPUs "
                "are never mixed (use another --results folder)")


# ---- writing -----------------------------------------------------------------------------------
def shipped_dir() -> Path | None:
    """The read-only results folder shipped with gemmgen, or None where it is absent or hidden
    (``GEMMGEN_SHIPPED=0``: see what a GPU with no shipped results gets)."""
    if os.environ.get("GEMMGEN_SHIPPED", "1") == "0":
        return None
    try:
        return data_dir("results")
    except FileNotFoundError:
        return None


def writable_dir(results: str | os.PathLike | None = None) -> Path:
    """Where searches write: ``results`` if given, else the user folder; never the shipped folder.

    >>> writable_dir("/tmp/my-results").name
    'my-results'
    """
    target = Path(results) if results is not None else user_results_dir()
    shipped = shipped_dir()
    if shipped is not None and target.resolve() == shipped.resolve():
        raise ResultsError(f"{target}: is the results folder shipped with gemmgen, which is read only; "
                           "write to the user folder ($GEMMGEN_RESULTS) or another --results folder")
    return target


def merge(old: Mapping[str, Entry], new: Iterable[Entry]) -> dict[str, Entry]:
    """Entries of both, keeping the higher TFLOP/s per key (the old one on a tie). A simt and a
    3xTF32 winner of one shape share its fp32 key, so the faster of the two stays.

    >>> a = Entry("1x1x1/NN", {}, "a", "", 1.0, 2.0, 0.5, "", 1)
    >>> merge({"1x1x1/NN": a}, [replace(a, name="b", tflops=3.0)])["1x1x1/NN"].name
    'b'
    """
    out = dict(old)
    for entry in new:
        if entry.key not in out or entry.tflops > out[entry.key].tflops:
            out[entry.key] = entry
    return out


def record(fingerprint: Mapping, entries: Iterable[Entry], results: str | os.PathLike | None = None,
           timings: Timings | None = None) -> DeviceResults:
    """Merge entries (and kernel timings: newer times replace older ones) into the GPU's file under its
    lock and write it atomically; returns the file's content.

    ``fingerprint`` is :func:`gemmgen.base.devices.fingerprint` (a dict with at least ``name``); entries
    without ``env`` are stamped with its driver, CUDA and gemmgen versions. See the module example.
    """
    if not isinstance(fingerprint.get("name"), str):
        raise ResultsError(f"device fingerprint {dict(fingerprint)!r} has no 'name'")
    folder = writable_dir(results)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{slug(fingerprint['name'])}.json"
    env = {k: fingerprint[k] for k in SOFTWARE if k in fingerprint}
    stamped = [e if e.env else replace(e, env=env) for e in entries]
    with locked(path):
        current = load_file(path) if path.exists() else DeviceResults(dict(fingerprint), {}, path)
        check_same_device(current.device, fingerprint, path)
        merged = DeviceResults({**current.device, **fingerprint}, merge(current.entries, stamped), path,
                               current.timings.merge(timings or Timings.empty()), current.policy)
        write_atomic(path, merged.to_dict())
    return merged
