"""First-call tuning on a GPU: with it on, matmul times a few kernels on the first call of a kind into a
scratch C (the caller's C is written once, by the pick), keeps the pick in the GPU's file, and runs it on
later calls without timing again; every layout, ragged shapes, misaligned operands, a C wider than N and
beta != 0 stay correct."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen.measure.gate import rel_error
from gemmgen.runtime import autotune, picks
from gemmgen.runtime.calls import forget

pytestmark = pytest.mark.gpu


@pytest.fixture
def tuning(monkeypatch, tmp_path):
    """Tuning on (3 kernels and each family's two best), the picks in a file of the test's own (the kernel
    cache stays where it is); yields the list of candidate counts timed."""
    monkeypatch.setattr(picks, "kept_path", lambda gpu: tmp_path / "tuned.json")
    monkeypatch.setattr(picks, "_kept", {})
    monkeypatch.setattr(autotune, "_resolved", autotune.weakref.WeakKeyDictionary())
    monkeypatch.setitem(autotune._state, "top", None)
    autotune.tune_first_calls(3)
    forget()
    timed = []
    real = autotune.time_runs
    monkeypatch.setattr(autotune, "time_runs", lambda runs, *rest: timed.append(len(runs)) or real(runs, *rest))
    yield timed
    forget()


def _operand(cp, rng, rows, cols, transposed, offset=0):
    """A rows x cols float32 matrix, stored transposed if asked, starting ``offset`` elements into its buffer."""
    shape = (cols, rows) if transposed else (rows, cols)
    flat = cp.asarray(rng.uniform(-1, 1, shape[0] * shape[1] + offset).astype(np.float32))
    x = flat[offset:].reshape(shape)
    return x.T if transposed else x


def _check_kind(tuning, A, B, out_of, tmp_path):
    import cupy as cp

    import gemmgen

    M, N = A.shape[0], B.shape[1]
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    out = out_of()
    C0 = out.copy()
    gemmgen.matmul(A, B, out=out, alpha=1.5, beta=0.5)     # the first call of its kind: timed, then run once
    assert rel_error(out, 1.5 * ref + 0.5 * C0.astype(cp.float64)) <= 1e-5
    assert tuning, "the first call timed nothing"
    mine = picks.kept(gemmgen.load().spec.name)
    assert len(mine) == 1 and (tmp_path / "tuned.json").exists()
    record = next(iter(mine.values()))
    assert record["kernel"].startswith("gg_") and record["kernel"] in {k.split(" ")[0] for k in record["us"]}
    first = list(tuning)
    for new_process in (False, True):
        forget()                                            # the tuned kind is planned again ...
        if new_process:
            picks._kept.clear()                             # ... and read back from the file
            autotune._resolved.clear()
        out2 = out_of()
        out2[...] = cp.nan
        gemmgen.matmul(A, B, out=out2)
        assert rel_error(out2, ref) <= 1e-5 and tuning == first, "a kept pick was timed again"


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("M, N, K", [(149, 3024, 148), (98, 237, 26), (33, 17, 2049), (1000, 700, 300)])
def test_tuned_calls_are_correct_and_the_pick_is_kept(tuning, layout, M, N, K, tmp_path):
    import cupy as cp

    rng = np.random.default_rng(M * 7 + N + K)
    A = _operand(cp, rng, M, K, layout[0] == "T")
    B = _operand(cp, rng, K, N, layout[1] == "T")
    _check_kind(tuning, A, B, lambda: cp.asarray(rng.uniform(-1, 1, (M, N)).astype(np.float32)), tmp_path)


def test_a_misaligned_a_and_a_c_wider_than_n(tuning, tmp_path):
    """A starting 4 bytes into its buffer (no kernel that needs 16-byte rows competes) and C a column slice
    of a wider array (ldc > N): the scratch C and the candidates follow the request."""
    import cupy as cp

    rng = np.random.default_rng(3)
    M, N, K = 301, 203, 517
    A, B = _operand(cp, rng, M, K, False, offset=1), _operand(cp, rng, K, N, False)
    wide = cp.asarray(rng.uniform(-1, 1, (M, N + 13)).astype(np.float32))
    _check_kind(tuning, A, B, lambda: wide[:, :N], tmp_path)
    import gemmgen

    (key,) = picks.kept(gemmgen.load().spec.name)
    assert key.endswith("unaligned") and f"ldc={N + 13}" in key


def test_off_by_default_nothing_is_timed_or_written(monkeypatch, tmp_path):
    import cupy as cp

    import gemmgen

    monkeypatch.setattr(picks, "kept_path", lambda gpu: tmp_path / "tuned.json")
    monkeypatch.delenv(autotune.ENV, raising=False)
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setattr(autotune, "time_runs", lambda *a: pytest.fail("timed with tuning off"))
    forget()
    A, B = cp.ones((64, 48), cp.float32), cp.ones((48, 80), cp.float32)
    assert float(gemmgen.matmul(A, B)[3, 5]) == 48.0
    assert not (tmp_path / "tuned.json").exists()
    forget()
