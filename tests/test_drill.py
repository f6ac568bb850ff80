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


def test_the_three_steps_run_the_whole_drill_and_pack_what_they_measured(tmp_path, capsys):
    """Stand-ins for the search, the prebuilds and the tables: step 1 starts the search and both prebuilds
    and returns once the search ends (before --until); step 2 times (c), (a) and the sm_80 proxy's (a),
    step 3 (b) and its proxy, each into its folder with its environment, and both leave a tarball of
    everything measured so far; step 3 ends with the summary."""
    import tarfile

    seen = tmp_path / "seen.jsonl"
    search = (sys.executable, "-c", "import os, sys, time; time.sleep(0.5); "
              "open(os.path.join(sys.argv[sys.argv.index('--results') + 1], 'x.json'), 'w').write('{}')")
    record = ("import json, os, sys; open(%r, 'a').write(json.dumps({'argv': sys.argv[1:], "
              "'shipped': os.environ.get('GEMMGEN_SHIPPED'), 'policy': os.environ.get('GEMMGEN_POLICY')}) + '\\n')")
    prebuilds = (sys.executable, "-c", record % str(seen))
    tables = (sys.executable, "-c", record % str(seen) + "\n"
              "out = sys.argv[sys.argv.index('--out') + 1]; os.makedirs(out, exist_ok=True)\n"
              "for t in sys.argv[sys.argv.index('--only') + 1:sys.argv.index('--seed')]:\n"
              "    name = 'set' if t == 'layouts' else t\n"
              "    rows = [{'shape': '64x64x64', 'layout': 'NN', 'ratio': 1.0 if 'sm_80' in out else 2.0, "
              "'err_gemmgen': 1e-7, 'err_cublas': 1e-7}]\n"
              "    open(os.path.join(out, name + '.json'), 'w').write(json.dumps({'rows': rows, 'complete': True}))")
    programs = {"search": search, "drill": prebuilds, "targets": tables}
    out, tgz = tmp_path / "drill", tmp_path / "drill.tgz"
    assert drill.step(1, out, [7], until=30, programs=programs) == 0
    assert (out / "search.rc").read_text().strip() == "0" and "search ended" in capsys.readouterr().out
    assert drill.step(2, out, [7], into=tgz, programs=programs) == 0
    with tarfile.open(tgz) as tar:
        assert {"./c/set.json", "./a/random.json", "./a-sm_80/simt.json"} <= set(tar.getnames())
    assert drill.step(3, out, [7], into=tgz, programs=programs) == 0
    assert "(b-sm_80)" in capsys.readouterr().out and json.loads((out / "summary.json").read_text())["tables"]
    with tarfile.open(tgz) as tar:
        assert {"./b/outsider.json", "./b-sm_80/set.json", "./summary.json", "./results/x.json"} <= set(tar.getnames())
    import time
    for _ in range(100):   # the prebuilds run detached: give them a moment
        runs = [json.loads(line) for line in seen.read_text().splitlines()]
        if sum(r["argv"][:1] == ["prebuild"] for r in runs) == 2:
            break
        time.sleep(0.05)
    pre = [r for r in runs if r["argv"][:1] == ["prebuild"]]
    assert sorted(r["argv"][1:3] for r in pre) == [["a", "--arch"], ["a", "c"]]
    timed = [(r["argv"][r["argv"].index("--out") + 1].rsplit("/", 1)[-1], r["shipped"], r["policy"])
             for r in runs if r["argv"][:1] == ["run"]]
    assert timed == [("c", None, None), ("a", "0", None), ("a-sm_80", "0", "arch=sm_80"),
                     ("b", "0", None), ("b-sm_80", "0", "arch=sm_80")]


def test_a_step_times_nothing_while_the_search_runs_and_the_pack_holds_no_pack(tmp_path, capsys):
    """Step 1 returns when --until passes with the search still running (exit 0) or with the search's
    failing status once it ended; step 2 refuses to time while the search runs (the GPU is its); an
    archive written inside OUT leaves itself out."""
    import tarfile

    slow = (sys.executable, "-c", "import time, sys; time.sleep(2); sys.exit(4)")
    quiet = (sys.executable, "-c", "pass")
    out = tmp_path / "drill"
    assert drill.step(1, out, [7], until=0.3, programs={"search": slow, "drill": quiet}) == 0
    assert "search running" in capsys.readouterr().out
    assert drill.step(2, out, [7], programs={"targets": quiet}, patience=0.2) == 1
    assert "still running; nothing timed" in capsys.readouterr().err and not (out / "c").exists()
    assert drill.step(1, tmp_path / "again", [7], until=30, programs={"search": slow, "drill": quiet}) == 4
    (out / "big.bin").write_bytes(b"x" * 200_000)
    inside = out / "drill.tgz"
    for _ in range(3):
        drill.pack(out, inside)
    with tarfile.open(inside) as tar:
        assert "./drill.tgz" not in tar.getnames() and "./big.bin" in tar.getnames()
    assert inside.stat().st_size < 150_000
