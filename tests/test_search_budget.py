"""A search within a time budget on any GPU: the shapes derived from its DeviceSpec, their order, the budget's
parsing and split, and a run stopped by the budget (a fake clock, no timed assertions) that a rerun resumes."""
from __future__ import annotations

import math

import optuna
import pytest

from gemmgen.base import Measurement, Shape
from gemmgen.base.devices import DeviceSpec, known
from gemmgen.cli import main
from gemmgen.tune.budget import BudgetError, Costs, parse_budget, plan_budget, task_timeout
from gemmgen.tune.grid import derived_grid
from gemmgen.tune.grid_plan import GridJob
from gemmgen.tune.grid_run import TuneShape, run_grid
from gemmgen.tune.shapeset import LAYOUTS, REGIMES, TILE, derived_shapes, regime_of, tiles

optuna.logging.set_verbosity(optuna.logging.WARNING)
T4_LIKE = DeviceSpec("t4-like", "A Turing-like GPU", (7, 5), 40, 64 * 1024, 64 * 1024, max_threads_per_sm=1024,
                     l2_bytes=4 * 2**20, clock_mhz=1590, mem_gbs=320)
DEVICES = [known("h100"), known("rtx3090"), T4_LIKE]


# ---- the derived shapes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.key)
def test_derived_shapes_cover_every_regime_and_layout(device):
    shapes = derived_shapes(device)
    assert 24 <= len(shapes) <= 60 and len(set(shapes)) == len(shapes)
    for regime in REGIMES:
        mine = [s for s in shapes if regime_of(s, device) == regime]
        assert len(mine) >= 4 and {s.layout for s in mine} == set(LAYOUTS), regime
    assert any(s.M % 16 or s.N % 16 or s.K % 16 for s in shapes if regime_of(s, device) == "ragged")
    assert all(min(s.M, s.N) <= 128 for s in shapes if regime_of(s, device) == "skinny")
    assert derived_shapes(device) == shapes   # deterministic


@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.key)
def test_wave_shapes_fill_the_sms_one_two_and_four_times(device):
    shapes = set(derived_shapes(device))
    for waves in (1, 2, 4):
        want = waves * device.sm_count
        assert any(regime_of(s, device) == "waves" and abs(tiles(s.M, s.N) - want) <= 0.1 * want
                   for s in shapes), waves


def test_sizes_scale_with_the_sm_count():
    def one_wave(device):
        return next(s for s in derived_shapes(device) if s.K == 4096 and regime_of(s, device) == "waves"
                    and s.M * s.N != 4096 * 4096)

    areas = [one_wave(d).M * one_wave(d).N / TILE**2 for d in DEVICES]   # h100 132, rtx3090 82, t4 40 SMs
    assert areas[0] > areas[1] > areas[2]
    assert all(abs(a / d.sm_count - 1) <= 0.1 for a, d in zip(areas, DEVICES))   # one wave of 128x128 tiles


@pytest.mark.parametrize("device", DEVICES, ids=lambda d: d.key)
def test_shapes_go_round_robin_over_the_regimes_large_first(device):
    shapes = derived_shapes(device)
    assert shapes[0] == Shape(4096, 4096, 4096)
    first = [regime_of(s, device) for s in shapes[:len(REGIMES)]]
    assert first == list(REGIMES)   # a budget of six tasks already tunes one shape of every regime
    small = [s for s in shapes if regime_of(s, device) == "small"]
    assert small[0].flops > small[-1].flops and shapes.index(Shape(16, 16, 16, small[-1].layout)) > 30


# ---- the budget -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, seconds", [("90s", 90), ("10m", 600), ("1h", 3600), ("1h30m", 5400),
                                           ("2h5m10s", 7510), (" 20M ", 1200)])
def test_budget_durations(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["30", "", "m", "1.5h", "30m1h", "1h1h", "0s", "-5m", "10 m", "1d"])
def test_bad_budgets_are_one_line_errors(text):
    with pytest.raises(BudgetError) as err:
        parse_budget(text)
    assert f"--budget {text!r}" in str(err.value) and "90s, 10m, 1h or 1h30m" in str(err.value)


def test_the_budget_splits_between_tuning_and_timing():
    split = plan_budget(1800, tasks=42, trials=200, devices=1)
    assert (split.tune_s, split.time_s) == (1080, 720) and split.tasks_tuned == 42
    assert split.trials == math.floor(1080 / (42 * Costs().trial_s))
    short = plan_budget(90, tasks=42, trials=200, devices=1)   # too short for 8 trials a task: the first tasks
    assert short.trials == Costs().min_trials and short.tasks_tuned == math.floor(54 / (8 * Costs().trial_s)) < 42
    assert plan_budget(36000, tasks=42, trials=24, devices=4).trials == 24   # --trials caps a long budget
    assert plan_budget(300, tasks=84, trials=24, devices=4).tasks_tuned == 84 > plan_budget(300, tasks=84, trials=24).tasks_tuned
    only = plan_budget(600, tasks=42, trials=24, tune=False)
    assert (only.tune_s, only.time_s, only.tasks_tuned) == (0, 600, 0)
    assert split.pairs_within(10**6) < 10**6 and split.time_estimate_s(100) == 100 * Costs().pair_s


def test_a_task_gets_its_share_of_the_time_left():
    assert task_timeout(600, 10, 1) == 60 and task_timeout(600, 10, 2) == 120 and task_timeout(-5, 3, 1) == 0


# ---- a run stopped by the budget, then resumed ---------------------------------------------------------
class FakeClock:
    """Seconds that pass only when the fake GPU measures: one per trial."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fake_gpu(clock):
    def measure_for(device):
        def measure(config, shape):
            clock.now += 1.0
            return Measurement(config.name, shape, ms=1 + 1 / config.BM, iqr_ms=0, cublas_ms=2.0, rel_error=0)
        return measure
    return measure_for


def _job(tmp_path, clock, deadline, **kw):
    grid = derived_grid(known("rtx3090"))
    return GridJob(grid, ("simt",), known("rtx3090"), f"sqlite:///{tmp_path}/studies.db", trials=6, patience=0,
                   stretch_below=0, options={"sampler": "random", "lookahead": 1, "jobs": 1}, limit=4,
                   deadline=deadline, clock=clock, **kw)


def test_a_run_stopped_by_the_budget_resumes_where_it_stopped(tmp_path):
    clock = FakeClock()
    kept = []
    # 9 fake seconds of tuning for four tasks of 6 trials: each gets its share of the time left, none finishes
    job = _job(tmp_path, clock, deadline=clock.now + 9)
    done = run_grid(job, TuneShape(job, fake_gpu(clock), keep=lambda task, p: kept.append((task.shape.key, p.best_name))),
                    [0], mode="inline")
    stopped = [d.result.get("stopped") for d in done]
    assert "timeout" in stopped and set(stopped) <= {"timeout", None} and clock.now <= 1000 + 9 + 4
    assert len(job.pending()) == 4   # a timed-out task is not finished: a rerun continues it
    assert kept and kept[0][0] == job.tasks()[0].shape.key   # each new best handed over as soon as measured
    first = optuna.load_study(study_name=job.study_of(job.tasks()[0]), storage=job.storage)
    measured_before = len([t for t in first.trials if t.state == optuna.trial.TrialState.COMPLETE])
    assert 0 < measured_before < 6
    # the rerun: a fresh budget, the same studies; the first task continues its trials instead of starting over
    again = _job(tmp_path, clock, deadline=clock.now + 10_000)
    done = run_grid(again, TuneShape(again, fake_gpu(clock)), [0], mode="inline")
    assert [d.result["stopped"] for d in done] == ["budget"] * len(done)
    assert again.pending() == again.tasks()[4:8]   # the first four finished: a further rerun tunes the next four
    assert done[0].item == again.tasks()[0] and done[0].result["measured"] == 6
    assert len([t for t in first.trials if t.state == optuna.trial.TrialState.COMPLETE]) >= measured_before
    assert len(done) == 4   # the limit: the budget's first tasks in value order, nothing beyond


def test_the_cli_refuses_a_grid_sampler_up_front(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["search", "--sampler", "grid", "--dry-run", "--gpu", "h100"])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and err.count("\n") == 1 and "invalid choice: 'grid' (choose from 'tpe', 'random', 'cmaes')" in err


def test_dry_run_without_json_is_the_plan_text(capsys, tmp_path):
    assert main(["search", "--gpu", "rtx3090", "--budget", "90s", "--dry-run",
                 "--results", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("search plan for the NVIDIA GeForce RTX 3090 (82 SMs), 1 GPU(s): budget 1:30 = tune 0:54")
    assert "waves 7, skinny 7, deep-k 7, shallow-k 7, small 7, ragged 7" in out and "in value order fit the budget" in out
    assert not (tmp_path / "r").exists()   # a plan writes nothing
