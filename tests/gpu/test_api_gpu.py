"""gemmgen.matmul on random shapes, layouts, alpha/beta, precisions, PyTorch tensors and streams."""
from __future__ import annotations

import numpy as np
import pytest

import gemmgen
from gemmgen.measure.gate import rel_error

pytestmark = pytest.mark.gpu


def _operand(cp, rng, rows, cols, trans):
    """A rows x cols float32 matrix, stored row-major or as a transposed (column-major) view."""
    if trans:
        return cp.asarray(rng.uniform(-1, 1, (cols, rows)).astype(np.float32)).T
    return cp.asarray(rng.uniform(-1, 1, (rows, cols)).astype(np.float32))


def test_fuzz_500_shapes_layouts_alpha_beta():
    import cupy as cp

    rng = np.random.default_rng(2026)
    worst = 0.0
    for i in range(500):
        M, N, K = (int(x) for x in np.exp(rng.uniform(0, np.log(5000), 3)).round().clip(1, 5000))
        ta, tb = rng.integers(0, 2, 2)
        alpha, beta = float(rng.uniform(-2, 2)), float(rng.choice([0.0, rng.uniform(-2, 2)]))
        A, B = _operand(cp, rng, M, K, ta), _operand(cp, rng, K, N, tb)
        C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32)) if beta else cp.full((M, N), cp.nan, cp.float32)
        ref = alpha * (A.astype(cp.float64) @ B.astype(cp.float64)) + (beta * C0.astype(cp.float64) if beta else 0)
        out = gemmgen.matmul(A, B, out=C0.copy(), alpha=alpha, beta=beta)
        err = rel_error(out, ref)
        assert err <= 1e-5, f"case {i}: {M}x{N}x{K} layout {'NT'[ta]}{'NT'[tb]} alpha={alpha} beta={beta}: {err}"
        worst = max(worst, err)
    print(f"worst relative error over 500 cases: {worst:.3g}")


@pytest.mark.parametrize("precision,dtype,bound", [
    ("tf32", "float32", 2e-3),     # TF32 products: ~3e-4
    ("f16", "float16", 1e-5),      # exact products of the halves, fp32 accumulation
    ("bf16", "bfloat16", 1e-5),
])
def test_fuzz_60_shapes_per_precision(precision, dtype, bound):
    import cupy as cp

    torch = pytest.importorskip("torch") if dtype == "bfloat16" else None   # CuPy has no bfloat16 of its own
    rng = np.random.default_rng(7)
    for i in range(60):
        M, N, K = (int(x) for x in np.exp(rng.uniform(0, np.log(3000), 3)).round().clip(1, 3000))
        ta, tb = rng.integers(0, 2, 2)
        alpha, beta = float(rng.uniform(-2, 2)), float(rng.choice([0.0, rng.uniform(-2, 2)]))
        A, B = _operand(cp, rng, M, K, ta), _operand(cp, rng, K, N, tb)
        if dtype == "float16":
            A, B = A.astype(cp.float16), B.astype(cp.float16)   # astype keeps the layout (order 'K')
        elif dtype == "bfloat16":
            A, B = (torch.as_tensor(x, device="cuda").to(torch.bfloat16) for x in (A, B))
        C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32)) if beta else cp.full((M, N), cp.nan, cp.float32)
        a64, b64 = (cp.asarray(x.double()) if torch is not None else x.astype(cp.float64) for x in (A, B))
        ref = alpha * (a64 @ b64) + (beta * C0.astype(cp.float64) if beta else 0)
        out = gemmgen.matmul(A, B, out=C0.copy(), alpha=alpha, beta=beta, precision=precision)
        err = rel_error(out, ref)
        assert err <= bound, f"case {i}: {M}x{N}x{K} {'NT'[ta]}{'NT'[tb]} {precision} alpha={alpha} beta={beta}: {err}"


def test_kernel_for_serves_each_precision_with_its_class():
    lib = gemmgen.load()
    assert lib.kernel_for(1024, 1024, 1024, "NN").precision == "fp32"
    assert lib.kernel_for(1024, 1024, 1024, "NN", precision="tf32").precision == "tf32"
    half = lib.kernel_for(1024, 1024, 1024, "TN", precision="bf16").config
    assert (half.dtype, half.layout) == ("bf16", "TN")


def test_torch_in_and_out_without_copies():
    torch = pytest.importorskip("torch")
    A = torch.rand(300, 200, device="cuda")
    B = torch.rand(500, 200, device="cuda").t()          # a transposed view: layout T, no copy
    C = torch.empty(300, 500, device="cuda")
    res = gemmgen.matmul(A, B, out=C)
    assert res is C and C.data_ptr() == res.data_ptr()
    torch.testing.assert_close(C, (A.double() @ B.double()).float(), rtol=1e-5, atol=1e-4)


def test_stream_orders_work():
    import cupy as cp

    s = cp.cuda.Stream(non_blocking=True)
    with s:
        A = cp.random.rand(1024, 512, dtype=cp.float32)
        B = cp.random.rand(512, 768, dtype=cp.float32)
    C = cp.empty((1024, 768), cp.float32)
    gemmgen.matmul(A, B, out=C, stream=s)
    s.synchronize()
    assert rel_error(C, A.astype(cp.float64) @ B.astype(cp.float64)) <= 1e-5


@pytest.mark.parametrize("make,err,words", [
    (lambda cp: (cp.ones((4, 3), cp.float64), cp.ones((3, 2), cp.float32)), TypeError, "float64"),
    (lambda cp: (cp.ones((4, 3, 1), cp.float32), cp.ones((3, 2), cp.float32)), ValueError, "3 dimensions"),
    (lambda cp: (cp.ones((4, 3), cp.float32), cp.ones((5, 2), cp.float32)), ValueError, "inner dimensions"),
    (lambda cp: (np.ones((4, 3), np.float32), cp.ones((3, 2), cp.float32)), TypeError, "host"),
    (lambda cp: (cp.ones((4, 6), cp.float32)[:, ::2], cp.ones((3, 2), cp.float32)), ValueError, "strides"),
])
def test_bad_inputs_are_named(make, err, words):
    import cupy as cp

    A, B = make(cp)
    with pytest.raises(err, match=words):
        gemmgen.matmul(A, B)


class _Claims:
    """An object whose __cuda_array_interface__ describes memory that is not CUDA device memory."""

    def __init__(self, ptr):
        self.__cuda_array_interface__ = {"shape": (4, 3), "typestr": "<f4", "data": (ptr, False), "version": 3}


def test_an_interface_pointing_at_no_cuda_memory_is_a_value_error_not_a_driver_error():
    import cupy as cp

    host = np.ones((4, 3), np.float32)
    for ptr in (0x1234, host.ctypes.data):          # nowhere, and host memory CUDA does not know
        with pytest.raises(ValueError, match=f"A's __cuda_array_interface__ points at {ptr:#x}"):
            gemmgen.matmul(_Claims(ptr), cp.ones((3, 2), cp.float32))
    A = cp.ones((4, 3), cp.float32)                 # the same object over device memory runs, and the
    out = gemmgen.matmul(_Claims(A.data.ptr), cp.ones((3, 2), cp.float32))   # context is still usable
    assert float(out.sum()) == 4 * 2 * 3


def test_bad_out_is_named():
    import cupy as cp

    A, B = cp.ones((4, 3), cp.float32), cp.ones((3, 2), cp.float32)
    with pytest.raises(ValueError, match="shape"):
        gemmgen.matmul(A, B, out=cp.empty((2, 4), cp.float32))
    with pytest.raises(TypeError, match="float64; C is always float32"):
        gemmgen.matmul(A, B, out=cp.empty((4, 2), cp.float64))
    buf = cp.ones((4, 4), cp.float32)
    with pytest.raises(ValueError, match="overlaps A"):
        gemmgen.matmul(buf[:, :3], cp.ones((3, 2), cp.float32), out=buf[:, 2:4])


def test_kernel_exposes_config_source_and_measured():
    lib = gemmgen.load()
    k = lib.kernel_for(4096, 4096, 4096, "NN")
    assert k.config.name in k.source and (k.measured is None or k.measured["tflops"] > 0)


def test_an_empty_sum_is_beta_times_c():
    """K == 0: C = beta * C; with beta == 0 C is written with zeros and never read (NaN there stays out),
    as the kernels and SGEMM do; on the stream asked for."""
    import cupy as cp

    A, B = cp.ones((4, 0), cp.float32), cp.ones((0, 3), cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:   # filled on the stream matmul writes on: a non-blocking stream is not ordered after the default one
        poisoned = cp.full((4, 3), cp.nan, cp.float32)
    out = gemmgen.matmul(A, B, out=poisoned, stream=s)
    s.synchronize()
    assert bool((out == 0).all())
    C = cp.arange(12, dtype=cp.float32).reshape(4, 3)
    assert bool((gemmgen.matmul(A, B, out=C.copy(), beta=2.0) == 2 * C).all())
    assert bool((gemmgen.matmul(A, B) == 0).all())
