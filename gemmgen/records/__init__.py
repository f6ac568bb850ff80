"""Stage 6, the tuned-kernel database: one JSON file per GPU in the shipped and the user's folders.

- ``keys``: results keys (shape, layout, accuracy class); ``entry``: :class:`Entry`, one stored winner;
- ``store``: reading and writing one GPU's file (:func:`record`, atomic, locked);
- ``lookup``: both folders, one GPU's results by fingerprint, name or alias (:func:`load_device`);
- ``timings``: :class:`Timings`, kernels' times across the tuning grid (what dispatch is fitted to);
- ``best``: what a preset name means on a GPU (v13: the stored winner, else the built-in best);
- ``listing`` and ``export``: rows for ``gemmgen results`` and a winner as ``.cu`` plus manifest.
"""
from .best import resolve_preset, resolve_presets, stored_best
from .entry import Entry, ResultsError
from .export import export
from .listing import list_rows, show_rows
from .lookup import load_all, load_device, result_dirs
from .store import DeviceResults, load_file, record
from .timings import KernelTimes, Timings

__all__ = ["DeviceResults", "Entry", "KernelTimes", "ResultsError", "Timings", "export", "list_rows", "load_all", "load_device", "load_file",
           "record", "resolve_preset", "resolve_presets", "result_dirs", "show_rows", "stored_best"]
