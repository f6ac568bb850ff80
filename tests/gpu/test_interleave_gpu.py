"""The interleaved SIMT loop (interleave = true, whole tiles) computes what the other loops compute: every
layout, one K step or several, split-K slices, and a single tile, against cuBLAS and float64."""
from __future__ import annotations

import pytest

from gemmgen.base import Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import gate_bound

pytestmark = pytest.mark.gpu

V10 = preset("v10").replace(bounds="none", interleave=True, label="")              # 128x128x8, 8 rows a step
WIDE = V10.replace(BM=256, BK=16, WM=64, WN=64, WMITER=2, WNITER=4)               # the shipped 256x128x16 tile
CONFIGS = {"v10": V10, "wide": WIDE, "wide-split3": WIDE.replace(split_k=3, reduce="workspace"),
           "v10-split2": V10.replace(split_k=2)}
# whole tiles of both: one tile and one K step, one tile and several, many tiles, deep K
SHAPES = ["256x128x16", "256x128x48", "1024x512x256", "512x1024x2048", "512x256x480"]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", CONFIGS)
def test_interleaved_loop_is_correct(session, name, shape, layout):
    cfg = CONFIGS[name].replace(layout=layout)
    s = Shape.parse(shape, layout)
    if cfg.accepts(s.M, s.N, s.K):
        pytest.skip(f"{cfg.name}: {cfg.accepts(s.M, s.N, s.K)}")
    errors = session.check(cfg, s, seed=hash((name, shape)) % 1000)
    assert errors["err_cublas"] <= gate_bound(cfg) and errors["err_fp64"] <= gate_bound(cfg)
