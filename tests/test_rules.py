"""Named rules: invalid configs raise InvalidConfig with the expected rule names and numbers."""
from __future__ import annotations

import pytest

from gemmgen.kernel.config import KernelConfig
from gemmgen.base.devices import DeviceSpec
from gemmgen.base.devices import ARCHS
from gemmgen.kernel.presets import all_presets, names, preset, representatives
from gemmgen.codegen.render import render
from gemmgen.kernel.rules import explain, InvalidConfig, rule_names, validate

TURING = DeviceSpec("t4", "Tesla T4", (7, 5), 40, 64 * 1024, 64 * 1024, max_threads_per_sm=1024)


def rules(cfg: KernelConfig, device="h100") -> list[str]:
    return [v.rule for v in explain(cfg, device)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90"])
def test_every_preset_is_valid(arch):
    for cfg in all_presets(arch):
        assert explain(cfg, arch) == [], cfg.label


@pytest.mark.parametrize("gpu", ["rtx3090", "a10", "a100", "l4", "rtx4090", "4070ti-super", "h100", "h200"])
def test_presets_up_to_v12_fit_every_known_gpu(gpu):
    for name in names()[:names().index("v13")]:
        assert explain(preset(name), gpu) == [], name


# (config, the rules it must break on the h100; a config may break others as a consequence)
CASES = {
    "warp tile": (preset("v8").replace(BM=96, WM=64), ["WARP_TILE"]),
    "thread tile": (preset("v5").replace(TM=4), ["THREAD_TILE"]),
    "vectorize": (preset("v8").replace(BM=96), ["VECTORIZE"]),
    "vector width": (preset("v5").replace(vec=3), ["VECTOR", "VECTORIZE"]),
    "stages without cp.async": (preset("v8").replace(stages=3), ["STAGES"]),
    "cp.async single stage": (preset("v8").replace(stages=1, async_copy=True), ["STAGES"]),
    "too many stages": (preset("v13").replace(stages=9), ["STAGES"]),
    "swizzle and padding": (preset("v8").replace(swz_a=4), ["SWIZZLE"]),
    "swizzle period": (preset("v8").replace(swz_a=3, pad_a=0), ["SWIZZLE"]),
    "swizzle without k-major A": (preset("v8").replace(swz_a=2, pad_a=0, a_kmajor=False), ["SWIZZLE"]),
    "registers": (KernelConfig(BM=128, BN=128, BK=8, WM=64, WN=128, TM=16, TN=16), ["REGISTERS"]),
    "shuffle sub-tile": (preset("v11").replace(WMITER=1, TM=8), ["FRAGMENTS"]),
    "reduction": (preset("v12").replace(reduce="tree"), ["SPLIT_K"]),
    "bounds": (preset("v8").replace(bounds="maybe"), ["BOUNDS"]),
    "layout": (preset("v8").replace(layout="XY"), ["LAYOUT"]),
    "threads": (preset("v5").replace(BM=512, BN=256, WM=16, WN=128), ["THREADS"]),
    "naive extras": (preset("v1").replace(stages=2), ["NAIVE_DEFAULTS"]),
    "padding": (preset("v8").replace(pad_b=40), ["PADDING"]),
    "dtype of an fp32 family": (preset("v8").replace(dtype="f16"), ["DTYPE"]),
    "dtype of the half family": (preset("wmma").replace(dtype="f32"), ["DTYPE"]),
    "wmma tile": (preset("wmma").replace(BK=24), ["WMMA_TILE"]),
    "wmma padding": (preset("wmma").replace(pad_a=4), ["WMMA_PADDING"]),
    "wmma stages": (preset("wmma").replace(stages=3), ["WMMA_PIPELINE"]),
    "wmma swizzle": (preset("wmma-fast").replace(swz_b=8), ["WMMA_DEFAULTS"]),
    "partials outside the half family": (preset("tf32x3").replace(partials=False), ["PARTIALS"]),
    "interleave on cp.async stages": (preset("v10").replace(interleave=True, stages=3, async_copy=True), ["INTERLEAVE"]),
    "interleave without the register double buffer": (preset("v8").replace(stages=3, async_copy=True, bounds="none",
                                                                           interleave=True), ["INTERLEAVE"]),
    "interleave of a tensor-core family": (preset("tf32x3").replace(interleave=True), ["TENSOR_CORE_DEFAULTS"]),
}


@pytest.mark.parametrize("case", CASES)
def test_invalid_configs_name_their_rules(case):
    cfg, expected = CASES[case]
    assert set(expected) <= set(rules(cfg))
    with pytest.raises(InvalidConfig) as err:
        validate(cfg, "h100")
    assert [v.rule for v in err.value.violations] == rules(cfg)
    assert all(name in str(err.value) for name in expected)


def test_shared_memory_depends_on_the_gpu():
    big = preset("v10").replace(BK=32, stages=4, async_copy=True, prefetch=False)   # 4 x 33280 bytes
    assert rules(big, "h100") == [] and rules(big, "a100") == []
    assert rules(big, "rtx3090") == ["SHARED_MEMORY"] == rules(big, "sm_86")
    reason = explain(big, "rtx3090")[0].reason
    assert "133120" in reason and "101376" in reason      # needed and allowed, in bytes


def test_wmma_needs_tensor_cores_and_bf16_needs_ampere():
    assert rules(preset("wmma"), TURING) == []                          # fp16 wmma, one buffer: sm_70+
    assert rules(preset("wmma-bf16").replace(BN=128, stages=2), TURING) == ["WMMA_ARCH"]
    assert "bf16" in str(explain(preset("wmma-bf16").replace(BN=128, stages=2), TURING))


def test_cp_async_needs_ampere():
    cfg = preset("v13", "sm_80").replace(stages=2, async_copy=True)
    assert rules(cfg, "a100") == []
    assert "ASYNC_ARCH" in rules(cfg, TURING)
    assert "sm_80" in str(explain(cfg, TURING))


def test_reason_gives_the_numbers():
    (v,) = explain(preset("v8").replace(BM=96), "h100")
    assert "1024" in v.reason and "768" in v.reason and str(v).startswith("VECTORIZE: ")


def test_every_violation_is_listed_not_just_the_first():
    cfg = preset("v8").replace(vec=3, stages=3, swz_b=3)
    assert set(rules(cfg)) >= {"VECTOR", "VECTORIZE", "STAGES", "SWIZZLE"}


def test_structural_errors_stop_before_dividing_by_zero():
    assert rules(preset("v8").replace(WM=0)) == ["POSITIVE"]


def test_invalid_config_is_never_rendered():
    with pytest.raises(InvalidConfig):
        render(preset("v8").replace(BM=96), "h100")


def test_rule_names_cover_the_documented_ones():
    documented = {"VECTORIZE", "WARP_TILE", "THREAD_TILE", "SHARED_MEMORY", "ASYNC_ARCH", "STAGES",
                  "SWIZZLE", "REGISTERS", "DTYPE", "WMMA_ARCH", "WMMA_TILE", "WMMA_PADDING", "WMMA_REGISTERS"}
    assert documented <= set(rule_names())


def test_simt_config_keeps_naive_only_parameter_at_default():
    from gemmgen.kernel.presets import preset
    from gemmgen.kernel.rules import explain

    assert [v.rule for v in explain(preset("v10").replace(coalesced=False), "h100")] == ["SIMT_DEFAULTS"]


def test_interleave_is_named_and_left_out_of_configs_without_it():
    """An interleaved kernel differs in machine code, so in name (fldspi); configs without it write no key,
    so the sources and results written before the parameter existed read the same."""
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.kernel.presets import preset
    from gemmgen.kernel.rules import explain

    fast = preset("v10").replace(bounds="none", label="")
    assert not explain(fast.replace(interleave=True), "h100")
    assert fast.replace(interleave=True).name == fast.name.replace("_fldsp_", "_fldspi_")
    assert "interleave" not in fast.to_dict() and fast.replace(interleave=True).to_dict()["interleave"] is True
    assert KernelConfig.from_dict(fast.replace(interleave=True).to_dict()).interleave


# ---- where each family runs --------------------------------------------------------------------------
def test_every_architecture_has_its_kinds():
    """sm_75 runs the kinds without cp.async and TF32; sm_80 and newer add the tensor-core and skinny
    families; only sm_90 has wgmma and TMA kernels (Blackwell runs the mma.sync ones)."""
    kinds = {a: {k[0] + {"simt": "", "mma_sync": ""}.get(k[1], "-" + k[1]) for k in representatives(a)}
             for a in ARCHS}
    assert kinds["sm_75"] == {"naive", "simt", "wmma"}
    mma_sync = {"naive", "simt", "wmma", "skinny", "tf32", "tf32x3"}
    assert all(kinds[a] == mma_sync for a in ARCHS if a not in ("sm_75", "sm_90"))
    assert kinds["sm_90"] == mma_sync | {"tf32-wgmma", "tf32x3-wgmma", "tf32x3-ws_tma", "tf32x3-ws_cpasync",
                                         "tf32-ws_tma", "wmma-ws_tma"}


@pytest.mark.parametrize("name,arch,rule,words", [
    ("skinny", "sm_75", "SKINNY_ARCH", "cp.async"),
    ("tf32x3", "sm_75", "TENSOR_CORE_ARCH", "sm_80"),
    ("wmma-fast", "sm_75", "WMMA_ARCH", "cp.async"),
    ("tf32x3-wgmma", "sm_100", "WGMMA_ARCH", "tcgen05"),
    ("tf32-wgmma", "sm_120", "WGMMA_ARCH", "sm_90a"),
    ("f16-tma", "sm_103", "TMA_KIND", "tcgen05"),
])
def test_a_family_off_its_architectures_says_why(name, arch, rule, words):
    found = dict((v.rule, v.reason) for v in explain(preset(name, arch), arch))
    assert rule in found and words in found[rule] and arch in found[rule], found


@pytest.mark.parametrize("arch", ["sm_75", "sm_87", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121"])
def test_every_preset_that_runs_on_a_new_arch_is_valid_there(arch):
    assert all_presets(arch) and all(explain(cfg, arch) == [] for cfg in all_presets(arch))
