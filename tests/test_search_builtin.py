"""The built-in kernels a search adds: ranked per shape by the analytic model as matmul ranks them, timed first
on each shape (round-robin over the shapes by value, so a budget cut leaves every shape's most valuable pairs
timed), and measured first by each study (CPU only: measurements injected)."""
from __future__ import annotations

import argparse
import pickle

import optuna
import pytest

from gemmgen.base import Measurement, Shape
from gemmgen.base.devices import DeviceSpec, known
from gemmgen.cli.search_builtin import FAMILY_TOP, TIME_TOP, WARM_TOP, first_pairs, predicted_builtins, warm_builtins
from gemmgen.cli.search_timings import timing_work
from gemmgen.kernel.rules import explain
from gemmgen.records.store import DeviceResults
from gemmgen.runtime.builtin import builtin_fits
from gemmgen.tune.grid import derived_grid, Grid
from gemmgen.tune.grid_plan import GridJob, Task
from gemmgen.tune.grid_run import TuneShape
from gemmgen.tune.grid_timings import timing_batches
from gemmgen.tune.space import load_space
from gemmgen.tune.storage import open_storage
from gemmgen.tune.warm import space_presets, warm_configs

optuna.logging.set_verbosity(optuna.logging.WARNING)
H100, RTX3090 = known("h100"), known("rtx3090")
T4_LIKE = DeviceSpec("t4-like", "A Turing-like GPU", (7, 5), 40, 64 * 1024, 64 * 1024, max_threads_per_sm=1024,
                     l2_bytes=4 * 2**20, clock_mhz=1590, mem_gbs=320)
SHAPES = [Shape(4096, 4096, 4096), Shape(16, 8192, 4096, "NT"), Shape(1000, 1000, 1000, "TT"), Shape(64, 64, 64, "TN")]


# ---- the ranking --------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", [H100, RTX3090, T4_LIKE], ids=lambda d: d.key)
def test_the_picks_run_the_shape_in_its_layout_fastest_predicted_first(device):
    picks = predicted_builtins(device, SHAPES, ["simt", "tf32x3"], TIME_TOP)
    fits = {f.config.name: f for f in builtin_fits(device, "fp32")}
    for s in SHAPES:
        mine = picks[s.key]
        assert 1 <= len(mine) <= TIME_TOP and len({c.name for c in mine}) == len(mine)
        assert all(c.layout == s.layout and not explain(c, device) and c.accepts(s.M, s.N, s.K) is None for c in mine)
        assert device.cc >= (8, 0) or all(c.family == "simt" for c in mine)   # no TF32 tensor cores on sm_75
        # a kernel of the portfolio that already lies in the shape's layout and is not picked is predicted
        # no faster than the slowest pick that also lies there (moved ones carry the layout factor)
        native = [fits[c.name] for c in mine if c.name in fits]
        if native:
            slowest = max(f.predict(s) for f in native)
            others = [f for name, f in fits.items() if f.config.layout == s.layout and name not in {c.name for c in mine}
                      and f.config.accepts(s.M, s.N, s.K) is None]
            assert len(mine) < TIME_TOP or all(f.predict(s) >= slowest * (1 - 1e-9) for f in others)


def test_a_family_gets_its_own_kernels():
    tasks = [Task(f, s) for f in ("simt", "tf32x3") for s in SHAPES[:2]]
    warm = warm_builtins(H100, tasks)
    assert all(len(v) == WARM_TOP and {c.family for c in v} == {t.family} for t, v in warm.items())
    assert warm_builtins(T4_LIKE, [Task("tf32x3", SHAPES[0])]) == {Task("tf32x3", SHAPES[0]): ()}   # none on Turing
    assert predicted_builtins(H100, SHAPES[:1], ["simt"], 4)["4096x4096x4096/NN"][0].family == "simt"


def test_first_pairs_put_built_ins_before_the_shapes_own_winners():
    a, b, c = (object() for _ in range(3))
    assert first_pairs({"s1": [a, b]}, {"s1": [c], "s2": [a]}) == {"s1": [a, b, c], "s2": [a]}


# ---- the timings stage's work list ----------------------------------------------------------------------
def _args(**kw) -> argparse.Namespace:
    base = {"only_timed": False, "top": None, "winners_from": None}
    return argparse.Namespace(**{**base, **kw})


def _job(tmp_path, device, shapes=None, families=("simt", "tf32x3")):
    grid = derived_grid(device) if shapes is None else Grid("test", tuple(shapes), ordered=True)
    return GridJob(grid, families, device, f"sqlite:///{tmp_path}/studies.db")


def _empty(device) -> DeviceResults:
    return DeviceResults({"name": device.name}, {}, None)


def test_the_work_list_times_each_shapes_built_ins_first_round_robin_by_value(tmp_path):
    """On the derived shapes of an RTX 3090, each in every layout (no study tuned yet): the first batch of
    every shape, the tuned shapes by value and then the other layouts, starts with its predicted-fastest
    built-ins, then the presets; a shape's second batch, if any, comes after every shape's first."""
    job = _job(tmp_path, RTX3090)
    shapes = job.timing_shapes()
    assert shapes[:len(job.shapes())] == job.shapes() and len(shapes) > 3 * len(job.shapes())
    work = timing_work(_args(), job, None, _empty(RTX3090), winners={})
    picks = predicted_builtins(RTX3090, shapes, ["simt", "tf32x3"], TIME_TOP, per_family=FAMILY_TOP)
    firsts = work.batches[:len(shapes)]
    assert [b.shape for b in firsts] == shapes   # one each, by value: 4096^3 first, 16^3 late
    for batch in firsts:
        own = picks[batch.shape.key]
        assert [c.name for c in batch.configs[:len(own)]] == [c.name for c in own]
        assert {c.family for c in own} == {"simt", "tf32x3"}   # each family's own first ranks too
    presets = {c.in_layout(lay, label="").name for f in ("simt", "tf32x3")
               for c in space_presets(load_space(f, RTX3090.arch), RTX3090.arch) for lay in ("NN", "NT", "TN", "TT")}
    rest = {c.name for b in firsts for c in b.configs[len(picks[b.shape.key]):]} | {c.name for b in work.batches[len(shapes):]
                                                                     for c in b.configs}
    assert rest and rest <= presets   # after a shape's built-ins: the presets (no winners yet), batches filled
    assert work.kernel_count() >= len({c.name for cs in picks.values() for c in cs})


def test_a_shapes_own_winner_joins_its_first_batch_and_timed_pairs_are_skipped(tmp_path):
    shapes = SHAPES[:2]
    job = _job(tmp_path, H100, shapes)
    winner = space_presets(load_space("simt", "sm_90"), "sm_90")[0].in_layout("NT", label="").replace(BK=8)
    picks = predicted_builtins(H100, shapes, ["simt", "tf32x3"], TIME_TOP, per_family=FAMILY_TOP)
    work = timing_work(_args(), job, None, _empty(H100), winners={"16x8192x4096/NT": [winner]})
    nt = next(b for b in work.batches if b.shape == shapes[1])
    own = picks[shapes[1].key]
    assert [c.name for c in nt.configs[:len(own) + 1]] == [*(c.name for c in own), winner.name]
    skip = {(picks[shapes[0].key][0].name, shapes[0].key)}   # timed before: not again
    batches = timing_batches([], shapes, H100, skip=skip, first=picks)
    assert [c.name for c in batches[0].configs] == [c.name for c in picks[shapes[0].key][1:]]


def test_only_keeps_the_rest_but_never_the_first_pairs():
    shapes = SHAPES[:1]
    picks = predicted_builtins(H100, shapes, ["simt", "tf32x3"], 2)
    presets = space_presets(load_space("simt", "sm_90"), "sm_90")
    batches = timing_batches(presets, shapes, H100, only={shapes[0].key: {presets[0].name}}, first=picks)
    assert [c.name for b in batches for c in b.configs] == [*(c.name for c in picks[shapes[0].key]), presets[0].name]


# ---- warm starts ------------------------------------------------------------------------------------------
def test_warm_starts_begin_with_the_families_built_ins(tmp_path):
    job = _job(tmp_path, H100, [Shape(16, 8192, 4096, "NT")], families=("tf32x3",))
    task = job.tasks()[0]
    builtins = warm_builtins(H100, [task])[task]
    simt = predicted_builtins(H100, [task.shape], ["simt"], 1)[task.shape.key]   # another family's: left out
    wanted = warm_configs(job.plan_for(task), [], (*builtins, *simt))
    assert [c.name for c, _ in wanted[:WARM_TOP]] == [c.name for c in builtins]
    assert all(a == {"warm": "built-in predicted fastest"} for _, a in wanted[:WARM_TOP])
    assert "preset" in wanted[WARM_TOP][1] and simt[0].name not in {c.name for c, _ in wanted}


def test_a_simt_study_warm_starts_the_interleaved_twin_of_each_built_in(tmp_path):
    """A SIMT study enqueues each built-in's interleaved twin right after it and, among the split-K
    variants, the interleaved 128x128x8 tile with two K slices; a shape whose rows are not 16 bytes apart
    gets no twin."""
    job = _job(tmp_path, H100, [Shape(1000, 1000, 1000), Shape(1001, 1001, 1001)], families=("simt",))
    for task in job.tasks():
        builtins = warm_builtins(H100, [task])[task]
        wanted = warm_configs(job.plan_for(task), [], builtins)
        twins = [(i, c) for i, (c, a) in enumerate(wanted) if a["warm" if "warm" in a else "preset"].startswith("interleaved ")]
        if task.shape.M % 4:
            assert not twins and not any(c.interleave for c, _ in wanted)
            continue
        assert twins and all(c.interleave and wanted[i - 1][0].replace(interleave=True).name == c.name for i, c in twins)
        names = [c.name for c, _ in wanted]
        assert "gg_simt_nn_b128x128x8_w64x32i2x2_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldspi_k2a_chk" in names[:16]


def test_a_warp_specialized_built_in_brings_its_persistent_twin_where_tiles_make_two_waves(tmp_path):
    """The space draws no persistent scheduler; on large shallow products it is the best 3xTF32 kernel
    of the Hopper GPUs' recorded times. A tf32x3 study of 2816x3072x16 (528 tiles of 128x128 on 132
    SMs) enqueues, right after each warp-specialized built-in, that kernel walking its tiles with one
    block an SM, as a whole config (the space cannot express it); 1000^3 (64 tiles) gets none."""
    job = _job(tmp_path, H100, [Shape(2816, 3072, 16, "TT"), Shape(1000, 1000, 1000)], families=("tf32x3",))
    for task in job.tasks():
        plan = job.plan_for(task)
        wanted = warm_configs(plan, [], warm_builtins(H100, [task])[task])
        twins = [(i, c) for i, (c, a) in enumerate(wanted) if a.get("warm", "").startswith("persistent ")]
        if task.shape.M == 1000:
            assert not twins
            continue
        assert twins and all(c.scheduler == "persistent" and c.persistent_blocks == H100.sm_count for _, c in twins)
        assert all(wanted[i - 1][0].warp_specialized and wanted[i - 1][0].scheduler == "plain" for i, _ in twins)
        assert all(plan.space.params_of(c) is None for _, c in twins) and twins[0][0] < WARM_TOP + 2


def test_a_study_measures_its_built_ins_before_anything_else(tmp_path):
    job = _job(tmp_path, H100, [Shape(1024, 1024, 1024)], families=("tf32x3",))
    task = job.tasks()[0]
    job = GridJob(**{**job.__dict__, "trials": 10, "options": {"sampler": "random"}, "builtins": warm_builtins(H100, [task])})
    pickle.loads(pickle.dumps(job))   # sent to one worker process per GPU

    def measure_for(device):
        return lambda c, s: Measurement(c.name, s, ms=1 + 1 / c.BM, iqr_ms=0, cublas_ms=2.0, rel_error=0)

    TuneShape(job, measure_for)(0, task)
    study = optuna.load_study(study_name=job.study_of(task), storage=open_storage(job.storage))
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    assert [t.user_attrs.get("name") for t in trials[:WARM_TOP]] == [c.name for c in job.builtins[task]]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials[:WARM_TOP])


def test_a_budget_cut_leaves_every_shapes_first_batch_timed():
    """Batches go round-robin: every shape's first batch (its most valuable pairs) before any second one."""
    picks = predicted_builtins(H100, SHAPES, ["simt", "tf32x3"], TIME_TOP)
    presets = [p for f in ("simt", "tf32x3") for p in space_presets(load_space(f, "sm_90"), "sm_90")]
    batches = timing_batches(presets, SHAPES, H100, first=picks, size=TIME_TOP)
    assert len(batches) > len(SHAPES)
    assert [b.shape for b in batches[:len(SHAPES)]] == SHAPES
    assert all([c.name for c in b.configs] == [c.name for c in picks[b.shape.key]] for b in batches[:len(SHAPES)])
