"""The Hopper wgmma variant of the TF32 families on an sm_90 GPU: correct on every shape and layout
(ragged edges, unaligned leading dimensions, alpha/beta, C poisoned with NaN), split-K both ways, the
fast path on whole tiles, and 3xTF32 as accurate as strict fp32 SGEMM."""
from __future__ import annotations

import pytest

from gemmgen.codegen.facts import shifted_rows
from gemmgen.measure.gate import rel_error
from gemmgen.base import Shape
from gemmgen.kernel.presets import preset

pytestmark = pytest.mark.gpu

SHAPES = ["128x128x128", "1000x1000x1000", "4097x4095x1023", "1x4096x4096", "4096x1x4096", "4096x4096x1",
          "129x67x9"]
FAMILIES = ["tf32x3", "tf32"]
# One of each code path: BK=32 with 4 stages, a 64-row tile (wgmma n64), split-K both ways, no raster,
# and prefetch (the next stage's split during this stage's wgmma; 2 stages, 2 blocks an SM).
VARIANTS = {
    "bk32": dict(BK=32, stages=4),
    "n64": dict(BM=64, WM=64, BK=32, stages=3),
    "splitk-atomic": dict(split_k=3),
    "splitk-workspace": dict(split_k=2, reduce="workspace"),
    "raster1": dict(raster=1, pad_b=4),
    "prefetch": dict(BK=32, stages=3, prefetch=True),
    "prefetch-n64-splitk": dict(BM=64, WM=64, BK=32, stages=2, split_k=3, prefetch=True),
    "prefetch-o2": dict(BM=64, WM=64, BK=32, stages=3, min_blocks=2, prefetch=True),
}
BOUND = {"tf32x3": 1e-5, "tf32": 5e-3}
LAYOUTS = ["NN", "NT", "TN", "TT"]


def _in(cfg, layout):
    """The config in a layout, with B's rows padded as that layout wants (8 floats n-contiguous, 4 k-)."""
    return cfg.replace(layout=layout, pad_b=4 if layout[1] == "T" else 8,
                       stages=min(cfg.stages, 3) if layout[0] == "T" else cfg.stages)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("family", FAMILIES)
def test_presets_correct(hopper, family, shape, layout):
    errors = hopper.check(_in(preset(f"{family}-wgmma"), layout), Shape.parse(shape, layout), seed=len(shape))
    assert max(errors.values()) <= BOUND[family]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family", FAMILIES)
def test_variants_correct(hopper, family, variant, layout):
    cfg = _in(preset(f"{family}-wgmma").replace(**VARIANTS[variant]), layout)
    for (M, N, K), pad in (((515, 259, 131), 1), ((1000, 777, 555), 0), ((256, 256, 256), 3)):
        errors = hopper.check(cfg, Shape(M, N, K, layout), seed=5, pad=pad)
        assert max(errors.values()) <= BOUND[family], (M, N, K, pad)



# 3xTF32 with BK = 32: the last stage of a ragged K issues only its k steps inside K, one, two or three of
# four (K % 32 = 3, 9, 20; 64: none ragged), after the ring's loop; split-K's last slice (K = 35 in three
# slices: 32, 3 and an empty one).
RAGGED = {"bk32": dict(BK=32, stages=4), "n64": dict(BM=64, WM=64, BK=32, stages=3),
          "bk32-k3a": dict(BK=32, stages=4, split_k=3), "bk32-k2w": dict(BK=32, stages=3, split_k=2, reduce="workspace")}


@pytest.mark.parametrize("K", [35, 41, 52, 64, 113])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("variant", RAGGED)
def test_last_ragged_stage_issues_its_k_steps(hopper, variant, layout, K):
    cfg = _in(preset("tf32x3-wgmma").replace(**RAGGED[variant]), layout)
    errors = hopper.check(cfg, Shape(301, 263, K, layout), seed=K, pad=1)
    assert max(errors.values()) <= BOUND["tf32x3"], errors

@pytest.mark.parametrize("layout", ["NN", "TN"])
@pytest.mark.parametrize("pad_b", [4, 8])
def test_unaligned_rows_of_b_copied_shifted(hopper, layout, pad_b):
    """B n contiguous with ldb % 4 = 1, 2, 3 (N odd, or padded rows): its rows are copied 16 bytes at a time,
    shifted in shared memory at pad_b = 8 and two blocks an SM (else element by element); edges in M, N
    and K, split-K, and a 64-wide tile."""
    assert shifted_rows(preset("tf32x3-wgmma").replace(layout=layout, pad_b=pad_b, min_blocks=2)) == (pad_b == 8)
    for cfg in (preset("tf32x3-wgmma").replace(layout=layout, pad_b=pad_b, BK=32, stages=3),
                preset("tf32x3-wgmma").replace(layout=layout, pad_b=pad_b, BM=64, WM=64, BK=32, stages=3,
                                               split_k=3, min_blocks=2, prefetch=True)):
        for (M, N, K), pad in (((515, 259, 131), 0), ((300, 257, 97), 1), ((129, 129, 70), 0), ((200, 64, 64), 3)):
            errors = hopper.check(cfg, Shape(M, N, K, layout), seed=11, pad=pad)
            assert max(errors.values()) <= BOUND["tf32x3"], (cfg.name, M, N, K, pad)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("family", FAMILIES)
def test_fast_path_on_whole_tiles(hopper, family, layout):
    cfg = _in(preset(f"{family}-wgmma"), layout).replace(bounds="none")
    assert hopper.check(cfg, Shape(1024, 512, 256, layout))["err_fp64"] <= BOUND[family]


def test_tf32x3_wgmma_is_as_accurate_as_sgemm(hopper):
    """3xTF32 at K=4096 on uniform(-1, 1) inputs: within 1.5x of cuBLAS SGEMM's error against float64."""
    shape = Shape(2048, 2048, 4096)
    errors = hopper.check(preset("tf32x3-wgmma"), shape, seed=7)
    prob = hopper.problem(shape, 7)
    cublas = rel_error(prob.cublas(), prob.reference64(1.0, 0.0, None))
    assert errors["err_fp64"] <= 1.5 * cublas, (errors, cublas)
