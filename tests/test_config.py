"""KernelConfig: dictionary round trips, errors that name the bad key, procedural names, geometry."""
from __future__ import annotations

import dataclasses
import json

import pytest

from gemmgen.kernel.config import BOUNDS, ConfigError, DTYPES, FRAGMENT_LOADS, KernelConfig, LAYOUTS, REDUCTIONS, SCHEDULERS
from gemmgen.kernel.presets import all_presets, names, preset
from gemmgen.kernel.rules import explain

ARCHS = ("sm_80", "sm_86", "sm_90")


@pytest.mark.parametrize("name", names())
def test_round_trip_through_json(name):
    cfg = preset(name)
    back = KernelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg and back.name == cfg.name and back.label == cfg.label


def test_from_dict_fills_defaults_and_converts_strings():
    cfg = KernelConfig.from_dict({"BM": "64", "async_copy": "true", "layout": "nt"})
    assert (cfg.BM, cfg.async_copy, cfg.layout, cfg.BN) == (64, True, "NT", KernelConfig().BN)


def test_unknown_keys_are_named_with_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        KernelConfig.from_dict({"BM": 64, "tile_m": 3, "zz": 1})
    text = str(err.value)
    assert "tile_m" in text and "zz" in text and "valid keys" in text and "BK" in text


@pytest.mark.parametrize("key, value, words", [
    ("BM", "abc", "not an integer"),
    ("BM", True, "not an integer"),
    ("BM", None, "not an integer"),
    ("async_copy", "maybe", "not a boolean"),
    ("prefetch", 2, "not a boolean"),
    ("layout", 5, "not a string"),
])
def test_bad_types_name_the_key_and_value(key, value, words):
    with pytest.raises(ConfigError) as err:
        KernelConfig.from_dict({key: value})
    assert key in str(err.value) and words in str(err.value) and repr(value) in str(err.value)


def test_names_are_unique_across_presets():
    for arch in ARCHS:
        kernels = [c.name for c in all_presets(arch)]
        assert len(set(kernels)) == len(kernels), kernels


def _changed(cfg: KernelConfig, field: dataclasses.Field):
    value = getattr(cfg, field.name)
    choices = {"layout": LAYOUTS, "bounds": BOUNDS, "reduce": REDUCTIONS, "frag": FRAGMENT_LOADS,
               "family": ("naive", "simt"), "dtype": DTYPES,
               "mainloop": ("simt", "wgmma"), "scheduler": SCHEDULERS}   # (mma_sync: the simt family's name has no tensor cores)
    if field.name in choices:
        return next(v for v in choices[field.name] if v != value)
    if isinstance(value, bool):
        return not value
    return value * 2 if value > 1 else value + 1


# `coalesced` only exists in the naive family and `label` is free text: neither is part of a simt kernel.
# `warps_k` and `swap` only exist in the skinny family (the WARPS_K rule refuses them elsewhere).
SIMT_FIELDS = [f for f in dataclasses.fields(KernelConfig) if f.name not in ("label", "coalesced", "warps_k", "swap")]


@pytest.mark.parametrize("field", SIMT_FIELDS, ids=lambda f: f.name)
def test_every_kernel_parameter_changes_the_name(field):
    base = preset("v12").replace(reduce="workspace")    # split-K on, so `reduce` is part of the kernel
    changed = base.replace(**{field.name: _changed(base, field)})
    assert changed.name != base.name


@pytest.mark.parametrize("key", ["layout", "BM", "BN", "coalesced"])
def test_naive_parameters_change_the_name(key):
    base = preset("v1")
    field = next(f for f in dataclasses.fields(KernelConfig) if f.name == key)
    assert base.replace(**{key: _changed(base, field)}).name != base.name


def test_label_is_not_part_of_the_kernel():
    a, b = preset("v8"), preset("v8").replace(label="mine")
    assert a == b and a.name == b.name


def test_name_is_a_c_identifier():
    for cfg in all_presets():
        assert cfg.name.replace("_", "").isalnum() and not cfg.name[0].isdigit()


def test_derived_geometry_of_v5_and_v8():
    v5, v8 = preset("v5"), preset("v8")
    assert v5.threads == 256 and v5.accumulators == 64
    assert v5.a_tile_shape == (128, 8) and v5.smem_per_stage == 4 * (128 * 8 + 8 * 128)
    assert v8.a_tile_shape == (8, 132)                 # A transposed, rows padded by 4 floats
    assert v8.smem_per_stage == 4 * (8 * 132 + 8 * 128) == 8320
    assert v8.smem_bytes == 2 * 8320                   # two stages
    assert v8.arithmetic_intensity() == 128 * 128 / (2 * 256)


def test_grid_and_block():
    v12 = preset("v12")
    assert v12.grid(1000, 1000, 1000) == (8 * 8, 1, 4) and v12.block() == (256, 1, 1)
    assert v12.k_per_slice(1000) == 256                # 250 rounded up to a multiple of BK=8
    v1 = preset("v1")
    assert v1.grid(100, 70, 5) == (3, 4, 1) and v1.block() == (32, 32, 1)


def test_accepts_checked_and_fast_path():
    assert preset("v8").accepts(4097, 4095, 1023) is None
    fast = preset("v8").replace(bounds="none")
    assert fast.accepts(4096, 4096, 4096) is None
    assert "M % 128" in fast.accepts(4097, 4096, 4096)
    assert "lda" in fast.accepts(4096, 4096, 4096, lda=4098)
    assert "below" in preset("v8").accepts(64, 64, 64, lda=10)


# ---- the mainloop and scheduler axes, and the old keys they replace ---------------------------------------
# Configs as results files stored them before the axes (old keys mma, tma, async_copy, persistent, pingpong;
# the defaults left out), with the names they were stored under: the name is the results key and the CUDA symbol.
OLD_NAMED = [
    ({"family": "tf32x3", "layout": "NT", "BN": 32, "BK": 32, "swz_a": 8, "swz_b": 8, "raster": 8, "stages": 6, "async_copy": False, "mma": "wgmma", "tma": True},
     'gg_tf32x3_nt_b128x32x32_w64x32_v4_ap0s8_bp0s8_r8_s6r_k1_chk_wg_tma'),
    ({"family": "tf32x3", "layout": "NN", "BM": 64, "BK": 32, "WN": 64, "pad_b": 8, "swz_a": 8, "raster": 2, "stages": 3, "async_copy": True, "prefetch": True, "split_k": 16, "min_blocks": 2, "mma": "wgmma", "tma": False},
     'gg_tf32x3_nn_b64x128x32_w64x64_v4_ap0s8_bp8s1_r2_s3cp_k16a_chk_o2_wg'),
    ({"family": "tf32x3", "layout": "NT", "BN": 64, "BK": 32, "WN": 64, "swz_a": 8, "swz_b": 8, "raster": 8, "stages": 4, "async_copy": False, "mma": "wgmma", "tma": True, "persistent": 132},
     'gg_tf32x3_nt_b128x64x32_w64x64_v4_ap0s8_bp0s8_r8_s4r_k1_chk_p132_wg_tma'),
    ({"family": "tf32x3", "layout": "TT", "BN": 32, "BK": 32, "WM": 32, "swz_b": 8, "stages": 3, "async_copy": True, "split_k": 6, "mma": "sync", "tma": False},
     'gg_tf32x3_tt_b128x32x32_w32x32_v4_ap0s1_bp0s8_r1_s3c_k6a_chk'),
    ({"family": "simt", "layout": "NN", "WMITER": 2, "WNITER": 2, "TM": 4, "TN": 4, "pad_a": 4, "raster": 8, "stages": 2, "async_copy": False, "prefetch": True, "split_k": 12, "mma": "sync", "tma": False},
     'gg_simt_nn_b128x128x8_w64x32i2x2_t4x4_v4_akp4s1_bp0s1_r8_s2r_fldsp_k12a_chk'),
    ({"family": "skinny", "layout": "NN", "BM": 32, "BN": 16, "BK": 16, "TM": 1, "stages": 2, "async_copy": False, "split_k": 2, "reduce": "workspace", "mma": "sync", "tma": False, "warps_k": 4},
     'gg_skinny_nn_b32x16x16_t1_w4_v4_s2_k2w'),
    ({"family": "tf32x3", "layout": "NN", "BK": 32, "WN": 128, "swz_a": 8, "swz_b": 8, "raster": 8, "stages": 2, "async_copy": True, "mma": "wgmma", "tma": True, "persistent": 132},
     'gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s2c_k1_chk_p132_wg_ws'),
    ({"family": "tf32x3", "layout": "NN", "mma": "wgmma", "tma": True, "async_copy": True, "BM": 64, "BN": 128,
      "BK": 32, "WM": 64, "WN": 128, "swz_a": 8, "swz_b": 8, "stages": 3, "raster": 8, "persistent": 132, "pingpong": True},
     'gg_tf32x3_nn_b64x128x32_w64x128_v4_ap0s8_bp0s8_r8_s3c_k1_chk_p132pp_wg_ws'),
]


@pytest.mark.parametrize("old, name", OLD_NAMED, ids=lambda x: x if isinstance(x, str) else "")
def test_old_keys_read_into_the_axes_keep_the_name(old, name):
    cfg = KernelConfig.from_dict(old)
    assert cfg.name == name
    assert not {"mma", "tma", "persistent", "pingpong"} & set(cfg.to_dict())   # written in the new keys only
    assert KernelConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("old, axes", [
    ({"family": "simt"}, ("simt", "plain", 0, False)),
    ({"family": "simt", "mma": "sync", "async_copy": True, "stages": 3}, ("simt", "plain", 0, True)),
    ({"family": "tf32x3", "mma": "sync", "async_copy": True}, ("mma_sync", "plain", 0, True)),
    ({"family": "wmma", "dtype": "f16", "mma": "sync"}, ("mma_sync", "plain", 0, False)),
    ({"family": "tf32", "mma": "wgmma", "tma": False, "async_copy": True}, ("wgmma", "plain", 0, True)),
    ({"family": "tf32", "mma": "wgmma", "tma": True, "async_copy": False}, ("ws_tma", "plain", 0, False)),
    ({"family": "tf32x3", "mma": "wgmma", "tma": True, "async_copy": True}, ("ws_cpasync", "plain", 0, True)),
    ({"family": "tf32x3", "mma": "wgmma", "tma": "true", "persistent": "16"}, ("ws_tma", "persistent", 16, False)),
    ({"family": "tf32x3", "mma": "wgmma", "tma": True, "async_copy": True, "persistent": 132, "pingpong": True},
     ("ws_cpasync", "pingpong", 132, True)),
])
def test_old_keys_map_onto_mainloop_and_scheduler(old, axes):
    cfg = KernelConfig.from_dict(old)
    assert (cfg.mainloop, cfg.scheduler, cfg.persistent_blocks, cfg.async_copy) == axes


@pytest.mark.parametrize("old, words", [
    ({"family": "tf32", "mma": "sync", "tma": True}, "tma = true with mma = 'sync'"),
    ({"family": "tf32x3", "mma": "wgmma", "tma": True, "pingpong": True}, "pingpong = true with persistent = 0"),
    ({"family": "tf32", "mma": "tensor"}, "mma = 'tensor'; valid: sync, wgmma"),
    ({"family": "tf32", "mma": "wgmma", "mainloop": "wgmma"}, "old key(s) mma beside mainloop"),
])
def test_contradictory_old_keys_are_one_line_naming_them(old, words):
    with pytest.raises(ConfigError) as err:
        KernelConfig.from_dict(old)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_async_copy_cannot_contradict_a_warp_specialized_mainloop():
    """async_copy means cp.async copies, and for the warp-specialized mainloops the mainloop says which."""
    ws = KernelConfig(family="tf32x3", layout="NN", mainloop="ws_cpasync")
    assert ws.async_copy and not KernelConfig(family="tf32x3", mainloop="ws_tma").async_copy
    for bad in (lambda: ws.replace(async_copy=False), lambda: KernelConfig(family="tf32x3", mainloop="ws_tma", async_copy=True)):
        with pytest.raises(ConfigError, match="async_copy = (true|false) with mainloop = 'ws_"):
            bad()
    assert ws.replace(mainloop="ws_tma").async_copy is False   # to_dict leaves async_copy to the mainloop


@pytest.mark.parametrize("change, rule, words", [
    (dict(mainloop="tensor"), "MAINLOOP", "'tensor' is not one of simt, mma_sync, wgmma, ws_cpasync, ws_tma"),
    (dict(scheduler="stream"), "SCHEDULER", "'stream' is not one of plain, persistent, pingpong"),
    (dict(mainloop="simt"), "MAINLOOP", "the tf32x3 family multiplies on the tensor cores"),
    (dict(persistent_blocks=8), "SCHEDULER", "persistent_blocks = 8 with scheduler = 'plain'"),
    (dict(scheduler="persistent", persistent_blocks=8), "SCHEDULER", "only the warp-specialized kernels"),
])
def test_unknown_or_misplaced_axis_values_are_refused_with_the_valid_ones(change, rule, words):
    found = dict((v.rule, v.reason) for v in explain(preset("tf32x3").replace(**change), "sm_90"))
    assert rule in found and words in found[rule], found
