"""matmul's prepared requests on a GPU: a repeated call of a kind runs the plan its first call made,
on new operands (new pointers: fresh TMA maps), through copies and split-K workspaces, on other
streams and threads, and still refuses an ``out`` that overlaps A or B with nothing enqueued."""
from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import rel_error
from gemmgen.runtime.library import KernelLibrary

pytestmark = pytest.mark.gpu
matmul_module = importlib.import_module("gemmgen.runtime.matmul")


def _rand(cp, rng, shape):
    return cp.asarray(rng.uniform(-1, 1, shape).astype(np.float32))


def _ref(A, B, alpha=1.0, beta=0.0, C0=None):
    import cupy as cp

    out = alpha * (A.astype(cp.float64) @ B.astype(cp.float64))
    return out + beta * C0.astype(cp.float64) if beta else out


def _forced(session, monkeypatch, cfg, copy_a=False, copy_b=False):
    """matmul planning every request as ``cfg`` (copies as given); returns a list of the plans made."""
    lib = KernelLibrary(session.spec, {}, session.device_id)
    kernel, made = lib.kernel(cfg), []
    monkeypatch.setattr(lib, "plan_for", lambda *args, **kw: made.append(args[:3]) or (kernel, copy_a, copy_b))
    monkeypatch.setattr(matmul_module, "library_for", lambda dev, strict: lib)
    return made


def _configs(spec):
    """(name, config, copy A, copy B): a TMA kernel read as it is and through a transposed copy (NN
    request), an atomic and a workspace split-K kernel."""
    tma = spec.cc == (9, 0)
    out = [("workspace split", preset("v6").replace(split_k=3, reduce="workspace"), False, False),
           ("atomic split", preset("v6").replace(split_k=4, reduce="atomic"), False, False)]
    if tma:
        out += [("tma nt, B copied", preset("tf32x3-tma"), False, True)]
    return out


@pytest.mark.parametrize("which", range(3))
def test_repeated_calls_run_the_first_plan_on_new_operands(session, monkeypatch, which):
    import cupy as cp

    found = _configs(session.spec)
    if which >= len(found):
        pytest.skip("TMA kernels are sm_90a")
    name, cfg, copy_a, copy_b = found[which]
    made = _forced(session, monkeypatch, cfg, copy_a, copy_b)
    rng = np.random.default_rng(which)
    M, N, K = 515, 333, 264
    for i in range(4):   # new A, B and C each call: the plan is made once, every product is exact
        A, B = _rand(cp, rng, (M, K)), _rand(cp, rng, (K, N))
        C0 = _rand(cp, rng, (M, N))
        alpha, beta = (1.0, 0.0) if i % 2 == 0 else (0.5, -2.0)
        out = matmul_module.matmul(A, B, out=C0.copy(), alpha=alpha, beta=beta)
        assert rel_error(out, _ref(A, B, alpha, beta, C0)) <= 1e-5, (name, i)
    assert len(made) == 1, name


def test_a_misaligned_operand_is_a_request_of_its_own(session):
    """The same shape and strides with A starting 4 bytes further on: planned apart (a kernel that reads
    16-byte vectors from aligned pointers must not serve it), and both products exact."""
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(7)
    store = _rand(cp, rng, (640, 513))
    B = _rand(cp, rng, (512, 384))
    for A in (store[:, :512], store[:, 1:], store[:, :512]):
        assert rel_error(gemmgen.matmul(A, B), _ref(A, B)) <= 1e-5


def test_an_overlapping_out_is_refused_on_a_repeated_call_with_nothing_enqueued():
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(8)
    buf, other = _rand(cp, rng, (64, 96)), _rand(cp, rng, (64, 96))
    B = _rand(cp, rng, (32, 32))
    gemmgen.matmul(buf[:, :32], B, out=other[:, 32:64])            # the kind is prepared
    before = buf.copy()
    with pytest.raises(ValueError, match="out overlaps A"):
        gemmgen.matmul(buf[:, :32], B, out=buf[:, 16:48])         # same shapes and strides, overlapping
    cp.cuda.runtime.deviceSynchronize()
    assert bool((buf == before).all())


def test_repeated_calls_on_a_stream_and_on_threads():
    import cupy as cp

    import gemmgen

    rng = np.random.default_rng(9)
    s = cp.cuda.Stream(non_blocking=True)
    pairs = [(_rand(cp, rng, (300, 700)), _rand(cp, rng, (700, 200))) for _ in range(8)]
    cp.cuda.runtime.deviceSynchronize()
    outs = [gemmgen.matmul(A, B, stream=s) for A, B in pairs]
    s.synchronize()
    assert all(rel_error(C, _ref(A, B)) <= 1e-5 for C, (A, B) in zip(outs, pairs))

    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        for _ in range(10):
            A, B = _rand(cp, r, (300, 700)).T.copy().T, _rand(cp, r, (700, 200))   # A column-major
            C = gemmgen.matmul(A, B)
            cp.cuda.get_current_stream().synchronize()
            errors.append(rel_error(C, _ref(A, B)))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 40 and max(errors) <= 1e-5


@pytest.mark.parametrize("split", ["atomic", "workspace"])
def test_split_k_kernels_run_in_order(session, monkeypatch, split):
    """Split-K's second kernel runs after the first's results are there (on Hopper the workspace reduce
    starts early and waits in the kernel, gemmgen.measure.pdl): C = alpha A@B + beta C on every call, on a
    C large enough that the scale and reduce kernels run several waves."""
    import cupy as cp

    family = preset("tf32x3-wgmma") if session.spec.cc == (9, 0) else preset("tf32x3", session.spec.arch)
    cfg = family.replace(split_k=4, reduce=split)
    _forced(session, monkeypatch, cfg)
    rng = np.random.default_rng(12)
    M, N, K = 1500, 1300, 256
    A, B = _rand(cp, rng, (M, K)), _rand(cp, rng, (K, N))
    for i in range(6):
        C0 = _rand(cp, rng, (M, N))
        out = matmul_module.matmul(A, B, out=C0.copy(), alpha=0.75, beta=1.5)
        assert rel_error(out, _ref(A, B, 0.75, 1.5, C0)) <= 1e-5, (split, i)
    launch = next(iter(matmul_module.kept().values())).launch
    assert (launch.reduce_after is not None) == (split == "workspace" and session.spec.cc == (9, 0))
