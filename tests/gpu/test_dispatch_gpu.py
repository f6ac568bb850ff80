"""Dispatch on a GPU: matmul through a library whose timings make it copy unaligned operands into aligned
rows first, in every layout, against float64; misaligned first elements; the choice cached per request."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from gemmgen.base.shape import Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import rel_error
from gemmgen.records.timings import Timings
from gemmgen.runtime.library import KernelLibrary
from gemmgen.runtime.counts import counts

pytestmark = pytest.mark.gpu
matmul_module = importlib.import_module("gemmgen.runtime.matmul")   # the module: the package's `matmul` is the function
LAYOUTS = ["NN", "NT", "TN", "TT"]


def _library(session, slow_unaligned: float) -> KernelLibrary:
    """A library of this GPU's fp32 preset whose timings say unaligned rows cost ``slow_unaligned`` x."""
    spec = session.spec
    cfg = preset("tf32x3-wgmma" if spec.cc == (9, 0) else "tf32x3", spec.arch)
    timings = Timings.empty()
    for n in (256, 512, 1023, 1024, 2047, 2048):
        for layout in LAYOUTS:
            s = Shape(n, n, n, layout)
            a, b, _, _ = counts(cfg, s, spec.sm_count)
            ms = (0.004 * a + 0.01 * b) * (slow_unaligned if n % 2 else 1.0)
            timings = timings.add(cfg.replace(layout=layout), s, ms)
    return KernelLibrary(spec, {}, session.device_id, timings=timings)


def _operand(cp, rng, rows, cols, trans):
    if trans:
        return cp.asarray(rng.uniform(-1, 1, (cols, rows)).astype(np.float32)).T
    return cp.asarray(rng.uniform(-1, 1, (rows, cols)).astype(np.float32))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copied_operands_give_the_same_product(session, monkeypatch, layout):
    """matmul's copy of unaligned operands (forced here for both) keeps the product exact in every layout."""
    import cupy as cp

    lib = _library(session, slow_unaligned=3.0)
    forced = lambda M, N, K, lay, lda, ldb, ldc, *rest: (lib.kernel_for(M, N, K, lay, -(-lda // 4) * 4,
                                                                       -(-ldb // 4) * 4, ldc), True, True)
    monkeypatch.setattr(lib, "plan_for", forced)
    monkeypatch.setattr(matmul_module, "library_for", lambda dev, strict: lib)
    rng = np.random.default_rng(7)
    for M, N, K in ((1023, 777, 1021), (515, 2047, 333), (64, 9, 17)):
        A, B = _operand(cp, rng, M, K, layout[0] == "T"), _operand(cp, rng, K, N, layout[1] == "T")
        C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
        ref = 0.5 * (A.astype(cp.float64) @ B.astype(cp.float64)) + 2.0 * C0.astype(cp.float64)
        out = matmul_module.matmul(A, B, out=C0.copy(), alpha=0.5, beta=2.0)
        assert rel_error(out, ref) <= 1e-5, (M, N, K, layout)


def test_the_plan_copies_where_measured_unaligned_shapes_say_so(session):
    lib = _library(session, slow_unaligned=3.0)
    kernel, pack_a, pack_b = lib.plan_for(2047, 2047, 2047, "NN", 2047, 2047, 2047)
    assert (pack_a, pack_b) == (True, True) and kernel.config.accepts(2047, 2047, 2047, 2048, 2048, 2047) is None
    assert lib.plan_for(2047, 2047, 2047, "NN", 2047, 2047, 2047) is lib.plan_for(2047, 2047, 2047, "NN", 2047, 2047, 2047)
    assert lib.plan_for(300, 301, 299, "NN", 299, 301, 301)[1:] == (False, False)   # too small to pay


def test_misaligned_first_element_is_copied_or_read_correctly(session, monkeypatch):
    import cupy as cp

    for slow in (3.0, 1.0):   # copied, and read in place with 4-byte copies
        lib = _library(session, slow_unaligned=slow)
        monkeypatch.setattr(matmul_module, "library_for", lambda dev, strict: lib)
        rng = np.random.default_rng(3)
        big = cp.asarray(rng.uniform(-1, 1, (1025, 1025)).astype(np.float32))
        A, B = big[1:, 1:], big[:1024, 1:]          # first elements 4 bytes past a 16-byte boundary
        assert A.data.ptr % 16 and B.data.ptr % 16
        ref = A.astype(cp.float64) @ B.astype(cp.float64)
        assert rel_error(matmul_module.matmul(A, B), ref) <= 1e-5
