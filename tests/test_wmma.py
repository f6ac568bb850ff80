"""The half family (wmma: fp16/bf16 A and B, fp32 accumulation and C) on the CPU: presets, names,
rules, shared-memory maps, rendering, and nvcc compiles for sm_80, sm_86 and sm_90 (marked slow)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from gemmgen import build
from gemmgen.codegen import smem
from gemmgen.kernel.config import KernelConfig
from gemmgen.base.devices import DeviceSpec
from gemmgen.kernel.presets import names, preset
from gemmgen.codegen.render import emit, render
from gemmgen.kernel.rules import explain
from gemmgen.kernel.rules.wmma import UNUSED

WMMA = ("wmma", "wmma-db", "wmma-fast", "wmma-bf16", "wmma-direct")
LAYOUTS = ("NN", "NT", "TN", "TT")
ARCHS = ("sm_80", "sm_86", "sm_90")
_KB = 1024
TURING = DeviceSpec("t4", "Tesla T4", (7, 5), 40, 64 * _KB, 64 * _KB, max_threads_per_sm=1024)
VOLTA = DeviceSpec("v100", "Tesla V100", (7, 0), 80, 96 * _KB, 96 * _KB)
PASCAL = DeviceSpec("p100", "Tesla P100", (6, 0), 56, 48 * _KB, 64 * _KB)


def _rules(cfg, device="sm_90"):
    return [v.rule for v in explain(cfg, device)]


# ---- presets ------------------------------------------------------------------------------------
def test_presets_close_the_list_before_the_tma_presets():
    assert names()[-15:-10] == list(WMMA)
    assert names()[-10:-3] == ["tf32x3-tma", "tf32x3-ws", "tf32x3-ws-pp", "tf32x3-ws-m", "tf32-tma", "f16-tma", "bf16-tma"]


@pytest.mark.parametrize("target", ["sm_80", "sm_86", "sm_89", "sm_90", "rtx3090", "a10", "l4", "a100", "h100"])
def test_presets_are_valid_on_every_ampere_or_newer_target(target):
    for name in WMMA:
        assert _rules(preset(name), target) == [], (name, target)


def test_wmma_is_seed_004s_design():
    c = preset("wmma")
    assert (c.family, c.dtype, c.BM, c.BN, c.BK, c.WM, c.WN) == ("wmma", "f16", 128, 128, 32, 32, 32)
    assert c.threads == 512 and c.stages == 1 and not c.async_copy       # 16 warps, one buffer
    assert preset("wmma-db").stages == 2 and preset("wmma-db").async_copy


def test_fast_and_bf16_presets():
    fast, bf16 = preset("wmma-fast"), preset("wmma-bf16")
    assert (fast.BM, fast.BN, fast.WM, fast.WN, fast.threads, fast.stages) == (128, 256, 64, 64, 256, 3)
    assert bf16.replace(dtype="f16", label="wmma-fast") == fast and bf16.dtype == "bf16"
    direct = preset("wmma-direct")
    assert direct.replace(partials=True, label="wmma-fast") == fast and direct.name.endswith("_f16_direct")


def test_precision_is_the_input_type():
    assert preset("wmma").precision == "f16" and preset("wmma-bf16").precision == "bf16"


def test_geometry_counts_halves():
    fast = preset("wmma-fast")
    assert fast.a_tile_shape == (128, 40) and fast.b_tile_shape == (32, 264)      # rows padded by 8 halves
    assert fast.smem_per_stage == 2 * (128 * 40 + 32 * 264) == 27136
    assert fast.smem_bytes == 3 * 27136 and fast.accumulators == 128
    tt = fast.replace(layout="TT")
    assert tt.a_tile_shape == (32, 136) and tt.b_tile_shape == (256, 40)          # global layout kept
    assert fast.arithmetic_intensity() == 128 * 256 / (128 + 256)                  # 2-byte elements
    # one buffer of 18944 bytes, but the epilogue stages a 16x20-float tile per warp (16 warps)
    assert preset("wmma").smem_bytes == max(2 * (128 * 40 + 32 * 136), 16 * 16 * 20 * 4) == 20480


def test_fast_path_needs_16_byte_rows_of_halves():
    fast = preset("wmma-fast").replace(bounds="none")
    assert fast.accepts(1024, 1024, 1024) is None
    assert "lda % 8" in fast.accepts(1024, 1024, 1024, lda=1028)
    assert "ldc % 4" in fast.accepts(1024, 1024, 1024, ldc=1026)
    assert preset("wmma").accepts(4097, 4095, 1023, lda=1025) is None              # checked: anything


# ---- names --------------------------------------------------------------------------------------
WMMA_FIELDS = [f for f in dataclasses.fields(KernelConfig) if f.name not in (*UNUSED, "label", "warps_k", "swap")]


def _changed(value):
    if isinstance(value, bool):
        return not value
    return value * 2 if value > 1 else value + 1


@pytest.mark.parametrize("field", WMMA_FIELDS, ids=lambda f: f.name)
def test_every_wmma_parameter_changes_the_name(field):
    base = preset("wmma-fast").replace(split_k=2, reduce="workspace")
    other = {"family": "tf32", "layout": "TT", "reduce": "atomic", "bounds": "none", "dtype": "bf16", "mainloop": "wgmma",
             "scheduler": "persistent"}
    value = other[field.name] if field.name in other else _changed(getattr(base, field.name))
    assert base.replace(**{field.name: value}).name != base.name


def test_names_say_family_layout_and_type():
    assert preset("wmma").name.startswith("gg_wmma_nn_b128x128x32_w32x32_") and preset("wmma").name.endswith("_f16")
    assert preset("wmma-bf16").replace(layout="TN").name.startswith("gg_wmma_tn_")
    assert preset("wmma-bf16").name.endswith("_bf16")


# ---- rules --------------------------------------------------------------------------------------
def test_architectures_without_the_instructions_are_rejected():
    assert _rules(preset("wmma"), TURING) == [] and _rules(preset("wmma"), VOLTA) == []   # f16 wmma: sm_70+
    assert _rules(preset("wmma-db"), TURING) == ["WMMA_ARCH"]                             # cp.async: sm_80+
    assert _rules(preset("wmma-bf16").replace(BN=128), TURING) == ["WMMA_ARCH"]           # bf16: sm_80+
    assert "sm_80" in str(explain(preset("wmma-bf16").replace(BN=128), TURING)[0])
    assert _rules(preset("wmma"), PASCAL) == ["WMMA_ARCH"]                                # no tensor cores
    assert "sm_60" in str(explain(preset("wmma"), PASCAL)[0])


@pytest.mark.parametrize("cfg, rule", [
    (preset("wmma").replace(dtype="f32"), "DTYPE"),
    (preset("v10").replace(dtype="f16"), "DTYPE"),
    (preset("tf32").replace(dtype="bf16"), "DTYPE"),
    (preset("wmma").replace(dtype="f8"), "DTYPE"),
], ids=["wmma-f32", "simt-f16", "tf32-bf16", "unknown"])
def test_dtype_rule_holds_for_every_family(cfg, rule):
    assert rule in _rules(cfg)


@pytest.mark.parametrize("change, rule", [
    (dict(WM=24, BM=96), "WMMA_TILE"),                # not a whole number of 16-row wmma tiles
    (dict(BK=24), "WMMA_TILE"),                       # BK not a multiple of the wmma depth
    (dict(vec=3), "WMMA_VECTOR"),
    (dict(vec=1, stages=2, async_copy=True), "WMMA_VECTOR"),   # cp.async cannot copy one half
    (dict(stages=2), "WMMA_PIPELINE"),                # extra stages come from cp.async
    (dict(stages=5, async_copy=True), "WMMA_PIPELINE"),
    (dict(async_copy=True), "WMMA_PIPELINE"),         # a cp.async ring needs two stages
    (dict(pad_a=4), "WMMA_PADDING"),                  # rows must stay 16-byte aligned
    (dict(pad_b=72), "WMMA_PADDING"),
    (dict(swz_a=8), "WMMA_DEFAULTS"),                 # WMMA loads read strided rows: no swizzle
    (dict(TM=4), "WMMA_DEFAULTS"),
    (dict(a_kmajor=False), "WMMA_DEFAULTS"),
    (dict(mainloop="wgmma"), "MAINLOOP"),
    (dict(BM=256, BN=256, WM=128, WN=128), "WMMA_REGISTERS"),
    (dict(BN=96, WN=64), "WARP_TILE"),
    (dict(BN=48, WN=48), "VECTORIZE"),                # 32x48 B tile / (8 x 256 threads)
    (dict(split_k=65), "SPLIT_K"),
    (dict(bounds="maybe"), "BOUNDS"),
])
def test_rules_name_what_is_wrong(change, rule):
    assert rule in _rules(preset("wmma").replace(**change))


def test_shared_memory_rule_applies_per_target():
    four = preset("wmma-fast").replace(stages=4)                  # 4 x 27136 = 108544 bytes
    assert _rules(four, "sm_90") == [] and _rules(four, "sm_86") == ["SHARED_MEMORY"]


# ---- shared-memory maps ---------------------------------------------------------------------------
def _variants():
    out = []
    for lay in LAYOUTS:
        for bk, pad in ((16, 0), (32, 8), (64, 8), (32, 16)):
            out.append(preset("wmma-fast").replace(layout=lay, BK=bk, pad_a=pad, pad_b=pad))
    return out


def _offset_fn(cfg, op):
    expr = smem.offset(cfg, op)
    return lambda k, x: eval(expr, {}, {"k": k, "m": x, "n": x})


@pytest.mark.parametrize("cfg", _variants(), ids=lambda c: c.name)
def test_offsets_are_a_bijection_and_fragments_are_aligned(cfg):
    for op, other, (rows, ld) in (("A", cfg.BM, cfg.a_tile_shape), ("B", cfg.BN, cfg.b_tile_shape)):
        off = _offset_fn(cfg, op)
        seen = {off(k, x) for k in range(cfg.BK) for x in range(other)}
        assert len(seen) == cfg.BK * other and min(seen) >= 0 and max(seen) < rows * ld, op
        assert ld % 8 == 0, op                                  # every row starts on 16 bytes
        for k in range(0, cfg.BK, 16):                          # each 16x16 fragment on 32 bytes
            for x in range(0, other, 16):
                assert (2 * off(k, x)) % 32 == 0, (op, k, x)
        assert (2 * rows * ld) % 32 == 0                        # so is every stage


def _ldmatrix_phases(cfg, op, k0, x0):
    """16-byte chunks (as half offsets) of the 8-lane phases of one 16x16 fragment load: 8 rows of the
    tile's strided side at one 16-byte chunk of its contiguous side."""
    off, kmajor = _offset_fn(cfg, op), getattr(cfg, f"{op.lower()}_smem_kmajor")
    phases = []
    for half_rows in (0, 8):
        for chunk in (0, 8):
            if kmajor:   # rows are k, x contiguous
                phases.append([off(k0 + half_rows + r, x0 + chunk) for r in range(8)])
            else:        # rows are x (m or n), k contiguous
                phases.append([off(k0 + chunk, x0 + half_rows + r) for r in range(8)])
    return phases


@pytest.mark.parametrize("name", WMMA)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_padded_fragment_loads_are_conflict_free(name, layout):
    cfg = preset(name).replace(layout=layout)
    for op, width in (("A", cfg.BM), ("B", cfg.BN)):
        for k0 in range(0, cfg.BK, 16):
            for x0 in range(0, width, 16):
                for phase in _ldmatrix_phases(cfg, op, k0, x0):
                    groups = {(2 * h // 16) % 8 for h in phase}   # 8 groups of 4 banks in 128 bytes
                    assert len(groups) == 8, (op, k0, x0)


def test_unpadded_rows_conflict():
    cfg = preset("wmma").replace(pad_a=0, pad_b=0)                 # 64-byte rows of A: 2 per 128 bytes
    (phase, *_) = _ldmatrix_phases(cfg, "A", 0, 0)
    assert len({(2 * h // 16) % 8 for h in phase}) < 8


# ---- rendering ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_render_issues_wmma_with_the_layouts_of_the_tiles(layout, dtype):
    code = emit(preset("wmma-fast").replace(layout=layout, dtype=dtype), "sm_90")
    a, b = ("row" if layout[0] == "N" else "col"), ("row" if layout[1] == "N" else "col")
    assert f"wmma.load.a.sync.aligned.{a}.m16n16k16.shared.{dtype}" in code
    assert f"wmma.load.b.sync.aligned.{b}.m16n16k16.shared.{dtype}" in code
    types = "f32.f32" if dtype == "f16" else "f32.bf16.bf16.f32"
    assert f"wmma.mma.sync.aligned.{a}.{b}.m16n16k16.{types}" in code
    assert f"struct FragA {{ unsigned x[{8 if dtype == 'f16' else 4}]; }};" in code
    assert f"const {dtype}_bits* __restrict__ A" in code and "float* __restrict__ C" in code


def test_source_needs_no_header():
    """gemmgen compiles with NVRTC, which has no include path: the kernel declares what it uses."""
    for name in WMMA:
        assert "#include" not in emit(preset(name), "sm_90")


def test_each_stage_is_summed_into_a_fresh_partial():
    code = emit(preset("wmma-fast"), "sm_90")
    assert "wmma_mma(p, fa[i][ks], fb[ks])" in code and "acc[i][j].x[t] += p.x[t]" in code
    assert "constexpr int KP = KS < 2 ? KS : 2;" in code     # two k16 steps per partial


def test_direct_accumulation_has_no_partials():
    code = emit(preset("wmma-direct"), "sm_90")
    assert "wmma_mma(acc[i][j], fa[i], fb[j])" in code and "p.x[t]" not in code and "constexpr int KP" not in code
    assert _rules(preset("v8").replace(partials=False)) == ["PARTIALS"]


def test_pipeline_follows_stages():
    single, ring = emit(preset("wmma"), "sm_90"), emit(preset("wmma-fast"), "sm_90")
    assert "cp_async" not in single and "vec_t stA[" in single
    assert "cp.async.cg.shared.global" in ring and "cp_async_wait<STAGES - 2>()" in ring
    assert "cp.async.ca.shared.global" in emit(preset("wmma-fast").replace(vec=4), "sm_90")      # 8-byte copies


def test_split_k_kernels_and_epilogue():
    ws = render(preset("wmma-fast").replace(split_k=2, reduce="workspace"), "sm_90")
    assert ws.kernel_names == (ws.name, f"{ws.name}_reduce") and f"{ws.name}_reduce" in ws.code
    at = render(preset("wmma").replace(split_k=3), "sm_90")
    assert at.kernel_names == (f"{at.name}_scale", at.name) and "atomicAdd(" in at.code
    assert "wmma.store.d.sync.aligned.row.m16n16k16.shared.f32" in at.code


def test_harness_checks_against_gemm_ex():
    f16, bf16 = emit(preset("wmma"), "sm_90", harness=True), emit(preset("wmma-bf16"), "sm_90", harness=True)
    for code, cuda in ((f16, "CUDA_R_16F"), (bf16, "CUDA_R_16BF")):
        assert "cublasGemmEx(" in code and cuda in code and "CUBLAS_COMPUTE_32F" in code
        assert "constexpr double BOUND = 1e-4;" in code and "cublasSgemm(" not in code
    assert "__float2half_rn" in f16 and "__float2bfloat16_rn" in bf16


# ---- compiling --------------------------------------------------------------------------------------
def _compile_jobs():
    jobs = [(preset(n).replace(layout=lay), arch) for n in WMMA for lay in LAYOUTS for arch in ARCHS]
    tweaks = [dict(bounds="none"), dict(split_k=3), dict(split_k=2, reduce="workspace"), dict(vec=4),
              dict(vec=2, pad_a=0, pad_b=0), dict(stages=4)]
    jobs += [(preset("wmma-fast").replace(layout=lay, **t), "sm_90") for lay in ("NN", "TT") for t in tweaks]
    jobs += [(preset("wmma").replace(layout=lay, vec=1, bounds="none"), "sm_80") for lay in ("NT", "TN")]
    jobs += [(preset("wmma-db").replace(layout=lay, BK=64), "sm_90") for lay in ("NN", "TT")]   # 2 partials a stage
    jobs += [(preset("wmma-db").replace(dtype="bf16", layout=lay, split_k=2), "sm_86") for lay in ("NN", "TT")]
    return jobs + [(preset("wmma"), "sm_75")]     # fp16 wmma without cp.async runs on Turing


@pytest.fixture(scope="module")
def compiled():
    if not build.have_nvcc():
        pytest.skip("nvcc (CUDA toolkit) is not installed")
    jobs = _compile_jobs()
    results = build.compile_many([(render(c, TURING if arch == "sm_75" else arch), arch) for c, arch in jobs])
    return {(c.name, arch): r for (c, arch), r in zip(jobs, results)}


@pytest.mark.slow
def test_every_variant_compiles(compiled):
    bad = {k: r.reason for k, r in compiled.items() if not isinstance(r, build.PtxasReport)}
    assert not bad
    assert all(name in r.kernels for (name, _), r in compiled.items())
    assert all(k.registers <= 255 for r in compiled.values() for k in r.kernels.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", WMMA)
@pytest.mark.parametrize("arch", ARCHS)
def test_presets_do_not_spill(compiled, name, arch):
    cfg = preset(name)
    kernel = compiled[(cfg.name, arch)].kernels[cfg.name]
    assert kernel.spills == 0, kernel


@pytest.mark.slow
@pytest.mark.parametrize("name", ["wmma", "wmma-db"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_small_warp_tiles_do_not_spill_in_any_layout(compiled, name, layout):
    cfg = preset(name).replace(layout=layout)
    for arch in ARCHS:
        assert compiled[(cfg.name, arch)].kernels[cfg.name].spills == 0, arch


@pytest.mark.slow
def test_64x64_warp_tiles_stay_within_registers_in_every_layout(compiled):
    """128 accumulators + a stage's fragments fill the 255 registers: ptxas may spill a pointer or two
    (a few bytes, L1-resident) in some layouts, never the accumulators."""
    for name in ("wmma-fast", "wmma-bf16", "wmma-direct"):
        for layout in LAYOUTS:
            cfg = preset(name).replace(layout=layout)
            for arch in ARCHS:
                assert compiled[(cfg.name, arch)].kernels[cfg.name].spills <= 64, (name, layout, arch)


def _nvrtc_or_skip() -> None:
    """Skip only where NVRTC is really absent: no CuPy, or CuPy without the NVRTC library (the cuda12
    and cuda13 extras install both)."""
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="CuPy is not installed: pip install 'gemmgen[cuda13]'")
    from gemmgen.build.nvrtc import nvrtc_version

    try:
        nvrtc_version()
    except Exception as err:   # cuda.pathfinder's DynamicLibNotFoundError, or CuPy's own on older versions
        if "nvrtc" not in str(err).lower():
            raise
        pytest.skip(f"the NVRTC library is not installed ({str(err).splitlines()[0]}): pip install 'gemmgen[cuda13]'")


@pytest.mark.slow   # seconds: many draws, a compile or several processes
def test_nvrtc_compiles_the_source_as_it_is():
    """The path gemmgen takes on a GPU machine: NVRTC, no include path (no GPU needed)."""
    _nvrtc_or_skip()
    from gemmgen.build.nvrtc import _nvrtc_cubin, OPTIONS

    for name in ("wmma", "wmma-bf16"):
        cubin, _ = _nvrtc_cubin(render(preset(name), "sm_80").code, name, (*OPTIONS, "-arch=sm_80"))
        assert len(cubin) > 0


def test_header_lists_the_element_type():
    code = emit(preset("wmma-bf16"), "sm_90")
    assert re.search(r"A and B bf16 \(bfloat16\), fp32 accumulation, C fp32", code)
    assert "Leading dimensions count elements" in code
