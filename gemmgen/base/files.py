"""Crash-safe file writes: a sidecar lock for writers, and temp-file-then-rename for the content.

Like Triton's cache, a file is written beside its target and ``os.replace``d over it, so readers
never see half a file; writers of the same file take ``<file>.lock`` first so none loses another's
update (read-modify-write under the lock). Results files (JSON) and cached cubins (bytes) are both
written this way.

>>> import pathlib, tempfile
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
>>> with locked(p):
...     write_atomic(p, {"a": 1})
>>> json.loads(p.read_text()), sorted(x.name for x in p.parent.iterdir())
({'a': 1}, ['x.json', 'x.json.lock'])
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterator


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<path>.lock`` (a sidecar, so readers never see a half file)."""
    lock = path.with_name(path.name + ".lock")
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # blocks until the other writer has replaced the file
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_atomic(path: Path, data: Any, indent: int = 2) -> None:
    """Write JSON (``indent`` spaces a level) to a temp file in the same folder, fsync it and os.replace it
    over ``path``.

    A crash at any point leaves either the old file or the new one, never a mix.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> write_atomic(p, {"a": 1}); json.loads(p.read_text())
    {'a': 1}
    """
    def dump(handle: IO) -> None:
        json.dump(data, handle, indent=indent)
        handle.write("\n")
    _replace(path, dump, "w")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write bytes (a cubin) the same way: readers of ``path`` never see half of it.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "k.cubin"
    >>> write_bytes_atomic(p, b"ELF"); p.read_bytes()
    b'ELF'
    """
    _replace(path, lambda handle: handle.write(data), "wb")


def _replace(path: Path, write: Callable[[IO], Any], mode: str) -> None:
    """Run ``write`` on a temp file beside ``path``, fsync it, then rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())  # the data must be on disk before the rename makes it visible
        os.chmod(tmp, 0o644)            # mkstemp makes 0600; results and caches are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
