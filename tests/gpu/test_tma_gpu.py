"""The warp-specialized TMA wgmma kernels (mainloop="ws_tma") on an sm_90 GPU, f16/bf16 layout NT:
the correctness gate (alpha=1/beta=0 on C poisoned with NaN, then alpha=0.5/beta=3; against float64
and cuBLAS in the same mode) on ragged shapes, where the copy engine's zero-filled edges replace the
kernel's bounds checks; padded and odd leading dimensions; rows not 16 bytes apart are refused.
Small shapes only: the whole module takes seconds on an H100 (most of it NVRTC compiles)."""
from __future__ import annotations

import pytest

from gemmgen.base import Rejected, Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import rel_error
from gemmgen.measure.launch import Operands

pytestmark = pytest.mark.gpu

F16 = preset("f16-tma").replace(label="")   # 128x256x64, 4 stages, accumulating on the tensor cores
CONFIGS = {
    "f16-128x256-direct": F16,
    "bf16-128x256-direct": F16.replace(dtype="bf16"),
    "f16-128x128-partials": F16.replace(BN=128, WN=128, stages=5, partials=True),
}
# Ragged in every dimension, K below one stage (8: the box reads 56 zero columns), N or M below one
# tile, and K = 4096 (64 stages through the ring, each stage reused 16 times).
SHAPES = ["256x256x256", "1000x1000x1000", "777x1234x520", "129x257x64", "1x1x8", "333x4100x88",
          "64x4096x8", "4100x64x4096"]
# Against float64, as tests/gpu/test_wmma_gpu.py: products of halves are exact in fp32, only the fp32
# accumulation errs. partials = true adds each stage's partial in round-to-nearest fp32; false
# accumulates on the tensor cores as cuBLAS does (its truncation grows with K: ~5e-6 at K=4096).
BOUND64 = {True: 1e-5, False: 2e-5}
CASES = ((1.0, 0.0, True), (0.5, 3.0, False))   # (alpha, beta, C poisoned with NaN)


def _widen(x, dtype):
    import cupy

    if dtype == "bf16":
        return (x.astype(cupy.uint32) << 16).view(cupy.float32)
    return x.astype(cupy.float32)


def _random(rng, shape, dtype):
    import cupy

    from gemmgen.measure.problem import to_bf16_bits

    x = rng.uniform(-1.0, 1.0, size=shape, dtype=cupy.float32)
    return to_bf16_bits(x) if dtype == "bf16" else x.astype(cupy.float16)


def _run_strided(session, cfg, M, N, K, lda, ldb, ldc, offset=0, seed=3):
    """Launch the kernel ourselves on A (M rows of lda), B (N rows of ldb), C (M rows of ldc), every
    padding element random (never zero) and A's first element ``offset`` elements into its buffer;
    return the worst relative error against float64 over both cases, C NaN before the beta=0 one."""
    import cupy

    assert cfg.accepts(M, N, K, lda, ldb, ldc) is None
    rng = cupy.random.default_rng(seed)
    a_buf = _random(rng, (M * lda + offset,), cfg.dtype)
    a_store = a_buf[offset:].reshape(M, lda)
    b_store = _random(rng, (N, ldb), cfg.dtype)
    c_store = cupy.empty((M, ldc), dtype=cupy.float32)
    a64 = _widen(a_store[:, :K], cfg.dtype).astype(cupy.float64)
    b64 = _widen(b_store[:, :K], cfg.dtype).astype(cupy.float64)
    kernel = session.kernel(cfg)
    worst = 0.0
    for alpha, beta, poison in CASES:
        if poison:
            c_store.fill(cupy.nan)
        else:
            c_store[...] = rng.uniform(-1.0, 1.0, size=c_store.shape, dtype=cupy.float32)
        c0 = c_store.copy()
        kernel.launch(Operands(M, N, K, a_store.data.ptr, lda, b_store.data.ptr, ldb, c_store.data.ptr, ldc,
                               alpha, beta))
        cupy.cuda.get_current_stream().synchronize()
        out = c_store[:, :N]
        bad = int((~cupy.isfinite(out)).sum())
        assert bad == 0, f"{bad} outputs NaN/Inf (alpha={alpha}, beta={beta}, {cfg.name})"
        # the padding of C is never written
        assert bool(cupy.array_equal(c_store[:, N:], c0[:, N:], equal_nan=True)), "C's padding was written"
        ref = alpha * (a64 @ b64.T) + (beta * c0[:, :N].astype(cupy.float64) if beta else 0.0)
        worst = max(worst, rel_error(out, ref))
    return worst


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", CONFIGS)
def test_gate_passes(hopper, name, shape):
    cfg = CONFIGS[name]
    s = Shape.parse(shape, "NT")
    errors = hopper.check(cfg, s, seed=len(shape))   # raises WrongResult past the gate's bound
    assert errors["err_fp64"] <= errors["bound"], errors
    assert errors["err_fp64"] <= BOUND64[cfg.partials], errors


# 3xTF32 with split-K: K slices of whole BK steps, the last one (or several, for K = 8) short or empty;
# atomics add alpha * each slice into C pre-scaled by beta, a workspace sums the slices in order.
X3 = preset("tf32x3-tma").replace(BN=128, WN=128, stages=4, label="")
SPLITS = {
    "x3-128x128-k4a": X3.replace(split_k=4),
    "x3-128x128-k8w": X3.replace(split_k=8, reduce="workspace"),
    "x3-128x32-k4a": X3.replace(BN=32, WN=32, stages=6, split_k=4),
}


@pytest.mark.parametrize("shape", SHAPES + ["128x4096x4100", "33x100x1000"])
@pytest.mark.parametrize("name", SPLITS)
def test_split_k_gate_passes(hopper, name, shape):
    s = Shape.parse(shape, "NT")
    errors = hopper.check(SPLITS[name], s, seed=len(shape))   # raises WrongResult past the gate's bound
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6), errors


@pytest.mark.parametrize("name", CONFIGS)
def test_padded_rows(hopper, name):
    """Leading dimensions past the rows (lda = K + 8 and others), their padding random: the tensor maps
    end the rows at K (the copy engine reads zeros past it, not the padding) and step by lda."""
    cfg = CONFIGS[name]
    bound = BOUND64[cfg.partials]
    for M, N, K, lda, ldb, ldc, offset in ((777, 1234, 520, 528, 520, 1234, 0),      # lda = K + 8
                                           (129, 257, 100, 104, 112, 257, 0),       # K % 8 != 0, rows padded
                                           (333, 300, 88, 96, 104, 301, 8),         # odd ldc; A 16 bytes in
                                           (1, 1, 8, 16, 8, 1, 0)):
        assert _run_strided(hopper, cfg, M, N, K, lda, ldb, ldc, offset) <= bound, (M, N, K, lda, ldb, ldc)


@pytest.mark.parametrize("name", CONFIGS)
def test_padded_problem_through_the_gate(hopper, name):
    """The gate on padded operands (Problem pads A, B and C alike): K = 100 is refused with rows of
    100 halves (200 bytes) but passes once they are padded to 104."""
    cfg = CONFIGS[name]
    shape = Shape(100, 300, 100, "NT")
    with pytest.raises(Rejected, match="lda"):
        hopper.check(cfg, shape, seed=1)
    errors = hopper.check(cfg, shape, seed=1, pad=4)
    assert errors["err_fp64"] <= min(errors["bound"], BOUND64[cfg.partials]), errors
    errors = hopper.check(cfg, Shape(777, 1234, 520, "NT"), seed=2, pad=8)   # lda = ldb = K + 8
    assert errors["err_fp64"] <= min(errors["bound"], BOUND64[cfg.partials]), errors


@pytest.mark.parametrize("name", CONFIGS)
def test_rows_not_16_bytes_apart_are_refused(hopper, name):
    """lda not a multiple of 8 halves: accepts() says why, the gate refuses the shape before launching,
    and a launch anyway fails when the tensor map is made, before anything runs."""
    import cupy

    cfg = CONFIGS[name]
    assert cfg.accepts(777, 1234, 520, lda=521) == "TMA needs lda % 8 == 0 (16-byte rows), got lda=521"
    assert "ldb=524" in cfg.accepts(777, 1234, 520, ldb=524)
    with pytest.raises(Rejected, match="lda % 8 == 0"):
        hopper.check(cfg, Shape(777, 1234, 520, "NT"), seed=2, pad=1)           # lda = 521
    a = cupy.zeros((64, 68), dtype=cupy.float16)
    b = cupy.zeros((64, 64), dtype=cupy.float16)
    c = cupy.zeros((64, 64), dtype=cupy.float32)
    with pytest.raises(ValueError, match="leading dimension 68"):
        hopper.kernel(cfg).launch(Operands(64, 64, 64, a.data.ptr, 68, b.data.ptr, 64, c.data.ptr, 64))


# A persistent grid (persistent = n): n blocks walk the tiles of C a grid apart, the producer filling
# the ring for a block's next tile while its consumers store this one from a staging tile of their
# own. Few blocks make each walk many tiles (the ring's phases run on across tiles); the f16 kernel
# accumulates on the tensor cores, so its consumers hand the last stage of each tile back after it.
PERSISTENT = {
    "x3-176-s2-p3": preset("tf32x3-tma").replace(stages=2, scheduler="persistent", persistent_blocks=3, label=""),
    "x3-128-s3-p132": X3.replace(stages=3, scheduler="persistent", persistent_blocks=132),
    "x3-64x128-s4-p5": X3.replace(BM=64, scheduler="persistent", persistent_blocks=5),
    "f16-128x128-direct-p7": F16.replace(BN=128, WN=128, stages=2, scheduler="persistent", persistent_blocks=7),
    # pingpong: two consumers take the block's 64-row tiles in turn; the f16 kernel's hand back each
    # tile's last stage after its main loop
    "x3-64x128-s3-p3-pp": X3.replace(BM=64, WM=64, stages=3, scheduler="pingpong", persistent_blocks=3),
    "f16-64x128-direct-p7-pp": F16.replace(BM=64, WM=64, BN=128, WN=128, stages=2, scheduler="pingpong", persistent_blocks=7),
}


@pytest.mark.parametrize("shape", SHAPES + ["1000x1000x16", "2048x2048x32"])
@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_gate_passes(hopper, name, shape):
    cfg = PERSISTENT[name]
    s = Shape.parse(shape, "NT")
    errors = hopper.check(cfg, s, seed=len(shape))   # raises WrongResult past the gate's bound
    assert errors["err_fp64"] <= min(errors["bound"], 2e-6 if cfg.dtype == "f32" else 2e-5), errors


@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_padded_rows(hopper, name):
    """Padded rows and an odd ldc (C's rows go out 4 bytes at a time) in a persistent grid."""
    cfg = PERSISTENT[name]
    bound = 2e-6 if cfg.dtype == "f32" else 2e-5
    for shape, pad in (("777x1234x520", 8), ("333x301x88", 8)):   # ldc = 309: odd
        errors = hopper.check(cfg, Shape.parse(shape, "NT"), seed=5, pad=pad)
        assert errors["err_fp64"] <= min(errors["bound"], bound), (shape, errors)
    if cfg.dtype != "f32":
        assert _run_strided(hopper, cfg, 333, 300, 88, 96, 104, 301, 8) <= bound


@pytest.mark.parametrize("name", ["x3-176-s2-p3", "x3-128-s3-p132", "tf32x3-tma"])
@pytest.mark.parametrize("c_offset", [0, 1, 2, 3])
def test_c_rows_off_16_byte_boundaries(hopper, name, c_offset):
    """C's rows staged shifted onto C's 16-byte chunks: C starting 0..3 floats past a 16-byte boundary,
    ldc = N + 5 (every row a different shift), alpha/beta both ways; C's padding is never written."""
    import cupy

    cfg = PERSISTENT.get(name) or preset(name).replace(label="")
    M, N, K, ldc = 300, 517, 72, 522
    rng = cupy.random.default_rng(c_offset)
    a = rng.uniform(-1, 1, (M, K), dtype=cupy.float32)
    b = rng.uniform(-1, 1, (N, K), dtype=cupy.float32)
    buf = rng.uniform(-1, 1, (M * ldc + 8,), dtype=cupy.float32)
    c_store = buf[c_offset:c_offset + M * ldc].reshape(M, ldc)
    c0, buf0 = c_store.copy(), buf.copy()
    ref = 0.5 * (a.astype(cupy.float64) @ b.T.astype(cupy.float64)) + 2.0 * c0[:, :N].astype(cupy.float64)
    hopper.kernel(cfg).launch(Operands(M, N, K, a.data.ptr, K, b.data.ptr, K, c_store.data.ptr, ldc, 0.5, 2.0))
    cupy.cuda.get_current_stream().synchronize()
    assert rel_error(c_store[:, :N], ref) <= 2e-6
    assert bool(cupy.array_equal(c_store[:, N:], c0[:, N:])), "C's padding was written"
    outside = cupy.ones(buf.shape, dtype=bool)
    outside[c_offset:c_offset + M * ldc] = False
    assert bool(cupy.array_equal(buf[outside], buf0[outside])), "memory around C was written"
