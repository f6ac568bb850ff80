"""The 3xTF32 warp-specialized kernel whose producer copies with cp.async (mainloop="ws_cpasync",
preset tf32x3-ws) on an sm_90 GPU: every layout (m- or n-contiguous tiles transposed by the 4-byte
copies), rows of any alignment (16-byte copies only where rows are 16 bytes apart from a 16-byte
aligned start), ragged edges and K tails zero-filled by the copies, split-K by atomics and through a
workspace, the persistent grid, narrow tiles (BN 24..48), the swapped kernel (C^T = op(B)^T op(A)^T,
C stored transposed) and C's padding never written. Against float64 through the correctness gate (C poisoned with NaN for beta = 0, then alpha = 0.5, beta = 3)."""
from __future__ import annotations

import pytest

from gemmgen.base import Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import rel_error
from gemmgen.measure.launch import Operands

pytestmark = pytest.mark.gpu

WS = preset("tf32x3-ws").replace(label="")   # 128x128x32, 4 stages
LAYOUTS = ["NN", "NT", "TN", "TT"]
CONFIGS = {
    "128x128-s4": WS,
    "128x64-s6-k4a": WS.replace(BN=64, WN=64, stages=6, split_k=4),
    "64x128-s4-k3w": WS.replace(BM=64, split_k=3, reduce="workspace"),
    "128x128-s2-p16": WS.replace(stages=2, scheduler="persistent", persistent_blocks=16),
    # narrow tiles for few columns, and swapped (C^T computed, C stored transposed) for few rows
    "128x24-s6-k2a": WS.replace(BN=24, WN=24, stages=6, split_k=2),
    "64x32-s8-sw": WS.replace(BM=64, BN=32, WN=32, stages=8, swap=True),
    "128x24-s6-k4a-sw": WS.replace(BN=24, WN=24, stages=6, split_k=4, swap=True),
    "64x48-s6-k3w-sw": WS.replace(BM=64, BN=48, WN=48, stages=6, split_k=3, reduce="workspace", swap=True),
    "128x64-s2-p16-sw": WS.replace(BN=64, WN=64, stages=2, scheduler="persistent", persistent_blocks=16, swap=True),
    # a swapped staging tile (2 x 32 x 68 floats) smaller than BM x C_LD: the mbarriers follow it
    "128x32-s2-p16-sw": WS.replace(BN=32, WN=32, stages=2, scheduler="persistent", persistent_blocks=16, swap=True),
    # two blocks an SM (min_blocks = 2): no setmaxnreg, 80 registers a thread
    "128x32-s4-k4a-o2": WS.replace(BN=32, WN=32, stages=4, split_k=4, min_blocks=2),
    "128x48-s3-o2-sw": WS.replace(BN=48, WN=48, stages=3, min_blocks=2, swap=True),
    "64x64-s4-k3w-o2": WS.replace(BM=64, BN=64, WN=64, stages=4, split_k=3, reduce="workspace", min_blocks=2),
    # pingpong: two consumers take a persistent block's tiles in turn (few blocks: many turns, odd counts)
    "64x128-s3-p3-pp": WS.replace(BM=64, WM=64, stages=3, scheduler="pingpong", persistent_blocks=3),
    "64x64-s4-p16-pp": WS.replace(BM=64, WM=64, BN=64, WN=64, stages=4, scheduler="pingpong", persistent_blocks=16),
    "128x64-s2-p5-pp": WS.replace(BM=128, WM=128, BN=64, WN=64, stages=2, scheduler="pingpong", persistent_blocks=5),
}
# Ragged in every dimension, K below one stage and not a multiple of 4, one row or column, deep K.
SHAPES = ["256x256x256", "777x1234x520", "129x257x67", "1x300x33", "300x1x33", "1000x999x3", "70x90x2050",
          "20x1500x700"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", CONFIGS)
def test_gate_passes_in_every_layout(hopper, name, layout, shape):
    cfg = CONFIGS[name].replace(layout=layout)
    errors = hopper.check(cfg, Shape.parse(shape, layout), seed=len(shape))   # raises WrongResult past the gate
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6), errors



# The last stage of a ragged K issues only its k steps inside K: one, two or three of a 32-deep stage's
# four (K % 32 = 3, 9, 20), after the loop ("tail") or chosen inside it (persistent cp.async: "branch"),
# in split-K's last slice and the TMA pipeline (persistent and split too); pingpong keeps the one loop (the last
# stage whole, as before); K = 64 has no ragged stage.
RAGGED = {
    "ws-tail": WS,
    "ws-k3w-tail": WS.replace(BM=64, split_k=3, reduce="workspace"),
    "ws-p16-branch": WS.replace(stages=2, scheduler="persistent", persistent_blocks=16),
    "ws-pp-whole": WS.replace(BM=64, WM=64, stages=3, scheduler="pingpong", persistent_blocks=3),
    "tma-tail": preset("tf32x3-tma").replace(BN=128, WN=128, stages=4, label=""),
    "tma-p3-tail": preset("tf32x3-tma").replace(BN=128, WN=128, stages=2, scheduler="persistent", persistent_blocks=3, label=""),
    "tma-k3a-tail": preset("tf32x3-tma").replace(BN=128, WN=128, stages=4, split_k=3, label=""),
}


@pytest.mark.parametrize("K", [35, 41, 52, 64, 113])
@pytest.mark.parametrize("name, layout", [(n, lay) for n in RAGGED for lay in (("NT",) if "tma" in n else ("NN", "TN"))])
def test_last_ragged_stage_issues_its_k_steps(hopper, name, layout, K):
    """TMA reads NT with 16-byte rows: K rounded up to a multiple of 4 there (36, 44, 52, 64, 116: still
    one, two, three and no k step short of a stage). K = 35 splits three ways into 32, 3 and an empty slice."""
    cfg = RAGGED[name].replace(layout=layout)
    K = -(-K // 4) * 4 if cfg.warp_specialized and not cfg.async_copy else K
    errors = hopper.check(cfg, Shape(304, 264, K, layout), seed=K)   # raises WrongResult past the gate
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6), errors

@pytest.mark.parametrize("layout", LAYOUTS)
def test_rows_one_float_past_their_length(hopper, layout):
    """lda, ldb and ldc one float longer than the rows: no operand's rows are 16 bytes apart, so every
    copy is a 4-byte one (but an m-contiguous A's, copied 16 bytes at a time, shifted), and the gate
    still passes."""
    errors = hopper.check(WS.replace(layout=layout), Shape(515, 259, 131, layout), seed=5, pad=1)
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6), errors


@pytest.mark.parametrize("layout", LAYOUTS)
def test_swapped_rows_of_c_end_inside_a_16_byte_chunk(hopper, layout):
    """Swapped, C's rows (ldc = 304, 16-byte aligned) go out 16 bytes a lane; N = 301 ends each row
    inside a chunk, whose first element alone is stored."""
    cfg = WS.replace(layout=layout, swap=True, BN=32, WN=32)
    errors = hopper.check(cfg, Shape(45, 301, 131, layout), seed=9, pad=3)
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6), errors


def _gate_on_ragged_rows(hopper, cfg, layout, swapped, pad):
    """The gate on 333x271x133 (swapped: 45x333x133, few rows of C) with every operand's rows `pad` floats
    past their length (ld % 4 = 1, 2, 3 for pad 0, 1, 2 where the row is 133 long; 0 for pad 3)."""
    shape = Shape(45, 333, 133, layout) if swapped else Shape(333, 271, 133, layout)
    errors = hopper.check(cfg, shape, seed=pad, pad=pad)
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6), errors


@pytest.mark.parametrize("pad", [0, 1, 2, 3])
@pytest.mark.parametrize("layout", ["TN", "TT", "NN-sw"])
@pytest.mark.parametrize("name", ["128x128-s4", "64x128-s4-k3w", "128x128-s2-p16", "128x32-s4-k4a-o2", "64x128-s3-p3-pp"])
def test_m_contiguous_rows_of_a_staged_as_they_lie(hopper, name, layout, pad):
    """The kernel's A m contiguous (TN, TT; NN swapped, where it is C's B) is staged as it lies, 16 bytes
    a copy: aligned rows (pad 3: ld = 336), and rows with ld % 4 = 1, 2, 3 copied as the chunks around
    them, shifted; ragged M, N and K, split-K, the persistent grid, two blocks an SM."""
    layout, _, sw = layout.partition("-")
    if sw and CONFIGS[name].scheduler == "pingpong":
        pytest.skip("no swapped pingpong kernel")
    cfg = CONFIGS[name].replace(layout=layout, swap=bool(sw))
    assert cfg.a_mmajor_stage
    _gate_on_ragged_rows(hopper, cfg, layout, bool(sw), pad)


@pytest.mark.parametrize("pad", [0, 3])
@pytest.mark.parametrize("layout", ["TN", "TT", "NN-sw"])
@pytest.mark.parametrize("name", ["128x128-s4", "128x32-s4-k4a-o2"])
def test_m_contiguous_a_transposed_by_the_producer(hopper, name, layout, pad):
    """a_kmajor = False: the same kernels with A transposed K-major by the producer's 4-byte copies
    (the other staging the dispatch can pick), on the same ragged, split-K, two-block cases."""
    layout, _, sw = layout.partition("-")
    cfg = CONFIGS[name].replace(layout=layout, swap=bool(sw), a_kmajor=False)
    assert cfg.a_mmajor_choice and not cfg.a_mmajor_stage
    _gate_on_ragged_rows(hopper, cfg, layout, bool(sw), pad)


# NT kernels whose padding for A's shifted rows keeps the SM's shared-memory carveout (a_kshift_stage)
KSHIFT = {
    "128x160-s3": WS.replace(BN=160, WN=160, stages=3),
    "128x96-s5-k4a": WS.replace(BN=96, WN=96, stages=5, split_k=4),
    "64x128-s5-k3w": WS.replace(BM=64, stages=5, split_k=3, reduce="workspace"),
    "128x128-s2-p16": WS.replace(stages=2, scheduler="persistent", persistent_blocks=16),
    "128x48-s3-o2": WS.replace(BN=48, WN=48, stages=3, min_blocks=2),
    "64x128-s3-p3-pp": WS.replace(BM=64, WM=64, stages=3, scheduler="pingpong", persistent_blocks=3),
}


@pytest.mark.parametrize("pad", [0, 1, 2, 3])
@pytest.mark.parametrize("layout", ["NT", "NT-sw"])
@pytest.mark.parametrize("name", KSHIFT)
def test_k_contiguous_rows_of_a_copied_shifted(hopper, name, layout, pad):
    """The kernel's A and B k contiguous (NT; swapped, A is C's B) has A staged unswizzled, 16 bytes a
    copy: aligned rows (pad 3: K + 3 = 136), and rows with ld % 4 = 1, 2, 3 copied as the chunks around
    them, shifted (the consumers read each row where it landed); ragged M, N and K (K = 133: the last step
    a partial chunk), split-K by atomics and through a workspace, the persistent grid, two blocks an SM.
    The other tests' NT kernels (128x128 4 stages, say) keep the swizzled stage: their padding would move
    the carveout."""
    layout, _, sw = layout.partition("-")
    if sw and KSHIFT[name].scheduler == "pingpong":
        pytest.skip("no swapped pingpong kernel")
    cfg = KSHIFT[name].replace(layout=layout, swap=bool(sw))
    assert cfg.a_kshift_stage
    _gate_on_ragged_rows(hopper, cfg, layout, bool(sw), pad)


def _stored(rng, rows, cols, ld, offset):
    """A rows x ld buffer of random non-zero values whose first element is `offset` floats into its
    allocation (so it starts off a 16-byte boundary where offset % 4 != 0); its first `cols` columns
    are the matrix."""
    import cupy

    buf = rng.uniform(0.5, 1.0, size=(rows * ld + offset,), dtype=cupy.float32)
    return buf[offset:].reshape(rows, ld)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("offset", [0, 1, 4])
def test_any_start_and_padded_rows(hopper, layout, offset, swap):
    """A and B start `offset` floats into their buffers with rows padded past their length (the padding
    random, never read into the product), C's padding is never written; both alpha/beta cases. Swapped,
    C's rows (ldc = N + 3) are stored transposed from a staged tile, 4 bytes at a time."""
    import cupy

    M, N, K = 333, 300, 88
    a_rows, a_cols = (M, K) if layout[0] == "N" else (K, M)
    b_rows, b_cols = (K, N) if layout[1] == "N" else (N, K)
    lda, ldb, ldc = a_cols + 4, b_cols + 8, N + 3
    cfg = WS.replace(layout=layout, swap=swap)
    assert cfg.accepts(M, N, K, lda, ldb, ldc, aligned=offset % 4 == 0) is None
    rng = cupy.random.default_rng(offset + 7)
    a, b = _stored(rng, a_rows, a_cols, lda, offset), _stored(rng, b_rows, b_cols, ldb, offset)
    a64 = a[:, :a_cols].astype(cupy.float64)
    b64 = b[:, :b_cols].astype(cupy.float64)
    a64 = a64 if layout[0] == "N" else a64.T
    b64 = b64 if layout[1] == "N" else b64.T
    c = cupy.empty((M, ldc), dtype=cupy.float32)
    kernel = hopper.kernel(cfg)
    for alpha, beta in ((1.0, 0.0), (0.5, 3.0)):
        if beta == 0.0:
            c.fill(cupy.nan)
        else:
            c[...] = rng.uniform(-1.0, 1.0, size=c.shape, dtype=cupy.float32)
        c0 = c.copy()
        kernel.launch(Operands(M, N, K, a.data.ptr, lda, b.data.ptr, ldb, c.data.ptr, ldc, alpha, beta))
        cupy.cuda.get_current_stream().synchronize()
        assert bool(cupy.array_equal(c[:, N:], c0[:, N:], equal_nan=True)), "C's padding was written"
        ref = alpha * (a64 @ b64) + (beta * c0[:, :N].astype(cupy.float64) if beta else 0.0)
        assert rel_error(c[:, :N], ref) <= 2e-6, (layout, offset, alpha, beta)


@pytest.mark.parametrize("bn", [128, 144])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_inf_and_nan_propagate_as_in_sgemm(hopper, layout, swap, bn):
    """+-Inf in A and B give the Inf (or NaN, for Inf * 0 or Inf - Inf) SGEMM gives, NaN stays NaN, in
    the rows and columns they touch, and every other output is finite. BN = 144 leaves each producer
    thread an odd count of B's float4s (9), so the split's batches of two end on a half batch."""
    import cupy
    import numpy as np

    M, N, K = 200, 150, 96
    rng = cupy.random.default_rng(11)
    a = rng.uniform(0.5, 1.0, size=(M, K), dtype=cupy.float32)
    b = rng.uniform(0.5, 1.0, size=(K, N), dtype=cupy.float32)
    a[3, 5], a[7, 9], b[11, 13] = cupy.inf, -cupy.inf, cupy.nan
    a_st = a if layout[0] == "N" else cupy.ascontiguousarray(a.T)
    b_st = b if layout[1] == "N" else cupy.ascontiguousarray(b.T)
    lda, ldb = a_st.shape[1], b_st.shape[1]
    c = cupy.full((M, N), cupy.nan, dtype=cupy.float32)
    hopper.kernel(WS.replace(layout=layout, swap=swap, BN=bn, WN=bn)).launch(
        Operands(M, N, K, a_st.data.ptr, lda, b_st.data.ptr, ldb, c.data.ptr, N, 1.0, 0.0))
    cupy.cuda.get_current_stream().synchronize()
    with np.errstate(invalid="ignore", over="ignore"):
        ref = cupy.asnumpy(a).astype(np.float64) @ cupy.asnumpy(b).astype(np.float64)
    got = cupy.asnumpy(c)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(np.isposinf(got), np.isposinf(ref)) and np.array_equal(np.isneginf(got), np.isneginf(ref))
