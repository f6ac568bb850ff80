"""benchmarks/dispatch_loo.py --hold-out/--folds: without a GPU, the dispatch scored on grid shapes whose
measurements it did not fit (a whole grid at once, or each fold of it)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.scripts import load

ROOT = Path(__file__).resolve().parent.parent
SHALLOW = str(ROOT / "search" / "grid-hopper-shallow.json")


def _run(capsys, *args):
    assert load("dispatch_loo").main(["--gpu", "h100", "--worst", "3", *args]) in (0, None)
    return capsys.readouterr().out


def test_a_held_out_grid_is_predicted_not_looked_up(capsys):
    """Every shallow-grid shape is scored once, and its plan's time is predicted from the other grids:
    had its own measurements stayed in, each prediction would equal the measured time (ratio 1.00)."""
    out = _run(capsys, "--hold-out", SHALLOW)
    scored = int(re.search(r"(\d+) grid shapes scored", out).group(1))
    assert 0 < scored <= 32
    lo, hi = map(float, re.search(r"percentile ([0-9.]+)-([0-9.]+)", out).groups())
    assert (lo, hi) != (1.0, 1.0)


def test_folds_score_each_shape_at_most_once(capsys):
    out = _run(capsys, "--hold-out", SHALLOW, "--folds", "4")
    scored = int(re.search(r"(\d+) grid shapes scored", out).group(1))
    unscored = int(re.search(r"not scored: (\d+)", out).group(1))
    assert 0 < scored and scored + unscored <= 32


def test_a_file_that_is_not_a_grid_is_one_line(tmp_path, capsys):
    bad = tmp_path / "g.json"
    bad.write_text("{}")
    with pytest.raises(SystemExit, match=r"--hold-out .*not a grid file"):
        load("dispatch_loo").main(["--gpu", "h100", "--hold-out", str(bad)])
