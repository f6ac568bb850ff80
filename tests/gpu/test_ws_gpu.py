"""The 3xTF32 warp-specialized kernels with cp.async producers (tma=True, async_copy=True: the "ws"
kernels) on an sm_90 GPU, in every layout: the correctness gate (NaN-poisoned C, then alpha/beta,
against float64 and SGEMM) on ragged shapes, with split-K, on leading dimensions that are odd or past
the rows and on operands that start off 16-byte boundaries, where the TMA kernels refuse."""
from __future__ import annotations

import pytest

from gemmgen.base import Shape
from gemmgen.kernel.presets import preset

pytestmark = pytest.mark.gpu

WS = preset("tf32x3-ws").replace(label="")   # 128x176, 3 stages
CONFIGS = {
    "128x176": WS,
    "128x128-s4": WS.replace(BN=128, WN=128, stages=4),
    "64x64-s6": WS.replace(BM=64, BN=64, WN=64, stages=6),
    "128x128-k4a": WS.replace(BN=128, WN=128, stages=4, split_k=4),
    "128x64-k3w": WS.replace(BN=64, WN=64, stages=4, split_k=3, reduce="workspace"),
}
LAYOUTS = ["NN", "NT", "TN", "TT"]
# Ragged in every dimension and odd K (4-byte copies of every operand), K below one stage, one row or
# column, and deep K through the whole ring.
SHAPES = ["1000x1000x1000", "777x1234x521", "129x257x67", "1x1x1", "333x4100x88", "64x4096x9", "4100x61x4097"]
BOUND = 2e-6   # 3xTF32 against float64 on uniform(-1, 1) inputs (SGEMM errs ~1e-7 .. 1e-6 here)


@pytest.fixture(scope="module")
def hopper(session):
    if session.spec.cc != (9, 0):
        pytest.skip(f"wgmma needs sm_90a; this GPU is {session.spec.arch}")
    return session


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", CONFIGS)
def test_gate_passes(hopper, name, layout, shape):
    cfg = CONFIGS[name].replace(layout=layout)
    errors = hopper.check(cfg, Shape.parse(shape, layout), seed=len(shape))   # raises WrongResult past the gate
    assert errors["err_fp64"] <= min(errors["bound"], BOUND), errors


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pad", [1, 3, 4])
def test_padded_and_odd_leading_dimensions(hopper, layout, pad):
    """Rows `pad` elements past their length (odd: no row but the first starts on 16 bytes; 4: every
    row does, so K-major operands take the 16-byte copies), their padding random."""
    cfg = CONFIGS["128x128-s4"].replace(layout=layout)
    rows = {"NN": (520, 1234), "NT": (520, 520), "TN": (777, 1234), "TT": (777, 520)}[layout]
    assert cfg.accepts(777, 1234, 520, rows[0] + pad, rows[1] + pad, 1234 + pad, aligned=False) is None
    errors = hopper.check(cfg, Shape(777, 1234, 520, layout), seed=pad, pad=pad)
    assert errors["err_fp64"] <= min(errors["bound"], BOUND), errors


@pytest.mark.parametrize("layout", LAYOUTS)
def test_operands_off_16_byte_boundaries(hopper, layout):
    """A and B starting 4 bytes into their buffers (views such as x[:, 1:]), through gemmgen's launch."""
    import cupy

    from gemmgen.measure.launch import Operands

    cfg = CONFIGS["128x176"].replace(layout=layout)
    M, N, K = 300, 500, 260
    rng = cupy.random.default_rng(5)
    a_rows, a_cols = (M, K) if layout[0] == "N" else (K, M)
    b_rows, b_cols = (K, N) if layout[1] == "N" else (N, K)
    a_buf = rng.uniform(-1, 1, (a_rows, a_cols + 1), dtype=cupy.float32)
    b_buf = rng.uniform(-1, 1, (b_rows, b_cols + 1), dtype=cupy.float32)
    a_store, b_store = a_buf[:, 1:], b_buf[:, 1:]                         # first elements 4 bytes in
    A = a_store if layout[0] == "N" else a_store.T
    B = b_store if layout[1] == "N" else b_store.T
    C = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
    hopper.kernel(cfg).launch(Operands(M, N, K, a_store.data.ptr, a_cols + 1, b_store.data.ptr, b_cols + 1,
                                       C.data.ptr, N, 1.0, 0.0))
    ref = A.astype(cupy.float64) @ B.astype(cupy.float64)
    err = float(cupy.linalg.norm(C - ref) / cupy.linalg.norm(ref))
    assert err <= BOUND, err
