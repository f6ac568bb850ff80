"""Optuna studies of a search: names, opening one for a device, shape and family, and failing the
trials of dead workers.

>>> from gemmgen.tune.storage import open_storage
>>> storage = open_storage("sqlite:///:memory:")
>>> study = open_study(storage, "demo", device="NVIDIA H100 80GB HBM3", shape="64x64x64/NN", family="simt")
>>> study.user_attrs["device"]
'NVIDIA H100 80GB HBM3'
"""
from __future__ import annotations

import datetime
import os
import socket
import warnings
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from .storage import StudyError


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

    >>> from gemmgen.tune.storage import open_storage
    >>> s = open_storage("sqlite:///:memory:")
    >>> _ = open_study(s, "x", device="NVIDIA L4", shape="8x8x8/NN", family="simt")
    >>> open_study(s, "x", device="NVIDIA A10", shape="8x8x8/NN", family="simt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tune.storage.StudyError: study 'x' holds trials of NVIDIA L4, ...
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
