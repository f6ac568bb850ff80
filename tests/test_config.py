"""KernelConfig: dictionary round trips, errors that name the bad key, procedural names, geometry."""
from __future__ import annotations

import dataclasses
import json

import pytest

from gemmgen.kernel.config import BOUNDS, ConfigError, DTYPES, FRAGMENT_LOADS, KernelConfig, LAYOUTS, MMA_KINDS, REDUCTIONS
from gemmgen.kernel.presets import all_presets, names, preset

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
               "family": ("naive", "simt"), "dtype": DTYPES, "mma": MMA_KINDS}
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
