"""benchmarks/changed_kernels.py without a GPU: which stored kernels a change re-renders, and the files that
re-time them (the changed kernels' pairs, drift controls, the grid)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import load, refused

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "results" / "nvidia-h100-80gb-hbm3.json"


def _results() -> dict:
    k = lambda fam, bk, ms: {"config": {"family": fam, "BK": bk}, "ms": ms}
    return {"schema": 1, "device": {"name": "GPU X"}, "entries": {"s": {"name": "a", "config": {}}},
            "timings": {"cublas": {}, "kernels": {
                "a": k("tf32x3", 32, {"8x8x33/NN": 1.0, "8x8x64/NN": 2.0, "8x8x999/NN": 3.0}),
                "b": k("tf32x3", 32, {"8x8x64/NN": 2.0}),
                "c": k("tf32x3", 32, {"8x8x33/NN": 1.5, "9x9x9/NN": 1.0}),
                "d": k("simt", 8, {"8x8x33/NN": 1.0}),
                "e": k("tf32x3", 32, {"7x7x7/NN": 1.0})}}}


def test_the_pairs_to_retime_are_the_changed_kernels_ragged_shallow_ones_and_controls_share_their_shapes():
    mod = load("changed_kernels")
    cand, controls, shapes = mod.retime_files(_results(), {"a", "b"}, ragged=True, max_k=512, controls=5)
    ks = cand["timings"]["kernels"]
    assert ks["a"]["ms"] == {"8x8x33/NN": 1.0} and "b" not in ks        # b: no ragged pair; 999 > max_k
    assert controls == ["c"] and ks["c"]["ms"] == {"8x8x33/NN": 1.5}      # same family, on a shape to re-time
    assert shapes == ["8x8x33/NN"] and cand["entries"] == {} and set(ks) == {"a", "c"}
    cand, controls, shapes = mod.retime_files(_results(), {"a"}, ragged=False, max_k=None, controls=0)
    assert cand["timings"]["kernels"]["a"]["ms"] == _results()["timings"]["kernels"]["a"]["ms"] and controls == []
    cand, _, _ = mod.retime_files(_results(), {"a"}, ragged=False, max_k=None, controls=0, max_ms=2.0)
    assert cand["timings"]["kernels"]["a"]["ms"] == {"8x8x33/NN": 1.0, "8x8x64/NN": 2.0}   # 3.0 ms > max_ms
    assert mod.changed({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == {"b", "c"}
    assert mod.changed({"a": "error: X", "b": "error: Y"}, {"a": "error: X", "b": "5"}) == {"a", "b"}


STUB = {"gemmgen/__init__.py": "", "gemmgen/kernel/__init__.py": "", "gemmgen/codegen/__init__.py": "",
        "gemmgen/kernel/config.py": "class KernelConfig:\n    @staticmethod\n    def from_dict(d):\n        return d\n",
        "gemmgen/codegen/render.py": ("class S:\n    code = 'stub'\n"
                                      "def render_validated(c, arch):\n"
                                      "    if c.get('bad'):\n        raise ValueError('no such tile')\n"
                                      "    return S()\n")}


def test_each_tree_renders_with_its_own_gemmgen(tmp_path):
    """A tree whose gemmgen renders every config as 'stub' gives that digest, not the installed gemmgen's;
    a config it refuses is an error digest naming why; the checkout renders real hex digests."""
    import hashlib

    mod = load("changed_kernels")
    for rel, text in STUB.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    got = mod.digests(tmp_path, {"a": {"x": 1}, "b": {"bad": 1}})
    assert got == {"a": hashlib.sha256(b"stub").hexdigest(), "b": "error: ValueError: no such tile"}
    shipped = mod.configs(json.loads(SHIPPED.read_text()))
    few = dict(list(shipped.items())[:3])
    real = mod.digests(ROOT, few)
    assert set(real) == set(few) and all(len(d) == 64 and not d.startswith("error") for d in real.values())
    (tmp_path / "gemmgen/codegen/render.py").write_text("raise ImportError('too old')\n")
    with pytest.raises(mod.RenderFailed, match="too old"):
        mod.digests(tmp_path, few)


def test_a_change_found_by_rendering_both_trees_writes_the_retime_files(tmp_path, monkeypatch, capsys):
    """Against HEAD nothing renders differently; with the old side's digest of one shipped kernel altered,
    that kernel is named and its files written."""
    mod = load("changed_kernels")
    data = json.loads(SHIPPED.read_text())
    name = next(n for n, k in data["timings"]["kernels"].items() if k["config"]["family"] == "tf32x3")
    assert mod.main([str(SHIPPED), "--since", "HEAD"]) == 0
    assert capsys.readouterr().out.startswith("0 of ")
    real = mod.digests
    monkeypatch.setattr(mod, "digests", lambda tree, cfgs, arch="sm_90":
                        {**real(tree, cfgs), **({name: "old"} if tree != mod.ROOT else {})})
    assert mod.main([str(SHIPPED), "--since", "HEAD", "--out", str(tmp_path), "--controls", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 of ") and "1 changed kernels and 3 controls" in out
    assert f"--winners-from {tmp_path / SHIPPED.name}" in out   # the next commands, with the paths
    cand = json.loads((tmp_path / SHIPPED.name).read_text())["timings"]["kernels"]
    controls = (tmp_path / "controls.txt").read_text().split()
    assert set(cand) == {name, *controls} and cand[name]["ms"] == data["timings"]["kernels"][name]["ms"]
    assert json.loads((tmp_path / "grid.json").read_text())["shapes"] == sorted(cand[name]["ms"])


def test_a_config_this_tree_cannot_render_stops_the_run_in_one_line(monkeypatch, capsys):
    mod = load("changed_kernels")
    monkeypatch.setattr(mod, "digests", lambda tree, cfgs, arch="sm_90": {n: "error: ValueError: bad tile" for n in cfgs})
    with pytest.raises(SystemExit) as err:
        mod.main([str(SHIPPED), "--since", "HEAD"])
    out = capsys.readouterr().err
    assert err.value.code == 2 and "do not render in this tree" in out and "bad tile" in out


@pytest.mark.parametrize("argv, says", [
    ([str(SHIPPED), "--since", "no-such-rev"], "no-such-rev"),
    ([str(SHIPPED), "--since", "HEAD", "--controls", "-1"], "--controls -1"),
    (["nope.json", "--since", "HEAD"], "nope.json"),
])
def test_bad_input_is_one_line(argv, says, capsys):
    assert says in refused(load("changed_kernels").main, argv, capsys)


def test_one_launch_keeps_the_pairs_an_atomic_split_runs_without_its_scale_kernel():
    """--one-launch: a warp-specialized atomic split's pairs whose blocks fit the GPU at once (132 SMs)."""
    from gemmgen.kernel.presets import preset

    mod = load("changed_kernels")
    cfg = preset("tf32x3-ws").replace(BN=64, WN=64, stages=6, split_k=4, label="")   # 128x64 tiles, 4 slices
    k = {"config": cfg.to_dict(), "ms": {"300x200x512/NN": 0.01, "3000x2000x512/NN": 0.1}}
    assert mod.to_time(k, False, None, one_launch_sms=132) == {"300x200x512/NN": 0.01}
    assert mod.to_time(k, False, None) == k["ms"]
