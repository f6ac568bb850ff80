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
from gemmgen.runtime.predict import counts

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
def test_copies_unaligned_operands_and_stays_exact(session, monkeypatch, layout):
    import cupy as cp

    lib = _library(session, slow_unaligned=3.0)
    monkeypatch.setattr(matmul_module, "library_for", lambda dev, strict: lib)
    rng = np.random.default_rng(7)
    for M, N, K in ((1023, 777, 1021), (515, 2047, 333), (2047, 2047, 2047)):
        A, B = _operand(cp, rng, M, K, layout[0] == "T"), _operand(cp, rng, K, N, layout[1] == "T")
        lda = A.strides[0 if layout[0] == "N" else 1] // 4
        ldb = B.strides[0 if layout[1] == "N" else 1] // 4
        kernel, pack_a, pack_b = lib.plan_for(M, N, K, layout, lda, ldb, N)
        assert (pack_a, pack_b) == (lda % 4 != 0, ldb % 4 != 0), (M, N, K, layout)
        C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
        ref = 0.5 * (A.astype(cp.float64) @ B.astype(cp.float64)) + 2.0 * C0.astype(cp.float64)
        out = matmul_module.matmul(A, B, out=C0.copy(), alpha=0.5, beta=2.0)
        assert rel_error(out, ref) <= 1e-5, (M, N, K, layout)
        assert lib.plan_for(M, N, K, layout, lda, ldb, N) is lib.plan_for(M, N, K, layout, lda, ldb, N)


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
