"""benchmarks/drill.py's summary without a GPU: each situation's tables against the shipped results'."""
from __future__ import annotations

import json
import sys

import pytest

from benchmarks import drill


def _table(folder, name, ratios, layout="NN", err=1e-7):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"shape": f"{64 * (i + 1)}x64x64", "layout": layout, "ratio": r, "err_gemmgen": err, "err_cublas": 1e-7}
            for i, r in enumerate(ratios)]
    (folder / f"{name}.json").write_text(json.dumps({"device": {"name": "test"}, "rows": rows, "complete": True}))


def _line(rows, table):
    return next(r for r in rows if r["table"] == table)


def test_out_of_the_box_is_judged_against_the_shipped_results(tmp_path):
    _table(tmp_path / "c", "outsider", [2.0, 2.0])
    _table(tmp_path / "a", "outsider", [1.7, 1.7])             # 85% of (c), lowest 1.7: met
    _table(tmp_path / "c", "random", [2.0, 2.0])
    _table(tmp_path / "a", "random", [1.9, 0.79])              # one shape under 0.8x: missed
    _table(tmp_path / "a", "simt", [0.9, 0.9])                 # SIMT alone: at least 0.85x
    rows, ok = drill.summary(tmp_path)
    assert _line(rows, "outsider")["a"]["met"] is True and round(_line(rows, "outsider")["a"]["of_c"], 2) == 0.85
    assert _line(rows, "random")["a"]["met"] is False and not ok
    assert _line(rows, "simt")["a"]["met"] is True and _line(rows, "set")["a"] is None


def test_an_inaccurate_row_misses_and_a_search_needs_95_percent(tmp_path):
    _table(tmp_path / "c", "outsider", [2.0])
    _table(tmp_path / "b", "outsider", [1.85])                 # 92.5% of (c): under (b)'s 95%
    _table(tmp_path / "c", "random", [2.0])
    _table(tmp_path / "a", "random", [2.0], err=1.0)           # as fast, but wrong
    rows, ok = drill.summary(tmp_path)
    assert _line(rows, "outsider")["b"]["met"] is False and _line(rows, "random")["a"]["met"] is False and not ok


def test_a_file_that_is_no_table_is_one_line(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "set.json").write_text("not json")
    with pytest.raises(SystemExit) as exit_:
        drill.main(["summary", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert "error: " in err.splitlines()[-1] and "set.json" in err.splitlines()[-1]


def test_an_arch_proxy_is_reported_and_its_search_must_not_lose_to_its_out_of_the_box(tmp_path, capsys):
    _table(tmp_path / "c", "set", [2.0, 2.0])
    _table(tmp_path / "a-sm_80", "set", [1.5, 1.5])
    _table(tmp_path / "b-sm_80", "set", [1.4, 1.4])            # under its own (a): missed
    rows, ok = drill.summary(tmp_path)
    line = _line(rows, "set")
    assert line["a-sm_80"]["met"] is None and round(line["a-sm_80"]["of_c"], 2) == 0.75
    assert line["b-sm_80"]["met"] is False and line["b-sm_80"]["need"] == 1.5 and not ok
    drill.print_summary(rows)
    assert "(a-sm_80)" in capsys.readouterr().out
    assert drill.environment("a", None, "sm_80")["GEMMGEN_POLICY"] == "arch=sm_80"


def test_a_detached_search_returns_at_once_and_wait_gives_its_status(tmp_path):
    """A stand-in search that sleeps, writes into its results folder and fails: search --detach returns
    before it ends, wait returns its exit status once it has, and (b)'s environment hid the shipped results."""
    script = ("import os, sys, time; time.sleep(1.5); "
              "open(os.path.join(sys.argv[sys.argv.index('--results') + 1], 'seen'), 'w')"
              ".write(os.environ['GEMMGEN_SHIPPED']); sys.exit(3)")
    out = tmp_path / "drill"
    assert drill.search(out, "1m", detach=True, program=(sys.executable, "-c", script)) == 0
    assert not (out / "search.rc").exists()                              # still running
    assert drill.wait(out, timeout=0.2, poll=0.05) == 1                  # not yet
    assert drill.wait(out, timeout=30, poll=0.05) == 3
    assert (out / "results" / "seen").read_text() == "0"


def test_wait_without_a_search_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        drill.main(["wait", str(tmp_path)])
    assert exit_.value.code == 2 and "no search was started here" in capsys.readouterr().err.splitlines()[-1]


def test_prebuild_compiles_each_situations_tables_without_timing_them(tmp_path, monkeypatch):
    seen = tmp_path / "seen.jsonl"
    script = ("import json, os, sys; open(sys.argv[1], 'a').write(json.dumps({'argv': sys.argv[2:], "
              "'shipped': os.environ.get('GEMMGEN_SHIPPED'), 'policy': os.environ.get('GEMMGEN_POLICY')}) + '\\n')")
    monkeypatch.setenv("GEMMGEN_POLICY", "arch=sm_75")   # a stray one is not inherited
    code = drill.prebuild(["a", "c"], ["set", "random"], [7], program=(sys.executable, "-c", script, str(seen)))
    runs = [json.loads(line) for line in seen.read_text().splitlines()]
    assert code == 0 and len(runs) == 4   # the set's run and the random one, for (a) and for (c)
    assert all(r["argv"][-1] == "--compile-only" and r["policy"] is None for r in runs)
    assert [r["shipped"] for r in runs] == ["0", "0", None, None]   # (a) with the shipped results hidden
    assert ["--seed", "7"] == [a for r in runs[1:2] for a in r["argv"] if a in ("--seed", "7")]


def test_prebuild_refuses_a_proxy_of_the_shipped_results(capsys):
    with pytest.raises(SystemExit):
        drill.main(["prebuild", "c", "--out", "x", "--arch", "sm_80"])
    assert "--arch sm_80" in capsys.readouterr().err
