"""gemmgen results merge: new kernels join a shipped results file; with --add-shapes, kernels it already has
gain the shapes a larger grid timed, and never lose or overwrite a stored time; bad input is one line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gemmgen.cli import main


class _Merge:
    """``gemmgen results merge ARGS`` as ``main(argv)``."""

    @staticmethod
    def main(argv: list[str]) -> int:
        return main(["results", "merge", *argv])


def _module():
    return _Merge


def _file(path: Path, kernels: dict) -> Path:
    path.write_text(json.dumps({"schema": 1, "device": {"name": "GPU X"}, "entries": {},
                                "timings": {"kernels": kernels, "cublas": {}}}))
    return path


def test_new_kernels_join_and_known_ones_gain_only_new_shapes(tmp_path):
    shipped = _file(tmp_path / "a.json", {"k1": {"config": {}, "ms": {"1x1x1/NN": 1.0}}})
    fresh = _file(tmp_path / "b.json", {"k1": {"config": {}, "ms": {"1x1x1/NN": 9.0, "2x2x2/NT": 2.0}},
                                        "k2": {"config": {}, "ms": {"3x3x3/NN": 3.0}},
                                        "k3": {"config": {}, "ms": {}}})
    mod = _module()
    out = tmp_path / "plain.json"
    assert mod.main([str(shipped), str(fresh), "--out", str(out)]) == 0
    ks = json.loads(out.read_text())["timings"]["kernels"]
    assert set(ks) == {"k1", "k2"} and ks["k1"]["ms"] == {"1x1x1/NN": 1.0}   # k3 was never timed
    assert mod.main([str(shipped), str(fresh), "--add-shapes"]) == 0
    ks = json.loads(shipped.read_text())["timings"]["kernels"]
    assert ks["k1"]["ms"] == {"1x1x1/NN": 1.0, "2x2x2/NT": 2.0} and ks["k2"]["ms"] == {"3x3x3/NN": 3.0}


def test_cublas_times_of_new_shapes_join_and_stored_ones_stay(tmp_path):
    """The fresh run's cuBLAS times of shapes the shipped file lacks are added (dispatch_loo scores a grid
    shape by them); a stored one is never overwritten."""
    shipped = _file(tmp_path / "a.json", {})
    data = json.loads(shipped.read_text())
    data["timings"]["cublas"] = {"fp32": {"1x1x1/NN": 1.0}}
    shipped.write_text(json.dumps(data))
    fresh = _file(tmp_path / "b.json", {})
    data = json.loads(fresh.read_text())
    data["timings"]["cublas"] = {"fp32": {"1x1x1/NN": 5.0, "2x2x2/TN": 2.0}, "tf32": {"3x3x3/NN": 3.0}}
    fresh.write_text(json.dumps(data))
    assert _module().main([str(shipped), str(fresh)]) == 0
    assert json.loads(shipped.read_text())["timings"]["cublas"] == {"fp32": {"1x1x1/NN": 1.0, "2x2x2/TN": 2.0},
                                                                    "tf32": {"3x3x3/NN": 3.0}}


def test_another_gpus_file_is_refused(tmp_path, capsys):
    shipped = _file(tmp_path / "a.json", {})
    other = tmp_path / "b.json"
    other.write_text(json.dumps({"device": {"name": "GPU Y"}, "timings": {"kernels": {}}}))
    assert _module().main([str(shipped), str(other)]) == 2
    assert "another GPU" in capsys.readouterr().err


def test_replace_overwrites_the_shapes_both_time_and_adds_no_others(tmp_path):
    """--replace: kernels whose code changed, re-timed where they were timed; their new times (and
    resident blocks) replace the old ones, shapes only the fresh run timed stay out, others stay."""
    shipped = _file(tmp_path / "a.json", {"k1": {"config": {}, "ms": {"1x1x1/NN": 1.0, "4x4x4/NN": 4.0}, "resident": 1},
                                          "k2": {"config": {}, "ms": {"3x3x3/NN": 3.0}, "resident": 2}})
    fresh = _file(tmp_path / "b.json", {"k1": {"config": {}, "ms": {"1x1x1/NN": 0.8, "2x2x2/NT": 2.0}, "resident": 2}})
    assert _module().main([str(shipped), str(fresh), "--replace"]) == 0
    ks = json.loads(shipped.read_text())["timings"]["kernels"]
    assert ks["k1"] == {"config": {}, "ms": {"1x1x1/NN": 0.8, "4x4x4/NN": 4.0}, "resident": 2}
    assert ks["k2"] == {"config": {}, "ms": {"3x3x3/NN": 3.0}, "resident": 2}


def test_a_shape_whose_kernels_all_moved_far_keeps_its_old_times(tmp_path, capsys):
    """--replace with the default --max-shift 1.5: on 2x2x2 both kernels re-timed about 3x slower (a
    disturbed batch): that shape keeps its old times and is named; 1x1x1 (0.9x and 1.2x: geomean 1.04)
    is replaced. --max-shift 0 replaces every shape."""
    old = {"k1": {"config": {}, "ms": {"1x1x1/NN": 1.0, "2x2x2/NN": 2.0}},
           "k2": {"config": {}, "ms": {"1x1x1/NN": 1.0, "2x2x2/NN": 2.0}}}
    new = {"k1": {"config": {}, "ms": {"1x1x1/NN": 0.9, "2x2x2/NN": 6.0}},
           "k2": {"config": {}, "ms": {"1x1x1/NN": 1.2, "2x2x2/NN": 5.8}}}
    shipped, fresh = _file(tmp_path / "a.json", old), _file(tmp_path / "b.json", new)
    assert _module().main([str(shipped), str(fresh), "--replace"]) == 0
    err = capsys.readouterr().err
    assert "2x2x2/NN" in err and "2.95x" in err and "1x1x1" not in err
    ks = json.loads(shipped.read_text())["timings"]["kernels"]
    assert ks["k1"]["ms"] == {"1x1x1/NN": 0.9, "2x2x2/NN": 2.0} and ks["k2"]["ms"] == {"1x1x1/NN": 1.2, "2x2x2/NN": 2.0}
    shipped = _file(tmp_path / "a.json", old)
    assert _module().main([str(shipped), str(fresh), "--replace", "--max-shift", "0"]) == 0
    assert json.loads(shipped.read_text())["timings"]["kernels"]["k1"]["ms"] == {"1x1x1/NN": 0.9, "2x2x2/NN": 6.0}


def test_a_max_shift_of_one_or_less_is_one_line(tmp_path, capsys):
    shipped = _file(tmp_path / "a.json", {})
    before = shipped.read_text()
    assert _module().main([str(shipped), str(shipped), "--replace", "--max-shift", "0.8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-shift 0.8" in err and shipped.read_text() == before


def test_the_merged_file_keeps_the_shipped_files_indentation(tmp_path):
    shipped = tmp_path / "a.json"
    shipped.write_text(json.dumps({"schema": 1, "device": {"name": "GPU X"}, "entries": {},
                                   "timings": {"kernels": {}, "cublas": {}}}, indent=1))
    fresh = _file(tmp_path / "b.json", {"k9": {"config": {}, "ms": {"1x1x1/NN": 1.0}}})
    assert _module().main([str(shipped), str(fresh)]) == 0
    lines = shipped.read_text().splitlines()
    assert lines[1] == ' "schema": 1,' and "k9" in json.loads(shipped.read_text())["timings"]["kernels"]


def test_controls_remove_the_drift_between_sessions_before_the_merge(tmp_path, capsys):
    """--controls: the unchanged kernel c re-timed 1.1x slower everywhere (a slower clock), the changed k
    1.1 x 0.9 slower: k's merged times are 0.9x its old ones, c's equal its old ones."""
    old = {"k": {"config": {}, "ms": {"1x1x1/NN": 1.0, "2x2x2/NN": 2.0}},
           "c": {"config": {}, "ms": {"1x1x1/NN": 4.0, "2x2x2/NN": 8.0}}}
    new = {"k": {"config": {}, "ms": {"1x1x1/NN": 0.99, "2x2x2/NN": 1.98}},
           "c": {"config": {}, "ms": {"1x1x1/NN": 4.4, "2x2x2/NN": 8.8}}}
    shipped, fresh = _file(tmp_path / "a.json", old), _file(tmp_path / "b.json", new)
    (tmp_path / "controls.txt").write_text("c\n")
    assert _module().main([str(shipped), str(fresh), "--replace", "--controls", str(tmp_path / "controls.txt")]) == 0
    assert "drift 1.1000 over 2 control pairs" in capsys.readouterr().out
    ks = json.loads(shipped.read_text())["timings"]["kernels"]
    assert ks["k"]["ms"] == pytest.approx({"1x1x1/NN": 0.9, "2x2x2/NN": 1.8})
    assert ks["c"]["ms"] == pytest.approx({"1x1x1/NN": 4.0, "2x2x2/NN": 8.0})


def test_controls_that_time_nothing_in_common_are_one_line(tmp_path, capsys):
    shipped = _file(tmp_path / "a.json", {"k": {"config": {}, "ms": {"1x1x1/NN": 1.0}}})
    before = shipped.read_text()
    fresh = _file(tmp_path / "b.json", {"k": {"config": {}, "ms": {"1x1x1/NN": 0.9}}})
    (tmp_path / "controls.txt").write_text("nope\n")
    assert _module().main([str(shipped), str(fresh), "--replace", "--controls", str(tmp_path / "controls.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "controls.txt" in err and shipped.read_text() == before
    assert _module().main([str(shipped), str(fresh), "--replace", "--controls", str(tmp_path / "none.txt")]) == 2
    assert "none.txt" in capsys.readouterr().err and shipped.read_text() == before


def test_the_drift_comes_off_before_the_shift_check_and_a_kept_shape_takes_no_fresh_time(tmp_path, capsys):
    """Everything re-timed 1.6x slower, the control too (a slower machine): nothing is over --max-shift once
    the drift is off. Without controls every shape is kept, and the kernel new to the file and the new
    cuBLAS time of a kept shape stay out too."""
    old = {"k": {"config": {}, "ms": {"1x1x1/NN": 1.0}}, "c": {"config": {}, "ms": {"1x1x1/NN": 2.0}}}
    new = {"k": {"config": {}, "ms": {"1x1x1/NN": 1.6}}, "c": {"config": {}, "ms": {"1x1x1/NN": 3.2}},
           "n": {"config": {}, "ms": {"1x1x1/NN": 9.0, "5x5x5/NN": 5.0}}}
    (tmp_path / "controls.txt").write_text("c\n")
    shipped, fresh = _file(tmp_path / "a.json", old), _file(tmp_path / "b.json", new)
    assert _module().main([str(shipped), str(fresh), "--replace", "--controls", str(tmp_path / "controls.txt")]) == 0
    assert "kept" not in capsys.readouterr().err
    ks = json.loads(shipped.read_text())["timings"]["kernels"]
    assert ks["k"]["ms"] == pytest.approx({"1x1x1/NN": 1.0}) and ks["n"]["ms"] == pytest.approx({"1x1x1/NN": 5.625, "5x5x5/NN": 3.125})
    data = json.loads(fresh.read_text())
    data["timings"]["cublas"] = {"fp32": {"1x1x1/NN": 0.5}}
    fresh.write_text(json.dumps(data))
    shipped = _file(tmp_path / "a.json", old)
    assert _module().main([str(shipped), str(fresh), "--replace"]) == 0
    assert "kept the old times of 1x1x1/NN" in capsys.readouterr().err
    merged = json.loads(shipped.read_text())["timings"]
    assert merged["kernels"]["k"]["ms"] == {"1x1x1/NN": 1.0} and merged["kernels"]["n"]["ms"] == {"5x5x5/NN": 5.0}
    assert merged["cublas"] == {"fp32": {}} and [p.name for p in tmp_path.iterdir() if p.suffix == ".part"] == []


@pytest.mark.parametrize("time", [0, -1.0, "1.0", float("inf")])
def test_a_fresh_time_that_is_not_a_positive_number_is_one_line(time, tmp_path, capsys):
    shipped = _file(tmp_path / "a.json", {"k": {"config": {}, "ms": {"1x1x1/NN": 1.0}}})
    before = shipped.read_text()
    fresh = tmp_path / "b.json"
    fresh.write_text(json.dumps({"schema": 1, "device": {"name": "GPU X"}, "entries": {},
                                 "timings": {"kernels": {"k": {"config": {}, "ms": {"1x1x1/NN": time}}}}}))
    assert _module().main([str(shipped), str(fresh), "--replace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "k on 1x1x1/NN" in err and shipped.read_text() == before


def test_a_fresh_file_of_another_shape_is_one_line(tmp_path, capsys):
    shipped = _file(tmp_path / "a.json", {})
    fresh = tmp_path / "b.json"
    for text in ("[1, 2]", json.dumps({"timings": {"kernels": {"k": {"ms": [1]}}}})):
        fresh.write_text(text)
        assert _module().main([str(shipped), str(fresh)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_an_out_in_a_missing_folder_or_a_missing_file_is_one_line_and_writes_nothing(tmp_path, capsys):
    shipped = _file(tmp_path / "a.json", {"k": {"config": {}, "ms": {"1x1x1/NN": 1.0}}})
    fresh = _file(tmp_path / "b.json", {"n": {"config": {}, "ms": {"1x1x1/NN": 2.0}}})
    before = shipped.read_text()
    assert _module().main([str(shipped), str(fresh), "--out", str(tmp_path / "no" / "c.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and not (tmp_path / "no").exists()
    assert _module().main([str(shipped), str(tmp_path / "gone.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gone.json" in err and shipped.read_text() == before
