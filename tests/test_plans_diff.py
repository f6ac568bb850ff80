"""benchmarks/plans_diff.py: without a GPU, the plans two results files disagree on, and nothing where
they are the same file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import load, refused

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "results" / "nvidia-h100-80gb-hbm3.json"


def _module():
    return load("plans_diff")


def test_a_file_against_itself_changes_nothing(capsys):
    assert _module().main([str(SHIPPED), str(SHIPPED), "--seeds", "3"]) == 0
    assert capsys.readouterr().out.strip().endswith("0 of 24 plans differ")


def test_a_kernel_taken_out_changes_the_plans_it_served(tmp_path, capsys):
    mod = _module()
    data = json.loads(SHIPPED.read_text())
    # the kernel the shipped timings plan for 4096^3 NN (the set's first large row)
    from gemmgen.base.devices import known
    from gemmgen.records.store import load_file
    from gemmgen.runtime.library import KernelLibrary

    found = load_file(SHIPPED)
    lib = KernelLibrary(known(found.name), found.entries, timings=found.timings)
    planned = lib.staged_fit(4096, 4096, 4096, "NN", 4096, 4096, 4096)[2].config.name   # a timed plan
    del data["timings"]["kernels"][planned]
    fewer = tmp_path / "nvidia-h100-80gb-hbm3.json"
    fewer.write_text(json.dumps(data))
    mod.main([str(SHIPPED), str(fewer), "--seeds", "3", "--set"])
    out = capsys.readouterr().out
    assert "4096x4096x4096/NN\n    A " + planned in out and not out.strip().endswith(" 0 of 39 plans differ")


def test_a_missing_file_is_named():
    with pytest.raises(SystemExit):
        _module().main(["nope.json", str(SHIPPED)])


@pytest.mark.parametrize("text, says", [
    (None, "different GPUs are never mixed"),      # the shipped H100 file under another name
    ('{"x": 1}', "schema"),
])
def test_a_file_it_cannot_read_is_one_line(text, says, tmp_path, capsys):
    bad = tmp_path / "copy.json"
    bad.write_text(SHIPPED.read_text() if text is None else text)
    out = refused(_module().main, [str(bad), str(SHIPPED), "--seeds", "3"], capsys)
    assert says in out and str(bad) in out


def test_a_knob_changes_the_plans_it_decides_and_bad_knobs_are_one_line(capsys):
    """--knob fma_floor=0,1 on one file: file A's plans without the FMA kernels' step floor, B's with it (a
    split-K SIMT TT kernel, fitted under the floor, gives way on seed 3's deep TT shape; the SIMT fit
    without its latency term on both sides: with it, neither picks it). Each side's planner gets its own
    Policy, so nothing is left changed; a name that is no Policy field, a value missing or a whole-number
    field given a fraction is one line."""
    from gemmgen.runtime.policy import DEFAULT, Policy
    assert _module().main([str(SHIPPED), str(SHIPPED), "--seeds", "3", "--knob", "fma_floor=0,1",
                           "--knob", "latency_simt=0,0"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("1 of 24 plans differ")
    assert "A gg_simt_tt_" in out and "B gg_tf32x3_tt_" in out
    assert DEFAULT == Policy()
    with pytest.raises(SystemExit):
        _module().main([str(SHIPPED), str(SHIPPED), "--knob", "NOPE=1,2"])
    assert "'NOPE' is not a field of gemmgen.runtime.policy.Policy" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _module().main([str(SHIPPED), str(SHIPPED), "--knob", "fma_floor=1"])
    assert "--knob 'fma_floor=1': give NAME=A,B with two numbers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _module().main([str(SHIPPED), str(SHIPPED), "--knob", "max_resident=0,4.5"])
    assert "policy field max_resident=4.5 is not a whole number" in capsys.readouterr().err


def test_saved_plans_stand_for_side_a(tmp_path, capsys):
    saved = tmp_path / "plans.json"
    assert _module().main([str(SHIPPED), str(SHIPPED), "--seeds", "3", "--save", str(saved)]) == 0
    capsys.readouterr()
    assert _module().main([str(saved), str(SHIPPED), "--seeds", "3"]) == 0
    assert capsys.readouterr().out.strip().endswith("0 of 24 plans differ")
    out = refused(_module().main, [str(saved), str(SHIPPED), "--seeds", "4"], capsys)
    assert "holds no plan for" in out
