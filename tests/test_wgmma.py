"""The Hopper wgmma variant of the TF32 families (mainloop="wgmma"): rules, geometry, the shared-memory
layout wgmma's 128-byte swizzle descriptor names, and nvcc compiles for sm_90a (marked slow)."""
from __future__ import annotations

import re

import pytest

from gemmgen import build
from gemmgen.base.devices import for_arch
from gemmgen.kernel.presets import all_presets, names, preset, runs_on
from gemmgen.codegen.render import emit, render
from gemmgen.kernel.rules import explain, InvalidConfig

WGMMA = [n for n in names() if n.endswith("-wgmma")]


def _rules(cfg, arch="sm_90"):
    return [v.rule for v in explain(cfg, for_arch(arch))]


def test_presets_exist_only_on_hopper():
    assert WGMMA == ["tf32x3-wgmma", "tf32-wgmma"]
    for arch in ("sm_80", "sm_86", "sm_89"):
        assert not any(c.uses_wgmma for c in all_presets(arch))
        assert all(not runs_on(n, arch) for n in WGMMA)
    assert {c.label for c in all_presets("sm_90")} >= set(WGMMA)


@pytest.mark.parametrize("name", WGMMA)
def test_presets_are_valid_on_sm_90_and_rejected_before(name):
    cfg = preset(name)
    assert _rules(cfg) == []
    for arch in ("sm_80", "sm_86", "sm_89"):
        assert "WGMMA_ARCH" in _rules(cfg, arch)   # (and SHARED_MEMORY where the 100 KB GPUs lack room)
    with pytest.raises(InvalidConfig, match="wgmma.mma_async exists only on sm_90a"):
        render(cfg, for_arch("sm_80"))


def test_geometry_is_warpgroups():
    cfg = preset("tf32x3-wgmma")
    assert cfg.threads == 256 and cfg.accumulators == 64            # 2 warpgroups, 64 x 128 each
    assert cfg.smem_bytes == 2 * (128 * 64 + 64 * 136) * 4 + 128 * 64 * 4   # + the small parts of A
    assert cfg.target_arch("sm_90") == "sm_90a" and preset("tf32x3").target_arch("sm_90") == "sm_90"
    assert cfg.name.endswith("_wg") and cfg.name != cfg.replace(mainloop="mma_sync").name


@pytest.mark.parametrize("change, rule", [
    (dict(WN=32), "WGMMA_TILE"),
    (dict(BK=16), "WGMMA_TILE"),
    (dict(BM=264, WM=264), "WGMMA_TILE"),
    (dict(swz_a=1), "WGMMA_SMEM_LAYOUT"),
    (dict(BM=256, WM=256), "WGMMA_REGISTERS"),                        # 128 sums + 128 partials
    (dict(mainloop="tensor"), "MAINLOOP"),
])
def test_rules_name_what_is_wrong(change, rule):
    assert rule in _rules(preset("tf32x3-wgmma").replace(**change))


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_every_layout_is_valid(layout):
    """A column-major A is transposed stage by stage into the K-major tile wgmma reads, which costs one
    more BM x BK tile of shared memory; B is read into registers in either layout."""
    cfg = preset("tf32x3-wgmma").replace(layout=layout)
    assert _rules(cfg) == []
    tiles = 2 if layout[0] == "T" else 1   # the small parts, and the transposed tile
    assert cfg.smem_bytes == cfg.smem_per_stage * cfg.stages + tiles * 4 * cfg.BM * cfg.BK
    src = emit(cfg, "sm_90")
    assert ("sT + p_off(k, m)" in src) == (layout[0] == "T")
    assert ("return n * LDS_B + k;" in src) == (layout[1] == "T")


def test_wgmma_is_only_a_tf32_variant():
    assert "MAINLOOP" in _rules(preset("v10").replace(mainloop="wgmma"))


def _a_off(k, m, BM=128):
    """templates/wgmma_parts.cuh.j2 a_off, in Python."""
    return (k >> 5) * (BM * 32) + m * 32 + ((((k & 31) >> 2) ^ (m & 7)) << 2) + (k & 3)


def test_a_layout_is_the_128_byte_swizzle():
    """Rows of 128 bytes; 16-byte chunk c of row m sits at chunk c ^ (m % 8) (CuTe's Swizzle<3,4,3>):
    a bijection onto the stage, and 8 rows at one k8 slice touch all 32 banks (wgmma reads them)."""
    seen = {_a_off(k, m) for k in range(64) for m in range(128)}
    assert seen == set(range(128 * 64))
    for k0 in range(0, 64, 8):
        for m0 in range(0, 128, 8):
            words = [_a_off(k0 + kk, m0 + r) for r in range(8) for kk in range(4)]
            assert len({w % 32 for w in words}) == 32
    src = emit(preset("tf32x3-wgmma"), "sm_90")
    assert "return (k >> 5) * (BM * 32) + m * 32 + ((((k & 31) >> 2) ^ (m & 7)) << 2) + (k & 3);" in src
    assert "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32" in src


@pytest.mark.slow
@pytest.mark.parametrize("name", WGMMA)
@pytest.mark.parametrize("bounds", ["checked", "none"])
def test_presets_compile_for_sm_90a(name, bounds):
    cfg = preset(name).replace(bounds=bounds)
    report = build.compile_cubin(render(cfg, for_arch("sm_90")), "sm_90")
    assert report.arch == "sm_90a"
    res = report[cfg.name]
    assert res.registers <= 255
    # 3xTF32 at BK=64 sits at the register limit: ptxas keeps a few words on the stack (at most 112
    # bytes, measured no slower than BK=32 without spills); TF32 never spills
    assert res.spills <= (256 if cfg.family == "tf32x3" else 0), res   # stores plus loads
    # ptxas serializes wgmma around a call; 3xTF32 calls its safe-split tile function (for Inf inputs) only
    # after the last wgmma of the tile has been waited for. No other serialization is acceptable.
    serial = [line for line in report.log.splitlines() if re.search(r"wgmma.*serializ", line)]
    allowed = "crossing function boundary at a function call" if cfg.family == "tf32x3" else None
    assert all(allowed and allowed in line for line in serial), serial


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("family", ["tf32x3", "tf32"])
def test_prefetch_doubles_the_tiles_beside_the_ring(family, layout):
    """prefetch: the split (or transpose) of stage k+1 is written into a second buffer while stage k's
    wgmma read the first, so the tiles beside the ring are doubled; the name says so (s3cp), and the
    kernel waits for its wgmma only after the next stage's split."""
    base = preset(f"{family}-wgmma").replace(BK=32, stages=3, layout=layout)
    cfg = base.replace(prefetch=True)
    assert _rules(cfg) == []
    extra = (family == "tf32x3") + (layout[0] == "T")
    assert cfg.smem_bytes - base.smem_bytes == extra * 4 * cfg.BM * cfg.BK
    assert "_s3cp_" in cfg.name and "_s3c_" in base.name
    src = emit(cfg, "sm_90")
    body = src[src.index("split of tile kt+1 runs while"):]
    issue, split, wait = (body.index("wgmma_commit();"), body.index("tile kt+1 has landed"),
                          body.index("wgmma_wait_all();"))
    assert issue < split < wait
    assert "split of tile kt+1 runs while" not in emit(base, "sm_90")


def test_prefetch_is_a_parameter_of_the_cp_async_wgmma_kernel_only():
    assert "TENSOR_CORE_DEFAULTS" in _rules(preset("tf32x3").replace(prefetch=True))      # mma.sync
    assert "TMA_DEFAULTS" in _rules(preset("tf32x3-tma").replace(prefetch=True))
    # 128x128x64 with A transposed: four doubled tiles beside the ring exceed the shared memory
    assert "SHARED_MEMORY" in _rules(preset("tf32x3-wgmma").replace(layout="TT", prefetch=True))


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["NN", "TT"])
def test_prefetch_compiles_without_serialized_wgmma(layout):
    cfg = preset("tf32x3-wgmma").replace(BM=64, WM=64, BK=32, stages=3, min_blocks=2, prefetch=True,
                                         layout=layout, pad_b=4 if layout[1] == "T" else 8)
    report = build.compile_cubin(render(cfg, for_arch("sm_90")), "sm_90")
    assert report[cfg.name].registers <= 128
    serial = [line for line in report.log.splitlines() if re.search(r"wgmma.*serializ", line)]
    assert all("crossing function boundary at a function call" in line for line in serial), serial


@pytest.mark.parametrize("change, ragged", [(dict(BK=32, stages=4), True), (dict(BK=32, stages=3, split_k=3), True),
                                           (dict(BM=64, WM=64, BK=32, stages=3), True), ({}, False),
                                           (dict(BK=32, stages=3, prefetch=True), False),
                                           (dict(BM=64, WM=64, BK=32, stages=3, min_blocks=2), False)])
def test_the_last_stage_of_a_ragged_k_issues_only_its_k_steps(change, ragged):
    """3xTF32 with BK = 32, one block an SM, no prefetch: after the ring's loop over the stages whose k all lie
    inside K, the last stage's body issues only the k steps inside K (the B fragments and the wgmma guarded);
    BK = 64 (the preset), prefetch and two blocks an SM keep the one loop."""
    code = emit(preset("tf32x3-wgmma").replace(**change), "sm_90")
    assert ("if (kfull < ktiles) {" in code) == ragged
    assert code.count("if (ks < ksteps)") == (2 * 2 if ragged else 0)   # fragments and wgmma, plain and safe split
    assert "if (kfull < ktiles) {" not in emit(preset("tf32-wgmma").replace(**change), "sm_90")
