"""The search space as data: loading, define-by-run sampling, validity, presets, errors."""
from __future__ import annotations

import json

import optuna
import pytest

from gemmgen.config import KernelConfig
from gemmgen.presets import all_presets, preset
from gemmgen.rules import explain
from gemmgen.space import (Space, SpaceError, _RandomTrial, default_shapes, load_space, sample_valid,
                           space_file)

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")


@pytest.mark.parametrize("arch", ARCHS)
def test_sample_valid_yields_distinct_valid_configs(arch):
    configs = sample_valid(100, arch, seed=7)
    assert len(configs) == 100
    assert len({c.name for c in configs}) == 100
    for c in configs:
        assert c.family == "simt"
        assert explain(c, arch) == [], c.name


def test_sample_valid_is_seeded():
    assert sample_valid(5, "sm_90", seed=1) == sample_valid(5, "sm_90", seed=1)
    assert sample_valid(5, "sm_90", seed=1) != sample_valid(5, "sm_90", seed=2)


@pytest.mark.parametrize("layout", ["NT", "TN", "TT"])
def test_sample_valid_other_layouts(layout):
    configs = sample_valid(20, "sm_90", seed=3, layout=layout)
    assert all(c.layout == layout and not explain(c, "sm_90") for c in configs)


def test_derivations_make_most_draws_valid():
    """Derived WM/WN/WMITER make valid draws likely; a space edit that makes most draws invalid would
    spend the search on rejections."""
    import random

    space = load_space("simt", "sm_90")
    rng = random.Random(0)
    draws = [space.sample(_RandomTrial(rng)) for _ in range(600)]
    valid = sum(not explain(c, "sm_90") for c in draws)
    assert valid / len(draws) > 0.3
    # warps_m/warps_n divide the block tile by construction
    assert not any(v.rule == "WARP_TILE" for c in draws for v in explain(c, "sm_90"))


def test_conditional_parameters_are_define_by_run():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    space = load_space("simt", "sm_90")
    seen = []
    for _ in range(200):
        trial = study.ask()
        config = space.sample(trial)
        seen.append((trial.params, config))
        study.tell(trial, 0.0)
    for params, c in seen:
        assert ("reduce" in params) == (c.split_k > 1)
        assert ("async_copy" in params) == (c.stages == 2)
        assert c.async_copy == (c.stages >= 3) or c.stages == 2
        assert ("log2_swz_a" in params) == (c.pad_a == 0 and c.a_kmajor)
        assert "WMITER" not in params and "WM" not in params   # derived, never sampled
        assert params["log2_BM"] in range(5, 9)


def test_arch_overrides_change_the_space():
    stages = {arch: load_space("simt", arch).grid()["stages"] for arch in ARCHS}
    assert max(stages["sm_90"]) > max(stages["sm_80"]) > max(stages["sm_86"])
    assert stages["sm_86"] == stages["sm_89"]


def test_params_of_round_trips_sampled_configs():
    space = load_space("simt", "sm_90")
    for c in sample_valid(30, "sm_90", seed=5):
        params = space.params_of(c)
        assert params is not None
        assert space.sample(optuna.trial.FixedTrial(params), c.layout) == c


def test_params_of_reaches_warptiled_presets_only():
    space = load_space("simt", "sm_90")
    assert space.params_of(preset("v10")) is not None
    assert space.params_of(preset("v0")) is None           # naive family
    assert space.params_of(preset("v5")) is None           # 8 warps along M: outside warps_m <= 4
    reachable = [p.label for p in all_presets() if space.params_of(p)]
    assert {"v10", "v11", "v12", "v13"} <= set(reachable)


def test_grid_lists_every_sampled_parameter():
    grid = load_space("simt", "sm_90").grid()
    assert grid["log2_BM"] == [5, 6, 7, 8]
    assert grid["reduce"] == ["atomic", "workspace"]
    assert "WMITER" not in grid and "warps_m" not in grid and "log2_warps_m" in grid


def test_shipped_space_file_is_json_with_schema():
    data = json.loads(space_file("simt").read_text())
    assert data["schema"] == 1 and data["family"] == "simt"


def test_default_shapes():
    assert [str(s) for s in default_shapes()] == ["4096x4096x4096/NN"]


def test_bad_shapes_file_names_the_file(tmp_path):
    f = tmp_path / "shapes.json"
    f.write_text('{"shapes": ["4096x4096"]}')
    with pytest.raises(SpaceError, match="shapes.json"):
        default_shapes(f)


def _space_with(tmp_path, params, arch=None):
    f = tmp_path / "space.json"
    f.write_text(json.dumps({"schema": 1, "family": "simt", "params": params, **({"arch": arch} if arch else {})}))
    return f


@pytest.mark.parametrize("params, message", [
    ({"BM": {"derive": "__import__('os')"}}, "only arithmetic"),
    ({"BM": {"derive": "BN * 2"}, "BN": {"value": 64}}, "not an earlier parameter"),
    ({"BM": [{"when": "true", "choices": [64]}, {"pow2": [32, 64]}]}, "at most one sampled case"),
    ({"BM": {"pow2": [32, 96]}}, "powers of two"),
    ({"BM": {"choices": [64], "range": [1, 2]}}, "exactly one of"),
    ({"BM": {"choices": []}}, "non-empty"),
])
def test_bad_space_files_name_file_and_parameter(tmp_path, params, message):
    f = _space_with(tmp_path, params)
    with pytest.raises(SpaceError, match=message) as err:
        load_space(path=f)
    assert "space.json: BM" in str(err.value)


def test_override_of_unknown_parameter_is_an_error(tmp_path):
    f = _space_with(tmp_path, {"BM": {"value": 64}}, arch={"sm_90": {"BX": {"value": 1}}})
    with pytest.raises(SpaceError, match="unknown parameter 'BX'"):
        load_space(arch="sm_90", path=f)


def test_division_by_zero_yields_a_rejected_config_not_a_crash(tmp_path):
    f = _space_with(tmp_path, {"zero": {"value": 0}, "WM": {"derive": "64 // zero"}})
    config = load_space(path=f).sample(_RandomTrial(__import__("random").Random(0)))
    assert config.WM == 0
    assert [v.rule for v in explain(config)] == ["POSITIVE"]


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(SpaceError, match="no search space file"):
        load_space(path=tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SpaceError, match="not valid JSON"):
        load_space(path=tmp_path / "bad.json")


def test_space_is_picklable_for_worker_processes():
    import pickle

    space = load_space("simt", "sm_90")
    again = pickle.loads(pickle.dumps(space))
    assert isinstance(again, Space)
    c = sample_valid(1, "sm_90", seed=0, space=again)[0]
    assert isinstance(c, KernelConfig)
