"""The warp-specialized TMA variant of the Hopper wgmma kernels (mainloop="ws_tma"), f16/bf16 NT:
its rules (common + TMA_*), geometry and name, which shapes and leading dimensions it accepts, the
arguments of its tensor maps, what it renders to, and nvcc compiles for sm_90a (marked slow)."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from gemmgen import build
from gemmgen.base.devices import for_arch
from gemmgen.codegen.render import emit, render
from gemmgen.kernel.config import KernelConfig
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules import InvalidConfig, explain
from gemmgen.kernel.rules import common as common_rules
from gemmgen.measure import tensormap
from gemmgen.measure.launch import LoadedKernel

F16 = preset("f16-tma").replace(label="")   # 128x256x64, 4 stages, accumulating on the tensor cores
CONFIGS = {
    "f16-128x256-direct": F16,
    "bf16-128x256-direct": F16.replace(dtype="bf16"),
    "f16-128x128-partials": F16.replace(BN=128, WN=128, stages=5, partials=True),
}
COMMON = {r.name for r in common_rules.RULES}


def _explain(cfg, arch="sm_90"):
    return [(v.rule, v.reason) for v in explain(cfg, for_arch(arch))]


def _rules(cfg, arch="sm_90"):
    return [rule for rule, _ in _explain(cfg, arch)]


# ---- rules ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_valid_on_sm_90_and_rejected_before(name):
    cfg = CONFIGS[name]
    assert _explain(cfg) == []
    for arch in ("sm_80", "sm_86", "sm_89"):
        found = dict(_explain(cfg, arch))
        assert "TMA_KIND" in found, (arch, found)
        assert "sm_90a" in found["TMA_KIND"] and arch in found["TMA_KIND"]
    with pytest.raises(InvalidConfig, match="TMA_KIND"):
        render(cfg, for_arch("sm_80"))


# (the change to the 128x256 f16 config, the rule that names it, text the reason must contain)
BROKEN = {
    "bk32": (dict(BK=32), "TMA_TILE", "BK = 32"),
    "bf16-bk32": (dict(dtype="bf16", BK=32), "TMA_TILE", "BK = 32"),
    "wn-not-bn": (dict(WN=128), "TMA_TILE", "WN = 128"),
    "bn-past-256": (dict(BN=264, WN=264), "TMA_TILE", "BN = 264"),
    "wm32": (dict(WM=32), "TMA_TILE", "WM = 32"),
    "four-consumers": (dict(BM=256, stages=3), "TMA_TILE", "BM = 256"),
    "one-stage": (dict(stages=1), "TMA_TILE", "stages = 1"),
    "layout-nn": (dict(layout="NN"), "TMA_LAYOUT", "layout NN"),
    "layout-tn": (dict(layout="TN"), "TMA_LAYOUT", "layout TN"),
    "pad-a": (dict(pad_a=8), "TMA_DEFAULTS", "pad_a"),
    "pad-b": (dict(pad_b=8), "TMA_DEFAULTS", "pad_b"),
    "async-copy-f16": (dict(mainloop="ws_cpasync"), "TMA_COPY", "tf32x3 family only"),
    "three-blocks": (dict(min_blocks=3), "TMA_OCCUPANCY", "min_blocks = 3: 1 to 2 blocks"),
    "vec4": (dict(vec=4), "TMA_DEFAULTS", "vec = 4"),
    "no-swizzle": (dict(swz_a=1), "TMA_DEFAULTS", "swz_a = 1"),
    "fast-path": (dict(bounds="none"), "TMA_DEFAULTS", "bounds = 'none'"),
    "wgmma-ring": (dict(mainloop="wgmma"), "MAINLOOP", "'wgmma'"),
    "partials-at-n256": (dict(partials=True), "TMA_REGISTERS", "about 280 registers"),
    "8-stages": (dict(stages=8), "TMA_SHARED_MEMORY", f"{8 * (128 + 256) * 64 * 2 + 16 * 8} bytes"),
    "simt": (dict(family="simt", dtype="f32"), "TMA_KIND", "simt"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_each_rule_names_what_is_wrong(case):
    change, rule, text = BROKEN[case]
    found = _explain(F16.replace(**change))
    reasons = [reason for name, reason in found if name == rule]
    assert reasons, (rule, found)
    assert text in reasons[0], reasons[0]
    # a TMA config answers to the common rules and its own, never to the cp.async kernels' rules
    assert all(name in COMMON or name.startswith("TMA_") for name, _ in found) or rule == "MAINLOOP", found


def test_split_k_is_a_tma_parameter():
    """K slices of whole stages, atomics or a workspace: valid on the TMA kernels like on the others."""
    for reduce in ("atomic", "workspace"):
        assert _rules(F16.replace(split_k=4, reduce=reduce)) == []


def test_single_breaks_give_single_violations():
    """One wrong parameter of the valid config is one violation, not a cascade."""
    for change, rule in ((dict(BK=32), "TMA_TILE"), (dict(layout="NN"), "TMA_LAYOUT"),
                         (dict(pad_a=8), "TMA_DEFAULTS"),
                         (dict(partials=True), "TMA_REGISTERS"), (dict(stages=8), "TMA_SHARED_MEMORY")):
        assert _rules(F16.replace(**change)) == [rule], change


def test_shared_memory_limit_is_the_devices():
    """Stages fit the H100's 227 KB opt-in (232448 bytes): 4 at 128x256 (196672), not 5; 7 at 128x128
    (229488), not 8."""
    assert _rules(F16.replace(stages=5)) == ["TMA_SHARED_MEMORY"]
    assert _rules(CONFIGS["f16-128x128-partials"].replace(stages=7)) == []
    assert _rules(CONFIGS["f16-128x128-partials"].replace(stages=8)) == ["TMA_SHARED_MEMORY"]
    assert "TMA_SHARED_MEMORY" in _rules(F16, "sm_80")        # the A100 has 163 KB


def test_partials_need_half_the_columns():
    """partials = true keeps two sets of accumulators: 128 columns fit a consumer's registers, 256 not."""
    assert _rules(CONFIGS["f16-128x128-partials"]) == []
    reason = dict(_explain(F16.replace(partials=True)))["TMA_REGISTERS"]
    assert "partials = false" in reason and "232" in reason


# ---- geometry and name ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_geometry(name):
    cfg = CONFIGS[name]
    consumers = cfg.BM // cfg.WM
    assert cfg.threads == 128 * consumers + 128 == 384
    assert cfg.block() == (cfg.threads, 1, 1)
    assert cfg.smem_bytes == cfg.stages * (cfg.BM + cfg.BN) * cfg.BK * 2 + 16 * cfg.stages
    assert cfg.accumulators == cfg.WM * cfg.BN // 128
    assert cfg.grid(1000, 1000, 1000) == (-(-1000 // cfg.BM) * -(-1000 // cfg.BN), 1, 1)
    assert cfg.target_arch("sm_90") == "sm_90a"


@pytest.mark.parametrize("name", CONFIGS)
def test_name_says_tma(name):
    cfg = CONFIGS[name]
    plain = cfg.replace(mainloop="wgmma")
    assert cfg.name != plain.name
    assert cfg.name == plain.name.replace("_wg", "_wg_tma")
    # the accumulation comes last: "..._wg_tma" with partials, "..._wg_tma_direct" without
    assert cfg.name.endswith("_wg_tma" if cfg.partials else "_wg_tma_direct")
    assert f"_{cfg.dtype}_wg_tma" in cfg.name
    assert KernelConfig.from_dict(cfg.to_dict()) == cfg


# ---- accepts --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_accepts_ragged_shapes(name):
    cfg = CONFIGS[name]
    for M, N, K in ((777, 1234, 520), (1, 1, 8), (129, 257, 64), (333, 4100, 88), (4100, 64, 4096)):
        assert cfg.accepts(M, N, K) is None, (M, N, K)
        assert cfg.accepts(M, N, K, lda=K + 8, ldb=K + 8, ldc=N + 1) is None   # any ldc: C is checked


@pytest.mark.parametrize("name", CONFIGS)
def test_refuses_rows_that_are_not_16_bytes_apart(name):
    cfg = CONFIGS[name]
    assert cfg.accepts(777, 1234, 520, lda=521) == "TMA needs lda % 8 == 0 (16-byte rows), got lda=521"
    assert cfg.accepts(777, 1234, 520, ldb=524) == "TMA needs ldb % 8 == 0 (16-byte rows), got ldb=524"
    assert "lda=100" in cfg.accepts(100, 100, 100)           # K not a multiple of 8, rows of K
    assert "ldb=100" in cfg.accepts(100, 100, 100, lda=104)
    assert "below its row length" in cfg.accepts(64, 64, 64, lda=56)


@pytest.mark.parametrize("name", CONFIGS)
def test_refuses_operands_that_do_not_start_on_16_bytes(name):
    """A descriptor's base address must be 16-byte aligned: the dispatch passes aligned=False for
    operands that start elsewhere (a slice one element in), so no TMA kernel is picked for them."""
    cfg = CONFIGS[name]
    assert cfg.accepts(1024, 1024, 1024) is None
    assert cfg.accepts(1024, 1024, 1024, aligned=False).startswith("TMA reads A and B from 16-byte aligned")
    assert cfg.replace(mainloop="wgmma", layout="NT").accepts(1024, 1024, 1024, aligned=False) is None


# ---- tensor maps ----------------------------------------------------------------------------------------
def test_encode_args():
    kind, rank, ptr, dims, strides, box = tensormap.encode_args(0x7F0000001000, "f16", inner=520, outer=777,
                                                                ld=528, box_inner=64, box_outer=128)
    assert (kind, rank, ptr) == (6, 2, 0x7F0000001000)          # CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    assert dims == [520, 777] and strides == [528 * 2] and box == [64, 128]
    assert tensormap.encode_args(0x1000, "bf16", 8, 1, 8, 64, 256) == (9, 2, 0x1000, [8, 1], [16], [64, 256])
    assert tensormap.encode_args(0x1000, "f32", 4, 3, 4, 32, 128)[4] == [16]
    assert tensormap.ctypes.sizeof(tensormap.TmaMap) == tensormap.TMA_MAP_BYTES == 128


@pytest.mark.parametrize("ptr", [0x1008, 0x1002, 0x1001])
def test_encode_args_refuses_a_misaligned_matrix(ptr):
    with pytest.raises(ValueError, match="16-byte aligned"):
        tensormap.encode_args(ptr, "f16", 64, 64, 64, 64, 128)


@pytest.mark.parametrize("dtype, ld", [("f16", 100), ("bf16", 521), ("f16", 4), ("f32", 6)])
def test_encode_args_refuses_rows_not_16_bytes_apart(dtype, ld):
    with pytest.raises(ValueError, match=f"leading dimension {ld} "):
        tensormap.encode_args(0x1000, dtype, 2, 64, ld, 64, 128)


def test_launch_describes_both_operands_k_major(monkeypatch):
    """LoadedKernel's tensor maps: A as M rows of K (lda apart), B as N rows of K (ldb apart), boxes of
    BK x BM and BK x BN; cached per operands. (No GPU: encode is replaced by encode_args.)"""
    calls = []
    monkeypatch.setattr("gemmgen.measure.launch.encode", lambda *a: calls.append(a) or tensormap.encode_args(*a))
    cfg = CONFIGS["bf16-128x256-direct"]
    fake = SimpleNamespace(config=cfg, _maps={})
    ops = (0x10000, 528, 0x90000, 536, 777, 1234, 520)   # A, lda, B, ldb, M, N, K
    maps = LoadedKernel.tensor_maps(fake, *ops)
    assert calls == [(0x10000, "bf16", 520, 777, 528, 64, 128), (0x90000, "bf16", 520, 1234, 536, 64, 256)]
    assert maps[0][3:5] == ([520, 777], [1056]) and maps[1][3:5] == ([520, 1234], [1072])
    assert LoadedKernel.tensor_maps(fake, *ops) is maps and len(calls) == 2


# ---- rendering ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_renders_the_tma_pipeline(name):
    cfg = CONFIGS[name]
    src = emit(cfg, "sm_90")
    t = cfg.dtype
    for needle in ("setmaxnreg.dec.sync.aligned.u32", "setmaxnreg.inc.sync.aligned.u32",
                   "cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx",
                   f"wgmma.mma_async.sync.aligned.m64n{cfg.BN}k16.f32.{t}.{t}",
                   "const __grid_constant__ TmaMap tmA, const __grid_constant__ TmaMap tmB",
                   f"__launch_bounds__(THREADS, 1) {cfg.name}(", "constexpr int THREADS = 384;",
                   f"constexpr int STAGES = {cfg.stages};", "setmaxnreg_dec<40>", "setmaxnreg_inc<232>"):
        assert needle in src, needle
    other = "bf16" if t == "f16" else "f16"
    assert f".f32.{other}.{other}" not in src
    assert "cp.async.cg" not in src and "cp.async.ca" not in src        # no cp.async ring
    assert src.count("__syncthreads()") == 1                             # after the mbarrier inits only
    assert ("float part[MI][NACC];" in src) == cfg.partials
    assert ("wgmma_wait<1>();" in src) == (not cfg.partials)


def test_epilogue_stages_c_in_the_drained_stages_where_it_fits():
    """Each consumer's WM x BN tile of C goes through shared memory (then row-wise coalesced stores) where
    the consumers' tiles fit in the stages; else the fragments go straight to C."""
    staged = emit(preset("tf32x3-tma"), "sm_90")             # 2 x 64 x 200 floats in 3 stages and small parts
    assert "constexpr int C_LD = 200;" in staged and 'bar.sync 1, %0;" :: "r"(CONSUMERS * 128)' in staged
    assert "float4* const p = reinterpret_cast<float4*>(out + (long long)m * ldo + n);" in staged
    tight = preset("tf32-tma").replace(stages=2)             # 2 x 64 x 264 floats > 2 stages of 384 x 32
    direct = emit(tight, "sm_90")
    assert "C_LD" not in direct and "bar.sync" not in direct
    assert "float2* const p = reinterpret_cast<float2*>(row + n);" in direct


PERSISTENT = preset("tf32x3-tma").replace(stages=2, scheduler="persistent", persistent_blocks=132, label="")   # 2 stages + C's 128 x 200 floats


def test_persistent_grid_geometry_and_name():
    """scheduler = 'persistent', persistent_blocks = n: min(n, tiles) blocks, C's staging tile of its own in shared memory, a p<n> in the
    name, and the key written only where set (older configs read back unchanged)."""
    base = PERSISTENT.replace(scheduler="plain", persistent_blocks=0)
    assert PERSISTENT.grid(4096, 4096, 4096) == (132, 1, 1) and PERSISTENT.grid(100, 100, 8) == (1, 1, 1)
    assert base.grid(4096, 4096, 4096) == (32 * 24, 1, 1)
    assert PERSISTENT.smem_bytes - base.smem_bytes == 128 * 200 * 4
    assert "_p132_" in PERSISTENT.name and not re.search(r"_p\d+_", base.name)
    assert "scheduler" not in base.to_dict() and "persistent_blocks" not in base.to_dict()
    assert (PERSISTENT.to_dict()["scheduler"], PERSISTENT.to_dict()["persistent_blocks"]) == ("persistent", 132)
    assert KernelConfig.from_dict(PERSISTENT.to_dict()) == PERSISTENT
    assert _explain(PERSISTENT) == []


@pytest.mark.parametrize("change, why", [
    (dict(scheduler="persistent", persistent_blocks=-1), "persistent_blocks = -1"),
    (dict(split_k=2), "split_k = 2"),
])
def test_persistent_rule(change, why):
    found = dict(_explain(PERSISTENT.replace(**change)))
    assert "SCHEDULER" in found and why in found["SCHEDULER"], found


def test_persistent_is_for_tma_kernels_only():
    found = dict(_explain(preset("tf32x3-wgmma").replace(scheduler="persistent", persistent_blocks=4)))
    assert "only the warp-specialized kernels" in found["SCHEDULER"], found


def test_persistent_staging_tile_counts_against_shared_memory():
    found = dict(_explain(PERSISTENT.replace(stages=3)))   # 3 x 61440 + 102400 bytes > 232448
    assert "C's 128x200 staging tile" in found["TMA_SHARED_MEMORY"], found


def test_persistent_kernel_walks_tiles_and_stages_c_apart():
    """The producer, the split warps and the consumers walk the same tiles (tile_origin of pid, a grid
    apart), count stages over all of them (it), and C is staged in its own tile, not the stages."""
    src = emit(PERSISTENT, "sm_90")
    assert src.count("for (int pid = blockIdx.x; pid < ntiles; pid += gridDim.x)") == 3
    assert src.count("tile_origin(pid, tiles_m, tiles_n, bm0, bn0);") == 3
    assert "for (int kt = 0; kt < ktiles; ++kt, ++it)" in src and "mbar_wait(&empty[s], ((it / STAGES) - 1) & 1)" in src
    assert "float* const cbuf = cstage + cw * WM * C_LD;" in src and "CONSUMERS * 128" not in src
    plain = emit(PERSISTENT.replace(scheduler="plain", persistent_blocks=0), "sm_90")
    assert "ntiles" not in plain and "++it" not in plain and "tile_origin" not in plain


def test_c_rows_off_16_bytes_are_staged_shifted():
    """Where C's rows are not 16-byte aligned, each row is staged shifted onto C's 16-byte chunks."""
    src = emit(preset("tf32x3-tma"), "sm_90")
    assert "constexpr int CHUNKS = BN / 4 + 1;" in src
    assert "return (int)((lead + (long long)m * ldo) & 3);" in src and "shift(m0 + r)" in src
    split = emit(preset("tf32x3-tma").replace(split_k=2), "sm_90")
    assert "CHUNKS" not in split and "atomicAdd" in split


def test_rendering_validates_first():
    with pytest.raises(InvalidConfig, match="TMA_LAYOUT"):
        emit(F16.replace(layout="NN"), "sm_90")
    with pytest.raises(InvalidConfig, match="TMA_KIND"):
        emit(F16, "sm_86")


# ---- nvcc -----------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
@pytest.mark.parametrize("name", [*CONFIGS, "tf32x3-tma", "tf32-tma", "persistent"])
def test_compiles_for_sm_90a_without_spills(name):
    cfg = CONFIGS.get(name) or (PERSISTENT if name == "persistent" else preset(name))
    report = build.compile_cubin(render(cfg, for_arch("sm_90")), "sm_90")
    assert report.arch == "sm_90a"
    res = report[cfg.name]
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_bytes == 0, res
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", report.log), report.log
    # __launch_bounds__(384, 1): the launch allocation setmaxnreg redistributes (40 + 2 x 232 = 3 x 168)
    assert res.registers <= 65536 // cfg.threads, res
    # setmaxnreg ignored (C7508) or wgmma serialized would each cost the design its point
    bad = [line for line in report.log.splitlines() if re.search(r"serializ|C7508|setmaxnreg", line, re.I)]
    assert not bad, bad


WS_NARROW = preset("tf32x3-ws").replace(BN=32, WN=32, stages=4)


def test_two_narrow_blocks_share_an_sm_without_setmaxnreg():
    """min_blocks = 2 on a narrow warp-specialized kernel: two blocks an SM hide each other's copy
    latency (H200, 2680x28x10796: 79.5 -> 69.0 us). Each keeps __launch_bounds__' registers, so the
    source moves none with setmaxnreg, where the one-block kernel does."""
    two = WS_NARROW.replace(min_blocks=2)
    assert _rules(two) == [] and two.name.endswith("_o2_wg_ws")
    one, shared = render(WS_NARROW, "sm_90").code, render(two, "sm_90").code
    assert "setmaxnreg_inc<216>();" in one and "setmaxnreg_dec<72>();" in one
    kernel = shared.split("__launch_bounds__(THREADS, 2)")[1]
    assert not re.search(r"setmaxnreg_(inc|dec)<\d+>\(\);", kernel)   # no call in the kernel (the helpers stay)
    assert "__launch_bounds__(THREADS, 2)" in shared and "keeps the 80 registers" in shared
    from gemmgen.cli.describe import features
    assert "2 blocks an SM, each thread keeping" in " ".join(features(two))
    assert "with setmaxnreg" in " ".join(features(WS_NARROW))


def test_two_blocks_accept_the_timed_tiles():
    """The tiles timed with two blocks an SM stay valid: 128x32 and 64x64 fit the cap, 128x48 spills
    ~100 bytes under it and still ran fastest on some few-row and few-column shapes."""
    for change in (dict(), dict(BN=48, WN=48, stages=3), dict(BM=64, BN=64, WN=64), dict(BM=64)):
        assert _rules(WS_NARROW.replace(min_blocks=2, **change)) == [], change


@pytest.mark.parametrize("change, rule, text", [
    (dict(stages=6), "TMA_OCCUPANCY", "2 blocks x 147600 bytes"),
    (dict(BN=64, WN=64, stages=3), "TMA_REGISTERS", "about 112 registers per consumer thread"),
    (dict(BM=192, stages=3), "TMA_OCCUPANCY", "leaves 64 registers a thread, under the 72"),
    (dict(BN=56, WN=56, stages=3), "TMA_REGISTERS", "about 104 registers per consumer thread"),   # spilled 224 bytes
    (dict(BM=64, BN=96, WN=96, stages=3), "TMA_REGISTERS", "about 152 registers per consumer thread"),   # 196
])
def test_two_blocks_must_fit_an_sm(change, rule, text):
    found = [(n, r) for n, r in _explain(WS_NARROW.replace(min_blocks=2, **change)) if n == rule]
    assert found and text in found[0][1], found
