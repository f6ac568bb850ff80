"""The search space as data: loading, define-by-run sampling, validity, presets, errors."""
from __future__ import annotations

import json

import optuna
import pytest

from gemmgen.kernel.config import KernelConfig
from gemmgen.base.devices import DeviceSpec, for_arch, known
from gemmgen.kernel.presets import all_presets, preset
from gemmgen.kernel.rules import explain
from gemmgen.tune.draws import invalid_draws
from gemmgen.tune.space import _RandomTrial, default_shapes, families, load_space, sample_valid, Space, space_file, SpaceError

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
        assert ("async_copy" in params) == (c.stages == 2 and not c.interleave)
        assert c.async_copy == (c.stages >= 3) or c.stages == 2
        assert not c.interleave or (c.stages == 2 and not c.async_copy and c.prefetch and c.frag == "lds")
        assert ("stages" in params) == (not c.interleave) and ("prefetch" in params) == (not c.interleave)
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
    assert "WMITER" not in grid and "log2_warps_m" not in grid and "log2_wm" in grid   # warps_m derives from the drawn wm


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
    assert [v.rule for v in explain(config, "sm_90")] == ["POSITIVE"]


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


# ---- tensor-core families (search/tf32.json, search/tf32x3.json) ----------------------------
TC = ("tf32", "tf32x3")


def _draws(space, n=1000, seed=0, layout="NN"):
    import random

    rng = random.Random(seed)
    return [space.sample(_RandomTrial(rng), layout) for _ in range(n)]


def test_families_with_a_space():
    assert families()[:3] == ["simt", "tf32", "tf32x3"]
    with pytest.raises(SpaceError, match="no search space for family 'wmma'; valid: simt, tf32, tf32x3"):
        load_space("wmma")
    with pytest.raises(SpaceError, match="tf32.json is the space of family 'tf32', not 'simt'"):
        load_space("simt", path=space_file("tf32"))
    assert load_space(path=space_file("tf32x3")).family == "tf32x3"   # no family: the file's own


@pytest.mark.parametrize("family", TC)
@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_core_spaces_draw_only_their_parameters(family, arch):
    from gemmgen.kernel.rules import tensor_core, tma

    space = load_space(family, arch)
    assert space.family == family and space.arch == arch
    ref = KernelConfig()
    for c in _draws(space, 300, seed=1) + _draws(space, 300, seed=2, layout="TN"):
        assert c.family == family and c.async_copy and c.vec == 4 and 2 <= c.stages <= 5
        # a_kmajor: drawn for the TMA kernel in TN/TT; where the rules then refuse it (two blocks an SM
        # without room for A's padding) the trial is pruned
        unused = (tma if c.warp_specialized else tensor_core).unused(c)
        assert all(getattr(c, k) == getattr(ref, k) for k in (*unused, "dtype") if k != "a_kmajor"), c.name
        assert c.a_kmajor or (c.warp_specialized and c.layout in ("TN", "TT")), c.name
        assert c.BM == c.WM * (c.BM // c.WM) and c.BK in ((32, 64) if c.uses_wgmma else (16, 32))
        assert not (c.pad_a and c.swz_a > 1) and not (c.pad_b and c.swz_b > 1)
        assert not c.uses_wgmma or arch == "sm_90"


@pytest.mark.slow   # seconds: many draws, a compile or several processes
@pytest.mark.parametrize("family", TC)
@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_core_spaces_mostly_draw_valid_configs(family, arch):
    """Warp tile and warp grid are drawn, the block tile derived, and BK and min_blocks drawn only
    where shared memory holds them: at least 80% of uniform draws pass the rules on sm_80 and sm_90
    (measured: 97% tf32, 92% tf32x3), and never fail a rule the construction rules out."""
    draws = _draws(load_space(family, arch), 1500, seed=2)
    violations = [explain(c, arch) for c in draws]
    rate = sum(not v for v in violations) / len(draws)
    assert rate >= (0.8 if arch in ("sm_80", "sm_90") else 0.75), rate
    structural = {"MMA_TILE", "WARP_TILE", "VECTORIZE", "TC_SWIZZLE", "TC_PADDING", "PIPELINE", "THREADS",
                  "TENSOR_CORE_DEFAULTS", "OCCUPANCY", "POSITIVE"}
    assert not {v.rule for vs in violations for v in vs} & structural


@pytest.mark.parametrize("family", TC)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_sample_valid_tensor_core_configs(family, layout):
    configs = sample_valid(40, "sm_90", seed=3, layout=layout, family=family)
    assert len({c.name for c in configs}) == 40
    assert all(c.layout == layout and c.family == family and not explain(c, "sm_90") for c in configs)


@pytest.mark.parametrize("family", TC)
@pytest.mark.parametrize("arch", ARCHS)
def test_tensor_core_presets_are_reachable(family, arch):
    """The presets are enqueued as ordinary trials (first), in every layout, on every architecture."""
    space = load_space(family, arch)
    for layout in ("NN", "NT", "TN", "TT"):
        cfg = preset(family, arch).replace(layout=layout, label="")
        params = space.params_of(cfg)
        assert params is not None, (layout, arch)
        assert space.sample(optuna.trial.FixedTrial(params), layout) == cfg
    wgmma = [f"{family}-wgmma", f"{family}-tma"] + ([f"{family}-ws"] if family == "tf32x3" else []) if arch == "sm_90" else []
    assert [p.label for p in all_presets(arch) if space.params_of(p)] == [family, *wgmma]


@pytest.mark.parametrize("family", TC)
def test_params_of_round_trips_tensor_core_configs(family):
    space = load_space(family, "sm_86")
    for c in sample_valid(30, "sm_86", seed=6, family=family, layout="TN"):
        assert space.sample(optuna.trial.FixedTrial(space.params_of(c)), "TN") == c


def test_tf32_and_tf32x3_spaces_stay_in_step():
    a, b = (json.loads(space_file(f).read_text()) for f in TC)
    assert list(a["params"]) == list(b["params"])
    differ = {k for k in a["params"] if a["params"][k] != b["params"][k]}
    # 3xTF32 holds big and small fragments: smaller warp tiles at BK=32, no 256-row wgmma tiles, and
    # its small parts of A take shared memory beside the ring (wg_BK's fit); on the TMA pipeline it
    # holds sums and partials (BN up to 208, not 256) and B's small parts beside each stage; only its
    # warp-specialized kernel has the cp.async producer, so only it draws ws in every layout and
    # ws_mainloop (ws_tma or ws_cpasync), and how that producer stages an m-contiguous A (a_kmajor)
    assert differ == {"WN", "BK", "wg_BM", "wg_BK", "tm_BN", "tm_stages", "ws", "ws_mainloop", "a_kmajor"}
    assert a["arch"] == b["arch"]


def test_tf32x3_draws_no_spilling_64x64_warp_tiles():
    for arch in ("sm_80", "sm_90"):
        assert not [c for c in _draws(load_space("tf32x3", arch), 400) if not c.uses_wgmma and c.WM * c.WN > 2048]
        assert [c for c in _draws(load_space("tf32", arch), 400) if c.WM * c.WN == 4096]


def test_bk_and_min_blocks_follow_shared_memory():
    """32-deep stages only where they fit the target's shared memory; two blocks only where both fit."""
    big = {arch: _draws(load_space("tf32", arch), 800, seed=4) for arch in ("sm_86", "sm_90")}
    for arch, draws in big.items():
        limit = for_arch(arch).smem_per_block_optin
        for c in draws:
            if c.BK == 32 and not c.uses_wgmma:
                assert c.stages * (c.BM * (32 + c.pad_a) + c.BN * (32 + c.pad_b)) * 4 <= limit
            if c.min_blocks == 2:
                assert 2 * c.smem_bytes <= for_arch(arch).smem_per_sm
    deep = {arch: sum(not c.uses_wgmma and c.BK == 32 and c.stages >= 4 and c.BM * c.BN >= 128 * 128 for c in d)
            for arch, d in big.items()}
    assert deep["sm_90"] > 0 and deep["sm_86"] == 0


def test_device_limits_come_from_the_given_device(tmp_path):
    f = _space_with(tmp_path, {"BM": [{"when": "smem_per_block > 200000", "value": 256}, {"value": 64}]})
    assert load_space(path=f, arch="sm_90").sample(_RandomTrial(None)).BM == 256
    assert load_space(path=f, arch="sm_86").sample(_RandomTrial(None)).BM == 64
    assert load_space(path=f, arch="sm_86", device=for_arch("sm_90")).sample(_RandomTrial(None)).BM == 256
    with pytest.raises(SpaceError, match="names device limits.*unknown target 'sm_70'"):
        load_space(path=f, arch="sm_70")
    assert load_space("simt", "sm_70").arch == "sm_70"   # a space that names no limit loads anywhere


def test_later_expressions_see_the_default_of_an_undrawn_parameter(tmp_path):
    f = _space_with(tmp_path, {"stages": {"value": 1}, "pad_a": {"when": "stages > 1", "value": 4},
                               "BK": {"derive": "16 + pad_a"}})
    assert load_space(path=f).sample(_RandomTrial(None)).BK == 16


# ---- Hopper's wgmma variant in the tensor-core spaces ---------------------------------------------
@pytest.mark.parametrize("family", TC)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_wgmma_draws_on_sm_90_are_mostly_valid(family, layout):
    """On sm_90 about half the draws are wgmma kernels, and nine in ten of those pass the rules
    (measured: 100% for 3xTF32; TF32's 256-row tiles with 4 stages overflow shared memory in TN/TT)."""
    draws = [c for c in _draws(load_space(family, "sm_90"), 1200, seed=5, layout=layout) if c.uses_wgmma]
    assert 0.35 < len(draws) / 1200 < 0.65
    draws = [c for c in draws if not c.warp_specialized]   # the TMA draws (NT only): test_tma_draws_on_sm_90
    violations = [explain(c, "sm_90") for c in draws]
    assert sum(not v for v in violations) / len(draws) >= 0.9
    assert {v.rule for vs in violations for v in vs} <= {"SHARED_MEMORY"}
    valid = [c for c, v in zip(draws, violations) if not v]
    assert {c.BM for c in valid} == ({64, 128} if family == "tf32x3" else {64, 128, 256})
    assert {c.BN for c in valid} == {64, 128} and {c.BK for c in valid} == {32, 64}
    assert {c.stages for c in valid} == {2, 3, 4} and {c.pad_b for c in valid} == {4, 8}
    assert {c.split_k for c in valid} == {1, 2, 3, 4, 6, 8, 12, 16}
    for c in valid:
        assert (c.WM, c.WN, c.swz_a, c.pad_a, c.swz_b, c.min_blocks, c.vec) == (c.BM, 64, 8, 0, 1, 1, 4)
        assert c.smem_bytes <= for_arch("sm_90").smem_per_block_optin


@pytest.mark.parametrize("family", TC)
def test_tma_draws_on_sm_90(family):
    """Layout NT on sm_90 draws the TMA pipeline for about half its wgmma kernels, most of them valid,
    with its fixed geometry (64-row consumers owning all BN columns, 128-byte rows) and split-K drawn as
    for the other kernels. The 3xTF32 space also draws its cp.async producer (async_copy): in NT beside
    the copy engine, in the other layouts alone; the TF32 space draws it nowhere."""
    space = load_space(family, "sm_90")
    wgmma = [c for c in _draws(space, 1200, seed=7, layout="NT") if c.uses_wgmma]
    tma = [c for c in wgmma if c.warp_specialized]
    assert 0.35 < len(tma) / len(wgmma) < 0.65
    violations = [explain(c, "sm_90") for c in tma]
    assert sum(not v for v in violations) / len(tma) >= 0.8
    assert {v.rule for vs in violations for v in vs} <= {"TMA_SHARED_MEMORY", "TMA_REGISTERS"}
    valid = [c for c, v in zip(tma, violations) if not v]
    assert {c.BM for c in valid} == {64, 128} and {c.stages for c in valid} >= {2, 3, 4}
    assert max(c.BN for c in valid if not c.async_copy) == (208 if family == "tf32x3" else 256)
    assert {c.async_copy for c in valid} == ({False, True} if family == "tf32x3" else {False})
    assert {c.split_k for c in valid} >= {1, 4, 16}
    for c in valid:
        assert (c.WM, c.WN, c.BK, c.swz_a, c.swz_b, c.pad_b, c.bounds) == (64, c.BN, 32, 8, 8, 0, "checked")
        assert space.sample(optuna.trial.FixedTrial(space.params_of(c)), "NT") == c
    for layout in ("NN", "TN", "TT"):
        ws = [c for c in _draws(space, 300, seed=8, layout=layout) if c.warp_specialized]
        assert all(c.async_copy for c in ws) and (len(ws) > 20 if family == "tf32x3" else not ws)
        assert sum(not explain(c, "sm_90") for c in ws) >= 0.7 * len(ws)


@pytest.mark.parametrize("family", TC)
@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89"])
def test_no_wgmma_draws_before_hopper(family, arch):
    space = load_space(family, arch)
    assert {c.mainloop for c in _draws(space, 500, seed=6)} == {"mma_sync"}
    assert "wgmma" not in space.grid() and load_space(family, "sm_90").grid()["wgmma"] == [False, True]


def test_sync_stays_reachable_on_sm_90():
    """mma.sync remains half of the Hopper space (it is the kernel of sm_80/86/89), valid as before."""
    draws = [c for c in _draws(load_space("tf32x3", "sm_90"), 1500, seed=7) if not c.uses_wgmma]
    assert len(draws) > 500
    assert sum(not explain(c, "sm_90") for c in draws) / len(draws) >= 0.85


@pytest.mark.parametrize("family", TC)
def test_wgmma_configs_round_trip_through_params(family):
    """Winners of a wgmma search (and their split-K variants) are enqueued as ordinary trials elsewhere."""
    space = load_space(family, "sm_90")
    for layout in ("NN", "TT"):
        configs = [c for c in sample_valid(80, "sm_90", seed=8, layout=layout, family=family) if c.uses_wgmma]
        assert len(configs) > 20
        for c in configs:
            params = space.params_of(c)
            assert params is not None and space.sample(optuna.trial.FixedTrial(params), layout) == c
            assert space.params_of(c.replace(split_k=12, reduce="workspace")) is not None


def test_split_k_reaches_skinny_shapes():
    """16x4096x16384 has 32 tiles of 128x128 (simt 256x128: 16): filling 132 SMs takes 4..8 slices for
    tensor cores, up to 32 for simt's big tiles."""
    assert load_space("simt", "sm_90").grid()["split_k"] == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    for family in TC:
        assert load_space(family, "sm_80").grid()["split_k"] == [1, 2, 3, 4, 6, 8, 12, 16]


def test_small_simt_tiles_draw_blocks_an_sm_up_to_64_registers():
    """``blocks`` (1..16) is min_blocks for tiles of at most 64x64, capped where 64 registers a thread are
    left (4 warps: 8 blocks, 2 warps: 16), and 1 or 2 for larger tiles; every such config round-trips
    (32x32 tiles of 4 warps at 118 registers ran 1.66 waves where cuBLAS's ran one)."""
    space = load_space("simt", "sm_90")
    small = preset("v10").replace(BM=32, BN=32, BK=8, WM=16, WN=16, WMITER=2, WNITER=1, TM=2, TN=2, vec=2, label="")
    pair = small.replace(BN=32, WN=32, WMITER=4)                       # 2 warps (64 threads)
    assert (small.threads, pair.threads) == (128, 64) and not explain(small, "sm_90") and not explain(pair, "sm_90")
    for c, most in ((small, 8), (pair, 16)):
        for mb in range(1, most + 1):
            params = space.params_of(c.replace(min_blocks=mb))
            assert params["blocks"] == mb and space.sample(optuna.trial.FixedTrial(params), c.layout).min_blocks == mb
        assert space.params_of(c.replace(min_blocks=most + 1)) is None
        capped = dict(space.params_of(c), blocks=16)
        assert space.sample(optuna.trial.FixedTrial(capped), c.layout).min_blocks == most
    big = preset("v10")
    assert [space.params_of(big.replace(min_blocks=mb))["blocks"] for mb in (1, 2)] == [1, 9]
    assert space.params_of(big.replace(min_blocks=3)) is None
    drawn = [space.sample(optuna.trial.FixedTrial(dict(space.params_of(big), blocks=b)), "NN").min_blocks
             for b in range(1, 17)]
    assert drawn == [1] * 8 + [2] * 8
    seen = {(c.BM * c.BN <= 4096, c.min_blocks) for c in sample_valid(300, "sm_90", seed=11)}
    assert {(True, 8), (False, 2)} <= seen and not any(mb > 2 for small_tile, mb in seen if not small_tile)


T4_LIKE = DeviceSpec("t4-like", "A Turing-like GPU", (7, 5), 40, 64 * 1024, 64 * 1024, max_threads_per_sm=1024,
                     l2_bytes=4 * 2**20, clock_mhz=1590, mem_gbs=320)


@pytest.mark.parametrize("gpu, most", [("rtx3090", 0.52), ("h100", 0.42)])
def test_most_simt_draws_pass_the_rules(gpu, most):
    """The simt space derives warps, thread tiles, WNITER and vec from drawn helpers, so a draw no longer breaks
    the rules blindly: 1000 uniform draws were 72% (rtx3090) and 68% (h100) invalid before, 38% and 28% after.
    Drawing the interleaved loop in half the draws (it keeps a pointer register a copy) costs some of that
    back, 47% and 37%, where invalid draws cost no trial of the budget."""
    device = known(gpu)
    draws = invalid_draws(load_space("simt", device.arch, device=device), device, n=1000)
    assert draws.drawn == 1000 and draws.share < most
    assert "POSITIVE" not in dict(draws.rules[:3])   # WMITER = 0 was the first reason before


def test_invalid_draws_names_the_rules_that_reject():
    space = load_space("simt", "sm_90", device=T4_LIKE)   # 64 KB of shared memory: the deep pipelines do not fit
    draws = invalid_draws(space, T4_LIKE, n=300, seed=2)
    assert 0 < draws.invalid < 300 and sum(n for _, n in draws.rules) >= draws.invalid
    assert dict(draws.rules).get("SHARED_MEMORY", 0) > 0


@pytest.mark.parametrize("gpu", ["h100", "rtx3090", "t4"])
def test_the_interleaved_simt_loop_is_reached_by_a_short_search(gpu):
    """The interleaved loop needs four other choices (two stages through registers, fragment prefetch,
    shared-memory fragments): drawn freely they seldom meet, so a short search never tried it. Drawn
    first, it fixes them, and a sixth of the draws or more are valid interleaved kernels; Turing draws no
    cp.async."""
    device = known(gpu)
    space = load_space("simt", device.arch, device=device)
    rng = __import__("random").Random(3)
    draws = [space.sample(_RandomTrial(rng)) for _ in range(600)]
    valid = [c for c in draws if not explain(c, device)]
    assert sum(c.interleave for c in valid) > 0.15 * len(draws)
    assert sum(not c.interleave for c in valid) > 0.2 * len(draws)
    assert device.cc >= (8, 0) or not any(c.async_copy for c in draws)
