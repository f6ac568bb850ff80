"""benchmarks/targets.py: issue 11's tables run in one command and judged against the targets (recorded rows
stand in for the GPU's; the judging is what is tested)."""
from __future__ import annotations

import json

import pytest
from scripts import load, refused

SET = [("1024x1024x1024", "NN", 1.6), ("128x4096x4096", "NN", 1.2)] + [(f"{n}x{n}x{n}", "NN", 2.0) for n in range(10)] \
    + [("4096x4096x4096", lay, 2.0) for lay in ("NT", "TN", "TT")]


def _rows(spec, err=3e-7, cublas=5e-7):
    return [{"shape": s, "layout": lay, "ratio": r, "err_gemmgen": err, "err_cublas": cublas, "kernel": "k"} for s, lay, r in spec]


def _folder(tmp_path, **tables):
    for source, rows in tables.items():
        (tmp_path / f"{source}.json").write_text(json.dumps({"device": {"name": "NVIDIA H200"}, "rows": rows}))
    return tmp_path


def _all_met(tmp_path):
    ok = _rows([("1000x7x9000", "NN", 1.4), ("9x9x9", "TT", 1.3)])
    return _folder(tmp_path, set=_rows(SET), simt=_rows([(s, lay, 0.96) for s, lay, _ in SET]), outsider=ok, random=ok, launch=ok)


def test_every_judged_table_met_exits_0_and_names_the_lowest_row(tmp_path, capsys):
    targets = load("targets")
    assert targets.main(["summary", str(_all_met(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "| set | 12 |" in out and "1.20x (128x4096x4096 NN)" in out and "| layouts | 3 | 2.000x |" in out
    assert "| gemv | 0 |" in out   # unjudged and not run: reported, not counted


@pytest.mark.parametrize("source,change,verdict_of", [
    ("set", lambda rows: rows[1].update(ratio=0.99), "set"),            # one NN row under 1.0x
    ("set", lambda rows: rows[-1].update(ratio=1.39), "layouts"),       # TT under 1.4x
    ("simt", lambda rows: [r.update(ratio=0.94) for r in rows], "simt"),  # geomean under 0.95x
    ("random", lambda rows: rows[0].update(err_gemmgen=5e-6), "random"),  # over the gate (its floor 2^-19)
])
def test_a_missed_target_says_which_table_and_exits_1(tmp_path, source, change, verdict_of):
    targets = load("targets")
    folder = _all_met(tmp_path)
    data = json.loads((folder / f"{source}.json").read_text())
    change(data["rows"])
    (folder / f"{source}.json").write_text(json.dumps(data))
    _, lines = targets.summary(folder)
    assert [x["table"] for x in lines if x["verdict"] == "missed"] == [verdict_of]
    assert targets.main(["summary", str(folder), "--json"]) == 1


def test_a_judged_table_not_run_is_not_met(tmp_path):
    targets = load("targets")
    folder = _all_met(tmp_path)
    (folder / "launch.json").unlink()
    _, lines = targets.summary(folder)
    assert {x["table"]: x["verdict"] for x in lines}["launch"] == "not run" and not targets.met(lines)


def test_random_tables_take_the_seeds_and_each_source_runs_once(tmp_path):
    targets = load("targets")
    runs = dict(targets.commands(["set", "layouts", "launch", "gemv"], tmp_path, [7, 8]))
    assert list(runs) == ["set", "launch", "gemv"]
    assert runs["launch"][-6:] == ["--seed", "7", "--seed", "8", "--json", str(tmp_path / "launch.json")]
    assert "--seed" not in runs["set"] and runs["gemv"][runs["gemv"].index("--shapes") + 1].endswith("gemv.toml")


def test_run_writes_each_tables_json_and_printout_then_judges(tmp_path, monkeypatch, capsys):
    """run with a stand-in for matmul_vs_cublas.py (it writes recorded rows where --json says)."""
    targets = load("targets")
    fake = tmp_path / "fake.py"
    fake.write_text("import json, sys\nout = sys.argv[sys.argv.index('--json') + 1]\nprint('timed', sys.argv[1:3])\n"
                    f"json.dump({{'device': {{'name': 'X'}}, 'rows': {json.dumps(_rows(SET))}}}, open(out, 'w'))\n")
    monkeypatch.setattr(targets, "SCRIPT", fake)
    out = tmp_path / "runs"
    assert targets.main(["run", "--out", str(out), "--only", "set", "layouts"]) == 1   # simt etc. not run
    assert "timed" in (out / "set.txt").read_text() and json.loads((out / "meta.json").read_text())["commit"]
    text = capsys.readouterr().out
    assert "| set | 12 |" in text and "| simt | 0 |" in text and "not run" in text


def test_bad_input_is_one_line(tmp_path, capsys):
    targets = load("targets")
    assert "is not a folder" in refused(targets.main, ["summary", str(tmp_path / "nope")], capsys)
    (tmp_path / "set.json").write_text('{"rows": [{"shape": "1x1x1"}]}')
    assert "set.json: not a JSON of matmul_vs_cublas.py" in refused(targets.main, ["summary", str(tmp_path)], capsys)
    assert "invalid choice: 'bogus'" in refused(targets.main, ["run", "--out", str(tmp_path), "--only", "bogus"], capsys)
    (tmp_path / "file").write_text("")
    assert "is a file, not a folder" in refused(targets.main, ["run", "--out", str(tmp_path / "file")], capsys)
