"""A tiny C with long K and a short K through gemmgen.matmul's small-product route (gemmgen.runtime.small:
gg_dots*, gg_outer*): every layout, ragged sizes, padded and misaligned operands, K slices, alpha and beta,
a NaN-poisoned C, Inf and NaN, the PyTorch route. Errors against float64 within the gate's SGEMM bound."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen.measure.gate import allowed, rel_error

from test_gemv_gpu import _check, _lds, _operand, _runs_on_operands, _specials_as_sgemm, _torch_takes

pytestmark = pytest.mark.gpu

LAYOUTS = ["NN", "NT", "TN", "TT"]
DOTS = [(2, 2, 1000003), (2, 3, 35), (4, 4, 70001), (3, 8, 4097), (8, 8, 300000), (5, 7, 33), (2, 2, 32)]
OUTER = [(4096, 4096, 1), (1000, 999, 7), (9, 100003, 8), (100003, 9, 8), (16384, 16, 6), (33, 65, 3),
         (513, 2, 8), (2, 513, 5), (4096, 2049, 13), (2049, 4099, 16)]   # K 13, 16: 2**23 outputs and more


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", DOTS + OUTER)
def test_every_layout_and_ragged_size(layout, M, N, K):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(M * 7 + N * 3 + K)
    A, B = _operand(cp, rng, M, K, layout[0]), _operand(cp, rng, K, N, layout[1])
    kernel = gemmgen.load().plan_for(M, N, K, layout, *_lds(A, B, layout), N)[0]
    assert kernel.family == "small", kernel.name
    _check(cp, gemmgen, A, B)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pad,shift", [(3, 0), (0, 1), (5, 3)])
def test_padded_and_misaligned_operands(layout, pad, shift):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(pad * 10 + shift)
    for M, N, K in ((3, 5, 200001), (2051, 1030, 5), (7, 3001, 8)):
        A = _operand(cp, rng, M, K, layout[0], pad, shift)
        B = _operand(cp, rng, K, N, layout[1], pad, shift + 2)
        _check(cp, gemmgen, A, B)


@pytest.mark.parametrize("M,N,K", [(2, 2, 1000000), (6, 5, 3000), (4097, 4095, 8), (10, 30001, 1)])
def test_alpha_beta_a_poisoned_c_and_a_padded_c(M, N, K):
    """beta == 0 never reads C (NaN there stays out); beta != 0 adds it; C a view with rows ldc > N apart,
    its misaligned rows stored 4 bytes at a time and the columns past N untouched."""
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(K)
    A, B = _operand(cp, rng, M, K, "N"), _operand(cp, rng, K, N, "T")
    C = _check(cp, gemmgen, A, B, C0=cp.full((M, N), cp.nan, dtype=cp.float32), alpha=-2.5)
    assert not bool(cp.isnan(C).any())
    _check(cp, gemmgen, A, B, C0=cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32)), alpha=0.5, beta=-1.5)
    big = cp.full((M, N + 3), 7.0, dtype=cp.float32)
    C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
    big[:, :N] = C0
    gemmgen.matmul(A, B, out=big[:, :N], alpha=2.0, beta=0.5)
    ref = 2.0 * (A.astype(cp.float64) @ B.astype(cp.float64)) + 0.5 * C0.astype(cp.float64)
    assert rel_error(big[:, :N], ref) <= allowed("fp32", rel_error(2.0 * (A @ B) + 0.5 * C0, ref))
    assert bool((big[:, N:] == 7.0).all())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(3, 4, 100000), (2000, 300, 7), (5, 6, 70)])
def test_inf_and_nan_land_where_sgemm_puts_them(layout, M, N, K):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(1)
    A, B = _operand(cp, rng, M, K, layout[0]).copy(order="K"), _operand(cp, rng, K, N, layout[1]).copy(order="K")
    for x, value in ((A, cp.inf), (A, -cp.inf), (B, cp.nan), (B, cp.inf)):
        x[tuple(rng.integers(0, s) for s in x.shape)] = value
    _specials_as_sgemm(cp, gemmgen, A, B)


def test_the_torch_route_takes_it_too():
    torch = pytest.importorskip("torch")

    _torch_takes(torch.rand(4, 300000, device="cuda"), torch.rand(300000, 3, device="cuda"), "small")
    _torch_takes(torch.rand(5000, 8, device="cuda"), torch.rand(8, 3000, device="cuda"))


def test_the_librarys_kernel_runs_on_operands_directly():
    _runs_on_operands(2, 2, 500000, "small")
