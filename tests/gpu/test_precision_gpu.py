"""Precision classes on a GPU: cuBLAS in each mode (the gate's reference) on every layout, the
accuracy gate on the tensor-core presets, and matmul's precision= and half inputs."""
from __future__ import annotations

import numpy as np
import pytest

import gemmgen
from gemmgen.measure.gate import allowed, gate_bound, rel_error
from gemmgen.base import Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.problem import Problem

pytestmark = pytest.mark.gpu

LAYOUTS = ["NN", "NT", "TN", "TT"]
MODES = {"f32": ["fp32", "tf32"], "f16": ["f16"], "bf16": ["bf16"]}


def _cublas_errors(prob: Problem) -> dict[str, float]:
    """Each mode's error against float64 on the plain product and with alpha/beta (worst of both)."""
    c0 = prob.fill_c(poison=False)
    out = {}
    for mode in MODES[prob.dtype]:
        plain = rel_error(prob.cublas(mode=mode), prob.reference64(1.0, 0.0, None))
        scaled = rel_error(prob.cublas(out=c0.copy(), mode=mode, alpha=0.5, beta=3.0),
                           prob.reference64(0.5, 3.0, c0))
        out[mode] = max(plain, scaled)
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,pad", [("300x200x100", 3), ("1024x768x512", 0)])
def test_cublas_modes_are_right_on_every_layout(shape, pad, layout):
    """Non-square and padded: a swapped M/N, a wrong transpose or leading dimension gives error ~1."""
    errs = {d: _cublas_errors(Problem(Shape.parse(shape, layout), seed=3, pad=pad, dtype=d)) for d in MODES}
    print(shape, layout, errs)
    assert errs["f32"]["fp32"] < 2e-6                         # strict SGEMM
    # TF32 products err ~3e-4; cuBLAS runs fp32 kernels in TF32 mode where tensor cores do not pay
    # (small and ragged shapes), so only the upper end holds on every shape
    assert errs["f32"]["tf32"] < 2e-3
    for half in ("f16", "bf16"):   # exact products of the stored halves: only fp32 accumulation errs
        assert errs[half][half] < 1e-5


def test_cublas_error_order_at_4096_inner_dimension():
    prob32 = Problem(Shape(1024, 1024, 4096), seed=1)
    e32 = _cublas_errors(prob32)
    e16 = _cublas_errors(Problem(Shape(1024, 1024, 4096), seed=1, dtype="f16"))
    print(e32, e16)
    assert 1e-8 < e32["fp32"] < 5e-6 < 5e-5 < e32["tf32"] < 2e-3
    assert 1e-8 < e16["f16"] < 2e-5                           # ~1e-6..1e-5: accumulation only


def test_problem_stores_half_inputs_and_refuses_a_mode_of_another_type():
    import cupy as cp

    p16 = Problem(Shape(64, 48, 32, "NT"), seed=1, dtype="f16")
    pbf = Problem(Shape(64, 48, 32, "NT"), seed=1, dtype="bf16")
    assert p16.a_store.dtype == cp.float16 and pbf.a_store.dtype == cp.uint16 and p16.C.dtype == cp.float32
    # both round the same fp32 draws: bf16 to 8 significant bits (2^-8), f16 to 11 (2^-11)
    a16, abf = p16.A.astype(cp.float32), (pbf.A.astype(cp.uint32) << 16).view(cp.float32)
    assert 0 < float(cp.abs(a16 - abf).max()) <= 2.0 ** -8 + 2.0 ** -11
    with pytest.raises(ValueError, match="'tf32' does not take f16 inputs; valid: f16"):
        p16.cublas(mode="tf32")
    with pytest.raises(ValueError, match="'f16' does not take f32 inputs"):
        Problem(Shape(8, 8, 8)).cublas(mode="f16")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", ["1000x1000x1000", "4097x4095x1023"])
@pytest.mark.parametrize("name", ["tf32", "tf32x3"])
def test_tensor_core_presets_pass_the_gate(session, name, shape, layout):
    cfg = preset(name).replace(layout=layout)
    errors = session.check(cfg, Shape.parse(shape, layout), seed=11)
    print(name, shape, layout, errors)
    assert errors["err_fp64"] <= errors["bound"] <= gate_bound(cfg)
    assert errors["bound"] == pytest.approx(allowed(name if name == "tf32" else "fp32", errors["cublas_err_fp64"]))


def test_measure_times_each_kernel_against_cublas_in_its_mode(worker):
    v10, x3, tf32 = worker.call("retime", [preset("v10"), preset("tf32x3"), preset("tf32")],
                                Shape(2048, 2048, 2048), rep_ms=50, timeout=180)
    assert [m.extra["baseline"] for m in (v10, x3, tf32)] == ["fp32", "fp32", "tf32"]
    assert v10.cublas_ms == x3.cublas_ms                       # one SGEMM timing for both fp32 kernels
    assert tf32.cublas_ms < v10.cublas_ms                      # cuBLAS TF32 outruns SGEMM
    for m in (v10, x3, tf32):
        assert m.rel_error == m.extra["err_fp64"] <= m.extra["bound"]
        assert m.extra["cublas_err_fp64"] > 0


def test_measure_times_a_half_kernel_against_cublas_f16(worker):
    m = worker.call("measure", preset("wmma"), Shape(1024, 1024, 1024), rep_ms=20, timeout=120)
    assert m.extra["baseline"] == "f16" and m.rel_error <= m.extra["bound"] and m.cublas_ms > 0


# ---- matmul -----------------------------------------------------------------------------------
def _pair(cp, M, N, K, dtype, seed=0):
    rng = np.random.default_rng(seed)
    A = cp.asarray(rng.uniform(-1, 1, (M, K)).astype(np.float32)).astype(dtype)
    B = cp.asarray(rng.uniform(-1, 1, (K, N)).astype(np.float32)).astype(dtype)
    return A, B


def test_matmul_tf32_has_tf32_accuracy():
    import cupy as cp

    A, B = _pair(cp, 1024, 768, 512, cp.float32)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    fast = gemmgen.matmul(A, B, precision="tf32")
    exact = gemmgen.matmul(A, B, precision="fp32")
    assert fast.dtype == cp.float32 and 5e-5 < rel_error(fast, ref) < 2e-3
    assert rel_error(exact, ref) < 2e-6 and rel_error(gemmgen.matmul(A, B), ref) < 2e-6


@pytest.mark.parametrize("trans", ["NN", "NT", "TN", "TT"])
def test_matmul_float16_returns_float32(trans):
    import cupy as cp

    A, B = _pair(cp, 515, 259, 131, cp.float16, seed=4)
    A = A if trans[0] == "N" else cp.asfortranarray(A)        # column-major: layout T, no copy
    B = B if trans[1] == "N" else cp.asfortranarray(B)
    C = gemmgen.matmul(A, B)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    assert C.dtype == cp.float32 and C.shape == (515, 259) and rel_error(C, ref) < 1e-5
    out = cp.ones((515, 259), cp.float32)
    gemmgen.matmul(A, B, out=out, alpha=2.0, beta=-1.0, precision="f16")
    assert rel_error(out, 2.0 * ref - 1.0) < 1e-5


def test_matmul_torch_bfloat16():
    torch = pytest.importorskip("torch")
    A = torch.rand(300, 200, device="cuda").to(torch.bfloat16)
    B = torch.rand(200, 100, device="cuda").to(torch.bfloat16)
    C = torch.empty(300, 100, device="cuda")
    assert gemmgen.matmul(A, B, out=C) is C
    torch.testing.assert_close(C, (A.double() @ B.double()).float(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kw,dtypes,err,words", [
    ({"precision": "fp16"}, ("float32", "float32"), ValueError, "'fp16' is not one of fp32, tf32, f16, bf16"),
    ({"precision": "TF32"}, ("float32", "float32"), ValueError, "is not one of"),
    ({"precision": "tf32"}, ("float16", "float16"), ValueError, "needs float32 inputs, but A and B are float16"),
    ({"precision": "f16"}, ("float32", "float32"), ValueError, "needs float16 inputs, but A and B are float32"),
    ({}, ("float16", "float32"), ValueError, "A is float16 and B is float32"),
    ({}, ("float64", "float64"), TypeError, "float64; gemmgen's A and B are float32, float16 or bfloat16"),
])
def test_bad_precision_and_dtypes_are_named(kw, dtypes, err, words):
    import cupy as cp

    A, B = cp.ones((4, 3), dtypes[0]), cp.ones((3, 2), dtypes[1])
    with pytest.raises(err, match=words):
        gemmgen.matmul(A, B, **kw)


def test_half_output_is_refused():
    import cupy as cp

    A, B = cp.ones((4, 3), cp.float16), cp.ones((3, 2), cp.float16)
    with pytest.raises(TypeError, match="out has dtype float16; C is always float32"):
        gemmgen.matmul(A, B, out=cp.empty((4, 2), cp.float16))
