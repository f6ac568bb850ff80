"""Optuna samplers by name (tpe, random, cmaes, grid), seeded per worker so parallel searches differ.

>>> type(make_sampler("tpe", 0)).__name__
'TPESampler'
"""
from __future__ import annotations

import socket
import warnings
from typing import Callable

import optuna

from .space import Space
from .storage import StudyError

GRID_LIMIT = 1_000_000   # GridSampler materialises every grid point in memory


class AskTellGrid(optuna.samplers.GridSampler):
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
    return AskTellGrid(space.grid(), seed=seed)


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
