"""benchmarks/warm_cache.py without a GPU: which configs it would compile, and its input checks (one line
naming the value, exit 2, nothing compiled)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import load, refused

SHIPPED = Path(__file__).resolve().parents[1] / "results" / "nvidia-h100-80gb-hbm3.json"


def test_named_kernels_come_from_the_results_files_and_a_missing_one_is_named():
    mod = load("warm_cache")
    kernels = json.loads(SHIPPED.read_text())["timings"]["kernels"]
    names = set(list(kernels)[:3])
    got = mod.named_configs(names, [SHIPPED])
    assert set(got) == names and all(c.name == n for n, c in got.items())
    with pytest.raises(ValueError, match="gg_nope"):
        mod.named_configs(names | {"gg_nope"}, [SHIPPED])


def test_presets_are_the_valid_ones_for_the_target():
    from gemmgen.kernel.rules import explain

    mod = load("warm_cache")
    sm80, sm90 = mod.preset_configs("sm_80"), mod.preset_configs("sm_90")
    assert sm80 and sm90 and not any(explain(c, "sm_80") for c in sm80)
    assert any(c.uses_wgmma for c in sm90) and not any(c.uses_wgmma for c in sm80)


@pytest.mark.parametrize("argv, says", [
    (["--arch", "sm_99"], "unknown target 'sm_99'"),
    (["--names", "nope.txt"], "--names and results files go together"),
    (["--names", "nope.txt", str(SHIPPED)], "no such file: nope.txt"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    assert says in refused(load("warm_cache").main, argv, capsys)


def test_a_name_no_results_file_holds_is_one_line(tmp_path, capsys):
    mod = load("warm_cache")
    names = tmp_path / "names.txt"
    names.write_text("gg_nope\n")
    with pytest.raises(SystemExit) as exc:
        mod.main(["--arch", "sm_90", "--names", str(names), str(SHIPPED)])
    assert exc.value.code == 2 and "gg_nope" in capsys.readouterr().err
