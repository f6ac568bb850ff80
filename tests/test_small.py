"""The small-product route (gemmgen.runtime.small) without a GPU: which requests take it, the kernels' index
arithmetic run in numpy from the route's numbers (every output written once, from the right elements, in
every layout on strided operands), the K slices of dots, the library handing it out with no copies, the
plan command naming it, and its source compiling without spills."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen import build
from gemmgen.base.devices import known
from gemmgen.runtime import small
from gemmgen.runtime.library import KernelLibrary, Served
from gemmgen.runtime.policy import DEFAULT

from test_gemv import LAYOUTS, _stored, benchmark_file_holds_only_requests_of, compiles_without_spills


def _outer(r: small.Route, M, N, K, st, fa, fb, ldc):
    """gg_outer's mapping of blocks and threads onto C (small.cu), run element by element: C and a count of
    the writes to each of its elements."""
    sam, sak, sbk, sbn = st
    L, P = r.kc, 256 // r.kc
    BM, BN, nb = P * r.rows, 4 * r.kc, -(-N // (4 * r.kc))
    assert P * r.rows <= 256 and 1 <= L <= 32   # the block's rows fit small.cu's As
    C, writes = np.full(M * ldc, np.nan), np.zeros(M * ldc, dtype=int)
    for blk in range(r.grid):
        m0, n0 = (blk // nb) * BM, (blk % nb) * BN
        for t in range(256):
            p, n = t // L, n0 + 4 * (t % L)
            if n >= N:
                continue
            for i in range(r.rows):
                m = m0 + p + i * P
                if m >= M:
                    break
                for j in range(4):
                    if n + j < N:
                        C[m * ldc + n + j] = sum(fa[m * sam + k * sak] * fb[k * sbk + (n + j) * sbn] for k in range(K))
                        writes[m * ldc + n + j] += 1
    return C, writes


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(37, 45, 7), (300, 2, 3), (2, 300, 8), (9, 9, 1), (70, 600, 5)])
def test_outer_writes_every_output_once_from_the_right_elements(layout, M, N, K):
    rng = np.random.default_rng(M + 3 * N + 7 * K)
    (A, fa, lda), (B, fb, ldb) = _stored(rng, M, K, layout[0], 2), _stored(rng, K, N, layout[1], 3)
    ldc = N + 5
    r = small.route(M, N, K, sm_count=2)
    assert small.serves(M, N, K, "fp32", None) == "outer" and r.kernel == f"gg_outer{4 if K <= 4 else 8}"
    C, writes = _outer(r, M, N, K, small.strides(layout, lda, ldb), fa, fb, ldc)
    inside = np.zeros((M, ldc), dtype=bool)
    inside[:, :N] = True
    assert (writes.reshape(M, ldc)[inside] == 1).all() and (writes.reshape(M, ldc)[~inside] == 0).all()
    assert np.allclose(C.reshape(M, ldc)[:, :N], A @ B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("M,N,K,sms", [(2, 2, 1000000, 132), (8, 8, 65536, 132), (3, 7, 40, 132), (6, 5, 3000, 132),
                                       (8, 2, 2**29, 114), (2, 3, 33, 4)])
def test_dots_slices_cover_k_once_and_fill_at_most_two_blocks_an_sm(M, N, K, sms):
    r = small.route(M, N, K, sms)
    assert r.kernel == f"gg_dots{2 if max(M, N) <= 2 else 4 if max(M, N) <= 4 else 8}"
    assert r.grid == r.slices <= small.DOTS_RESIDENT * sms and (r.slices - 1) * r.kc < K <= r.slices * r.kc
    kernel = small.SmallKernel(M, N, K, "NN", sms)
    assert kernel.workspace_floats(M, N) == (r.slices * M * N if r.slices > 1 else 0)
    assert kernel.name == r.kernel + (f"_k{r.slices}" if r.slices > 1 else "")


@pytest.mark.parametrize("M,N,K,precision,family,elem,takes", [
    (2, 2, 1000000, "fp32", None, 4, "dots"), (8, 8, 32, "fp32", "simt", 4, "dots"), (8, 8, 31, "fp32", None, 4, None),
    (9, 8, 100, "fp32", None, 4, None), (1, 8, 100, "fp32", None, 4, None), (4096, 4096, 8, "fp32", None, 4, "outer"),
    (2048, 2048, 9, "fp32", None, 4, None), (4096, 2048, 16, "fp32", None, 4, "outer"), (4096, 2047, 16, "fp32", None, 4, None),
    (8192, 8192, 17, "fp32", None, 4, None), (4096, 4096, 4, "tf32", None, 4, None), (4096, 4096, 4, "fp32", "tf32x3", 4, None),
    (4096, 4096, 4, "f16", None, 2, None), (2, 2, 0, "fp32", None, 4, None), (2**30, 2, 3, "fp32", None, 4, None),
    (2**30 - 1, 2, 3, "fp32", None, 4, "outer"), (2**20, 2**20, 3, "fp32", None, 4, None)])
def test_which_requests_take_the_route(M, N, K, precision, family, elem, takes):
    assert small.serves(M, N, K, precision, family, elem) == takes
    if takes is None and precision == "fp32" and family is None and elem == 4:
        with pytest.raises(ValueError, match="no product these kernels compute"):
            small.route(M, N, K, 132)


def test_the_library_hands_it_out_plans_no_copies_and_launches_with_the_strides_it_is_given():
    lib = KernelLibrary(known("h200"), {})
    kernel = lib.kernel_for(8192, 8192, 8, "NT")
    assert isinstance(kernel, small.SmallKernel) and kernel.route == small.route(8192, 8192, 8, 132)
    assert callable(kernel) and "gg_outer8" in kernel.source and isinstance(kernel, Served)
    assert (kernel.family, kernel.name, kernel.precision, kernel.layout, kernel.aligned_pointers) == ("small", "gg_outer8", "fp32", "NT", False)
    assert not hasattr(kernel, "config") and not hasattr(kernel, "loaded")
    assert lib.plan_for(5, 3, 7001, "TN", 5, 3, 3, rows_aligned=False) == (lib.kernel_for(5, 3, 7001, "TN", 5, 3, 3), False, False)
    assert lib.kernel_for(100000, 8, 8, "TN", family="simt").family == "small"
    made = []
    real = small.SmallLaunch
    try:   # no GPU: the launch object records what it is built for
        small.SmallLaunch = lambda r, M, N, K, st, ldc: made.append((st, ldc)) or (st, ldc)
        padded = kernel.prepared(8192, 8192, 8, 8200, 8, 8300)
        again = kernel.prepared(8192, 8192, 8, 8200, 8, 8300)
    finally:
        small.SmallLaunch = real
    assert padded is again and made == [((8200, 1, 1, 8), 8300)]   # A stored N (rows 8200 apart), B stored T
    with pytest.raises(ValueError, match="serves 8192x8192x8, not 8192x8192x9"):
        kernel.prepared(8192, 8192, 9, 8200, 9, 8300)


@pytest.mark.parametrize("change,dots,outer", [({}, "gg_dots2_k264", (16, 4096)),
                                               ({"dots_slice_bytes": 2**20}, "gg_dots2_k16", (16, 4096)),
                                               ({"outer_rows": 4}, "gg_dots2_k264", (4, 16384)),
                                               ({"outer_waves": 64}, "gg_dots2_k264", (4, 16384))])
def test_the_policys_small_thresholds_shape_the_kernels_the_library_hands_out(change, dots, outer):
    """H200 (132 SMs): 2x2x1000000 in slices of ~32 KB of A and B, at most two blocks an SM (264); 8192x8192x8
    with 16 rows a thread (4096 blocks), fewer where the blocks would not give outer_waves waves."""
    lib = KernelLibrary(known("h200"), {}, policy=DEFAULT.replace(**change))
    assert lib.kernel_for(2, 2, 1000000, "NN").name == dots
    route = lib.kernel_for(8192, 8192, 8, "NT").route
    assert (route.rows, route.grid) == outer


def test_the_plan_command_names_the_route():
    from gemmgen.cli.results_plan import plan, text

    rows = plan("h200", "2x2x1000000/NT")
    assert rows["plan"]["kernel"] == "gg_dots2_k264" and rows["plan"]["route"] == "small"
    assert "small-product route" in text(rows)


@pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
def test_the_source_compiles_for_ampere_and_hopper_without_spills():
    compiles_without_spills(small.SOURCE, ["gg_dots2", "gg_dots4", "gg_dots8", "gg_dots_reduce",
                                           "gg_outer16", "gg_outer4", "gg_outer8"])


def test_the_benchmark_file_of_small_shapes_holds_only_requests_the_route_takes():
    benchmark_file_holds_only_requests_of("small", 20, small.serves)
