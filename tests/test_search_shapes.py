"""`gemmgen search --shape` on a fake H100 (no GPU): each family's study warm-starts with its predicted-fastest
built-ins, then a timings stage times the winners, presets and built-ins on the shapes given, as a shape-set
search does, so the user's own shapes leave timings for the dispatch."""
from __future__ import annotations

import json

import optuna

from gemmgen.base import Shape
from gemmgen.base.devices import known
from gemmgen.cli import main
from gemmgen.cli.search_builtin import TIME_TOP, WARM_TOP, predicted_builtins, warm_builtins
from gemmgen.records import store
from gemmgen.tune.grid_plan import Task
from gemmgen.tune.storage import open_storage

from test_search_grid import FILE, FakeRetime, fake_cli  # noqa: F401  (the fixture)

SHAPES = ["512x512x512", "300x200x100/NT"]


def shape_search(capsys, tmp, *args):
    argv = ["search", *(a for s in SHAPES for a in ("--shape", s)), "--trials", "5", "--sampler", "random",
            "--results", str(tmp / "results"), "--json", "--budget", "10m", *args]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def test_a_shape_search_times_its_winners_presets_and_built_ins(fake_cli, capsys):
    winners, err = shape_search(capsys, fake_cli)
    assert {(w["family"], w["shape"]) for w in winners} == {(f, Shape.parse(s).key) for f in ("simt", "tf32x3")
                                                            for s in SHAPES}   # the default families on an H100
    assert "grid shapes timings:" in err and "built-ins predicted fastest" in err
    saved = store.load_file(fake_cli / "results" / FILE)
    timed = {(n, k) for n, kt in saved.timings.kernels.items() for k in kt.ms}
    shapes = [Shape.parse(s) for s in SHAPES]
    picks = predicted_builtins(known("h100"), shapes, ["simt", "tf32x3"], TIME_TOP)
    for s in shapes:
        assert {(c.name, s.key) for c in picks[s.key]} <= timed                       # its built-ins
        assert {(w["winner"], s.key) for w in winners if w["shape"] == s.key} <= timed  # its winners
    assert {rep for _, rep, _, _ in FakeRetime.seen if rep == 20.0}   # the timings stage's --rep-ms default
    firsts = [(key, names) for _, rep, key, names in FakeRetime.seen if rep == 20.0][:len(shapes)]
    assert [key for key, _ in firsts] == [s.key for s in shapes]   # the user's order, each shape's first batch
    assert all(names[:TIME_TOP] == [c.name for c in picks[key]] for key, names in firsts)
    assert all(saved.entries[s.key].tflops >= max(w["tflops"] for w in winners if w["shape"] == s.key) * 0.999
               for s in shapes)   # each shape's entry: the fastest it timed (the winner's search time, or better)


def test_each_study_measures_its_built_ins_first_after_the_presets(fake_cli, capsys):
    winners, _ = shape_search(capsys, fake_cli, "--family", "tf32x3", "--no-timings")
    (w, _) = winners
    study = optuna.load_study(study_name=w["study"], storage=open_storage(f"sqlite:///{fake_cli}/results/studies.db"))
    shape = Shape.parse(w["shape"])
    wanted = [c.name for c in warm_builtins(known("h100"), [Task("tf32x3", shape)])[Task("tf32x3", shape)]]
    assert len(wanted) == WARM_TOP and study.user_attrs["builtins"] == wanted
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    presets = len(study.user_attrs["presets"])
    assert [t.user_attrs.get("warm") for t in trials[presets:presets + WARM_TOP]] == ["built-in predicted fastest"] * WARM_TOP


def test_no_timings_tunes_only(fake_cli, capsys):
    shape_search(capsys, fake_cli, "--family", "simt", "--no-timings")
    assert not store.load_file(fake_cli / "results" / FILE).timings.kernels
    assert not [s for s in FakeRetime.seen if s[1] == 20.0]


def test_a_shape_dry_run_splits_its_budget(capsys):
    assert main(["search", "--gpu", "h100", "--shape", "512x512x512", "--budget", "10m", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["families"] == ["simt", "tf32x3"] and plan["timings"] and plan["tune_s"] + plan["time_s"] == 600
    assert plan["tune_s"] < 600
    assert main(["search", "--gpu", "h100", "--shape", "512x512x512", "--dry-run", "--no-timings", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_s"] == 0


def test_shape_set_options_stay_refused_with_shape(capsys):
    for args, words in ((["--top", "2"], "--top applies to a shape-set search"),
                        (["--rep-ms", "0"], "--rep-ms 0: must be a number of milliseconds above 0")):
        assert main(["search", "--shape", "64x64x64", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err


def test_a_study_with_no_passing_candidate_does_not_end_the_run(fake_cli, capsys, monkeypatch):
    """Every tf32x3 candidate crashes (a failure as data): that study names no winner, says so in a line,
    and the simt studies and the timings stage still run."""
    from gemmgen.base.outcome import RuntimeFailure
    from gemmgen.tune import gpu

    from test_search_grid import fake_measure

    def crashing(config, shape):
        if config.family == "tf32x3":
            raise RuntimeFailure("an illegal memory access was encountered")
        return fake_measure(config, shape)

    monkeypatch.setattr(gpu, "GpuMeasure", lambda rep_ms=100.0: (lambda device: crashing))
    winners, err = shape_search(capsys, fake_cli, "--family", "simt,tf32x3")
    assert {w["family"] for w in winners} == {"simt"} and len(winners) == len(SHAPES)
    assert err.count("no winner") == len(SHAPES)
