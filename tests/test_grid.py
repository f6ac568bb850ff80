"""Grid searches without a GPU: grid files, shape order, warm starts, early stopping, resuming, one
worker per fake GPU, and the timings stage's batches (measurements are injected)."""
from __future__ import annotations

import json
import math
import os
import time

import optuna
import pytest
from optuna.trial import TrialState

from gemmgen.base import Measurement, Shape
from gemmgen.base.devices import known
from gemmgen.kernel.config import KernelConfig
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules import explain
from gemmgen.tune.grid import Grid, GridError, derived_grid, distance, load_grid, nearest, resolve_grid
from gemmgen.tune.shapeset import REGIMES, order_by_value, regime_of
from gemmgen.tune.grid_plan import GridJob, Task
from gemmgen.tune.grid_run import TuneShape, run_grid
from gemmgen.tune.grid_timings import Batch, TimeShape, timing_batches
from gemmgen.tune.pool import run_on_devices
from gemmgen.tune.stopping import budget, plateaued
from gemmgen.tune.storage import open_storage
from gemmgen.tune.warm import fill_split_k, space_presets, transfer, warm_configs

from test_search import FakeGPU, logged, speed

optuna.logging.set_verbosity(optuna.logging.WARNING)
H100 = known("h100")


# ---- grid files -------------------------------------------------------------------------------------
def test_the_shipped_hopper_grid():
    grid = load_grid("hopper")
    assert grid.gpus == ("h100", "h200") and len(grid.shapes) == 140 == len(set(grid.shapes))
    from collections import Counter
    unaligned = Counter(s.layout for s in grid.shapes if min(s.M, s.N) < 160 and (s.M % 4 or s.N % 4 or s.K % 4))
    assert all(unaligned[l] >= 6 for l in ("NN", "NT", "TN", "TT")), unaligned   # skinny ragged ones in every layout
    assert {Shape(128, 4096, 4096), Shape(4096, 128, 4096), Shape(4096, 4096, 1024)} <= set(grid.shapes)   # the set's
    assert {s.layout for s in grid.shapes} == {"NN", "NT", "TN", "TT"}
    assert Shape(16, 4096, 16384) in grid.shapes and Shape(4097, 4097, 4097) in grid.shapes
    assert resolve_grid("hopper", H100) == grid and resolve_grid("auto", H100) == derived_grid(H100)
    assert load_grid(grid.source) == grid   # by file


def _grid_file(tmp_path, data, name="g.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize("data, words", [
    ("{", "not valid JSON (line 1"),
    ({"gpus": ["h100"]}, "expected a non-empty list of shapes"),
    ({"shapes": []}, "expected a non-empty list of shapes"),
    ({"shapes": ["64x64x64", "4096x4096"]}, "shapes[1] = '4096x4096': shape '4096x4096' is not MxNxK"),
    ({"shapes": ["64x64x64/XY"]}, "layout 'XY'"),
    ({"shapes": ["64x64x64", "64x64x64/NN"]}, "shape 64x64x64/NN is listed twice"),
    ({"shapes": ["64x64x64"], "gpus": ["h300"]}, "gpus: unknown GPU 'h300'; known:"),
    ({"shapes": ["64x64x64"], "gpus": "h100"}, "'gpus' is a list of GPU names"),
])
def test_bad_grid_files_are_one_line_errors(tmp_path, data, words):
    path = _grid_file(tmp_path, data)
    with pytest.raises(GridError) as err:
        load_grid(path)
    assert words in str(err.value) and path in str(err.value) and "\n" not in str(err.value)


def test_bad_grid_names():
    with pytest.raises(GridError, match="--grid 'ampere': no such grid or file; shipped grids: hopper, hopper-deep, hopper-few-columns, hopper-few-rows, hopper-fill, hopper-launch, hopper-launch-shallow, hopper-mid-shallow, hopper-nt, hopper-shallow, hopper-simt, hopper-skinny, or auto"):
        load_grid("ampere")
    with pytest.raises(GridError, match="no such file"):
        load_grid("/nonexistent/grid.json")
    assert resolve_grid("auto", known("a100")).gpus == ("a100",)   # every GPU has a grid: its derived one


def test_a_grid_files_shapes_are_ordered_by_value():
    """Round-robin over the regimes, largest first in each: the first six shapes cover every regime (the order
    was NN smallest first, which spent a short budget on 16x16x16)."""
    ordered = order_by_value(load_grid("hopper").shapes, H100)
    assert len(ordered) == 140 and set(ordered) == set(load_grid("hopper").shapes)
    assert [regime_of(s, H100) for s in ordered[:6]] == list(REGIMES)
    assert ordered[0] == Shape(8192, 8192, 8192) and ordered.index(Shape(16, 16, 16)) > len(REGIMES)
    for regime in REGIMES:
        sizes = [s.flops for s in ordered if regime_of(s, H100) == regime]
        assert sizes == sorted(sizes, reverse=True)


def test_nearest_shapes_by_log_distance():
    cube, skinny = Shape(4096, 4096, 4096), Shape(16, 4096, 4096)
    grid = [cube, skinny, Shape(64, 4096, 4096), Shape(4096, 4096, 4096, "NT"), Shape(2048, 2048, 2048)]
    assert nearest(Shape(32, 4096, 4096), grid, 2) == [skinny, Shape(64, 4096, 4096)]
    assert nearest(cube, grid, 2) == [Shape(4096, 4096, 4096, "NT"), Shape(2048, 2048, 2048)]   # 1 < sqrt(3)
    assert distance(cube, Shape(4096, 4096, 4096, "TT")) == 1.0 and cube not in nearest(cube, grid, 9)


# ---- warm starts ----------------------------------------------------------------------------------
def test_split_k_variant_fills_the_sms():
    x3 = preset("tf32x3-wgmma")   # 128x128 tiles
    for shape, slices in [(Shape(16, 4096, 16384), 4), (Shape(256, 256, 65536), 16), (Shape(4096, 16, 4096), 4)]:
        v = fill_split_k(x3, shape, H100, (1, 2, 3, 4, 6, 8, 12, 16))
        tiles = x3.tiles(shape.M, shape.N)[0] * x3.tiles(shape.M, shape.N)[1]
        assert v.split_k == slices and v.name != x3.name and not explain(v, H100), shape
        gap = abs(math.log(tiles * slices / 132))
        assert all(gap <= abs(math.log(tiles * s / 132)) for s in (1, 2, 3, 4, 6, 8, 12, 16))
    assert fill_split_k(x3, Shape(8192, 8192, 8192), H100) is None           # 4096 tiles: no slices
    assert fill_split_k(x3, Shape(16, 4096, 128), H100, (1, 16)) is None     # 2 K steps cannot be sliced 16 ways
    assert fill_split_k(preset("v13"), Shape(16, 4096, 16384), H100, (1, 2, 4, 8, 16, 32)).split_k == 4


def test_transfer_keeps_only_configs_that_run():
    wgmma = preset("tf32x3-wgmma")
    assert transfer(wgmma, Shape(4096, 4096, 4096, "TN"), H100).layout == "TN"
    fast = wgmma.replace(bounds="none")
    assert transfer(fast, Shape(4096, 4096, 4096, "NT"), H100) is not None
    assert transfer(fast, Shape(4097, 4097, 4097), H100) is None             # no edge checks
    assert transfer(wgmma, Shape(4096, 4096, 4096), known("a100")) is None   # no wgmma before Hopper


def _job(tmp_path, shapes, families=("tf32x3",), **kw):
    grid = Grid("test", tuple(Shape.parse(s) for s in shapes))
    options = {"sampler": "random", **kw.pop("options", {})}
    return GridJob(grid, tuple(families), H100, f"sqlite:///{tmp_path}/studies.db", options=options, **kw)


def _study(job, task):
    return optuna.load_study(study_name=job.study_of(task), storage=open_storage(job.storage))


def by_tile(device):
    """A fake GPU that prefers big tiles, and slices for skinny shapes (so split-K variants win there)."""
    def measure(config, shape):
        tiles = config.tiles(shape.M, shape.N)[0] * config.tiles(shape.M, shape.N)[1] * config.split_k
        fill = min(tiles, 132) / 132
        ms = 1.0 / (speed(config) * fill)
        return Measurement(config.name, shape, ms=ms, iqr_ms=0.0, cublas_ms=0.02, rel_error=1e-7)
    return measure


def test_warm_start_enqueues_neighbours_winners_and_split_k_variants(tmp_path):
    job = _job(tmp_path, ["4096x4096x4096", "16x4096x4096/NT", "16x4096x16384"], trials=14, patience=0)
    first, second = (Task("tf32x3", Shape.parse(s)) for s in ("16x4096x4096/NT", "16x4096x16384"))
    TuneShape(job, by_tile)(0, first)
    winner = KernelConfig.from_dict(job.states()[job.study_of(first)]["config"])
    plan = job.plan_for(second)
    wanted = warm_configs(plan, job.neighbours_of(second))
    assert [a.get("preset") for _, a in wanted[:2]] == ["tf32x3", "tf32x3-wgmma"]
    moved = winner.replace(layout="NN")
    assert (moved, {"warm": "winner of 16x4096x4096/NT"}) in wanted   # another layout's winner, moved
    variants = [(c, a) for c, a in wanted if a.get("warm", "").startswith("split_k")]
    assert variants and all(c.split_k > 1 and not explain(c, H100) for c, _ in variants)
    names = {c.name for c, _ in wanted}
    for seed, attrs in wanted:   # each preset and winner: its variant that fills the SMs is enqueued too
        if "preset" in attrs or attrs["warm"].startswith("winner"):
            variant = fill_split_k(seed, plan.shape, H100, plan.space.grid()["split_k"])
            assert variant is None or variant.name in names
    TuneShape(job, by_tile)(0, second)
    trials = sorted(_study(job, second).get_trials(deepcopy=False), key=lambda t: t.number)
    enqueued = [t for t in trials if "preset" in t.user_attrs or "warm" in t.user_attrs]
    assert [t.user_attrs.get("name") for t in enqueued] == [c.name for c, _ in wanted]
    assert [t.number for t in enqueued] == list(range(len(wanted)))   # measured before any draw
    assert _study(job, second).user_attrs["warm"] == [c.name for c, _ in wanted]


def test_warm_starts_are_enqueued_once(tmp_path):
    job = _job(tmp_path, ["512x512x512", "1024x1024x1024"], trials=8, patience=0)
    a, b = job.tasks()
    TuneShape(job, by_tile)(0, a)
    TuneShape(job, by_tile)(0, b)
    before = len(_study(job, b).get_trials(deepcopy=False))
    job = _job(tmp_path, ["512x512x512", "1024x1024x1024"], trials=12, patience=0)   # a longer rerun
    TuneShape(job, by_tile)(0, b)
    trials = _study(job, b).get_trials(deepcopy=False)
    tagged = [t for t in trials if "warm" in t.user_attrs or "preset" in t.user_attrs]
    assert len(trials) > before and all(t.number < before for t in tagged)


# ---- early stop and the stretched budget ------------------------------------------------------------
def _trials(values, enqueued=0, ratio=1.5):
    study = optuna.create_study(direction="maximize")
    for i, v in enumerate(values):
        attrs = {"ratio": ratio * v / max(values), **({"preset": "p"} if i < enqueued else {})}
        study.add_trial(optuna.trial.create_trial(value=v, user_attrs=attrs))
    return study.get_trials(deepcopy=False)


def test_plateau_counts_only_sampled_trials_after_the_enqueued_ones():
    flat = _trials([5.0, 9.0, 9.0, 9.05, 8.0, 9.0], enqueued=2)
    assert plateaued(flat, patience=4) and not plateaued(flat, patience=5)
    assert not plateaued(_trials([5.0, 9.0, 9.0, 9.05, 8.0, 9.0], enqueued=3), patience=4)
    assert not plateaued(_trials([5.0, 6.0, 7.0, 8.0, 9.0]), patience=4)   # still gaining > 1%
    assert not plateaued(flat, patience=4, since=3)                        # a resumed run gets its own window
    assert not plateaued(flat, patience=0)


def test_budget_stretches_while_short_of_cublas():
    assert budget(_trials([1.0], ratio=1.1), 10, stretch_below=1.2) == 20
    assert budget(_trials([1.0], ratio=1.3), 10, stretch_below=1.2) == 10
    assert budget(_trials([1.0], ratio=1.1), 10, stretch_below=0.0) == 10


def _measured(job, task):
    return [t for t in _study(job, task).get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]


def flat(device):
    """Every kernel equally fast, and twice cuBLAS: nothing to gain after the first trial."""
    return lambda c, s: Measurement(c.name, s, ms=1.0, iqr_ms=0.0, cublas_ms=2.0, rel_error=1e-7)


def slow(device):
    """Half as fast as cuBLAS whatever the kernel, but always a little better: never a plateau."""
    return lambda c, s: Measurement(c.name, s, ms=2.0 - len(c.name) % 97 / 1000 - time.monotonic() % 1 / 1e6,
                                    iqr_ms=0.0, cublas_ms=1.0, rel_error=1e-7)


def test_a_shape_stops_early_on_a_plateau(tmp_path):
    job = _job(tmp_path, ["1024x1024x1024"], trials=40, patience=5)
    (task,) = job.tasks()
    r = TuneShape(job, flat)(0, task)
    enqueued = len(_study(job, task).user_attrs["warm"])
    # the 5th sampled trial brought no gain; the one the GPU took meanwhile is measured, the others dropped
    assert r["stopped"] == "plateau" and enqueued + 5 <= r["measured"] <= enqueued + 6 < 40
    dropped = [t for t in _study(job, task).get_trials(deepcopy=False) if t.user_attrs.get("kind") == "dropped"]
    assert len(dropped) <= job.plan_for(task).lookahead and all(t.state == TrialState.PRUNED for t in dropped)
    assert job.states()[job.study_of(task)]["done"] == 40 and not job.pending()


def test_a_shape_short_of_cublas_goes_on_to_twice_its_budget(tmp_path):
    job = _job(tmp_path, ["1024x1024x1024"], trials=10, patience=0, stretch_below=1.2)
    (task,) = job.tasks()
    assert TuneShape(job, slow)(0, task)["measured"] == 20
    job = _job(tmp_path, ["2048x2048x2048"], trials=10, patience=0, stretch_below=1.2)
    assert TuneShape(job, flat)(0, job.tasks()[0])["measured"] == 10        # 2x cuBLAS: no stretch


# ---- resume -------------------------------------------------------------------------------------------
def test_resume_skips_finished_shapes_and_a_larger_budget_continues_them(tmp_path):
    shapes = ["256x256x256", "512x512x512/TN"]
    gpu = FakeGPU()
    job = _job(tmp_path, shapes, families=("simt", "tf32x3"), trials=8, patience=0, stretch_below=0)
    done = run_grid(job, TuneShape(job, gpu), [0], mode="inline")
    assert len(done) == 4 and not job.pending() and len(gpu.calls) == 32
    assert run_grid(job, TuneShape(job, gpu), [0], mode="inline") == [] and len(gpu.calls) == 32
    more = _job(tmp_path, shapes, families=("simt", "tf32x3"), trials=11, patience=0, stretch_below=0)
    assert len(more.pending()) == 4
    again = run_grid(more, TuneShape(more, gpu), [0], mode="inline")
    assert [d.result["measured"] for d in again] == [11] * 4 and len(gpu.calls) == 32 + 4 * 3
    assert len({n for _, n in gpu.calls}) <= len(gpu.calls)


def test_a_timed_out_grid_leaves_the_rest_pending(tmp_path):
    job = _job(tmp_path, ["256x256x256", "512x512x512"], trials=6, deadline=time.time() - 1)
    done = run_grid(job, TuneShape(job, FakeGPU()), [0], mode="inline")
    assert [d.result["skipped"] for d in done] == ["the budget's tuning share had passed"] * 2
    assert len(job.pending()) == 2


# ---- one worker per GPU ----------------------------------------------------------------------------------
def test_several_fake_gpus_share_the_queue_in_threads(tmp_path):
    log = str(tmp_path / "calls.log")
    shapes = ["64x64x64", "128x128x128", "256x256x256", "512x512x512", "256x256x256/NT"]
    job = _job(tmp_path, shapes, families=("simt", "tf32x3"), trials=6, patience=0, stretch_below=0)
    done = run_grid(job, TuneShape(job, FakeGPU(log=log, delay=0.01)), [0, 1, 2], mode="thread")
    assert sorted(str(d.item) for d in done) == sorted(str(t) for t in job.tasks()) and not job.pending()
    assert {d.device for d in done} == {0, 1, 2} and not any(d.error for d in done)
    # a shape's study ran on one GPU: every measurement of a task came from the device that ran it
    by_name = {}
    for device, name in logged(log):
        by_name.setdefault(name, set()).add(device)
    for d in done:
        names = {t.user_attrs["name"] for t in _measured(job, d.item)}
        assert names and all(d.device in by_name[n] for n in names)


@pytest.mark.slow
def test_several_fake_gpus_share_the_queue_in_processes(tmp_path):
    log = str(tmp_path / "calls.log")
    job = _job(tmp_path, ["64x64x64", "128x128x128", "256x256x256"], trials=5, patience=0, stretch_below=0)
    done = run_grid(job, TuneShape(job, FakeGPU(log=log)), [0, 1], mode="process")
    assert not job.pending() and {d.device for d in done} == {0, 1} and not any(d.error for d in done)
    assert {d for d, _ in logged(log)} == {0, 1} and len(logged(log)) == 15


def fail_on(device, item):
    if item == "bug":
        raise KeyError("a bug in one item")
    if item == "die":
        os._exit(3)   # the worker process vanishes, like a driver abort
    return item.upper()


@pytest.mark.slow
def test_a_dying_worker_loses_only_its_item(tmp_path):
    items = ["a", "die", "b", "bug", "c", "d"]
    done = run_on_devices(items, fail_on, [0, 1], mode="process", poll=0.2)
    by = {d.item: d for d in done}
    assert sorted(by) == sorted(items)
    assert {by[i].result for i in "abcd"} == set("ABCD")
    assert "died (exit code 3)" in by["die"].error and by["bug"].error == "KeyError: 'a bug in one item'"


def child_process(device, item):
    """Work that starts a process of its own, as the timings' measuring worker does."""
    import multiprocessing

    proc = multiprocessing.get_context("spawn").Process(target=os.getpid)
    proc.start()
    proc.join(60)
    return proc.exitcode


@pytest.mark.slow
def test_process_workers_may_start_processes_of_their_own():
    """A timings batch on several GPUs starts the isolated measuring worker inside the GPU's worker
    process; as a daemon it could not ('daemonic processes are not allowed to have children': every
    batch of a 4-GPU timings run failed so)."""
    done = run_on_devices(["a", "b"], child_process, [0, 1], mode="process", poll=0.2)
    assert sorted((d.error, d.result) for d in done) == [(None, 0), (None, 0)]


def sleeps_with_a_child(device, item):
    """Start a daemon child (as the measuring worker is), note its pid in ``item``, then hang."""
    import multiprocessing
    import time as _time

    child = multiprocessing.get_context("spawn").Process(target=_time.sleep, args=(120,), daemon=True)
    child.start()
    with open(item, "w") as fh:
        fh.write(str(child.pid))
    _time.sleep(120)


@pytest.mark.slow
def test_a_terminated_worker_takes_its_measuring_worker_with_it(tmp_path):
    """_stop ends a worker stuck in its item with SIGTERM: the worker exits as on an exception, so the
    daemon it started (the measuring worker, maybe stuck in a hung kernel holding the GPU) goes too."""
    import multiprocessing
    import queue as _queue
    import time as _time

    from gemmgen.tune import pool

    ctx = multiprocessing.get_context("spawn")
    inbox, outbox, note = ctx.Queue(), ctx.Queue(), tmp_path / "child.pid"
    worker = ctx.Process(target=pool._serve, args=(sleeps_with_a_child, 0, inbox, outbox))
    worker.start()
    inbox.put((0, str(note)))
    for _ in range(300):
        if note.exists() and note.read_text():
            break
        _time.sleep(0.1)
    child = int(note.read_text())
    worker.terminate()
    worker.join(20)
    assert worker.exitcode is not None
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        _time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the measuring worker outlived its terminated GPU worker")
    with pytest.raises(_queue.Empty):
        outbox.get(timeout=0.1)


def test_errors_of_one_item_do_not_stop_the_others():
    done = run_on_devices(["a", "bug", "b"], fail_on, [0, 1], mode="thread")
    assert sorted((d.item, d.result, d.error) for d in done) == [
        ("a", "A", None), ("b", "B", None), ("bug", None, "KeyError: 'a bug in one item'")]


# ---- the timings stage ------------------------------------------------------------------------------------
def test_timing_batches_cover_kernels_times_shapes():
    shapes = [Shape.parse(s) for s in ("64x64x64", "4096x4096x4096", "1000x1000x1000/TT", "512x512x512/NT")]
    configs = [preset("tf32x3"), preset("tf32x3-wgmma"), preset("tf32x3-wgmma").replace(bounds="none")]
    batches = timing_batches(configs, shapes, H100, size=2)
    pairs = {(c.name, b.shape.key) for b in batches for c in b.configs}
    expected = {(c.replace(layout=s.layout).name, s.key) for c in configs for s in shapes
                if transfer(c, s, H100)}
    assert pairs == expected and len(pairs) == sum(len(b.configs) for b in batches)
    assert len(expected) == 3 * 4 - 2   # the fast-path kernel runs neither 1000^3 nor 64^3 (128x128 tiles)
    assert all(len(b.configs) <= 2 and all(c.layout == b.shape.layout for c in b.configs) for b in batches)
    assert [b.shape for b in batches][:4] == shapes   # round-robin: every shape's first batch, in the order given
    assert [b.shape for b in batches][4:] == [Shape(4096, 4096, 4096), Shape(512, 512, 512, "NT")]   # then the second


def test_time_shape_compiles_then_times_and_keeps_failures():
    from gemmgen.base import CompileFailure

    a, b = preset("tf32x3"), preset("tf32x3-wgmma")

    def prepare(config):
        if config == b:
            raise CompileFailure("ptxas: too many registers")

    def retime_for(device):
        return lambda configs, shape: [by_tile(device)(c, shape) for c in configs]

    result = TimeShape(retime_for, prepare, jobs=2)(0, Batch(Shape(512, 512, 512), (a, b)))
    assert result[0][0] == a and isinstance(result[0][1], Measurement)
    assert result[1][0] == b and isinstance(result[1][1], CompileFailure)
    assert TimeShape(retime_for, deadline=time.time() - 1)(0, Batch(Shape(64, 64, 64), (a,))) == []


def test_space_presets_are_the_dispatchable_ones():
    from gemmgen.tune.space import load_space

    assert [c.label for c in space_presets(load_space("simt", "sm_90"), "sm_90")] == ["v10", "v11", "v12", "v13"]
    assert [c.label for c in space_presets(load_space("tf32", "sm_86"), "sm_86")] == ["tf32"]


# ---- through the real isolated measuring worker (a fake session inside it) ------------------------------
@pytest.fixture
def isolated(monkeypatch):
    """gemmgen.tune.gpu's workers run tests/fake_sessions.GridSession: the real process isolation."""
    from gemmgen.measure.worker import MeasureWorker
    from gemmgen.tune import gpu

    workers = {}

    def worker_for(device):
        if device not in workers:
            workers[device] = MeasureWorker(device, factory="fake_sessions:GridSession")
        return workers[device]

    monkeypatch.setattr(gpu, "worker_for", worker_for)
    yield lambda *names: monkeypatch.setenv("GEMMGEN_FAKE_CRASH", ",".join(names))
    for w in workers.values():
        w.close()


def test_a_crashing_kernel_in_a_timings_batch_costs_only_itself(isolated):
    import functools

    from gemmgen.base import RuntimeFailure
    from gemmgen.tune.gpu import GpuRetime

    good, bad, other = preset("tf32x3"), preset("tf32x3-wgmma"), preset("tf32x3").replace(split_k=2)
    isolated(bad.name)
    timed = TimeShape(functools.partial(GpuRetime, rep_ms=20.0))(0, Batch(Shape(512, 512, 512), (good, bad, other)))
    assert [c for c, _ in timed] == [good, bad, other]
    assert isinstance(timed[1][1], RuntimeFailure) and "died" in str(timed[1][1])
    assert all(isinstance(m, Measurement) for i, (_, m) in enumerate(timed) if i != 1)


def test_a_crashing_candidate_never_kills_the_grid(isolated, tmp_path):
    from gemmgen.tune.gpu import GpuMeasure

    job = _job(tmp_path, ["256x256x256", "512x512x512"], trials=6, patience=0, stretch_below=0)
    isolated(preset("tf32x3-wgmma").name)   # the wgmma preset, enqueued first on each shape, crashes
    done = run_grid(job, TuneShape(job, GpuMeasure()), [0], mode="inline")
    assert not any(d.error for d in done) and not job.pending()
    for d in done:
        failed = [t for t in _study(job, d.item).get_trials(deepcopy=False) if t.state == TrialState.FAIL]
        assert [t.user_attrs["kind"] for t in failed] == ["runtime"]
        assert d.result["measured"] == 6 and d.result["name"] != preset("tf32x3-wgmma").name


def test_a_family_that_computes_none_of_a_shape_gets_no_task(tmp_path):
    """The skinny kernels take N or M up to 32: a grid of --family all has no skinny study at 512^3."""
    job = _job(tmp_path, ["512x512x512", "4096x16x4096", "20x4971x4190"], families=("simt", "skinny"))
    assert [(t.family, t.shape.key) for t in job.tasks()] == [
        (f, s) for s in [t.shape.key for t in job.tasks() if t.family == "simt"] for f in ("simt", "skinny")
        if f == "simt" or s != "512x512x512/NN"]
    assert {t.shape.key for t in job.tasks() if t.family == "skinny"} == {"4096x16x4096/NN", "20x4971x4190/NN"}
