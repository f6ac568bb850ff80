"""The half family (wmma) on a GPU: every preset and every code path against float64 of the same half
inputs, on awkward shapes and all layouts, both through the gate (as accurate as cuBLAS in the same
mode, x1.5) and against a fixed bound; the fast preset's speed against cuBLAS at 4096^3 on Hopper.

The fixed bound: products of f16/bf16 values are exact in fp32, so only the fp32 accumulation errs,
and the kernel adds each stage's partial sum with round-to-nearest FADDs; 1e-5 relative Frobenius
error is ~20x what that costs at K=4096 and ~1e-5 of what a wrong index or a lost k step costs.
"""
from __future__ import annotations

import pytest

from gemmgen.measure.gate import rel_error
from gemmgen.base import Shape
from gemmgen.kernel.presets import preset

pytestmark = pytest.mark.gpu

WMMA = ("wmma", "wmma-db", "wmma-fast", "wmma-bf16", "wmma-direct")
LAYOUTS = ["NN", "NT", "TN", "TT"]
SHAPES = ["128x128x128", "1000x1000x1000", "4097x4095x1023", "1x4096x4096", "4096x1x4096", "4096x4096x1"]
BOUND64 = 1e-5
# partials = false accumulates on the tensor cores as cuBLAS does: ~5e-6 at K=4096 (cuBLAS's 4.9e-6
# on an H100), so twice the bound; the gate holds it to 1.5x cuBLAS wherever cuBLAS takes the same path.
BOUND64_DIRECT = 2e-5
CASES = ((1.0, 0.0, True), (0.5, 3.0, False))   # (alpha, beta, C poisoned with NaN)


def direct_error(session, cfg, shape: Shape, seed: int, pad: int = 0) -> float:
    """Worst relative error against float64 over both cases, launching the kernel ourselves (a second
    opinion beside the gate): C is NaN before the beta = 0 run, so an unwritten or read C shows."""
    import cupy

    prob = session.problem(shape, seed, pad, cfg.dtype)
    kernel = session.kernel(cfg)
    worst = 0.0
    for alpha, beta, poison in CASES:
        c0 = prob.fill_c(poison)
        kernel.launch(prob.operands(alpha, beta))
        cupy.cuda.get_current_stream().synchronize()
        out = prob.C
        bad = int((~cupy.isfinite(out)).sum())
        assert bad == 0, f"{bad} outputs NaN/Inf (alpha={alpha}, beta={beta}, {cfg.name}, {shape})"
        worst = max(worst, rel_error(out, prob.reference64(alpha, beta, c0)))
    return worst


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", WMMA)
def test_presets_correct(session, name, shape, layout):
    cfg = preset(name).replace(layout=layout)
    s = Shape.parse(shape, layout)
    # cuBLAS takes exact FMA kernels for M=1 or N=1: a truncating accumulation is the gate's to refuse there
    if cfg.partials or min(s.M, s.N) > 1:
        errors = session.check(cfg, s, seed=len(shape))      # raises WrongResult past the gate's bound
        assert errors["err_fp64"] <= errors["bound"], errors
    assert direct_error(session, cfg, s, seed=len(shape)) <= (BOUND64 if cfg.partials else BOUND64_DIRECT)


# One of each code path: no padding, split-K both ways, 8- and 4-byte copies, BK=64, four stages
# (Hopper's shared memory), bf16 through one buffer, the fast path without bounds checks.
VARIANTS = {
    "unpadded": ("wmma-fast", dict(pad_a=0, pad_b=0)),
    "splitk-atomic": ("wmma-fast", dict(split_k=3)),
    "splitk-workspace": ("wmma-db", dict(split_k=2, reduce="workspace")),
    "vec4": ("wmma-fast", dict(vec=4)),
    "vec2": ("wmma-db", dict(vec=2, pad_a=0, pad_b=0)),
    "bk64": ("wmma-db", dict(BK=64)),
    "stages4": ("wmma-fast", dict(stages=4)),
    "bf16-single-buffer": ("wmma", dict(dtype="bf16")),
    "vec1-single-buffer": ("wmma", dict(vec=1)),
    "direct-single-buffer": ("wmma", dict(partials=False)),
    "direct-splitk": ("wmma-direct", dict(split_k=2, reduce="workspace")),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_correct(session, variant, layout):
    name, change = VARIANTS[variant]
    cfg = preset(name).replace(layout=layout, **change)
    # pad=1: odd leading dimensions, so no row of A or B starts on a vector boundary (element copies)
    for shape, pad in ((Shape(515, 259, 131, layout), 1), (Shape(1000, 777, 555, layout), 0)):
        errors = session.check(cfg, shape, seed=5, pad=pad)
        assert errors["err_fp64"] <= errors["bound"], (shape, pad, errors)
        bound = BOUND64 if cfg.partials else BOUND64_DIRECT
        assert direct_error(session, cfg, shape, seed=5, pad=pad) <= bound, (shape, pad)


@pytest.mark.parametrize("layout", ["NN", "TT"])
@pytest.mark.parametrize("name", ["wmma", "wmma-fast", "wmma-direct"])
def test_fast_path_on_whole_tiles(session, name, layout):
    cfg = preset(name).replace(layout=layout, bounds="none")
    shape = Shape(1024, 512, 256, layout)
    assert session.check(cfg, shape)["err_fp64"] <= BOUND64
    assert direct_error(session, cfg, shape, seed=0) <= BOUND64


@pytest.mark.parametrize("name", ["wmma-fast", "wmma-bf16"])
def test_accumulation_error_stays_near_sgemm(session, name):
    """K=4096: each stage's partial sum is added in round-to-nearest fp32, so the error does not grow
    with the ~256 truncating k16 steps (cuBLAS's own error in the same mode is reported beside ours)."""
    errors = session.check(preset(name), Shape(2048, 2048, 4096), seed=7)
    assert errors["err_fp64"] <= 1e-6, errors


def test_direct_accumulation_errs_like_cublas(session):
    """partials = false: the error at K=4096 is of cuBLAS's order (both truncate once per k16 step)."""
    errors = session.check(preset("wmma-direct"), Shape(2048, 2048, 4096), seed=7)
    assert errors["err_fp64"] <= errors["bound"] and errors["err_fp64"] <= BOUND64_DIRECT, errors
