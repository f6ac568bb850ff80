"""Where gemmgen's data folders live, from a checkout or from an installed wheel.

The repository keeps ``templates/``, ``search/`` and ``results/`` at its top level; the wheel maps
them into the package (see ``pyproject.toml``). :func:`data_dir` hides the difference.

>>> data_dir("templates").name
'templates'
"""
from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent   # gemmgen/, beside base/
_KINDS = ("templates", "search", "results")


def data_dir(kind: str) -> Path:
    """The folder of one shipped data kind: 'templates', 'search' or 'results'."""
    if kind not in _KINDS:
        raise ValueError(f"unknown data folder {kind!r}; valid: {', '.join(_KINDS)}")
    for candidate in (_PACKAGE / kind, _PACKAGE.parent / kind):  # wheel first, then checkout
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"gemmgen's {kind}/ folder is missing (looked in {_PACKAGE} and {_PACKAGE.parent})")


def cache_dir() -> Path:
    """Where compiled kernels are cached: $GEMMGEN_CACHE, else $XDG_CACHE_HOME/gemmgen."""
    env = os.environ.get("GEMMGEN_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gemmgen"


def user_results_dir() -> Path:
    """Where searches write results: $GEMMGEN_RESULTS, else $XDG_DATA_HOME/gemmgen/results."""
    env = os.environ.get("GEMMGEN_RESULTS")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "gemmgen" / "results"
