"""benchmarks/targets.py: the release tables run in one command and judged against the targets (recorded rows
stand in for the GPU's; the judging is what is tested)."""
from __future__ import annotations

import json

import pytest
from tests.scripts import load, refused

SET = [("1024x1024x1024", "NN", 1.6), ("128x4096x4096", "NN", 1.2)] + [(f"{n}x{n}x{n}", "NN", 2.0) for n in range(10)] \
    + [("4096x4096x4096", lay, 2.0) for lay in ("NT", "TN", "TT")]


def _rows(spec, err=3e-7, cublas=5e-7):
    return [{"shape": s, "layout": lay, "ratio": r, "err_gemmgen": err, "err_cublas": cublas, "kernel": "k"} for s, lay, r in spec]


def _folder(tmp_path, complete=True, **tables):
    for source, rows in tables.items():
        data = {"device": {"name": "NVIDIA H200"}, "rows": rows, "complete": complete}
        (tmp_path / f"{source}.json").write_text(json.dumps(data))
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


def _changed(folder, source, change):
    data = json.loads((folder / f"{source}.json").read_text())
    change(data)
    (folder / f"{source}.json").write_text(json.dumps(data))


@pytest.mark.parametrize("source,change,verdict_of", [
    ("set", lambda d: d["rows"][1].update(ratio=0.99), "set"),                   # one NN row under 1.0x
    ("set", lambda d: d["rows"][-1].update(ratio=1.39), "layouts"),              # TT under 1.4x
    ("simt", lambda d: [r.update(ratio=0.94) for r in d["rows"]], "simt"),       # geomean under 0.95x
    ("simt", lambda d: d["rows"][0].update(ratio=0.79), "simt"),                 # a row under 0.8x
    ("outsider", lambda d: [r.update(ratio=1.29) for r in d["rows"]], "outsider"),   # geomean under 1.3x
    ("launch", lambda d: d["rows"][0].update(ratio=0.89), "launch"),             # a row under 0.9x
])
def test_a_missed_target_says_which_table_and_exits_1(tmp_path, source, change, verdict_of):
    targets = load("targets")
    folder = _all_met(tmp_path)
    _changed(folder, source, change)
    _, lines = targets.summary(folder)
    assert [x["table"] for x in lines if x["verdict"] != "met" and x["judged"]] == [verdict_of]
    assert targets.main(["summary", str(folder), "--json"]) == 1


def test_the_targets_themselves_are_met(tmp_path):
    """Ratios exactly at the targets pass (at least 1.5x, none under 1.0x, ...)."""
    targets = load("targets")
    folder = _all_met(tmp_path)
    _changed(folder, "set", lambda d: [r.update(ratio=1.5 if r["layout"] == "NN" else 1.4) for r in d["rows"]])
    _changed(folder, "simt", lambda d: [r.update(ratio=0.95) for r in d["rows"]])
    _changed(folder, "outsider", lambda d: [r.update(ratio=1.3) for r in d["rows"]])
    assert targets.met(targets.summary(folder)[1])


@pytest.mark.parametrize("err", [5e-6, float("nan")])   # over the gate's floor 2^-19; an output never written
def test_a_row_over_the_accuracy_gate_fails_any_table(tmp_path, err):
    targets = load("targets")
    folder = _all_met(tmp_path)
    _folder(folder, gemv=_rows([("1x4096x4096", "NN", 1.1)], err=err))   # an unjudged table's row
    _, lines = targets.summary(folder)
    assert {x["table"]: x["verdict"] for x in lines}["gemv"] == "inaccurate" and not targets.met(lines)


def test_a_run_cut_short_is_incomplete_not_met(tmp_path):
    targets = load("targets")
    folder = _all_met(tmp_path)
    _changed(folder, "random", lambda d: d.update(complete=False))
    _, lines = targets.summary(folder)
    assert {x["table"]: x["verdict"] for x in lines}["random"] == "incomplete" and not targets.met(lines)


def test_random_tables_take_the_seeds_and_each_source_runs_once(tmp_path):
    targets = load("targets")
    runs = dict(targets.commands(["set", "layouts", "launch", "gemv"], tmp_path, [7, 8]))
    assert list(runs) == ["set", "launch", "gemv"]
    assert runs["launch"][-6:] == ["--seed", "7", "--seed", "8", "--json", str(tmp_path / "launch.json")]
    assert "--seed" not in runs["set"] and runs["gemv"][runs["gemv"].index("--shapes") + 1].endswith("gemv.toml")


def test_run_writes_each_tables_json_and_printout_then_judges(tmp_path, capsys):
    """run with a stand-in for matmul_vs_cublas.py (it writes recorded rows where --json says, or fails)."""
    import subprocess
    import sys

    targets = load("targets")
    fake = tmp_path / "fake.py"
    fake.write_text("import json, sys\nout = sys.argv[sys.argv.index('--json') + 1]\nprint('timed', sys.argv[1:3])\n"
                    "if '--family' in sys.argv: sys.exit(3)\n"
                    f"json.dump({{'device': {{'name': 'X'}}, 'rows': {json.dumps(_rows(SET))}, 'complete': True}}, open(out, 'w'))\n")
    out = tmp_path / "runs"
    out.mkdir()
    (out / "simt.json").write_text(json.dumps({"rows": _rows(SET), "complete": True}))   # a stale run's rows
    assert targets.main(["run", "--out", str(out), "--only", "set", "layouts", "simt"], program=(sys.executable, str(fake))) == 1
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=targets.HERE, capture_output=True, text=True).stdout.strip()
    runs = json.loads((out / "meta.json").read_text())["runs"]
    assert runs["set"]["commit"].removesuffix("-dirty") == (head or "?") and runs["set"]["exit"] == 0 and runs["simt"]["exit"] == 3
    assert "timed" in (out / "set.txt").read_text() and not (out / "simt.json").exists()
    text = capsys.readouterr()
    assert "| set | 12 |" in text.out and "| simt | 0 |" in text.out and "failed: simt" in text.err


def test_bad_input_is_one_line(tmp_path, capsys):
    targets = load("targets")

    def error(argv):
        lines = refused(targets.main, argv, capsys).strip().splitlines()
        assert ": error: " in lines[-1] and all(line.startswith(("usage:", " ")) for line in lines[:-1])
        return lines[-1]

    assert "is not a folder" in error(["summary", str(tmp_path / "nope")])
    (tmp_path / "set.json").write_text('{"rows": [{"shape": "1x1x1"}]}')
    assert "set.json: not a JSON of matmul_vs_cublas.py" in error(["summary", str(tmp_path)])
    (tmp_path / "set.json").write_text(json.dumps({"rows": _rows([("1x1x1", "NN", None)])}))
    assert "set.json" in error(["summary", str(tmp_path)]) and "ratio None" in error(["summary", str(tmp_path)])
    (tmp_path / "set.json").write_text(json.dumps({"rows": _rows([("1x1x1", "NN", 0)])}))
    assert "ratio 0 is no positive number" in error(["summary", str(tmp_path)])
    (tmp_path / "set.json").unlink()
    (tmp_path / "meta.json").write_text("[1]")
    assert "meta.json: not the meta.json" in error(["summary", str(tmp_path)])
    (tmp_path / "meta.json").write_text("{")
    assert "meta.json: unreadable" in error(["summary", str(tmp_path)])
    assert "invalid choice: 'bogus'" in error(["run", "--out", str(tmp_path), "--only", "bogus"])
    (tmp_path / "file").write_text("")
    assert "is a file, not a folder" in error(["run", "--out", str(tmp_path / "file")])


def test_the_commit_noted_says_when_the_tree_differs_from_it(tmp_path):
    """A tree whose files differ from its git HEAD (uncommitted changes, or a copy sent with another
    checkout's metadata) is noted as <commit>-dirty, not as the commit."""
    import subprocess

    targets = load("targets")
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / "f.txt").write_text("one")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    clean = targets.tree_commit(tmp_path)
    assert clean and not clean.endswith("-dirty")
    (tmp_path / "f.txt").write_text("two")
    assert targets.tree_commit(tmp_path) == clean + "-dirty"
