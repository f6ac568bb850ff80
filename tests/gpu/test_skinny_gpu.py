"""The skinny family on a GPU: correct against cuBLAS and float64 on ragged shapes, every layout,
unaligned leading dimensions, and each way split-K slices meet (the gate also poisons C and runs
alpha/beta cases)."""
from __future__ import annotations

import pytest

from gemmgen.base import Rejected, Shape
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules import explain
from gemmgen.measure.gate import gate_bound

pytestmark = pytest.mark.gpu

BASE = preset("skinny")
CONFIGS = {
    "preset": BASE,
    "split-workspace": preset("skinny-split"),
    "split-atomic": BASE.replace(split_k=3, reduce="atomic"),
    "deep-ring": BASE.replace(BN=24, TM=4, BM=128, BK=32, stages=4, warps_k=2),
    "narrow": BASE.replace(BN=8, TM=1, BM=32, BK=8, stages=3, warps_k=2, vec=1),
    "swap": preset("skinny-m"),
    "swap-split": preset("skinny-m").replace(BN=24, TM=1, BM=32, BK=32, split_k=3, reduce="workspace", stages=3),
    "swap-atomic": preset("skinny-m").replace(BN=8, split_k=2, reduce="atomic"),
    "rotated-b": BASE.replace(BN=24, swz_b=6, split_k=2, reduce="workspace"),
    "direct": BASE.replace(layout="TT", prefetch=True, BK=8, BN=24, split_k=2, reduce="workspace", stages=3),
    "swap-direct": preset("skinny-m").replace(prefetch=True, BK=8, BN=16, TM=1, BM=32),
}
SHAPES = ["1x1x1", "31x5x7", "1000x19x130", "4097x8x2049", "333x16x4096", "64x3x64", "2520x1x999",
          "5x31x7", "19x1000x130", "8x4097x2049", "16x333x4096", "3x64x64", "1x2520x999"]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_skinny_correct(session, name, shape, layout):
    cfg = CONFIGS[name].replace(layout=layout)
    if explain(cfg, "h100"):   # prefetch reads the big operand's contiguous rows: two layouts of four
        pytest.skip(f"{name} in {layout}: {explain(cfg, 'h100')[0]}")
    s = Shape.parse(shape, layout)
    if cfg.accepts(s.M, s.N, s.K):
        pytest.skip(f"{name}: {cfg.accepts(s.M, s.N, s.K)}")
    errors = session.check(cfg, s, seed=len(shape))
    assert errors["err_cublas"] <= gate_bound(cfg) and errors["err_fp64"] <= gate_bound(cfg)


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_skinny_unaligned_leading_dimensions(session, name, layout):
    """lda, ldb, ldc one float past the row (odd: 1031 or 515): the 16-byte copies fall back to 4-byte ones."""
    cfg = CONFIGS[name].replace(layout=layout)
    if explain(cfg, "h100"):
        pytest.skip(f"{name} in {layout}: {explain(cfg, 'h100')[0]}")
    shape = Shape(7, 514, 1030, layout) if cfg.swap else Shape(514, 7, 1030, layout)
    errors = session.check(cfg, shape, seed=5, pad=1)
    assert errors["err_fp64"] <= gate_bound(cfg)


def test_skinny_refuses_more_columns_than_bn(session):
    with pytest.raises(Rejected, match="N <= 32"):
        session.check(BASE, Shape(100, 33, 100))
    with pytest.raises(Rejected, match="M <= 32"):
        session.check(CONFIGS["swap"], Shape(33, 100, 100))
