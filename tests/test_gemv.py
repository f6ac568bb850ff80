"""The matrix-vector route (gemmgen.runtime.gemv) without a GPU: which requests take it, how each
layout maps onto its two kernels (checked by running the mapping in numpy on strided operands), how K
is split, the library handing it out, and its source compiling without spills."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen import build
from gemmgen.base.devices import known
from gemmgen.runtime import gemv
from gemmgen.runtime.library import KernelLibrary, Served
from gemmgen.runtime.policy import DEFAULT

P = DEFAULT   # the thresholds the routes take by default

LAYOUTS = ["NN", "NT", "TN", "TT"]


def _stored(rng, rows, cols, letter, pad):
    """(matrix, flat buffer, leading dimension) of a rows x cols matrix stored N (row-major) or T."""
    outer, inner = (rows, cols) if letter == "N" else (cols, rows)
    ld = inner + pad
    flat = rng.uniform(-1, 1, outer * ld).astype(np.float64)
    store = flat.reshape(outer, ld)[:, :inner]
    return (store if letter == "N" else store.T), flat, ld


def _emulate(r: gemv.Route, K: int, X: np.ndarray, v: np.ndarray, y: np.ndarray) -> None:
    """What the kernels compute from the route's numbers alone: X, v and y as flat buffers."""
    for i in range(r.R):
        total = 0.0
        for s in range(r.slices):   # the slices' partials, summed in slice order (the reduce kernel)
            ks = range(s * r.kchunk, min(K, (s + 1) * r.kchunk))
            xs = [X[i * r.ldx + k] if r.kind == "rows" else X[k * r.ldx + i] for k in ks]
            total += sum(a * v[k * r.incv] for a, k in zip(xs, ks))
        y[i * r.incy] = total


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(1, 37, 300), (29, 1, 301), (1, 1, 77), (1, 5, 1), (6, 1, 2)])
def test_each_layout_maps_onto_a_kernel_that_computes_the_product(layout, M, N, K):
    rng = np.random.default_rng(M + 3 * N + 7 * K)
    (A, fa, lda), (B, fb, ldb) = _stored(rng, M, K, layout[0], 2), _stored(rng, K, N, layout[1], 3)
    ldc = N + 4
    r = gemv.route(M, N, K, layout, lda, ldb, ldc, sm_count=4)   # few SMs: K is split where it can be
    X, v = (fa, fb) if r.x == "A" else (fb, fa)
    y = np.full(M * ldc, np.nan)
    _emulate(r, K, X, v, y)
    C = y.reshape(M, ldc)[:, :N]
    assert np.allclose(C, A @ B, rtol=1e-12, atol=1e-12)
    assert r.kind == ("rows" if (layout[0] == "N" if N == 1 else layout[1] == "T") else "cols")


@pytest.mark.parametrize("layout,R,K,sms", [("NN", 4096, 4096, 132), ("NN", 3, 100000, 132), ("TN", 4096, 5, 132),
                                            ("TN", 1, 1 << 20, 114), ("NN", 70000, 64, 132), ("TN", 64, 50000, 132),
                                            ("TN", 4096, 4096, 132), ("NN", 100000, 1000, 132),
                                            ("NN", 777, 1025, 132), ("NN", 1024, 4096, 132), ("NN", 64, 2048, 132),
                                            ("NN", 20001, 3001, 132)])
def test_k_is_split_into_slices_of_whole_16_byte_groups_only_where_blocks_or_loads_are_few(layout, R, K, sms):
    r = gemv.route(R, 1, K, layout, K if layout[0] == "N" else R, 1, 1, sms)
    assert r.kind == ("rows" if layout[0] == "N" else "cols")
    assert r.kchunk % 4 == 0 and (r.slices - 1) * r.kchunk < K <= r.slices * r.kchunk
    assert 1 <= r.slices <= P.gemv_max_slices
    groups = 256 // r.width if r.kind == "cols" else 1
    if r.slices > 1:   # a slice walks at least gemv_min_slice k, and every k-group of a block has some
        assert r.kchunk >= max(P.gemv_min_slice, groups)
    rounds = -(-K // (r.width * 4 * r.depth if r.kind == "rows" else 8 * groups))   # rounds of loads of a thread, unsplit
    if r.grid[0] >= P.gemv_waves * sms and rounds <= (P.gemv_row_rounds if r.kind == "rows" else P.gemv_col_rounds):
        assert r.slices == 1
    if r.kind == "rows":
        assert 4 <= r.width <= 256 and (r.width >= 32 or r.width * 32 > K)   # lanes a row fit its K
        if r.width > 32:   # few rows: a row across warps, four 16-byte groups a lane or more, not a K split
            assert K >= 16 * r.width and -(-R * r.width // 512) < P.gemv_wide * sms and r.depth == 8
            assert r.slices == 1   # in place of a split only (64x1x2048: split, not across warps)
            assert r.kernel == "gg_gemv_rows_wide"
        else:   # eight loads in flight a lane where blocks are few, four where they fill the SMs
            assert r.depth == (8 if r.grid[0] < P.gemv_row_deep * sms else 4)
            assert r.kernel == ("gg_gemv_rows8" if r.depth == 8 else "gg_gemv_rows_odd" if K % 4 else "gg_gemv_rows")
        if rounds <= P.gemv_row_few and 4 * r.grid[0] >= sms:   # a few rounds: never split (the reduce costs more)
            assert r.slices == 1
    else:
        assert r.depth == 4 and r.kernel == "gg_gemv_cols"
        assert r.width == min(P.gemv_col_width, gemv._pow2(-(-R // 4)))
    kernel = gemv.GemvKernel(R, 1, K, layout, r.ldx, 1, 1, sms)
    assert kernel.workspace_floats(R, 1) == (r.slices * R if r.slices > 1 else 0)
    assert kernel.name == r.kernel + (f"_k{r.slices}" if r.slices > 1 else "")


@pytest.mark.parametrize("M,N,K,precision,family,elem,takes", [
    (1, 4096, 64, "fp32", None, 4, True), (4096, 1, 64, "fp32", "simt", 4, True), (1, 1, 1, "fp32", None, 4, True),
    (2, 4096, 64, "fp32", None, 4, False), (1, 4096, 64, "tf32", None, 4, False), (1, 4096, 64, "fp32", "tf32x3", 4, False),
    (1, 4096, 64, "f16", None, 2, False), (1, 4096, 0, "fp32", None, 4, False), (1, 2**26, 3, "fp32", None, 4, False),
    (2**26 - 1, 1, 16, "fp32", None, 4, True), (5, 1, 2**30, "fp32", None, 4, False), (5, 1, 2**30 - 1, "fp32", None, 4, True)])
def test_which_requests_take_the_route(M, N, K, precision, family, elem, takes):
    assert gemv.serves(M, N, K, precision, family, elem) is takes
    if not takes and min(M, N) == 1 and precision == "fp32" and family is None and elem == 4:
        with pytest.raises(ValueError, match="no matrix-vector product"):
            gemv.route(M, N, K, "NN", max(K, 1), N, N, 132)


def test_the_kernel_reads_like_the_librarys_and_launches_with_the_strides_it_is_given():
    kernel = KernelLibrary(known("h200"), {}).kernel_for(1, 4096, 4096, "NN")
    assert callable(kernel) and "gg_gemv_rows" in kernel.source and isinstance(kernel, Served)
    assert (kernel.name, kernel.family, kernel.precision, kernel.layout, kernel.slices) == ("gg_gemv_cols_k32", "gemv", "fp32", "NN", 32)
    assert not kernel.aligned_pointers   # its loads check the pointers' 16-byte phase
    assert not hasattr(kernel, "config") and not hasattr(kernel, "loaded")   # no KernelConfig posed as
    with pytest.raises(ValueError, match="serves 1x4096x4096, not 1x4096x4095"):
        kernel.prepared(1, 4096, 4095, 4095, 4096, 4096)
    made = []
    real = gemv.GemvLaunch
    try:   # no GPU: the launch object records the route it is built for
        gemv.GemvLaunch = lambda r, K: made.append(r) or r
        padded = kernel.prepared(1, 4096, 4096, 4100, 4104, 4200)
        again = kernel.prepared(1, 4096, 4096, 4100, 4104, 4200)
    finally:
        gemv.GemvLaunch = real
    assert padded is again and len(made) == 1   # one launch per thread and leading dimensions
    assert (padded.ldx, padded.incv, padded.slices) == (4104, 1, kernel.route.slices)


def test_the_library_hands_it_out_for_one_row_or_column_and_plans_no_copies():
    lib = KernelLibrary(known("h200"), {})
    kernel = lib.kernel_for(1, 4096, 4096, "NN")
    assert isinstance(kernel, gemv.GemvKernel) and kernel.route == gemv.route(1, 4096, 4096, "NN", 4096, 4096, 4096, 132)
    odd = lib.kernel_for(4097, 1, 333, "TT", 4099, 339, 5)
    assert odd.route.ldx == 4099 and odd.route.incv == 1 and odd.route.incy == 5 and odd.route.kind == "cols"
    assert lib.plan_for(4097, 1, 333, "TN", 4097, 1, 1, rows_aligned=False) == (lib.kernel_for(4097, 1, 333, "TN", 4097, 1, 1), False, False)
    assert lib.kernel_for(1, 4096, 4096, "NN", family="simt").family == "gemv"


@pytest.mark.parametrize("change,name", [
    ({}, "gg_gemv_cols_k32"), ({"gemv_max_slices": 8}, "gg_gemv_cols_k8"), ({"gemv_col_rounds": 16}, "gg_gemv_cols_k17"),
    ({"gemv_col_rounds": 16, "gemv_waves": 1}, "gg_gemv_cols_k9"), ({"gemv_col_width": 32}, "gg_gemv_cols_k16")])
def test_the_policys_gemv_thresholds_shape_the_kernel_the_library_hands_out(change, name):
    """1x4096x4096 on an H200 (132 SMs): 16 blocks of 64 threads across, whose 4096 k in rounds of 32 rows
    take 32 slices for at most 4 rounds a thread (at most gemv_max_slices); at 16 rounds the two waves ask
    17 (one wave 9); 32 blocks of 32 threads across, 16 for 4 rounds."""
    lib = KernelLibrary(known("h200"), {}, policy=DEFAULT.replace(**change))
    kernel = lib.kernel_for(1, 4096, 4096, "NN")
    assert kernel.name == name and kernel.workspace_floats(1, 4096) == kernel.slices * 4096
    assert kernel.route == gemv.route(1, 4096, 4096, "NN", 4096, 4096, 4096, 132, lib.policy)


def test_a_bad_gemv_policy_value_is_one_line_naming_it():
    with pytest.raises(ValueError, match="gemv_col_width=48: a power of two"):
        DEFAULT.replace(gemv_col_width=48)
    with pytest.raises(ValueError, match="gemv_min_slice=0: 1 or more"):
        DEFAULT.replace(gemv_min_slice=0)


def compiles_without_spills(source: str, kernels: list[str]) -> None:
    """``source`` builds for Ampere and Hopper into exactly ``kernels``, none spilling (the hand-written files)."""
    for arch in ("sm_80", "sm_90"):
        report = build.nvcc.compile_cubin(source, arch)
        assert sorted(report.kernels) == sorted(kernels)
        assert all(k.spills == 0 for k in report.kernels.values())


def benchmark_file_holds_only_requests_of(name: str, count: int, serves) -> None:
    """benchmarks/<name>.toml holds ``count`` shapes, each one that ``serves`` takes, in one of the layouts."""
    import tomllib
    from pathlib import Path

    shapes = tomllib.loads((Path(__file__).parents[1] / "benchmarks" / f"{name}.toml").read_text())["shape"]
    assert len(shapes) == count
    for s in shapes:
        M, N, K = s["mnk"]
        assert serves(M, N, K, "fp32", None) and s.get("layout", "NN") in LAYOUTS, s


@pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
def test_the_source_compiles_for_ampere_and_hopper_without_spills():
    compiles_without_spills(gemv.SOURCE, ["gg_gemv_cols", "gg_gemv_reduce", "gg_gemv_rows", "gg_gemv_rows8",
                                          "gg_gemv_rows_odd", "gg_gemv_rows_wide"])


def test_the_benchmark_file_of_matrix_vector_shapes_holds_only_requests_the_route_takes():
    benchmark_file_holds_only_requests_of("gemv", 31, gemv.serves)
