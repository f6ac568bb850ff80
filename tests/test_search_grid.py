"""`gemmgen search --grid` on a fake H100 (no GPU): the stages as a user runs them, what they store in
the results file, resuming, several fake GPUs, re-timing another GPU's winners, and one-line errors."""
from __future__ import annotations

import json

import optuna
import pytest

from gemmgen.base import Measurement, Shape
from gemmgen.base.devices import known
from gemmgen.cli import main, search_grid
from gemmgen.cli.search_builtin import FAMILY_TOP, TIME_TOP, predicted_builtins
from gemmgen.kernel.config import KernelConfig
from gemmgen.kernel.presets import preset
from gemmgen.records import store
from gemmgen.records.entry import Entry
from gemmgen.records.timings import Timings
from gemmgen.tune.grid import load_grid
from gemmgen.tune.grid_timings import timing_batches
from gemmgen.tune.shapeset import order_by_value
from gemmgen.tune.space import load_space
from gemmgen.tune.warm import space_presets

from test_search import speed
from test_search_families import FAMILY_SPEED, H100

optuna.logging.set_verbosity(optuna.logging.WARNING)
SHAPES = ["256x256x256/NN", "16x4096x4096/NN", "1000x1000x1000/NN", "512x512x512/NT"]
FILE = "nvidia-h100-80gb-hbm3.json"


def fake_measure(config, shape):
    """A fake H100: the landscape of test_search per family, cuBLAS at a fixed rate per shape."""
    ms = 100.0 / (speed(config) * FAMILY_SPEED[config.family]) * shape.flops / 2**30
    return Measurement(config.name, shape, ms=ms, iqr_ms=0.01, cublas_ms=shape.flops / 2**30, rel_error=1e-6,
                       resident=1 + config.BM % 3)   # the driver's blocks per SM, as the dispatch model reads it


def fake_gpu(device):
    return fake_measure


class FakeRetime:
    """GpuRetime(device, rep_ms): the finalists and the timings batches, timed by the fake H100."""

    seen: list = []

    def __init__(self, device_id=0, rep_ms=300.0):
        self.device_id, self.rep_ms = device_id, rep_ms

    def __call__(self, configs, shape):
        FakeRetime.seen.append((self.device_id, self.rep_ms, shape.key, [c.name for c in configs]))
        return [fake_measure(c, shape) for c in configs]


class FakePrepare:
    """NvrtcPrepare(arch): records what was compiled (ahead, or by a worker)."""

    built: list = []

    def __init__(self, arch):
        self.arch = arch

    def __call__(self, config):
        FakePrepare.built.append(config.name)


@pytest.fixture
def fake_cli(monkeypatch, tmp_path):
    from gemmgen.base import devices
    from gemmgen.tune import gpu

    monkeypatch.setattr(devices, "detect", lambda device_id=0: known("h100"))
    monkeypatch.setattr(devices, "fingerprint", lambda device_id=0: dict(H100))
    monkeypatch.setattr(gpu, "GpuMeasure", lambda rep_ms=100.0: fake_gpu)
    monkeypatch.setattr(gpu, "NvrtcPrepare", FakePrepare)
    monkeypatch.setattr(FakePrepare, "built", [])
    monkeypatch.setattr(gpu, "GpuRetime", FakeRetime)
    monkeypatch.setattr(store, "shipped_dir", lambda: None)
    real_pool_mode = search_grid.pool_mode   # several fake GPUs: threads, which see them, not processes
    monkeypatch.setattr(search_grid, "pool_mode", lambda devices: real_pool_mode(devices, pool="thread"))
    monkeypatch.setattr(FakeRetime, "seen", [])
    grid = tmp_path / "grid-mini.json"
    grid.write_text(json.dumps({"gpus": ["h100"], "shapes": SHAPES}))
    return tmp_path


def grid_search(capsys, tmp, *args, code=0):
    argv = ["search", "--grid", str(tmp / "grid-mini.json"), "--family", "simt,tf32x3", "--trials", "8",
            "--patience", "3", "--sampler", "random", "--results", str(tmp / "results"), "--json", *args]
    got = main(argv)
    out, err = capsys.readouterr()
    assert got == code, err
    return json.loads(out) if out.strip() else None, err


def test_grid_tunes_every_shape_and_times_the_winners(fake_cli, capsys):
    report, err = grid_search(capsys, fake_cli)
    tasks = {(t["family"], t["shape"]): t for t in report["tasks"]}
    assert set(tasks) == {(f, s) for f in ("simt", "tf32x3") for s in SHAPES}
    assert all(t["status"] == "tuned" and t["measured"] >= 1 for t in tasks.values())
    assert "grid mini: 4 shapes x 2 families (simt, tf32x3)" in err and "8 of 8 to tune" in err
    lines = [line for line in err.splitlines() if line.startswith("[")]
    assert len(lines) == 8 + report["timings"]["batches"]
    assert "tf32x3 256x256x256/NN: " in err and "x cuBLAS" in err and "ETA" in err
    assert tasks[("simt", "256x256x256/NN")]["study"] == "h100-256x256x256-NN"
    assert tasks[("tf32x3", "512x512x512/NT")]["study"] == "h100-tf32x3-512x512x512-NT"
    saved = store.load_file(fake_cli / "results" / FILE)
    assert {f"{s}" for s in SHAPES} <= set(saved.entries)   # the fp32 entry of every shape
    assert all(saved.entries[s].kernel_config.family == "tf32x3" for s in SHAPES)   # the faster family
    # the timings: every distinct winner and the presets the spaces hold, on every shape they run, and on
    # each shape the built-ins the analytic model predicts fastest there
    winners = {KernelConfig.from_dict(t["config"]) for t in _states(fake_cli).values()}
    presets = [p for f in ("simt", "tf32x3") for p in space_presets(load_space(f, "sm_90"), "sm_90")]
    shapes = [Shape.parse(s) for s in SHAPES]
    builtins = predicted_builtins(known("h100"), shapes, ["simt", "tf32x3"], TIME_TOP, per_family=FAMILY_TOP)
    batches = timing_batches([*winners, *presets], shapes, known("h100"), first=builtins)
    wanted = {(c.name, b.shape.key) for b in batches for c in b.configs}
    timed = {(n, k) for n, kt in saved.timings.kernels.items() for k in kt.ms}
    assert timed == wanted and report["timings"]["measured"] == len(wanted)
    assert all(TIME_TOP <= len(b) <= TIME_TOP + FAMILY_TOP and {c.family for c in b} == {"simt", "tf32x3"}
               for b in builtins.values())
    assert {(c.name, key) for key, cs in builtins.items() for c in cs} <= timed   # built-ins timed on their shapes
    order = [s.key for s in order_by_value(shapes, known("h100"))]
    assert [key for _, _, key, _ in FakeRetime.seen][:len(SHAPES)] == order   # a first batch a shape, by value
    first_batches = [names for _, _, key, names in FakeRetime.seen][:len(SHAPES)]
    for shape, names in zip(order, first_batches):   # each shape's first batch: its built-ins, then its winners
        own = {state["name"] for study, state in _states(fake_cli).items() if study.endswith(shape.replace("/", "-"))}
        first = len(builtins[shape])
        assert names[:first] == [c.name for c in builtins[shape]] and len(own) == 2
        assert own <= set(names[:first + 2])
    assert set(saved.timings.cublas["fp32"]) == set(SHAPES)
    assert all(kt.resident == 1 + kt.config.BM % 3 for kt in saved.timings.kernels.values())   # recorded
    assert {rep for _, rep, _, _ in FakeRetime.seen} == {20.0}   # no re-timed finalists: the timings stage
    assert {n for _, _, _, names in FakeRetime.seen for n in names} <= set(FakePrepare.built)   # compiled first
    assert preset("tf32x3-wgmma").replace(layout="NT", split_k=4).name in FakePrepare.built   # ahead: a warm start
    assert Timings.from_dict(json.loads((fake_cli / "results" / FILE).read_text())["timings"]) == saved.timings


def _states(tmp):
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp}/results/studies.db")
    return {s.study_name: s.user_attrs["grid"] for s in storage.get_all_studies()}


def test_a_rerun_resumes_both_stages(fake_cli, capsys):
    grid_search(capsys, fake_cli)
    calls = len(FakeRetime.seen)
    report, err = grid_search(capsys, fake_cli)
    assert "0 of 8 to tune" in err and ": 0 to time in 0 batches" in err and len(FakeRetime.seen) == calls
    assert {t["status"] for t in report["tasks"]} == {"finished before"}
    report, err = grid_search(capsys, fake_cli, "--trials", "12", "--no-timings")
    assert "8 of 8 to tune" in err and "grid mini timings" not in err
    assert all(t["measured"] > 8 for t in report["tasks"] if t["status"] == "tuned")


def test_several_gpus_share_the_grid(fake_cli, capsys):
    report, err = grid_search(capsys, fake_cli, "--devices", "0,1,2", "--no-timings")
    assert len(report["tasks"]) == 8 and "GPUs 0,1,2" in err
    used = {int(line.split(" on GPU ")[1].split(";")[0]) for line in err.splitlines() if " on GPU " in line}
    assert used == {0, 1, 2}
    report, err = grid_search(capsys, fake_cli, "--devices", "0,1", "--timings-only")
    assert {d for d, *_ in FakeRetime.seen} >= {0, 1} and report["timings"]["measured"] > 0


def _h200_results(folder):
    """An H200's results file in ``folder``: a 3xTF32 split-K entry and a SIMT (v13) timing.
    Returns (the 3xTF32 config, the file's path)."""
    theirs = preset("tf32x3-wgmma").replace(split_k=4)
    store.record({**H100, "name": "NVIDIA H200"}, [Entry.new("16x4096x4096", theirs, 60.0, 40.0, 30, arch="sm_90")],
                 folder, timings=Timings.empty().add(preset("v13"), "4096x4096x4096", 9.0))
    return theirs, folder / "nvidia-h200.json"


def test_timings_only_retimes_another_gpus_winners(fake_cli, capsys):
    theirs, other = _h200_results(fake_cli / "h200")
    report, err = grid_search(capsys, fake_cli, "--timings-only", "--winners-from", str(other))
    assert "grid mini" in err and "to tune" not in err and "the kernels of" in err
    saved = store.load_file(fake_cli / "results" / FILE)
    assert set(saved.timings.kernels) == {theirs.name, preset("v13").name,
                                          theirs.replace(layout="NT").name, preset("v13").replace(layout="NT").name}
    assert saved.timings.kernels[theirs.name].ms.keys() == {s for s in SHAPES if s.endswith("NN")}
    assert saved.entries["16x4096x4096/NN"].trials == 0   # the fastest timed kernel, as the shape's entry
    assert not _states(fake_cli)   # nothing tuned
    assert report["tasks"] == [] or all(t["status"] != "tuned" for t in report["tasks"])


def test_winners_from_without_family_times_every_family_of_the_file(fake_cli, capsys):
    """search's --family defaults to simt; timing another GPU's kernels with that default once left
    its 3xTF32 kernels out silently (an H200 file of SIMT kernels only). Without --family every
    family of the file is timed."""
    theirs, other = _h200_results(fake_cli / "h200b")
    argv = ["search", "--grid", str(fake_cli / "grid-mini.json"), "--timings-only", "--winners-from",
            str(other), "--results", str(fake_cli / "r3"), "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    saved = store.load_file(fake_cli / "r3" / FILE)
    assert {k.split("_")[1] for k in saved.timings.kernels} == {"simt", "tf32x3"}
    assert theirs.name in saved.timings.kernels


def test_top_times_only_the_kernels_the_dispatch_predicts_fastest(fake_cli, capsys):
    """--top K: re-timing a results file's kernels on a grid spends the GPU on each shape's K predicted
    fastest only. On the shapes the file timed, the predictions are its measurements: --top 2 times
    exactly the two fastest fp32 kernels it measured there."""
    grid_search(capsys, fake_cli)
    first = fake_cli / "results" / FILE
    saved = store.load_file(first)
    argv = ["search", "--grid", str(fake_cli / "grid-mini.json"), "--timings-only", "--winners-from", str(first),
            "--results", str(fake_cli / "top"), "--top", "2", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "per shape the 2 predicted fastest" in capsys.readouterr().err
    again = store.load_file(fake_cli / "top" / FILE)
    for shape in SHAPES:
        timed = {n: k.ms[shape] for n, k in saved.timings.kernels.items()
                 if shape in k.ms and k.config.precision == "fp32"}
        assert len(timed) > 2
        now = {n for n, k in again.timings.kernels.items() if shape in k.ms and k.config.precision == "fp32"}
        assert now == set(sorted(timed, key=timed.get)[:2]), shape
    assert main([*argv[:-2], "0"]) == 2 and "--top 0: must be at least 1" in capsys.readouterr().err


def test_only_timed_retimes_exactly_the_pairs_the_file_times(fake_cli, capsys):
    """--only-timed: kernels whose code changed are timed again where the file timed them, and nowhere
    else (not on the grid's other shapes of their layout); with --top or without --winners-from, one line."""
    grid_search(capsys, fake_cli)
    first = fake_cli / "results" / FILE
    data = json.loads(first.read_text())
    kernels = data["timings"]["kernels"]
    keep = dict(list(kernels.items())[:3])
    dropped = next(iter(keep.values()))["ms"]
    dropped.pop(sorted(dropped)[0])   # one kernel loses a shape: not timed again there
    for k in keep.values():           # and no kernel keeps the NT shape, nor its entry: nothing timed there
        k["ms"].pop("512x512x512/NT", None)
    data["entries"] = {key: e for key, e in data["entries"].items() if not key.startswith("512x512x512/NT")}
    data["timings"]["kernels"] = keep
    changed = fake_cli / "changed" / FILE
    changed.parent.mkdir()
    changed.write_text(json.dumps(data))
    argv = ["search", "--grid", str(fake_cli / "grid-mini.json"), "--timings-only", "--winners-from", str(changed),
            "--only-timed", "--results", str(fake_cli / "again"), "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "each on the shapes that file times it on, 0 of those pairs in the output file already" in \
        capsys.readouterr().err
    again = store.load_file(fake_cli / "again" / FILE)
    assert not any("512x512x512/NT" in k.ms for k in again.timings.kernels.values())
    stored = {(e["name"], "/".join(key.split("/")[:2])) for key, e in data["entries"].items()}   # an entry: timed
    assert {(n, s) for n, k in again.timings.kernels.items() for s in k.ms} == \
        {(n, s) for n, k in keep.items() for s in k["ms"]} | stored
    for extra, words in ((["--top", "2"], "--only-timed and --top are exclusive"),):
        assert main([*argv, *extra]) == 2 and words in capsys.readouterr().err
    mine = ["search", "--grid", str(fake_cli / "grid-mini.json"), "--timings-only", "--winners-from", str(first),
            "--only-timed", "--results", str(first.parent)]   # FILE is the output file: its pairs count as timed
    assert main(mine) == 2 and "give --results a folder of its own" in capsys.readouterr().err
    bare = ["search", "--grid", str(fake_cli / "grid-mini.json"), "--timings-only", "--only-timed"]
    assert main(bare) == 2 and "--only-timed times the pairs" in capsys.readouterr().err


def test_grid_auto_tunes_the_shapes_derived_from_the_gpu(fake_cli, capsys):
    argv = ["search", "--grid", "auto", "--family", "tf32x3", "--results", str(fake_cli / "r2"), "--no-timings",
            "--budget", "90s", "--trials", "4", "--json"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["grid"] == "derived" and report["plan"]["shapes"] == 42
    assert "search plan for the NVIDIA H100 80GB HBM3 (132 SMs)" in err and "budget 1:30 = tune 0:54 + time 0:36" in err
    tuned = [t for t in report["tasks"] if t["status"] == "tuned"]
    assert report["plan"]["tasks_tuned"] < report["plan"]["tasks"]   # the plan: the budget's first tasks
    assert tuned[0]["shape"] == "4096x4096x4096/NN"   # by value: the large cube first, not 16x16x16
    # the fake GPU is quick: the tuning share goes on, round after round, to the tasks the plan left out
    assert "another round" in err and len(tuned) == report["plan"]["tasks"]


def test_the_tuning_share_goes_on_to_more_trials_until_the_cap(fake_cli, capsys):
    report, err = grid_search(capsys, fake_cli, "--budget", "60s", "--trials", "16", "--no-timings")
    planned = report["plan"]["trials_per_task"]
    assert planned < 16 and f"8 of 8 to tune, {planned} trials per shape" in err
    assert "another round, 8 task(s) to 16 trials" in err and "to 32 trials" not in err   # --trials caps it
    assert {state["done"] for state in _states(fake_cli).values()} == {16}
    assert all(t["measured"] > 8 for t in report["tasks"])


def test_a_derived_grid_is_timed_in_every_layout(fake_cli, capsys):
    argv = ["search", "--grid", "auto", "--family", "simt", "--results", str(fake_cli / "r3"), "--timings-only",
            "--budget", "10m", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    products = {(s.M, s.N, s.K) for s in load_derived()}   # a few derived shapes share M, N, K
    assert report["plan"]["shapes"] == 42 and report["plan"]["timing_shapes"] == 4 * len(products) > 150
    saved = store.load_file(fake_cli / "r3" / FILE)
    timed = {key for kt in saved.timings.kernels.values() for key in kt.ms}
    shapes = {Shape.parse(key) for key in timed}
    assert len(shapes) == 4 * len(products) and set(saved.timings.cublas["fp32"]) == timed
    assert all({Shape(s.M, s.N, s.K, lay) for lay in ("NN", "NT", "TN", "TT")} <= shapes for s in shapes)
    first = [key for _, _, key, _ in FakeRetime.seen][:42]
    assert first == [s.key for s in load_derived()]   # the tuned shapes' first batches lead


def load_derived():
    from gemmgen.tune.grid import derived_grid
    return derived_grid(known("h100")).shapes


def test_help_shows_the_grid(capsys):
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = capsys.readouterr().out
    for words in ("--grid NAME|FILE|auto", "--patience", "--extend-below", "--rep-ms", "--timings-only",
                  "--winners-from", "--no-timings", "per shape and family", "--budget DURATION", "what to tune",
                  "how long", "time the winners for dispatch", "re-time another GPU's kernels", "20 min",
                  "--budget 2h --devices 0,1,2,3"):
        assert words in text, words


@pytest.mark.parametrize("args, words", [
    (["--grid", "hopper", "--shape", "64x64x64"], "--grid applies to a shape-set search; leave out --shape"),
    (["--shape", "64x64x64", "--patience", "3"], "--patience applies to a shape-set search; leave out --shape"),
    (["--shape", "64x64x64", "--timings-only"], "--timings-only applies to a shape-set search"),
    (["--shape", "-1x2x3"], "--shape '-1x2x3': shape '-1x2x3' has a dimension below 1; valid: MxNxK"),
    (["--budget", "30"], "--budget '30': give a duration with units, e.g. 90s, 10m, 1h or 1h30m"),
    (["--budget", "0m"], "--budget '0m': give a duration"),
    (["--grid", "nosuch"], "--grid 'nosuch': no such grid or file; shipped grids: hopper, hopper-deep, hopper-few-columns, hopper-few-rows, hopper-fill, hopper-launch, hopper-launch-shallow, hopper-mid-shallow, hopper-nt, hopper-shallow, hopper-simt, hopper-skinny, or auto"),
    (["--grid", "hopper", "--winners-from", "x.json"], "give it with --timings-only"),
    (["--grid", "hopper", "--timings-only", "--no-timings"], "--no-timings and --timings-only are exclusive"),
    (["--grid", "hopper", "--rep-ms", "0"], "--rep-ms 0.0: must be above 0"),
    (["--grid", "hopper", "--trials", "0"], "--trials 0: must be at least 1"),
    (["--grid", "hopper", "--patience", "-1"], "--patience -1: must be at least 0"),
    (["--grid", "hopper", "--timings-only", "--winners-from", "/nonexistent.json"], "nonexistent.json"),
    (["--grid", "hopper", "--family", "fp64"], "unknown family fp64"),
])
def test_bad_grid_options_are_one_line_errors(capsys, args, words):
    assert main(["search", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_grid_auto_on_any_gpu_plans_its_derived_shapes(capsys):
    """No GPU is refused: an RTX 3090 gets its own 42 shapes, sized by its 82 SMs, and --dry-run --json is JSON."""
    assert main(["search", "--gpu", "rtx3090", "--budget", "30m", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["gpu"] == "rtx3090" and plan["sm_count"] == 82 and plan["shapes"] == 42
    assert set(plan["regimes"]) == {"waves", "skinny", "deep-k", "shallow-k", "small", "ragged"}
    assert plan["budget"]["budget_s"] == 1800 and plan["budget"]["tune_s"] == 1080 and plan["budget"]["time_s"] == 720
    assert plan["families"] == ["simt", "tf32x3"]   # every fp32 family an sm_86 runs, by default
    assert plan["tasks_tuned"] == plan["tasks"] == 84 and 8 <= plan["trials_per_task"] <= 200
    assert plan["invalid_draws"]["simt"] < 0.52 and plan["shape_order"][0] == "4096x4096x4096/NN"


def test_the_shipped_grid_loads_for_both_hopper_gpus():
    assert load_grid("hopper").gpus == ("h100", "h200")


def test_dry_run_plans_without_a_gpu_and_sees_what_is_done(fake_cli, capsys, monkeypatch):
    from gemmgen.base import devices

    def no_gpu(device_id=0):
        raise AssertionError("a dry run never touches the GPU")

    monkeypatch.setattr(devices, "detect", no_gpu)
    argv = ["search", "--grid", str(fake_cli / "grid-mini.json"), "--family", "simt,tf32x3", "--trials", "8",
            "--results", str(fake_cli / "results"), "--gpu", "h100", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "search plan for the NVIDIA H100 80GB HBM3 (132 SMs), 1 GPU(s): budget 20:00" in out
    assert "tune: 8 of 8 shape x family tasks (0 finished before" in out and "estimate: ~" in out
    assert "families: simt, tf32x3 (random draws that break the rules: simt " in out
    assert not (fake_cli / "results").exists()   # nothing written
    monkeypatch.setattr(devices, "detect", lambda device_id=0: known("h100"))
    grid_search(capsys, fake_cli)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tune: 0 of 8 shape x family tasks (8 finished before" in out and ": 0 pairs now" in out


def test_the_recorded_timings_feed_the_dispatch_model(fake_cli, capsys):
    from gemmgen.runtime.dispatch import candidates, choose, fit_all

    grid_search(capsys, fake_cli)
    saved = store.load_file(fake_cli / "results" / FILE)
    fits = fit_all(saved.timings.of_precision("fp32"), known("h100"))
    assert fits and all(f.config.precision == "fp32" for f in fits)
    for shape in SHAPES:   # on a grid shape, the fastest kernel timed there
        s = Shape.parse(shape)
        timed = {n: k.ms[shape] for n, k in saved.timings.kernels.items()
                 if shape in k.ms and k.config.precision == "fp32"}
        picked = choose(candidates(fits, s.layout, known("h100")), s.M, s.N, s.K, s.layout)
        assert picked.config.name == min(timed, key=timed.get)
    assert choose(candidates(fits, "TN", known("h100")), 3000, 700, 5000, "TN") is not None   # never tuned


def test_search_top_ranks_with_the_precision_class_launch_base(monkeypatch):
    """`search --top` ranks the searched families' kernels as the dispatch would: with the launch base of
    the whole precision class (here a SIMT kernel's 5.3 us), not of the families searched (whose least
    time is larger, so their fits and ranking would differ from what matmul predicts)."""
    import sys
    from types import SimpleNamespace

    from gemmgen.cli.search_timings import predicted_top
    from gemmgen.runtime.policy import DEFAULT

    wg, simt = preset("tf32x3-wgmma"), preset("v10")
    timings = (Timings.empty().add(wg, "1024x1024x1024", 0.05).add(wg, "2048x2048x2048", 0.3)
               .add(simt, "16x16x16", 0.0053).add(simt, "1024x1024x1024", 0.09))
    dispatch = sys.modules["gemmgen.runtime.dispatch"]   # the package re-exports a function of that name
    seen = []
    real = dispatch.fit_all
    monkeypatch.setattr(dispatch, "fit_all", lambda kernels, spec, base=None, **kw: seen.append(base) or real(kernels, spec, base, **kw))
    top = predicted_top(SimpleNamespace(timings=timings), [wg], [Shape(512, 512, 512)], known("h100"), 1)
    assert seen == [pytest.approx(DEFAULT.floor * 0.0053)]
    assert top == {"512x512x512/NN": {wg.name}}
