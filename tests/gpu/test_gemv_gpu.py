"""One row or one column of C (M == 1 or N == 1) through gemmgen.matmul's matrix-vector route
(gemmgen.runtime.gemv): every layout, ragged sizes, padded and misaligned operands, split K, alpha and
beta, Inf and NaN, and the PyTorch route. Errors against float64 within the gate's SGEMM bound."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen.measure.gate import allowed, rel_error

pytestmark = pytest.mark.gpu

LAYOUTS = ["NN", "NT", "TN", "TT"]
SHAPES = [(1, 4099, 513), (777, 1, 1025), (1, 64, 20000), (5000, 1, 3), (1, 1, 4097), (1, 3, 1), (1031, 1, 1),
          (3001, 1, 3001), (1, 3001, 3001), (1, 4097, 1025)]   # odd lengths: shifted vector loads, 4-byte rows


def _operand(cp, rng, rows, cols, letter, pad=0, shift=0):
    """A rows x cols float32 matrix stored row-major (N) or column-major (T), its leading dimension
    ``pad`` floats longer, starting ``shift`` floats into its buffer (misaligned for shift % 4)."""
    outer, inner = (rows, cols) if letter == "N" else (cols, rows)
    buf = cp.asarray(rng.uniform(-1, 1, outer * (inner + pad) + shift).astype(np.float32))
    store = buf[shift:].reshape(outer, inner + pad)[:, :inner]
    return store if letter == "N" else store.T


def _check(cp, gemmgen, A, B, **kw):
    C0 = kw.pop("C0", None)
    out = None if C0 is None else C0.copy()
    C = gemmgen.matmul(A, B, out=out, **kw)
    alpha, beta = kw.get("alpha", 1.0), kw.get("beta", 0.0)
    ref = alpha * (A.astype(cp.float64) @ B.astype(cp.float64))
    if beta:
        ref = ref + beta * C0.astype(cp.float64)
    cub = alpha * (A @ B) + (beta * C0 if beta else 0)   # cuBLAS SGEMM (CuPy, TF32 off)
    err, bound = rel_error(C, ref), allowed("fp32", rel_error(cub, ref))
    assert err <= bound, f"{A.shape}x{B.shape}: error {err:.2e} over the bound {bound:.2e}"
    return C


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_one_row_or_column_in_every_layout(layout, M, N, K):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(M * 7 + N * 3 + K)
    A, B = _operand(cp, rng, M, K, layout[0]), _operand(cp, rng, K, N, layout[1])
    assert gemmgen.load().plan_for(M, N, K, layout, *_lds(A, B, layout), N)[0].family == "gemv"
    _check(cp, gemmgen, A, B)


def _lds(A, B, layout):
    return [(x.strides[0] if letter == "N" else x.strides[1]) // 4 for x, letter in zip((A, B), layout)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pad,shift", [(3, 0), (0, 1), (5, 3)])
def test_padded_and_misaligned_operands(layout, pad, shift):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(pad * 10 + shift)
    for M, N, K in ((1, 2051, 3000), (2051, 1, 3000), (4096, 1, 1024)):   # 4096 rows: gg_gemv_rows(_odd)
        A = _operand(cp, rng, M, K, layout[0], pad, shift)
        B = _operand(cp, rng, K, N, layout[1], pad, shift + 2)
        _check(cp, gemmgen, A, B)


@pytest.mark.parametrize("layout", ["NN", "TT"])
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (4096, 1, 4096), (1, 9, 70000)])
def test_alpha_and_beta_and_a_poisoned_c(layout, M, N, K):
    """beta == 0 never reads C (NaN there stays out); beta != 0 adds it, split K or not."""
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(K)
    A, B = _operand(cp, rng, M, K, layout[0]), _operand(cp, rng, K, N, layout[1])
    poisoned = cp.full((M, N), cp.nan, dtype=cp.float32)
    C = _check(cp, gemmgen, A, B, C0=poisoned, alpha=-2.5)
    assert not bool(cp.isnan(C).any())
    C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
    _check(cp, gemmgen, A, B, C0=C0, alpha=0.5, beta=-1.5)


def _specials_as_sgemm(cp, gemmgen, A, B):
    """matmul's NaN, +Inf and -Inf where cuBLAS SGEMM puts them, on operands with Inf and NaN planted."""
    ours, sgemm = gemmgen.matmul(A, B), A @ B
    for test in (cp.isnan, cp.isposinf, cp.isneginf):
        assert bool((test(ours) == test(sgemm)).all()), f"{test.__name__} differs from SGEMM"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inf_and_nan_land_where_sgemm_puts_them(layout):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(1)
    for M, N, K in ((1, 3001, 2500), (3001, 1, 2500)):
        A, B = _operand(cp, rng, M, K, layout[0]).copy(order="K"), _operand(cp, rng, K, N, layout[1]).copy(order="K")
        big, vec = (A, B) if max(A.shape) > max(B.shape) else (B, A)
        big[tuple(rng.integers(0, s) for s in big.shape)] = cp.inf
        big[tuple(rng.integers(0, s) for s in big.shape)] = -cp.inf
        big[tuple(rng.integers(0, s) for s in big.shape)] = cp.nan
        vec[tuple(rng.integers(0, s) for s in vec.shape)] = cp.inf   # the vector's too: a whole row or column
        _specials_as_sgemm(cp, gemmgen, A, B)


def _torch_takes(a, b, family=None):
    """gemmgen.torch.matmul(a, b) within 1e-6 of the float64 product, its kernel of ``family`` if given."""
    import gemmgen.torch as gt

    if family is not None:
        assert gt.kernel_for(a, b).family == family
    ref = a.double() @ b.double()
    assert float((gt.matmul(a, b).double() - ref).norm() / ref.norm()) < 1e-6


def test_the_torch_route_takes_it_too():
    torch = pytest.importorskip("torch")

    a, b = torch.rand(1, 3000, device="cuda"), torch.rand(3000, 4096, device="cuda")
    _torch_takes(a, b, "gemv")
    _torch_takes(torch.rand(4096, 3000, device="cuda"), a.t())


def _runs_on_operands(M, N, K, family):
    """kernel_for's kernel of an M x N x K NN product called as a Kernel (Operands, a workspace from CuPy's
    pool for a split K): of ``family``, with a workspace, C = 2 A@B over a NaN-poisoned C."""
    import cupy as cp

    import gemmgen
    from gemmgen.measure.launch import Operands

    rng = np.random.default_rng(5)
    A, B = _operand(cp, rng, M, K, "N"), _operand(cp, rng, K, N, "N")
    kernel = gemmgen.load().kernel_for(M, N, K, "NN", K, N, N)
    assert kernel.family == family and kernel.workspace_floats(M, N) > 0, kernel.name
    C = cp.full((M, N), cp.nan, dtype=cp.float32)
    kernel(Operands(M, N, K, A.data.ptr, K, B.data.ptr, N, C.data.ptr, N, 2.0, 0.0))
    ref = 2.0 * (A.astype(cp.float64) @ B.astype(cp.float64))
    assert rel_error(C, ref) <= allowed("fp32", rel_error(2.0 * (A @ B), ref))


def test_the_librarys_kernel_runs_on_operands_directly():
    _runs_on_operands(1, 300, 6000, "gemv")
