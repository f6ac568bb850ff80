"""Where search studies live: Optuna RDB storage for any SQLAlchemy URL (SQLite by default, PostgreSQL
shared by several hosts), opened once per process.

>>> open_storage("sqlite:///:memory:").engine.dialect.name
'sqlite'
"""
from __future__ import annotations

import functools
import importlib.util
import time
import warnings
from pathlib import Path
from typing import Any

import optuna

from ..base.paths import user_results_dir


class StudyError(ValueError):
    """A study or storage that this search cannot use; the message says why and what to change."""


def default_storage(results_dir: str | Path | None = None) -> str:
    """SQLite in the results directory: ``sqlite:///<results>/studies.db``.

    >>> default_storage("/tmp/r")
    'sqlite:////tmp/r/studies.db'
    """
    return f"sqlite:///{Path(results_dir or user_results_dir()).resolve() / 'studies.db'}"


@functools.lru_cache(maxsize=16)   # one engine per URL and process: opening one checks the schema (~0.5 s)
def open_storage(url: str, heartbeat: int | None = None) -> optuna.storages.RDBStorage:
    """An RDB storage for any SQLAlchemy URL; ``heartbeat`` seconds enable stale-trial detection.

    >>> open_storage("sqlite:///:memory:").engine.dialect.name
    'sqlite'
    """
    engine: dict[str, Any] = {}
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        engine = {"connect_args": {"timeout": 60}}   # several local workers write; wait for the lock
    elif not url.startswith("sqlite"):
        engine = {"pool_pre_ping": True}              # a server may drop idle connections
    # an in-memory database is private to its thread; nothing could ever read a heartbeat there
    beat: dict[str, Any] = {}
    if heartbeat and ":memory:" not in url:
        beat = {"heartbeat_interval": heartbeat, "grace_period": 3 * heartbeat}
    storage = _rdb(url, engine, beat)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        _fast_sqlite(storage.engine)
    return storage


def _rdb(url: str, engine: dict, beat: dict) -> optuna.storages.RDBStorage:
    import sqlalchemy.exc

    for attempt in range(3):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)   # heartbeat
                return optuna.storages.RDBStorage(_with_driver(url), engine_kwargs=engine, **beat)
        except ModuleNotFoundError as e:
            raise StudyError(f"storage {_safe(url)} needs the database driver {e.name!r}; for PostgreSQL: "
                             "pip install 'gemmgen[postgres]'") from None
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError, sqlalchemy.exc.ProgrammingError):
            # hosts or processes opening a new database at once race to create its tables ("already
            # exists", a duplicate version row); the loser finds them made on its next try
            if attempt == 2:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def _fast_sqlite(engine: Any) -> None:
    """WAL journal, synchronous=NORMAL: a commit no longer waits for the disk.

    Optuna commits every suggested parameter; with the default rollback journal each commit is an
    fsync (about 5 ms), which made sampling cost more than a kernel measurement. In WAL mode a
    killed process still loses nothing committed; only a power cut may drop the last commits.
    """
    import sqlalchemy

    def setup(conn: Any, _record: Any) -> None:
        cursor = conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    sqlalchemy.event.listen(engine, "connect", setup)
    engine.dispose()   # pooled connections opened before the listener get the pragmas on reopen


def _with_driver(url: str) -> str:
    """Name psycopg2 in a bare postgresql:// URL when psycopg 3 is absent.

    SQLAlchemy 2.1 maps postgresql:// to psycopg 3; gemmgen's postgres extra installs psycopg2.
    """
    scheme, sep, rest = url.partition("://")
    if scheme in ("postgresql", "postgres") and sep and importlib.util.find_spec("psycopg") is None \
            and importlib.util.find_spec("psycopg2") is not None:
        return f"postgresql+psycopg2://{rest}"
    return url


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    return f"{head.split(':')[0]}://***@{tail}" if sep else url
