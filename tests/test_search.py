"""The Optuna search driver against injected fake measurements (no GPU)."""
from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import optuna
import pytest
from optuna.trial import TrialState

from gemmgen.kernel.config import KernelConfig
from gemmgen.base.devices import UnknownDevice
from gemmgen.base import CompileFailure, Failure, Measurement, Rejected, RuntimeFailure, Shape, Timeout, WrongResult
from gemmgen.kernel.rules import explain
from gemmgen.tune.space import load_space
from gemmgen.tune.storage import default_storage, open_storage, StudyError
from gemmgen.tune.studies import fail_dead_trials
from gemmgen.tune.samplers import make_sampler
from gemmgen.tune.trial_stats import counts, progress, summary
from gemmgen.tune.plan import GpuMismatch, make_plan, match_gpu
from gemmgen.tune.finalists import pick_winner, SearchError
from gemmgen.tune.driver import run_search, setup_study

optuna.logging.set_verbosity(optuna.logging.WARNING)
SHAPE = Shape(1024, 1024, 1024)
KINDS = {"invalid": Rejected, "compile": CompileFailure, "runtime": RuntimeFailure, "timeout": Timeout,
         "wrong": WrongResult}

# A small space: 3 x 3 tiles, 2 depths, 3 pipelines = 54 configs, some of which break the rules.
SMALL = {"schema": 1, "family": "simt", "params": {
    "BM": {"pow2": [32, 128]}, "BN": {"pow2": [32, 128]}, "BK": {"pow2": [8, 16]},
    "warps_m": {"value": 2}, "warps_n": {"value": 2},
    "WM": {"derive": "BM // warps_m"}, "WN": {"derive": "BN // warps_n"},
    "TM": {"value": 4}, "TN": {"value": 4},
    "WMITER": {"derive": "WM * WN // (32 * TM * TN)"},
    "stages": {"range": [1, 2]},
    "async_copy": {"when": "stages == 2", "choices": [False, True]},
}}
# Smaller still, for exhaustive random searches (whose last configs take many draws to hit): 20 valid.
TINY = {**SMALL, "params": {k: v for k, v in SMALL["params"].items() if k != "async_copy"}}
TINY["params"]["BN"] = {"pow2": [64, 128]}


# ---- the fake GPU ---------------------------------------------------------------------------
def speed(c: KernelConfig) -> float:
    """A smooth landscape with a unique best: bigger tiles, deeper pipelines and float4 loads help."""
    jitter = int(hashlib.md5(c.name.encode()).hexdigest()[:6], 16) / 16**6   # breaks ties, 0..1
    score = c.BM * c.BN / (c.BM + c.BN) * (1 + 0.1 * c.stages) * (1.2 if c.async_copy else 1.0)
    score *= (1 + c.vec / 10) * (1 + c.BK / 64) / (1 + 0.2 * (c.split_k - 1))
    return score * (1 + 0.01 * jitter)


@dataclass
class FakeGPU:
    """measure_for(device): picklable, so worker processes can build their own fake measure."""

    log: str | None = None         # file that gets one line per measurement (shared across processes)
    delay: float = 0.0
    planted: dict = field(default_factory=dict)   # config name -> failure kind it raises
    calls: list = field(default_factory=list)     # in-process record of (device, name)

    def __call__(self, device: int):
        return functools.partial(fake_measure, self, device)


def fake_measure(gpu: FakeGPU, device: int, config: KernelConfig, shape: Shape) -> Measurement:
    gpu.calls.append((device, config.name))
    if gpu.log:
        with open(gpu.log, "a") as f:
            f.write(f"{device} {config.name}\n")
    time.sleep(gpu.delay)
    kind = gpu.planted.get(config.name)
    if kind:
        raise KINDS[kind](f"planted {kind} failure of {config.name}")
    return Measurement(config.name, shape, ms=100.0 / speed(config), iqr_ms=0.01, cublas_ms=1.0, rel_error=1e-6)


def logged(path) -> list[tuple[int, str]]:
    if not os.path.exists(path):
        return []
    return [(int(d), n) for d, n in (line.split() for line in open(path).read().splitlines())]


# ---- helpers --------------------------------------------------------------------------------
@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path}/studies.db"


def small_space(tmp_path, spec=SMALL):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(spec))
    return load_space(path=path, arch="sm_90")


def valid_configs(space, shape=SHAPE) -> dict[str, KernelConfig]:
    """Every distinct config of a small space that passes the rules (enumerated from its grid)."""
    import itertools

    grid = space.grid()
    out = {}
    for values in itertools.product(*grid.values()):
        c = space.sample(optuna.trial.FixedTrial(dict(zip(grid, values))), shape.layout)
        if not explain(c, "h100") and c.accepts(shape.M, shape.N, shape.K) is None:
            out[c.name] = c
    return out


def study_of(plan):
    return optuna.load_study(study_name=plan.study, storage=open_storage(plan.storage))


def trials_of(plan):
    return study_of(plan).get_trials(deepcopy=False)


# ---- defaults -------------------------------------------------------------------------------
def test_plan_defaults(tmp_path):
    plan = make_plan(Shape(4096, 4096, 4096), "h100", results=tmp_path)
    assert plan.sampler == "tpe" and plan.seed == 0
    assert plan.storage == f"sqlite:///{tmp_path.resolve()}/studies.db" == default_storage(tmp_path)
    assert plan.study == "h100-4096x4096x4096-NN"
    assert plan.space.arch == "sm_90" and plan.device.key == "h100"
    assert make_plan(SHAPE, "rtx3090", study="mine").study == "mine"
    assert make_plan(SHAPE, "rtx3090", study="mine", several_shapes=True).study == "mine-1024x1024x1024-NN"


def test_unknown_sampler_lists_the_valid_ones():
    with pytest.raises(StudyError, match="valid: tpe, random, cmaes, grid"):
        make_sampler("bayes", 0)


def test_grid_refuses_a_huge_space():
    with pytest.raises(StudyError, match="--space"):
        make_sampler("grid", 0, load_space("simt", "sm_90"))
    with pytest.raises(StudyError, match="--space"):   # before any study is created
        make_plan(SHAPE, "h100", sampler="grid", storage="sqlite:///:memory:")


# ---- the search -----------------------------------------------------------------------------
@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_presets_are_enqueued_first_and_never_beaten_by_the_result(db):
    gpu = FakeGPU()
    plan = make_plan(SHAPE, "h100", trials=20, storage=db, sampler="random")
    result = run_search(plan, gpu)
    study = study_of(plan)
    enqueued = study.user_attrs["presets"]
    assert {"v2", "v10", "v12", "v13"} <= set(enqueued) and "v0" not in enqueued   # simt family only
    first = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)[:len(enqueued)]
    assert [t.user_attrs.get("preset") for t in first] == enqueued
    assert [n for _, n in gpu.calls[:len(enqueued)]] == [t.user_attrs["name"] for t in first]
    best_preset = max(t.value for t in first if t.state == TrialState.COMPLETE)
    assert result.measurement.tflops >= best_preset
    # resuming does not enqueue them again
    run_search(make_plan(SHAPE, "h100", trials=25, storage=db, sampler="random"), gpu)
    assert sum("preset" in t.user_attrs for t in trials_of(plan)) == len(enqueued)


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.parametrize("sampler, spec", [("grid", SMALL), ("random", TINY)])
def test_winner_is_the_true_best_of_a_small_space(tmp_path, db, sampler, spec):
    space = small_space(tmp_path, spec)
    valid = valid_configs(space)
    gpu = FakeGPU()
    plan = make_plan(SHAPE, "h100", trials=len(valid), storage=db, space=space, sampler=sampler, presets=False)
    result = run_search(plan, gpu)
    best = max(valid.values(), key=speed)
    assert result.config == best
    names = [n for _, n in gpu.calls]
    assert sorted(names) == sorted(valid)          # every valid config measured exactly once
    tally = counts(trials_of(plan))
    assert tally.measured == len(valid) and (tally.invalid > 0 or spec is TINY)


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_grid_search_stops_when_exhausted(tmp_path, db):
    space = small_space(tmp_path)
    plan = make_plan(SHAPE, "h100", trials=500, storage=db, space=space, sampler="grid", presets=False)
    result = run_search(plan, FakeGPU())
    assert result.stopped == "exhausted"
    assert result.counts.measured == len(valid_configs(space))


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_repeated_configs_are_not_measured_again(tmp_path, db):
    space = small_space(tmp_path, TINY)
    gpu = FakeGPU()
    plan = make_plan(SHAPE, "h100", trials=len(valid_configs(space)), storage=db, space=space, sampler="tpe",
                     presets=False, max_skips=60)
    result = run_search(plan, gpu)
    assert result.stopped in ("budget", "stuck")   # TPE may settle before it has seen every config
    assert max(Counter(n for _, n in gpu.calls).values()) == 1
    trials = trials_of(plan)
    dups = [t for t in trials if "duplicate_of" in t.user_attrs]
    assert dups, "a 24-point space searched to its last config must draw repeats"
    by_number = {t.number: t for t in trials}
    for t in dups:
        first = by_number[t.user_attrs["duplicate_of"]]
        assert first.user_attrs["name"] == t.user_attrs["name"]
        assert t.state == TrialState.PRUNED and t.user_attrs["kind"] == "duplicate"
    assert counts(trials).duplicates == len(dups)


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_every_failure_kind_is_recorded_and_the_search_goes_on(db):
    from gemmgen.tune.space import sample_valid

    # victims that run the shape (split_k = 3, 6, 12, 24 leave a fast-path kernel no whole K slices)
    victims = [c for c in sample_valid(60, "sm_90", seed=11) if c.accepts(SHAPE.M, SHAPE.N, SHAPE.K) is None][:25]
    planted = {c.name: kind for c, kind in zip(victims, list(KINDS) * 5)}
    gpu = FakeGPU(planted=planted)
    plan = make_plan(SHAPE, "h100", trials=30, storage=db, sampler="random", presets=False)
    study = setup_study(plan)
    for c in victims:   # measured first, like presets the space cannot express
        study.enqueue_trial({}, user_attrs={"config": c.to_dict()})
    result = run_search(plan, gpu)
    trials = trials_of(plan)
    failed = {t.user_attrs["name"]: t for t in trials if t.state == TrialState.FAIL}
    for name, kind in planted.items():
        assert failed[name].user_attrs["kind"] == kind
        assert failed[name].user_attrs["reason"] == f"planted {kind} failure of {name}"
    assert Counter(t.user_attrs["kind"] for t in failed.values()) == Counter(planted.values())
    assert result.counts.measured == 30 and result.config.name not in planted


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_prepare_failures_skip_the_measurement(db):
    gpu = FakeGPU()
    plan = make_plan(SHAPE, "h100", trials=8, storage=db, sampler="random", presets=False)
    run_search(plan, gpu, prepare=compile_every_other)
    trials = [t for t in trials_of(plan) if t.state in (TrialState.COMPLETE, TrialState.FAIL)]
    compiled = {t.user_attrs["name"] for t in trials if t.user_attrs.get("kind") == "compile"}
    assert compiled and not compiled & {n for _, n in gpu.calls}
    assert all("nvcc" in t.user_attrs["reason"] for t in trials if t.user_attrs.get("kind") == "compile")


def compile_every_other(config: KernelConfig) -> str:
    if config.BK == 8:
        raise CompileFailure(f"nvcc: error in {config.name}")
    return "cubin"


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_invalid_draws_do_not_use_the_budget(db):
    plan = make_plan(SHAPE, "h100", trials=12, storage=db, sampler="random", presets=False)
    result = run_search(plan, FakeGPU())
    pruned = [t for t in trials_of(plan) if t.state == TrialState.PRUNED]
    assert result.counts.measured == 12 and result.counts.invalid == len(pruned) > 0
    # a rule's name and words, or why the kernel cannot run the shape (split_k = 3 leaves no whole K slices)
    assert all(t.user_attrs["kind"] == "invalid" and (":" in t.user_attrs["reason"] or "fast path needs"
               in t.user_attrs["reason"]) for t in pruned)


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_resume_counts_earlier_trials_toward_the_total(db):
    gpu = FakeGPU()
    run_search(make_plan(SHAPE, "h100", trials=6, storage=db, sampler="tpe", presets=False), gpu)
    assert len(gpu.calls) == 6
    result = run_search(make_plan(SHAPE, "h100", trials=10, storage=db, sampler="tpe", presets=False), gpu)
    assert len(gpu.calls) == 10 and result.counts.measured == 10
    assert len({n for _, n in gpu.calls}) == 10


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_running_trial_of_a_dead_worker_is_failed_on_resume(db):
    plan = make_plan(SHAPE, "h100", trials=5, storage=db, sampler="random", presets=False)
    study = setup_study(plan)
    orphan = study.ask()
    orphan.set_user_attr("worker", f"{socket.gethostname()}:{dead_pid()}")
    result = run_search(plan, FakeGPU())
    t = study_of(plan).get_trials(deepcopy=False)[orphan.number]
    assert t.state == TrialState.FAIL and t.user_attrs["kind"] == "interrupted"
    assert result.counts.measured == 5 and result.counts.interrupted == 1 and result.counts.running == 0


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_unclaimed_running_trial_is_failed_when_old(db):
    plan = make_plan(SHAPE, "h100", trials=5, storage=db, presets=False)
    study = setup_study(plan)
    trial = study.ask()   # as if its process died before stamping it
    assert fail_dead_trials(study, unclaimed_after=60) == 0
    time.sleep(1.1)
    assert fail_dead_trials(study, unclaimed_after=1) == 1
    t = study.get_trials(deepcopy=False)[trial.number]
    assert t.state == TrialState.FAIL and "no worker claimed it" in t.user_attrs["reason"]


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_heartbeat_fails_a_silent_trial_of_another_host(db):
    plan = make_plan(SHAPE, "h100", trials=5, storage=db, presets=False, heartbeat=1)
    study = optuna.load_study(study_name=setup_study(plan).study_name, storage=open_storage(db, 1))
    trial = study.ask()
    trial.set_user_attr("worker", "elsewhere:1")   # not this host: only its heartbeat can tell
    open_storage(db, 1).record_heartbeat(trial._trial_id)
    assert fail_dead_trials(study) == 0
    assert study.get_trials(deepcopy=False)[trial.number].state == TrialState.RUNNING
    time.sleep(4.5)   # grace period: 3 beats of 1 s (the database clock has 1 s resolution)
    fail_dead_trials(study)
    assert study.get_trials(deepcopy=False)[trial.number].state == TrialState.FAIL


def _search_forever(db: str, log: str) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    plan = make_plan(SHAPE, "h100", trials=1000, storage=db, sampler="random", presets=False)
    run_search(plan, FakeGPU(log=log, delay=0.2))


def _measured(plan) -> int:
    try:
        return counts(trials_of(plan)).measured
    except KeyError:   # the study is not created yet
        return 0


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_killed_search_loses_only_trials_in_flight(db, tmp_path):
    log = str(tmp_path / "calls.log")
    proc = multiprocessing.get_context("spawn").Process(target=_search_forever, args=(db, log))
    proc.start()
    plan = make_plan(SHAPE, "h100", trials=15, storage=db, sampler="random", presets=False)
    deadline = time.time() + 60
    while time.time() < deadline and (not os.path.exists(db[len("sqlite:///"):]) or _measured(plan) < 4):
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)   # no chance to clean up
    proc.join()
    before = counts(trials_of(plan))
    assert 4 <= before.measured < 15 and before.running >= 1, before
    gpu = FakeGPU(log=log)
    result = run_search(plan, gpu)
    after = counts(trials_of(plan))
    # a trial asked for in the instant before the kill carries no worker yet: it is failed only
    # once it is old (fail_dead_trials' unclaimed_after); every other one was failed at once
    unclaimed = [t for t in trials_of(plan) if t.state == TrialState.RUNNING and "worker" not in t.user_attrs]
    assert after.running == len(unclaimed) <= 1, (before, after)
    assert after.measured == 15 and after.interrupted + after.running == before.running, (before, after)
    assert len(gpu.calls) == 15 - before.measured
    # nothing told before the kill is measured again; the (at most two) measurements in flight may be
    again = Counter(n for _, n in logged(log))
    assert sum(v > 1 for v in again.values()) <= 2
    assert result.counts.measured == 15


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_two_worker_processes_share_a_sqlite_study(db, tmp_path):
    log = str(tmp_path / "calls.log")
    plan = make_plan(SHAPE, "h100", trials=16, storage=db, sampler="tpe", presets=False, lookahead=2)
    result = run_search(plan, FakeGPU(log=log, delay=0.02), devices=[0, 1])
    assert result.stopped == "budget"   # both workers
    calls = logged(log)
    assert {d for d, _ in calls} == {0, 1}
    assert len({n for _, n in calls}) == len(calls)   # no config measured twice
    tally = counts(trials_of(plan))
    assert tally.measured == len(calls) and 16 <= tally.measured <= 16 + 2 * 2
    assert result.measurement.tflops == max(t.value for t in trials_of(plan) if t.state == TrialState.COMPLETE)


# ---- finalists, progress, summary -----------------------------------------------------------
@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_finalists_are_retimed_and_the_retimed_fastest_wins(db):
    seen = []

    def retime(configs, shape):
        seen.append([c.name for c in configs])
        # the re-timing reverses the order, and the slowest finalist fails its gate this time
        out = [Measurement(c.name, shape, ms=1.0 + i / 10, iqr_ms=0, cublas_ms=1.0, rel_error=0)
               for i, c in enumerate(reversed(configs))][::-1]
        return [WrongResult("flaky")] + out[1:]

    plan = make_plan(SHAPE, "h100", trials=10, storage=db, sampler="random", presets=False)
    result = run_search(plan, FakeGPU(), retime=retime)
    top = summary(study_of(plan), top=5)
    assert seen == [[row["name"] for row in top]]
    assert result.config.name == top[-1]["name"]          # slowest in the search, fastest re-timed
    assert isinstance(result.finalists[-1][1], Failure)
    assert [f["name"] for f in study_of(plan).user_attrs["finalists"]][0] == top[-1]["name"]


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_no_winner_names_the_failures(db):
    everything_fails = FakeGPU(planted=AlwaysCompileError())
    plan = make_plan(SHAPE, "h100", trials=4, storage=db, sampler="random", presets=False)
    with pytest.raises(SearchError, match="4 compile.*first reason: planted compile failure"):
        run_search(plan, everything_fails)


class AlwaysCompileError(dict):
    def get(self, key, default=None):
        return "compile"


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_progress_observer_and_summary(db):
    lines = []
    plan = make_plan(SHAPE, "h100", trials=8, storage=db, sampler="random", presets=False)
    run_search(plan, FakeGPU(), observer=lambda p: lines.append((p.done, p.line())))
    assert [d for d, _ in lines] == sorted(d for d, _ in lines) and lines[-1][0] == 8
    assert "8/8 trials, 0 failed" in lines[-1][1] and "TFLOP/s" in lines[-1][1] and "% of cuBLAS" in lines[-1][1]
    rows = summary(study_of(plan), top=5)
    assert len(rows) == 5 and [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["tflops"] for r in rows] == sorted((r["tflops"] for r in rows), reverse=True)
    assert len({r["name"] for r in rows}) == 5
    p = progress(study_of(plan), 8)
    assert p.best_name == rows[0]["name"] and p.best_ratio > 0


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes", "grid"])
def test_every_sampler_runs(tmp_path, db, sampler):
    if sampler == "cmaes":
        pytest.importorskip("cmaes", reason="the cmaes sampler needs the cmaes package")
    space = small_space(tmp_path) if sampler == "grid" else None
    plan = make_plan(SHAPE, "h100", trials=6, storage=db, sampler=sampler, space=space, presets=False)
    assert run_search(plan, FakeGPU()).counts.measured == 6


def test_a_study_of_another_gpu_is_refused(db):
    run_search(make_plan(SHAPE, "h100", trials=2, storage=db, study="s", sampler="random", presets=False), FakeGPU())
    with pytest.raises(StudyError, match="holds trials of NVIDIA H100 80GB HBM3.*NVIDIA GeForce RTX 3090"):
        run_search(make_plan(SHAPE, "rtx3090", trials=2, storage=db, study="s", presets=False), FakeGPU())


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_pick_winner_without_retime_uses_search_timings(db):
    plan = make_plan(SHAPE, "h100", trials=5, storage=db, sampler="random", presets=False)
    first = run_search(plan, FakeGPU())
    again = pick_winner(plan)
    assert again.config == first.config and again.measurement.ms == first.measurement.ms


# ---- target GPU -----------------------------------------------------------------------------
@pytest.mark.parametrize("alias, detected, key", [("h100", "NVIDIA H100 PCIe", "h100"),
                                                  ("H100", "NVIDIA H100 80GB HBM3", "h100"),
                                                  ("rtx3090", "NVIDIA GeForce RTX 3090", "rtx3090"),
                                                  (None, "NVIDIA H200", "h200"), (None, "NVIDIA H200 NVL", "h200")])
def test_match_gpu_accepts_aliases(alias, detected, key):
    assert match_gpu(alias, detected) == key


def test_match_gpu_mismatch_names_both():
    with pytest.raises(GpuMismatch) as err:
        match_gpu("rtx3090", "NVIDIA H100 80GB HBM3")
    assert "NVIDIA GeForce RTX 3090" in str(err.value) and "NVIDIA H100 80GB HBM3" in str(err.value)
    with pytest.raises(GpuMismatch, match="not in gemmgen's table"):
        match_gpu("h100", "NVIDIA Tesla T4")
    with pytest.raises(UnknownDevice, match="known:"):
        match_gpu("voodoo5", "NVIDIA H100 80GB HBM3")
    assert match_gpu(None, "NVIDIA Tesla T4") == "NVIDIA Tesla T4"


# ---- report ---------------------------------------------------------------------------------
@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_report_writes_pngs(db, tmp_path):
    pytest.importorskip("matplotlib", reason="gemmgen report needs matplotlib")
    from gemmgen.tune.report import write_report

    plan = make_plan(SHAPE, "h100", trials=24, storage=db, sampler="random")   # presets, then sampled
    run_search(plan, FakeGPU())
    paths = write_report(db, plan.study, tmp_path / "report")
    assert sorted(p.name for p in paths) == ["optimization_history.png", "param_importances.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_report_without_matplotlib_says_how_to_install(db, tmp_path, monkeypatch):
    import importlib.util

    from gemmgen.tune.report import MissingDependency, write_report

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(MissingDependency, match=r"pip install 'gemmgen\[plot\]'"):
        write_report(db, "anything", tmp_path)


def test_report_of_a_missing_study(db, tmp_path):
    pytest.importorskip("matplotlib")
    from gemmgen.tune.report import write_report

    open_storage(db)
    with pytest.raises(StudyError, match="no study 'nope'"):
        write_report(db, "nope", tmp_path)


# ---- validation -----------------------------------------------------------------------------
def test_a_trial_is_validated_once_on_the_plans_device(db, monkeypatch):
    """The runner checks each drawn config against the plan's GPU; preparing (NvrtcPrepare) and
    measuring it do not check it again, and nothing checks it against another target."""
    from gemmgen.kernel.rules import registry
    from gemmgen.kernel.rules.rule import Rule
    from gemmgen.tune import gpu

    checked = Counter()

    def spy(c, d):
        checked[(c.name, d.key)] += 1

    monkeypatch.setattr(registry, "RULES", (Rule("SPY", spy, ("simt",)), *registry.RULES))
    monkeypatch.setattr(gpu, "compile_source", lambda source, arch: None)   # no NVRTC: render only
    plan = make_plan(SHAPE, "rtx3090", trials=6, storage=db, sampler="random", presets=False)
    fake = FakeGPU()
    run_search(plan, fake, prepare=gpu.NvrtcPrepare(plan.device.arch))
    measured = {name for _, name in fake.calls}
    assert measured and all(checked[(name, "rtx3090")] == 1 for name in measured), checked
    assert {key for _, key in checked} == {"rtx3090"}
