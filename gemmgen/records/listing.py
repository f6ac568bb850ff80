"""Rows for ``gemmgen results list|show``: the GPUs with tuned results, and one GPU's tuned shapes."""
from __future__ import annotations

from typing import Any, Mapping

from .keys import shape_order
from .lookup import Results, load_all, load_device

LIST_COLUMNS = ("device", "cc", "sm_count", "shapes", "best_tflops", "best_ratio", "files")
SHOW_COLUMNS = ("shape", "name", "tflops", "cublas_tflops", "ratio", "trials", "date", "origin")


def list_rows(results: Results = None) -> list[dict[str, Any]]:
    """One row per GPU with results (columns LIST_COLUMNS), for `gemmgen results list`.

    >>> import tempfile
    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.records.entry import Entry
    >>> from gemmgen.records.store import record
    >>> folder = tempfile.mkdtemp()
    >>> _ = record({"name": "Example GPU"}, [Entry.new("256x256x256", preset("v6"), 1.5, 3.0, 9, arch="sm_90")], folder)
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


def _digits(x: float) -> float:
    """Four significant digits: a small shape's 0.00164 TFLOP/s stays 0.00164, not 0.0.

    >>> _digits(85.991637), _digits(0.0016432)
    (85.99, 0.001643)
    """
    return float(f"{x:.4g}")


def show_rows(device: str | Mapping, results: Results = None) -> list[dict[str, Any]]:
    """One row per tuned shape of a GPU (columns SHOW_COLUMNS), for `gemmgen results show`.

    An unknown GPU raises ResultsError listing those with results. ``--json`` can print
    ``load_device(device, results, missing_ok=False).to_dict()`` for the full entries.
    """
    dev = load_device(device, results, missing_ok=False)
    return [{"shape": e.key, "name": e.name, "tflops": _digits(e.tflops),
             "cublas_tflops": _digits(e.cublas_tflops), "ratio": round(e.ratio, 3),
             "trials": e.trials, "date": e.date, "origin": e.origin}
            for e in sorted(dev.entries.values(), key=lambda e: shape_order(e.key))]
