"""Best-so-far TFLOP/s against measured trials, per study, and which worker ran each trial.

    python benchmarks/sampler_curve.py sqlite:///results/studies.db STUDY [STUDY ...] > curves.json
"""
from __future__ import annotations

import collections
import json
import sys

import optuna

from gemmgen.tune.trial_stats import is_measured


def curve(storage: str, name: str) -> dict:
    study = optuna.load_study(study_name=name, storage=storage)
    trials = sorted((t for t in study.get_trials(deepcopy=False) if is_measured(t)), key=lambda t: t.number)
    best, out = 0.0, []
    for t in trials:
        best = max(best, t.value or 0.0)
        out.append(round(best, 3))
    workers = collections.Counter(t.user_attrs.get("worker", "?") for t in trials)
    return {"study": name, "measured": len(trials), "best_so_far": out, "workers": dict(workers)}


if __name__ == "__main__":
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    json.dump([curve(sys.argv[1], n) for n in sys.argv[2:]], sys.stdout)
