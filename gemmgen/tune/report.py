"""``gemmgen report``: plots of a search study (optimization history, parameter importance) as PNG.

Needs matplotlib (``pip install 'gemmgen[plot]'``); without it, :class:`MissingDependency` says so.

>>> import tempfile, optuna
>>> from gemmgen.tune.storage import open_storage
>>> db = f"sqlite:///{tempfile.mkdtemp()}/s.db"
>>> study = optuna.create_study(storage=open_storage(db), study_name="demo", direction="maximize")
>>> study.optimize(lambda t: t.suggest_int("x", 0, 9) + t.suggest_categorical("y", [0, 5]), n_trials=8)
>>> sorted(p.name for p in write_report(db, "demo", tempfile.mkdtemp()))
['optimization_history.png', 'param_importances.png']
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import optuna
from optuna.trial import TrialState

from ..base.devices import MissingDependency
from .storage import StudyError, open_storage
from .trial_stats import is_measured


def _pyplot():
    if importlib.util.find_spec("matplotlib") is None:
        raise MissingDependency("gemmgen report draws its plots with matplotlib, which is not installed: "
                                "pip install 'gemmgen[plot]' (or pip install matplotlib)")
    import matplotlib

    matplotlib.use("Agg")   # files only: no display on a GPU server
    import matplotlib.pyplot as plt

    return plt


def measured_study(storage: str, name: str, with_params: bool = False) -> optuna.Study:
    """An in-memory copy of the study's measured trials (only those with parameters if asked).

    Rejected and repeated draws would skew the history; presets enqueued as whole configs carry no
    parameters, and importance needs parameters common to the trials it ranks.

    >>> measured_study("sqlite:///:memory:", "nope")
    Traceback (most recent call last):
    gemmgen.tune.storage.StudyError: no study 'nope' in sqlite:///:memory:
    """
    try:
        source = optuna.load_study(study_name=name, storage=open_storage(storage))
    except KeyError:
        raise StudyError(f"no study {name!r} in {storage}") from None
    copy = optuna.create_study(direction="maximize", study_name=name)
    copy.add_trials([t for t in source.get_trials(deepcopy=False) if is_measured(t) and (t.params or not with_params)])
    return copy


def write_report(storage: str, name: str, out_dir: str | Path) -> list[Path]:
    """Write optimization_history.png and, given two results with parameters, param_importances.png."""
    plt = _pyplot()
    history, ranked = measured_study(storage, name), measured_study(storage, name, with_params=True)
    if not _complete(history):
        raise StudyError(f"study {name!r} has no measured trial to plot yet")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = [("optimization_history.png", lambda: optuna.visualization.matplotlib.plot_optimization_history(
        history, target_name="TFLOP/s"))]
    if len(_complete(ranked)) >= 2:
        # PED-ANOVA needs no scikit-learn, unlike Optuna's default fANOVA evaluator
        evaluator = optuna.importance.PedAnovaImportanceEvaluator()
        plots.append(("param_importances.png", lambda: optuna.visualization.matplotlib.plot_param_importances(
            ranked, evaluator=evaluator, target_name="TFLOP/s")))
    return [_save(plt, draw, out / file) for file, draw in plots]


def _complete(study: optuna.Study) -> list:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def _save(plt, draw, path: Path) -> Path:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)   # matplotlib backend
        ax = draw()
    fig = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
