"""The skinny family (templates/skinny.cu.j2) without a GPU: names, rules, the shapes it takes, its
source compiled by nvcc (tests/gpu/test_skinny_gpu.py runs it)."""
import shutil
import subprocess

import pytest

from gemmgen.codegen.render import render
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules.registry import explain
from gemmgen.tune.space import sample_valid

BASE = preset("skinny").replace(split_k=2, reduce="workspace", min_blocks=2)
OWN = {"layout": "TN", "BM": 128, "BN": 24, "BK": 32, "TM": 4, "warps_k": 8, "vec": 1, "stages": 3,
       "split_k": 4, "reduce": "atomic", "min_blocks": 3, "swap": True, "swz_b": 8}


@pytest.mark.parametrize("key", sorted(OWN))
def test_every_skinny_parameter_changes_the_name(key):
    changed = BASE.replace(**{key: OWN[key]})
    assert changed.name != BASE.name


def test_the_presets_are_valid_and_other_parameters_are_refused():
    assert explain(preset("skinny"), "h100") == [] and explain(preset("skinny-split"), "sm_80") == []
    rules = {v.rule for v in explain(preset("skinny").replace(TN=4, raster=8), "h100")}
    assert rules == {"SKINNY_DEFAULTS"}
    assert [v.rule for v in explain(preset("v8").replace(warps_k=2), "h100")] == ["WARPS_K"]
    assert [v.rule for v in explain(preset("v8").replace(swap=True), "h100")] == ["WARPS_K"]


@pytest.mark.parametrize("change, rule", [
    ({"TM": 4, "BM": 128}, "SKINNY_REGISTERS"), ({"BN": 24, "min_blocks": 8}, "SKINNY_REGISTERS"),
    ({"split_k": 100000, "reduce": "workspace"}, "SKINNY_PIPELINE"), ({"BN": 8, "min_blocks": 6}, "OCCUPANCY"),
    ({"BN": 36}, "SKINNY_TILE"), ({"BN": 6}, "SKINNY_TILE"), ({"BM": 128}, "SKINNY_ROWS"),
    ({"TM": 8, "BM": 256}, "SKINNY_ROWS"), ({"BK": 12}, "SKINNY_STEP"), ({"stages": 1}, "SKINNY_PIPELINE"),
    ({"vec": 2}, "SKINNY_COPIES"), ({"swz_b": 4}, "SKINNY_SWIZZLE"), ({"prefetch": True, "layout": "NT"}, "SKINNY_PREFETCH"),
    ({"layout": "TT", "prefetch": True, "BK": 32, "TM": 4, "BM": 128, "BN": 16}, "SKINNY_REGISTERS"), ({"bounds": "none"}, "SKINNY_COPIES"),
    ({"warps_k": 16, "stages": 4, "BK": 32, "TM": 4, "BM": 128}, "SHARED_MEMORY"),
])
def test_a_broken_rule_names_the_value(change, rule):
    violations = explain(preset("skinny").replace(**change), "h100")
    assert rule in {v.rule for v in violations}
    reason = next(v.reason for v in violations if v.rule == rule)
    assert any(str(v) in reason for v in change.values())


def test_it_takes_n_up_to_bn_and_any_leading_dimension():
    c = preset("skinny")
    assert c.accepts(5000, 32, 777, lda=779, ldb=33) is None and c.accepts(1, 1, 1) is None
    assert "N <= 32" in c.accepts(5000, 33, 777)
    swapped = preset("skinny-m")   # few rows instead: B is the big operand
    assert swapped.accepts(32, 5000, 777, lda=779, ldb=5001) is None and "M <= 32" in swapped.accepts(33, 5000, 777)


def test_a_swapped_kernel_tiles_the_columns_of_c():
    c = preset("skinny-m")
    assert c.tiles(20, 4971) == (78, 1) and c.grid(20, 4971, 4190) == (78, 1, 1)
    assert preset("skinny").tiles(4971, 20) == (78, 1)


def test_shared_memory_holds_the_rings_and_the_partials():
    c = preset("skinny")   # 4 warps x 2 stages x (64 x 20 + 16 x 32) floats; partials 4 x 64 x 33 floats
    assert c.smem_bytes == 4 * max(2 * 4 * (64 * 20 + 16 * 32), 4 * 64 * 33)
    assert c.replace(layout="TN").smem_per_stage == 4 * (16 * 64 + 16 * 32)
    # swapped, B is the big operand: its k is contiguous where B is stored N x K (layout ?T)
    assert c.replace(swap=True, layout="NT").smem_per_stage == c.smem_per_stage
    assert c.replace(swap=True, layout="TN").smem_per_stage == c.replace(layout="TN").smem_per_stage


def test_the_header_and_the_harness_launch_the_grid_the_config_names():
    swapped = preset("skinny-m")   # few rows: blocks over N's rows
    assert "grid  = (ceil(N/64) * ceil(M/32), 1, 1)" in render(swapped, "sm_90").code
    harness = render(swapped, "sm_90", harness=True).code
    assert "((p.N + 63) / 64) * (unsigned)((p.M + 31) / 32)" in harness
    assert "((p.M + 63) / 64) * (unsigned)((p.N + 31) / 32)" in render(preset("skinny"), "sm_90", harness=True).code


def test_the_search_space_draws_valid_skinny_kernels():
    configs = sample_valid(30, family="skinny", layout="TT")
    assert len({c.name for c in configs}) > 10 and all(c.family == "skinny" and not explain(c, "sm_90") for c in configs)


def _drawn(n):
    """Valid kernels of the search space, the most register-hungry first (no copy of the rules here)."""
    drawn = sample_valid(60, family="skinny", layout="TT", seed=7) + sample_valid(60, family="skinny", layout="NN", seed=8)
    return sorted({c.name: c for c in drawn}.values(), key=lambda c: (-c.accumulators * c.min_blocks, -c.stages))[:n]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("c", [preset(n).replace(layout=lay) for n in ("skinny", "skinny-split", "skinny-m")
                               for lay in ("NN", "NT", "TN", "TT")] + _drawn(4)
                              + [preset("skinny").replace(layout="TT", BN=24, swz_b=6),
                                 preset("skinny").replace(layout="TN", prefetch=True, BK=8),
                                 preset("skinny-m").replace(layout="NN", prefetch=True, BK=8)], ids=lambda c: c.name)
def test_the_source_compiles_without_spills(tmp_path, c):
    src = render(c, "sm_90", harness=False)
    cu = tmp_path / "k.cu"
    cu.write_text(src.code)
    out = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", str(cu), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert " 0 bytes spill stores" in out.stderr and c.name in out.stderr
