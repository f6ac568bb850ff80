"""Optuna studies of a search: RDB storage, samplers by name, and failing the trials of dead workers.

>>> storage = open_storage("sqlite:///:memory:")
>>> study = open_study(storage, "demo", device="NVIDIA H100 80GB HBM3", shape="64x64x64/NN", family="simt")
>>> study.user_attrs["device"]
'NVIDIA H100 80GB HBM3'
"""
from __future__ import annotations

import datetime
import functools
import importlib.util
import os
import socket
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import optuna
from optuna.trial import FrozenTrial, TrialState

from .paths import user_results_dir
from .space import Space
from .trial_stats import Counts, Progress, counts, is_measured, progress, summary, top_trials  # noqa: F401

# The trial accounting lives in trial_stats.py; its names stay importable from here (the CLI uses them).

GRID_LIMIT = 1_000_000   # GridSampler materialises every grid point in memory


class StudyError(ValueError):
    """A study or storage that this search cannot use; the message says why and what to change."""


# ---- storage --------------------------------------------------------------------------------
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


# ---- samplers -------------------------------------------------------------------------------
class _AskTellGrid(optuna.samplers.GridSampler):
    """GridSampler whose exhaustion is checked by the driver: its own study.stop() only works in optimize()."""

    def after_trial(self, study, trial, state, values) -> None:
        pass


def _tpe(seed: int, space: Space | None) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # multivariate+group model parameters jointly within each conditional branch; constant_liar
        # keeps parallel workers from proposing the point another worker is measuring
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True,
                                          n_startup_trials=10)


def _cmaes(seed: int, space: Space | None) -> optuna.samplers.BaseSampler:
    try:
        import cmaes  # noqa: F401
    except ModuleNotFoundError:
        raise StudyError("the cmaes sampler needs the 'cmaes' package: pip install cmaes") from None
    # CMA-ES models the integer parameters (tile exponents, stages); categorical and conditional
    # ones fall back to random sampling
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)   # with_margin
        return optuna.samplers.CmaEsSampler(seed=seed, with_margin=True, warn_independent_sampling=False)


def _grid(seed: int, space: Space | None) -> optuna.samplers.BaseSampler:
    if space is None:
        raise StudyError("the grid sampler needs the search space")
    if space.grid_size() > GRID_LIMIT:
        raise StudyError(f"the grid of {space.source} has {space.grid_size():.3g} points (limit {GRID_LIMIT:,}); "
                         "give a smaller space file with --space, or use --sampler tpe")
    return _AskTellGrid(space.grid(), seed=seed)


SAMPLERS: dict[str, Callable[[int, Space | None], optuna.samplers.BaseSampler]] = {
    "tpe": _tpe,
    "random": lambda seed, space: optuna.samplers.RandomSampler(seed=seed),
    "cmaes": _cmaes,
    "grid": _grid,
}


def make_sampler(name: str, seed: int, space: Space | None = None) -> optuna.samplers.BaseSampler:
    """A seeded sampler by name: tpe, random, cmaes or grid.

    >>> type(make_sampler("tpe", 0)).__name__
    'TPESampler'
    """
    if name not in SAMPLERS:
        raise StudyError(f"unknown sampler {name!r}; valid: {', '.join(SAMPLERS)}")
    return SAMPLERS[name](seed, space)


def worker_seed(seed: int, worker: int, done: int) -> int:
    """A seed per worker, host and resume point, so parallel or resumed samplers do not replay draws.

    >>> worker_seed(0, 0, 0) == worker_seed(0, 0, 0), worker_seed(0, 0, 0) == worker_seed(0, 1, 0)
    (True, False)
    """
    from numpy.random import SeedSequence

    host = sum(socket.gethostname().encode())
    return int(SeedSequence([seed, worker, done, host]).generate_state(1)[0])


# ---- studies --------------------------------------------------------------------------------
def study_name(device_key: str, shape: Any, base: str | None = None, several: bool = False,
               family: str = "simt", several_families: bool = False) -> str:
    """The study of one device, family and shape: ``h100-4096x4096x4096-NN`` for simt (the names of
    studies made before there were other families), ``h100-tf32x3-4096x4096x4096-NN`` for others.

    A given name is kept for one shape and family, and gets ``-<family>`` and ``-<shape>`` when a
    search runs several. Studies of different families never share a name, so a search of one
    family never resumes another's (open_study also refuses that by the recorded family).

    >>> study_name("h100", "4096x4096x4096/NN"), study_name("h100", "64x64x64/NN", family="tf32")
    ('h100-4096x4096x4096-NN', 'h100-tf32-64x64x64-NN')
    >>> study_name("h100", "64x64x64/NN", "mine", several=True, family="tf32", several_families=True)
    'mine-tf32-64x64x64-NN'
    """
    tag = str(shape).replace("/", "-")
    if base:
        return "-".join([base, *([family] if several_families else []), *([tag] if several else [])])
    return "-".join([device_key, *([family] if family != "simt" else []), tag])


def open_study(storage: Any, name: str, sampler: optuna.samplers.BaseSampler | None = None, *, device: str,
               shape: str, family: str) -> optuna.Study:
    """Create or continue a study; refuse one recorded for another device, shape or family.

    >>> s = open_storage("sqlite:///:memory:")
    >>> _ = open_study(s, "x", device="NVIDIA L4", shape="8x8x8/NN", family="simt")
    >>> open_study(s, "x", device="NVIDIA A10", shape="8x8x8/NN", family="simt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.studies.StudyError: study 'x' holds trials of NVIDIA L4, ...
    """
    study = optuna.create_study(storage=storage, study_name=name, sampler=sampler, direction="maximize",
                                load_if_exists=True)
    wanted = {"device": device, "shape": shape, "family": family}
    have = {k: study.user_attrs.get(k) for k in wanted}
    if not any(have.values()):
        for k, v in wanted.items():
            study.set_user_attr(k, v)
    elif have != wanted:
        raise StudyError(f"study {name!r} holds trials of {have['device']}, shape {have['shape']}, family "
                         f"{have['family']}; this search is for {device}, {shape}, {family}. "
                         "Results of different GPUs or shapes are not mixed: give another --study name")
    return study


# ---- workers --------------------------------------------------------------------------------
def worker_tag() -> str:
    """host:pid of this process, stored on every trial it runs.

    >>> worker_tag().endswith(f":{os.getpid()}")
    True
    """
    return f"{socket.gethostname()}:{os.getpid()}"


def fail_dead_trials(study: optuna.Study, unclaimed_after: float = 120.0) -> int:
    """Mark FAIL the running trials of dead workers; returns how many.

    Heartbeats catch workers on any host after their grace period; a worker of this host whose
    process is gone is caught at once (a killed search resumed right away). A trial no worker
    stamped (its process died right after asking for it) is failed once ``unclaimed_after``
    seconds old. The count returned leaves out the heartbeat ones.

    >>> fail_dead_trials(optuna.create_study())
    0
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    n = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        reason = _dead(t, unclaimed_after)
        if reason:
            n += _mark_interrupted(study, t, reason)
    return n


def _dead(t: FrozenTrial, unclaimed_after: float) -> str | None:
    """Why a running trial's worker is known to be gone, or None."""
    worker = t.user_attrs.get("worker")
    if worker is None:
        age = (datetime.datetime.now() - t.datetime_start).total_seconds() if t.datetime_start else 0.0
        return f"no worker claimed it within {unclaimed_after:g} s" if age > unclaimed_after else None
    host, _, pid = str(worker).rpartition(":")
    if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
        return f"worker {worker} died before finishing it"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)   # signal 0 only checks that the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mark_interrupted(study: optuna.Study, t: FrozenTrial, reason: str) -> int:
    storage = study._storage   # a finished trial cannot be told; write through the storage
    try:
        storage.set_trial_user_attr(t._trial_id, "kind", "interrupted")
        storage.set_trial_user_attr(t._trial_id, "reason", reason)
        return int(storage.set_trial_state_values(t._trial_id, TrialState.FAIL))
    except optuna.exceptions.UpdateFinishedTrialError:
        return 0   # another worker finished it first
