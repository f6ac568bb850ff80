"""Copies into another layout on a GPU: the transposing copy is exact on ragged shapes, and matmul served
by an NT kernel through transposed copies of A and/or B gives the product of every layout, against
float64, with alpha and beta, leaving the inputs as they were."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import rel_error
from gemmgen.runtime.library import KernelLibrary
from gemmgen.runtime.policy import DEFAULT
from gemmgen.runtime.transpose import staged, staged_pair

pytestmark = pytest.mark.gpu
matmul_module = importlib.import_module("gemmgen.runtime.matmul")


@pytest.mark.parametrize("rows,cols", [(33, 70), (1, 5), (1000, 3), (257, 129)])
@pytest.mark.parametrize("have,want", [("N", "T"), ("T", "N"), ("N", "N")])
def test_staged_copy_holds_the_same_matrix_in_the_wanted_layout(rows, cols, have, want):
    import cupy as cp

    rng = np.random.default_rng(rows * cols)
    x = cp.asarray(rng.uniform(-1, 1, (rows, cols)).astype(np.float32))
    x = x if have == "N" else cp.asfortranarray(x)
    y, ld = staged(x, have, want, 4)
    assert y.shape == x.shape and bool((y == x).all())
    assert ld % 4 == 0 and y.data.ptr % 16 == 0
    contiguous = y.strides[1] == 4 if want == "N" else y.strides[0] == 4
    assert contiguous and (y.strides[0] if want == "N" else y.strides[1]) == 4 * ld


@pytest.mark.parametrize("transpose,rows,cols,ldd", [(True, 1000, 37, 1000), (False, 50, 1100, 1104)])
def test_a_copy_strides_over_tiles_past_its_grid(transpose, rows, cols, ldd):
    """More tiles along y than the grid has blocks (``max_y`` 2 here, in place of gridDim.y's 65535: 32
    tiles of 32 stored rows to transpose, 5 of 256 columns to pack): each block steps over the rest, and
    the copy is still exact, NaN-poisoned padding aside."""
    import cupy as cp

    from gemmgen.runtime.copy_kernels import Copy

    x = cp.asarray(np.random.default_rng(5).uniform(-1, 1, (rows, cols)).astype(np.float32))   # rows of cols, lds = cols
    out_rows, out_cols = (cols, rows) if transpose else (rows, cols)
    y = cp.full((out_rows, ldd), cp.nan, dtype=cp.float32)
    copy = Copy(transpose, rows, cols, cols, ldd, max_y=2)
    assert copy.grid[1] == 2
    copy(x.data.ptr, y.data.ptr, cp.cuda.get_current_stream().ptr)
    assert bool(((y[:, :out_cols].T if transpose else y[:, :out_cols]) == x).all())


def _stored_copy(ptr: int, rows: int, ld: int, cols: int):
    """The rows x cols matrix a staged copy holds at device pointer ``ptr`` (rows ``ld`` floats apart)."""
    import cupy as cp

    mem = cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr, rows * ld * 4, None), 0)
    return cp.ndarray((rows, ld), cp.float32, mem)[:, :cols]


@pytest.mark.parametrize("la,lb,want", [("N", "N", "NT"), ("T", "T", "NT"), ("N", "T", "NN"), ("T", "N", "TN")])
def test_staged_pair_copies_both_operands_into_one_kept_buffer(la, lb, want):
    """Both copies are exact, 16-byte aligned rows each starting on 256 bytes of one buffer; a repeat of
    the request gets the same addresses (a TMA kernel's tensor maps are cached by address), and a larger
    one a buffer that holds it."""
    import cupy as cp

    rng = np.random.default_rng(3)
    a = cp.asarray(rng.uniform(-1, 1, (37, 70)).astype(np.float32))    # A: M x K
    b = cp.asarray(rng.uniform(-1, 1, (70, 9)).astype(np.float32))     # B: K x N
    a, b = (a if la == "N" else cp.asfortranarray(a)), (b if lb == "N" else cp.asfortranarray(b))
    lda, ldb = (70 if la == "N" else 37), (9 if lb == "N" else 70)
    first = staged_pair(a, la, lda, want[0], b, lb, ldb, want[1], 4)
    pa, lda2, pb, ldb2 = first
    assert lda2 % 4 == 0 and ldb2 % 4 == 0 and pa % 256 == 0 and pb % 256 == 0 and pb > pa
    for ptr, ld, x, letter in ((pa, lda2, a, want[0]), (pb, ldb2, b, want[1])):
        rows, cols = x.shape if letter == "N" else x.shape[::-1]
        stored = _stored_copy(ptr, rows, ld, cols)
        assert bool(((stored if letter == "N" else stored.T) == x).all())
    assert staged_pair(a, la, lda, want[0], b, lb, ldb, want[1], 4) == first
    big = cp.asarray(rng.uniform(-1, 1, (3000, 70)).astype(np.float32))
    p_big, ld_big, _, _ = staged_pair(big, "N", 70, "T", b, lb, ldb, None, 4)
    assert ld_big == 3000 and bool((_stored_copy(p_big, 70, ld_big, 3000) == big.T).all())


@pytest.mark.parametrize("la,lb,want", [("N", "N", "NN"), ("N", "T", "TN"), ("T", "N", "NT"), ("T", "T", "NN")])
def test_one_launch_copies_two_large_ragged_operands_exactly(la, lb, want):
    """Both copies in one launch (gg_copy_pair: the first copy's grid of blocks, then the second's), on
    operands whose grids differ in size and shape (thousands of blocks, ragged edges): both are exact."""
    import cupy as cp

    rng = cp.random.default_rng(4)
    a = rng.uniform(-1, 1, (3001, 1003), dtype=cp.float32)    # A: M x K
    b = rng.uniform(-1, 1, (1003, 2999), dtype=cp.float32)    # B: K x N
    a, b = (a if la == "N" else cp.asfortranarray(a)), (b if lb == "N" else cp.asfortranarray(b))
    lda, ldb = (1003 if la == "N" else 3001), (2999 if lb == "N" else 1003)
    pa, lda2, pb, ldb2 = staged_pair(a, la, lda, want[0], b, lb, ldb, want[1], 4)
    for ptr, ld, x, letter in ((pa, lda2, a, want[0]), (pb, ldb2, b, want[1])):
        rows, cols = x.shape if letter == "N" else x.shape[::-1]
        stored = _stored_copy(ptr, rows, ld, cols)
        assert bool(((stored if letter == "N" else stored.T) == x).all()), letter


def test_staged_pair_leaves_an_operand_it_does_not_copy_alone():
    import cupy as cp

    a = cp.ones((5, 6), cp.float32)
    b = cp.ones((6, 7), cp.float32)
    pa, lda, pb, ldb = staged_pair(a, "N", 6, None, b, "N", 7, "N", 4)
    assert (pa, lda) == (a.data.ptr, 6) and ldb == 8 and pb != b.data.ptr


@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
def test_matmul_through_an_nt_kernel_and_transposed_copies(session, monkeypatch, layout):
    import cupy as cp

    spec = session.spec
    cfg = preset("tf32x3-tma") if spec.cc == (9, 0) else preset("tf32x3", spec.arch).replace(layout="NT")
    lib = KernelLibrary(spec, {}, session.device_id)
    kernel = lib.kernel(cfg)
    flip_a, flip_b = layout[0] != "N", layout[1] != "T"
    monkeypatch.setattr(lib, "plan_for", lambda *args, **kw: (kernel, flip_a, flip_b))
    monkeypatch.setattr(matmul_module, "library_for", lambda dev, strict: lib)
    rng = np.random.default_rng(11)
    for M, N, K in ((1023, 777, 1020), (515, 2047, 332), (64, 9, 16)):
        a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
        A = cp.asarray(a) if layout[0] == "N" else cp.asfortranarray(cp.asarray(a))
        B = cp.asarray(b) if layout[1] == "N" else cp.asfortranarray(cp.asarray(b))
        C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
        ref = 0.5 * (cp.asarray(a, cp.float64) @ cp.asarray(b, cp.float64)) + 2.0 * C0.astype(cp.float64)
        out = matmul_module.matmul(A, B, out=C0.copy(), alpha=0.5, beta=2.0)
        assert rel_error(out, ref) <= 1e-5, (M, N, K, layout)
        assert bool((A == cp.asarray(a)).all()) and bool((B == cp.asarray(b)).all())


def test_shipped_results_serve_large_nn_through_the_tma_kernel(session):
    """On Hopper the shipped timings predict the NT TMA kernel plus a transposed copy of B to beat the
    NN kernels at 4096^3; the product is still exact to fp32."""
    import cupy as cp

    import gemmgen

    if session.spec.cc != (9, 0):
        pytest.skip("TMA kernels are sm_90a")
    lib = gemmgen.load()
    kernel, copy_a, copy_b = lib.plan_for(4096, 4096, 4096, "NN", 4096, 4096, 4096)
    if not any(k.config.warp_specialized for k in lib.timings.of_precision("fp32")):
        pytest.skip("these results time no TMA kernel")
    assert kernel.config.warp_specialized and kernel.config.layout == "NT" and (copy_a, copy_b) == (False, True)
    rng = cp.random.default_rng(3)
    A = rng.uniform(-1, 1, (4096, 4096), dtype=cp.float32)
    B = rng.uniform(-1, 1, (4096, 4096), dtype=cp.float32)
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    assert rel_error(gemmgen.matmul(A, B), ref) <= 2e-6


@pytest.mark.parametrize("cfg,layout", [
    (preset("tf32x3-tma"), "TN"),                                   # both operands copied, TMA kernel
    (preset("tf32x3-ws").replace(layout="NT"), "NN"),                # B copied, cp.async ws kernel
    (preset("tf32x3-wgmma").replace(split_k=3), "NN"),              # no copies: behind the scale kernel
])
def test_a_kernel_started_early_reads_what_the_kernel_ahead_wrote(hopper, monkeypatch, cfg, layout):
    """On Hopper the GEMM kernel goes out as the programmatic dependent of matmul's copies (or of an
    atomic split's scale kernel) and waits in the kernel for them: each call, on fresh operands and a C
    poisoned with NaN, gives the float64 product, so no block read a copy or C before it was written."""
    import cupy as cp

    from gemmgen.measure import launch

    early = []

    class Counted(launch.Dependent):   # the programmatic launches the driver took, counted
        __slots__ = ()

        def __call__(self, function, stream, argv_ptr):
            taken = super().__call__(function, stream, argv_ptr)
            if taken:
                early.append(function)
            return taken

    monkeypatch.setattr(launch, "Dependent", Counted)
    lib = KernelLibrary(hopper.spec, {}, hopper.device_id,
                        policy=DEFAULT.replace(early_after_copies=True, early_after_scale=True))
    kernel = lib.kernel(cfg)
    assert kernel.loaded.after_copies and kernel.loaded.after_scale   # the library's policy, given the kernel
    flip_a, flip_b = layout[0] != cfg.layout[0], layout[1] != cfg.layout[1]
    monkeypatch.setattr(lib, "plan_for", lambda *args, **kw: (kernel, flip_a, flip_b))
    monkeypatch.setattr(matmul_module, "library_for", lambda dev, strict: lib)
    rng = cp.random.default_rng(5)
    M, N, K = 2999, 1537, 2050
    for _ in range(4):
        a = rng.uniform(-1, 1, (M, K), dtype=cp.float32)
        b = rng.uniform(-1, 1, (K, N), dtype=cp.float32)
        A = a if layout[0] == "N" else cp.asfortranarray(a)
        B = b if layout[1] == "N" else cp.asfortranarray(b)
        C = cp.full((M, N), cp.nan, dtype=cp.float32)
        out = matmul_module.matmul(A, B, out=C)
        assert rel_error(out, a.astype(cp.float64) @ b.astype(cp.float64)) <= 2e-6
    assert kernel.loaded.waits and early == [kernel.loaded._main] * 4   # each call's main kernel went out early
