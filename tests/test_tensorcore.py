"""The tensor-core families (tf32, tf32x3) on the CPU: names, rules, shared-memory maps, rendering,
and nvcc compiles for sm_80, sm_86 and sm_90 (marked slow: the presets for each, other variants for
one each in turn)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from gemmgen import build
from gemmgen.codegen import smem
from gemmgen.kernel.config import KernelConfig
from gemmgen.base.devices import DeviceSpec
from gemmgen.measure.gate import gate_bound
from gemmgen.kernel.presets import names, preset
from gemmgen.codegen.render import emit, render
from gemmgen.kernel.rules import explain
from gemmgen.kernel.rules.tensor_core import UNUSED

TC = ("tf32", "tf32x3")
LAYOUTS = ("NN", "NT", "TN", "TT")
ARCHS = ("sm_80", "sm_86", "sm_90")
TURING = DeviceSpec("t4", "Tesla T4", (7, 5), 40, 164 * 1024, 164 * 1024)


def _rules(cfg, device="sm_90"):
    return [v.rule for v in explain(cfg, device)]


# ---- presets and names ------------------------------------------------------------------------
def test_presets_follow_v13_and_are_valid_everywhere():
    assert names()[names().index("v13"):][:3] == ["v13", "tf32", "tf32x3"]
    for name in TC:
        for arch in ARCHS:
            assert _rules(preset(name, arch), arch) == [], (name, arch)


def test_names_encode_family_and_layout_and_differ_from_simt():
    a, b = preset("tf32"), preset("tf32x3")
    assert a.name.startswith("gg_tf32_nn_") and b.name.startswith("gg_tf32x3_nn_") and a.name != b.name
    assert b.replace(layout="TN").name.startswith("gg_tf32x3_tn_")


TC_FIELDS = [f for f in dataclasses.fields(KernelConfig) if f.name not in (*UNUSED, "label", "warps_k", "swap")]


def _changed(value):
    if isinstance(value, bool):
        return not value
    return value * 2 if value > 1 else value + 1


@pytest.mark.parametrize("field", TC_FIELDS, ids=lambda f: f.name)
def test_every_tensor_core_parameter_changes_the_name(field):
    base = preset("tf32x3").replace(split_k=2, reduce="workspace")
    other = {"family": "tf32", "layout": "TT", "reduce": "atomic", "bounds": "none", "dtype": "f16", "mainloop": "wgmma",
             "scheduler": "persistent"}
    value = other[field.name] if field.name in other else _changed(getattr(base, field.name))
    assert base.replace(**{field.name: value}).name != base.name


def test_precision_and_gate_bound():
    assert preset("tf32").precision == "tf32" and preset("tf32x3").precision == "fp32"
    assert gate_bound(preset("tf32")) == 5e-3 and gate_bound(preset("tf32x3")) == gate_bound(preset("v10")) == 1e-5


# ---- rules --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", TC)
def test_tensor_core_configs_need_sm_80(name):
    assert _rules(preset(name), TURING) == ["TENSOR_CORE_ARCH"]
    assert "sm_75" in str(explain(preset(name), TURING)[0])


@pytest.mark.parametrize("change, rule", [
    (dict(WM=24), "MMA_TILE"),                       # not a whole number of 16-row mma tiles
    (dict(BK=12), "MMA_TILE"),
    (dict(async_copy=False), "PIPELINE"),
    (dict(stages=1), "PIPELINE"),
    (dict(TM=4), "TENSOR_CORE_DEFAULTS"),
    (dict(frag="shfl"), "TENSOR_CORE_DEFAULTS"),
    (dict(pad_a=2, swz_a=1), "TC_PADDING"),
    (dict(swz_b=4), "TC_SWIZZLE"),
    (dict(pad_a=4), "TC_SWIZZLE"),                   # padding and swizzle together
    (dict(BM=256, BN=256, WM=128, WN=128), "TC_REGISTERS"),
    (dict(BN=96, WN=64), "WARP_TILE"),
    (dict(split_k=65), "SPLIT_K"),
])
def test_rules_name_what_is_wrong(change, rule):
    assert rule in _rules(preset("tf32x3").replace(**change))


def test_shared_memory_rule_applies_per_target():
    big = preset("tf32x3").replace(BK=32, stages=4, swz_a=1, swz_b=1, pad_a=4, pad_b=8)
    assert _rules(big, "sm_90") == [] and "SHARED_MEMORY" in _rules(big, "sm_86")


# ---- shared-memory maps -------------------------------------------------------------------------
def _offset_fn(cfg, op):
    expr = smem.offset(cfg, op)
    return lambda k, x: eval(expr, {}, {"k": k, "m": x, "n": x})


def _variants():
    out = []
    for lay in LAYOUTS:
        for bk in (8, 16, 32, 64):
            out.append(preset("tf32x3").replace(layout=lay, BK=bk, stages=2))
            out.append(preset("tf32x3").replace(layout=lay, BK=bk, stages=2, swz_a=1, swz_b=1, pad_a=4, pad_b=8))
    return out


@pytest.mark.parametrize("cfg", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.BK >= 32 else [])
                                 for c in _variants()])   # BK 32 and 64 walk 2-4x the offsets: seconds each
def test_offsets_are_a_bijection_onto_the_stage(cfg):
    for op, other, (rows, ld) in (("A", cfg.BM, cfg.a_tile_shape), ("B", cfg.BN, cfg.b_tile_shape)):
        off = _offset_fn(cfg, op)
        seen = {off(k, x) for k in range(cfg.BK) for x in range(other)}
        assert len(seen) == cfg.BK * other and min(seen) >= 0 and max(seen) < rows * ld, op
        # a 16-byte chunk of the contiguous side stays contiguous (cp.async, ldmatrix rows)
        for k in range(0, cfg.BK, 4 if not getattr(cfg, f"{op.lower()}_smem_kmajor") else 1):
            for x in range(0, other, 4 if getattr(cfg, f"{op.lower()}_smem_kmajor") else 1):
                run = [off(k + e, x) if not getattr(cfg, f"{op.lower()}_smem_kmajor") else off(k, x + e)
                       for e in range(4)]
                assert run == list(range(run[0], run[0] + 4)) and run[0] % 4 == 0


def _wavefronts(addresses):
    """Shared-memory wavefronts of one warp access: the most distinct 4-byte words in one bank."""
    banks = {}
    for a in set(addresses):
        banks.setdefault(a % 32, set()).add(a)
    return max(len(v) for v in banks.values())


def _fragment_loads(cfg, op, kk, base):
    """Float offsets each lane reads in one fragment load instruction of A (m16 tile) or B (n8 tile)."""
    off, kmajor = _offset_fn(cfg, op), getattr(cfg, f"{op.lower()}_smem_kmajor")
    if kmajor:   # scalar LDS: lane (grp, tig) reads (k = kk + tig, x = base + grp)
        return [[off(kk + lane % 4, base + lane // 4) for lane in range(32)]]
    # ldmatrix: each 8-lane phase reads 8 rows of 16 bytes at the same k chunk
    return [[off(kk + 4 * (q % 2), base + r + 8 * (q // 2)) + e for r in range(8) for e in range(4)]
            for q in range(4)]


@pytest.mark.parametrize("name", TC)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_preset_fragment_loads_are_conflict_free(name, layout):
    cfg = preset(name).replace(layout=layout)
    for op, width in (("A", cfg.BM), ("B", cfg.BN)):
        for kk in range(0, cfg.BK, 8):
            for base in range(0, width, 16):
                for phase in _fragment_loads(cfg, op, kk, base):
                    assert _wavefronts(phase) == 1, (op, kk, base)


# ---- rendering ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
def test_render_uses_ldmatrix_where_k_is_contiguous(layout):
    code = emit(preset("tf32x3").replace(layout=layout), "sm_90")
    # 3xTF32 splits each operand by masking (truncation): no cvt.rna rounding, no to_tf32 helper
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in code and "cvt.rna.tf32.f32" not in code
    assert ("ldmatrix_x4(ra[i]" in code) == (layout[0] == "N")
    assert ("ldmatrix_x4(r, &sb" in code) == (layout[1] == "T")


def test_tf32x3_has_three_products_per_tile_and_tf32_one():
    x3, x1 = emit(preset("tf32x3"), "sm_90"), emit(preset("tf32"), "sm_90")
    # 3xTF32 sums each k8 step's three products in a fresh partial sum p, then adds p into acc (RN)
    assert len(re.findall(r"mma_tf32\(p, a_(small|big)\[i\], b_(big|small)\)", x3)) == 3
    assert "acc[i][j][0] += p[0]" in x3 and "bits & 0xffffe000u" in x3
    assert len(re.findall(r"mma_tf32\(acc\[i\]\[j\]", x1)) == 1 and "a_small" not in x1 and "cvt.rna.tf32.f32" in x1


def test_split_k_kernels_and_harness_bound():
    src = render(preset("tf32").replace(split_k=2, reduce="workspace"), "sm_90")
    assert src.kernel_names == (src.name, f"{src.name}_reduce") and f"{src.name}_reduce" in src.code
    assert "constexpr double BOUND = 5e-3;" in emit(preset("tf32"), "sm_90", harness=True)
    assert "constexpr double BOUND = 1e-5;" in emit(preset("tf32x3"), "sm_90", harness=True)


# ---- nvcc -------------------------------------------------------------------------------------------
def _compile_variants():
    tweaks = [{}, dict(bounds="none"), dict(split_k=3), dict(split_k=2, reduce="workspace"),
              dict(swz_a=1, swz_b=1, pad_a=4, pad_b=8), dict(BN=96, WN=24, BK=32, stages=3, swz_b=1), dict(vec=2, BK=32, stages=3)]
    variants = [preset("tf32x3").replace(family=f, layout=lay, **t) for f in TC for lay in LAYOUTS for t in tweaks]
    return variants + [preset("tf32").replace(layout=lay) for lay in LAYOUTS]


def _compile_jobs():
    """The presets in every layout for sm_80, sm_86 and sm_90; every other variant for one of them in
    turn. A tweak's template path does not depend on the architecture, so compiling each for all
    three (180 nvcc runs, about 4 of CI's 2-core minutes) checked little more than this (76)."""
    presets = {preset(n).replace(layout=lay).name for n in TC for lay in LAYOUTS}
    variants = _compile_variants()
    others = [c for c in variants if c.name not in presets]
    return ([(c, arch) for c in variants if c.name in presets for arch in ARCHS]
            + [(c, ARCHS[i % len(ARCHS)]) for i, c in enumerate(others)])


@pytest.fixture(scope="module")
def compiled():
    if not build.have_nvcc():
        pytest.skip("nvcc (CUDA toolkit) is not installed")
    jobs = _compile_jobs()
    results = build.compile_many([(render(c, arch), arch) for c, arch in jobs])
    return {(c.name, arch): r for (c, arch), r in zip(jobs, results)}


@pytest.mark.slow
def test_every_variant_compiles(compiled):
    bad = {k: r.reason for k, r in compiled.items() if not isinstance(r, build.PtxasReport)}
    assert not bad
    assert all(name in r.kernels for (name, _), r in compiled.items())
    assert {arch for _, arch in compiled} == set(ARCHS)
    assert {c.name for c in _compile_variants()} == {name for name, _ in compiled}   # every variant, once at least


@pytest.mark.slow
@pytest.mark.parametrize("name", TC)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_presets_do_not_spill_on_sm_90(compiled, name, layout):
    cfg = preset(name).replace(layout=layout)
    report = compiled[(cfg.name, "sm_90")]
    assert report.kernels[cfg.name].spills == 0, report.kernels[cfg.name]
