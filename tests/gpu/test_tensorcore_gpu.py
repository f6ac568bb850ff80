"""The tensor-core families on a GPU: every variant passes the gate (at most 1.5x the error of cuBLAS
in its precision's mode, within the class's ceiling), 3xTF32 as accurate as strict fp32 SGEMM, TF32
at the accuracy TF32 allows."""
from __future__ import annotations

import pytest

from gemmgen.measure.gate import gate_bound, rel_error
from gemmgen.base import Shape
from gemmgen.kernel.presets import preset

pytestmark = pytest.mark.gpu

LAYOUTS = ["NN", "NT", "TN", "TT"]
SHAPES = ["4097x4095x1023", "1x4096x4096", "4096x1x4096", "4096x4096x1", "129x67x9", "1000x1000x1000"]
# One of each code path: padding instead of swizzle, split-K both ways, BK=16 with 4 stages, an odd
# number of n8 tiles per warp (ldmatrix.x2), 2-float copies, the fast path without bounds checks.
VARIANTS = {
    "pad": dict(swz_a=1, swz_b=1, pad_a=4, pad_b=8),
    "splitk-atomic": dict(split_k=3),
    "splitk-workspace": dict(split_k=2, reduce="workspace"),
    "bk16": dict(BK=16, stages=4),
    "odd-n8": dict(BN=96, WN=24, BK=32, stages=3, swz_b=1, raster=1),
    "vec2": dict(vec=2, WN=32),
}


def _configs():
    return [preset(n) for n in ("tf32", "tf32x3")]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cfg", _configs(), ids=lambda c: c.label)
def test_presets_correct(session, cfg, shape, layout):
    errors = session.check(cfg.replace(layout=layout), Shape.parse(shape, layout), seed=len(shape))
    assert errors["err_fp64"] <= errors["bound"] <= gate_bound(cfg)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family", ["tf32", "tf32x3"])
def test_variants_correct(session, family, variant, layout):
    cfg = preset("tf32x3").replace(family=family, layout=layout, **VARIANTS[variant])
    for shape, pad in ((Shape(515, 259, 131, layout), 1), (Shape(1000, 777, 555, layout), 0)):
        errors = session.check(cfg, shape, seed=5, pad=pad)
        assert errors["err_fp64"] <= errors["bound"] <= gate_bound(cfg), (shape, pad)


@pytest.mark.parametrize("layout", ["NN", "TT"])
def test_fast_path_on_whole_tiles(session, layout):
    cfg = preset("tf32x3").replace(layout=layout, bounds="none")
    assert session.check(cfg, Shape(1024, 512, 256, layout))["err_fp64"] <= gate_bound(cfg)


def test_tf32x3_is_as_accurate_as_sgemm(session):
    """3xTF32 at K=4096 on uniform(-1, 1) inputs: within 1.5x of cuBLAS SGEMM's error against float64."""
    shape = Shape(2048, 2048, 4096)
    errors = session.check(preset("tf32x3"), shape, seed=7)
    prob = session.problem(shape, 7)
    cublas = rel_error(prob.cublas(mode="fp32"), prob.reference64(1.0, 0.0, None))
    assert errors["cublas_err_fp64"] == pytest.approx(cublas, rel=1e-6)   # the gate compared with SGEMM
    assert errors["err_fp64"] <= max(1.5 * cublas, 2e-6), (errors, cublas)


def test_tf32_error_is_that_of_tf32(session):
    """TF32 products carry ~1e-4..1e-3 relative error: more than fp32, about cuBLAS TF32's, well under
    the 5e-3 ceiling."""
    errors = session.check(preset("tf32"), Shape(2048, 2048, 4096), seed=7)
    assert 1e-5 < errors["err_fp64"] < 2e-3
    assert 1e-5 < errors["cublas_err_fp64"] < 2e-3 and errors["err_fp64"] <= 1.5 * errors["cublas_err_fp64"]
