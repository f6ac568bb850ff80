"""Every preset is correct on awkward shapes and all layouts, against cuBLAS and float64."""
from __future__ import annotations

import pytest

from gemmgen.measure.gate import BOUND, gate_bound
from gemmgen.base import Shape
from gemmgen.kernel.presets import all_presets
from gemmgen.kernel.rules import explain

pytestmark = pytest.mark.gpu

SHAPES = ["128x128x128", "1024x1024x1024", "1000x1000x1000", "4097x4095x1023", "3000x5000x700",
          "1x4096x4096", "4096x1x4096", "4096x4096x1"]
LAYOUTS = ["NN", "NT", "TN", "TT"]
PRESETS = all_presets("sm_90")


def _skip_other_layouts_of_wgmma(cfg, layout):
    bad = explain(cfg.replace(layout=layout), "h100")
    if cfg.uses_wgmma and bad:   # tf32-wgmma's 4 stages leave no room for a transposed A tile
        pytest.skip(f"{cfg.label} does not fit layout {layout}: {bad[0]}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cfg", PRESETS, ids=[p.label for p in PRESETS])
def test_preset_correct(session, cfg, shape, layout):
    if cfg.family == "naive" and shape in ("4097x4095x1023", "3000x5000x700") and layout != "NN":
        pytest.skip("naive kernels: one layout suffices at the slow shapes")
    _skip_other_layouts_of_wgmma(cfg, layout)
    s = Shape.parse(shape, layout)
    refused = (cfg.warp_specialized or cfg.family == "skinny") and cfg.accepts(s.M, s.N, s.K)
    if refused:   # TMA reads 16-byte rows, skinny kernels take N <= BN: the dispatch sends these elsewhere
        pytest.skip(f"{cfg.label}: {refused}")
    if not cfg.partials and min(s.M, s.N) == 1:
        pytest.skip("accumulation on the tensor cores against cuBLAS's exact-FMA path for M=1 or N=1: "
                    "the gate decides per shape; tests/gpu/test_wmma_gpu.py bounds the error")
    errors = session.check(cfg.replace(layout=layout), s, seed=hash(shape) % 1000)
    assert errors["err_cublas"] <= gate_bound(cfg) and errors["err_fp64"] <= gate_bound(cfg)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cfg", [p for p in PRESETS if p.family != "naive"], ids=lambda c: c.label)
def test_unaligned_leading_dimensions(session, cfg, layout):
    """lda, ldb, ldc one float past the row: vector loads must fall back to scalars."""
    _skip_other_layouts_of_wgmma(cfg, layout)
    if cfg.tensor_maps:
        pytest.skip(f"{cfg.label}: TMA needs 16-byte rows, which accepts() checks (tests/test_tma.py)")
    m, n = 515, min(259, cfg.BN - 3) if cfg.family == "skinny" else 259
    if cfg.swap:  # few rows of C: the roles of M and N trade places
        m, n = n, m
    errors = session.check(cfg.replace(layout=layout), Shape(m, n, 131, layout), seed=3, pad=1)
    assert errors["err_fp64"] <= gate_bound(cfg)


def test_fast_path_kernel_rejects_ragged_shape(session):
    from gemmgen.base import Rejected

    fast = PRESETS[10].replace(bounds="none")
    with pytest.raises(Rejected, match="fast path"):
        session.check(fast, Shape(1000, 1000, 1000))
    assert session.check(fast, Shape(1024, 1024, 1024))["err_fp64"] <= BOUND
