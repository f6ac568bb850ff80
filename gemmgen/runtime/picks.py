"""First-call tuning's kept picks (:mod:`.autotune`): one JSON file per GPU model under the kernel cache,
``<cache>/tuned/<gpu>.json`` ($GEMMGEN_CACHE, else $XDG_CACHE_HOME/gemmgen), read once per process and
rewritten atomically (merged with what other processes wrote since) at each new pick.

>>> from gemmgen.runtime import picks
>>> picks.request_key(100, 200, 300, "NT", 300, 300, 200, "fp32", None, True)
'100x200x300/NT lda=300 ldb=300 ldc=200 fp32 any aligned'
"""
from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

from ..base.paths import cache_dir
from ..records.store import slug

_kept: dict[str, dict[str, dict]] = {}    # GPU name -> request key -> record
_LOCK = threading.Lock()


def request_key(M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, precision: str,
                family: str | None, aligned: bool) -> str:
    """The text that names a request kind in the file (see the module's example)."""
    return (f"{M}x{N}x{K}/{layout} lda={lda} ldb={ldb} ldc={ldc} {precision} {family or 'any'} "
            f"{'aligned' if aligned else 'unaligned'}")


def folder() -> Path:
    """Where the picks files are: the kernel cache's ``tuned`` folder."""
    return cache_dir() / "tuned"


def kept_path(gpu: str) -> Path:
    """The file of one GPU model's kept picks."""
    return folder() / f"{slug(gpu)}.json"


def label(kernel: str, copy_a: bool, copy_b: bool) -> str:
    """How a record's ``us`` names a plan: the kernel, and the operands copied first.

    >>> label("gg_x", False, True)
    'gg_x (copies B)'
    """
    copies = "A" * bool(copy_a) + "B" * bool(copy_b)
    return f"{kernel} (copies {copies})" if copies else str(kernel)


def kept(gpu: str) -> dict[str, dict]:
    """One GPU's kept picks, read from its file once per process (an unreadable file counts as empty,
    with one warning: it is rewritten at the next pick)."""
    with _LOCK:
        if gpu not in _kept:
            _kept[gpu] = _read(kept_path(gpu))
        return _kept[gpu]


def _read(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text())["picks"]
        if not isinstance(found, dict):
            raise ValueError("picks is not an object")
        return found
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warnings.warn(f"gemmgen: ignoring the tuned picks in {path} ({type(exc).__name__}: {exc})", stacklevel=5)
        return {}


def remember(gpu: str, key: str, record: dict) -> None:
    """Keep a pick for the process and in the GPU's file (merged with what other processes wrote since,
    replaced atomically; a file that cannot be written leaves the pick in memory, with one warning)."""
    mine = kept(gpu)
    with _LOCK:
        mine[key] = record
        path = kept_path(gpu)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            merged = {**_read(path), **mine}
            tmp.write_text(json.dumps({"gpu": gpu, "picks": merged}, indent=1, sort_keys=True))
            os.replace(tmp, path)
        except OSError as exc:
            warnings.warn(f"gemmgen: tuned pick not saved to {path} ({exc})", stacklevel=5)
            try:
                tmp.unlink()
            except OSError:
                pass
