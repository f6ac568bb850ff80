"""First-call tuning on a GPU: with it on, matmul times a few kernels on the first call of a kind into a
scratch C (the caller's C is written once, by the pick), keeps the pick in the GPU's file, and runs it on
later calls without timing again; every layout, ragged shapes and beta != 0 stay correct."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen.measure.gate import rel_error
from gemmgen.runtime import autotune
from gemmgen.runtime.calls import forget

pytestmark = pytest.mark.gpu


@pytest.fixture
def tuning(monkeypatch, tmp_path):
    """Tuning on (3 kernels and each family's two best), the picks in a folder of the test's own."""
    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path))
    monkeypatch.setattr(autotune, "_kept", {})
    monkeypatch.setitem(autotune._state, "top", None)
    autotune.tune_first_calls(3)
    forget()
    timed = []
    real = autotune.time_runs
    monkeypatch.setattr(autotune, "time_runs", lambda runs, stream: timed.append(len(runs)) or real(runs, stream))
    yield timed
    forget()


def _operand(cp, rng, rows, cols, transposed):
    x = cp.asarray(rng.uniform(-1, 1, (cols, rows) if transposed else (rows, cols)).astype(np.float32))
    return x.T if transposed else x


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("M, N, K", [(149, 3024, 148), (98, 237, 26), (33, 17, 2049), (1000, 700, 300)])
def test_tuned_calls_are_correct_and_the_pick_is_kept(tuning, layout, M, N, K, tmp_path):
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(M * 7 + N + K)
    A = _operand(cp, rng, M, K, layout[0] == "T")
    B = _operand(cp, rng, K, N, layout[1] == "T")
    C0 = cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32))
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    out = C0.copy()
    gemmgen.matmul(A, B, out=out, alpha=1.5, beta=0.5)     # the first call of its kind: timed, then run once
    assert rel_error(out, 1.5 * ref + 0.5 * C0.astype(cp.float64)) <= 1e-5
    picks = autotune.kept(gemmgen.load().spec.name)
    assert len(picks) == 1 and (tmp_path / "tuned").is_dir()
    record = next(iter(picks.values()))
    assert record["kernel"].startswith("gg_") and record["kernel"] in {k.split(" ")[0] for k in record["us"]}
    first = list(tuning)
    out2 = cp.full((M, N), cp.nan, cp.float32)
    gemmgen.matmul(A, B, out=out2)                          # the same kind (beta does not make a kind): no timing
    assert rel_error(out2, ref) <= 1e-5 and tuning == first
    forget()
    autotune._kept.clear()                                  # as a new process would: from the file
    gemmgen.matmul(A, B, out=out2)
    assert rel_error(out2, ref) <= 1e-5 and tuning == first


def test_off_by_default_nothing_is_timed_or_written(monkeypatch, tmp_path):
    import cupy as cp

    import gemmgen

    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path))
    monkeypatch.delenv(autotune.ENV, raising=False)
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setattr(autotune, "time_runs", lambda *a: pytest.fail("timed with tuning off"))
    forget()
    A, B = cp.ones((64, 48), cp.float32), cp.ones((48, 80), cp.float32)
    assert float(gemmgen.matmul(A, B)[3, 5]) == 48.0
    assert not (tmp_path / "tuned").exists()
    forget()

