"""Atomic split-K in one launch (gemmgen.measure.splitflags, the warp-specialized kernels): slice 0's
consumers set C's tile to beta * C and count themselves on the tile's flag, the other slices' wait for
that before their atomic adds. Every kind of such kernel (cp.async and TMA producers, swapped, two
blocks an SM, layouts) against float64 on ragged shapes with beta != 0, call after call (the flags are
zero again after each: read back), one wave of blocks (more take the two launches), two streams
at once (a buffer each), and the two-launch path (the scale kernel first) where there are no flags:
inside a CUDA graph capture, refused, and the other families' atomic kernels."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen.kernel.presets import preset
from gemmgen.measure import splitflags
from gemmgen.measure.gate import rel_error
from gemmgen.measure.launch import Operands

pytestmark = pytest.mark.gpu


def _configs(spec):
    """The split_flags kernels (sm_90a only)."""
    if spec.cc != (9, 0):
        return {}
    ws = preset("tf32x3-ws").replace(label="")
    return {
        "ws-128x64-k4": ws.replace(BN=64, WN=64, stages=6, split_k=4),
        "ws-tn-128x64-k4": ws.replace(layout="TN", BN=64, WN=64, stages=6, split_k=4),
        "ws-tt-128x128-k3": ws.replace(layout="TT", split_k=3),
        "ws-64x32-k16-o2": ws.replace(BM=64, BN=32, WN=32, stages=4, split_k=16, min_blocks=2),
        "ws-swapped-k4": ws.replace(BN=24, WN=24, stages=6, split_k=4, swap=True),
        "ws-nt-swapped-k8": ws.replace(layout="NT", BM=64, BN=32, WN=32, stages=4, split_k=8, swap=True),
        "tma-k3": preset("tf32x3-tma").replace(BN=128, WN=128, stages=4, split_k=3, label=""),
    }


def _rand(cp, rng, shape):
    return cp.asarray(rng.uniform(-1, 1, shape).astype(np.float32))


def _one_launch(session, cfg, M, N, K) -> bool:
    """Whether the kernel's launch on this shape goes without the scale kernel (its Launch holds flags)."""
    lda = M if cfg.layout[0] == "T" else K
    ldb = K if cfg.layout[1] == "T" else N
    return session.kernel(cfg).prepared(M, N, K, lda, ldb, N).flag_words > 0


def _run(session, cfg, M, N, K, calls=3, stream=None, seed=0):
    """``calls`` products C = 0.75 A@B + 1.5 C0 with fresh C0 each; the largest error against float64."""
    import cupy as cp

    kernel = session.kernel(cfg)
    rng = np.random.default_rng(seed)
    tA, tB = cfg.layout[0] == "T", cfg.layout[1] == "T"
    A = _rand(cp, rng, (K, M)) if tA else _rand(cp, rng, (M, K))
    B = _rand(cp, rng, (N, K)) if tB else _rand(cp, rng, (K, N))
    ref = (A.T if tA else A).astype(cp.float64) @ (B.T if tB else B).astype(cp.float64)
    worst = 0.0
    for _ in range(calls):
        C0 = _rand(cp, rng, (M, N))
        C = C0.copy()
        ops = Operands(M, N, K, A.data.ptr, A.shape[1], B.data.ptr, B.shape[1], C.data.ptr, N, 0.75, 1.5)
        kernel.launch(ops, stream)
        worst = max(worst, rel_error(C, 0.75 * ref + 1.5 * C0.astype(cp.float64)))
    return worst


def _flags_zero(stream_ptr: int) -> bool:
    import cupy as cp

    dev = cp.cuda.runtime.getDevice()
    ptr, words = splitflags._flags[(dev, stream_ptr, 0)]
    mem = cp.cuda.UnownedMemory(ptr, 4 * words, None)
    view = cp.ndarray((words,), cp.uint32, cp.cuda.MemoryPointer(mem, 0))
    cp.cuda.runtime.deviceSynchronize()
    return int(cp.count_nonzero(view)) == 0


@pytest.mark.parametrize("name", ["ws-128x64-k4", "ws-tn-128x64-k4", "ws-tt-128x128-k3", "ws-64x32-k16-o2",
                                  "ws-swapped-k4", "ws-nt-swapped-k8", "tma-k3"])
@pytest.mark.parametrize("shape", [(333, 517, 1000), (97, 45, 2049), (1, 7, 300)])
def test_one_launch_matches_float64_and_leaves_the_flags_zero(session, name, shape):
    import cupy as cp

    cfg = _configs(session.spec).get(name)
    if cfg is None:
        pytest.skip(f"the split_flags kernels need sm_90a; this GPU is {session.spec.arch}")
    M, N, K = shape
    if cfg.accepts(M, N, K) is not None:
        pytest.skip(cfg.accepts(M, N, K))
    assert cfg.split_flags and session.kernel(cfg).fused
    one = _one_launch(session, cfg, M, N, K)
    assert one == cfg.split_one_launch(M, N, session.spec.sm_count)   # one wave of blocks: one launch
    assert _run(session, cfg, M, N, K) <= 1e-5
    if one:
        stream = cp.cuda.get_current_stream().ptr
        assert (cp.cuda.runtime.getDevice(), stream, 0) in splitflags._flags
        assert _flags_zero(stream)


def test_the_shapes_above_take_both_paths(hopper):
    """The cases above hold one-launch and two-launch (more than one wave) runs of these kernels."""
    cases = [cfg.split_one_launch(M, N, hopper.spec.sm_count) for cfg in _configs(hopper.spec).values()
             for M, N, K in [(333, 517, 1000), (97, 45, 2049), (1, 7, 300)]]
    assert any(cases) and not all(cases)


def test_many_waves_take_the_scale_kernel(hopper):
    """2000 x 2000 in 64x32 tiles split 16 ways is 31k blocks, many rounds of what the GPU holds: two
    launches (one measured slower there), and the right product."""
    session = hopper
    cfg = _configs(session.spec)["ws-64x32-k16-o2"]
    assert not _one_launch(session, cfg, 2000, 2000, 2048)
    assert _run(session, cfg, 2000, 2000, 2048, calls=2) <= 1e-5


def test_two_streams_get_flags_of_their_own(hopper):
    import cupy as cp

    session = hopper
    cfg = _configs(session.spec)["ws-64x32-k16-o2"]
    assert _one_launch(session, cfg, 120, 60, 4096)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    errors = []
    for i, s in enumerate(streams):
        with s:
            errors.append(_run(session, cfg, 120, 60, 4096, calls=2, stream=s, seed=i))
    cp.cuda.runtime.deviceSynchronize()
    assert max(errors) <= 1e-5
    dev = cp.cuda.runtime.getDevice()
    ptrs = {splitflags._flags[(dev, s.ptr, 0)][0] for s in streams}
    assert len(ptrs) == 2 and all(_flags_zero(s.ptr) for s in streams)


def test_without_flags_the_scale_kernel_runs_first(hopper, monkeypatch):
    """A stream with no flags to give (refused here as in a capture): the two-launch path, same result."""
    import gemmgen.measure.launch as launch

    monkeypatch.setattr(launch, "flags_for", lambda *args: 0)
    for cfg in _configs(hopper.spec).values():
        assert _run(hopper, cfg, 333, 517, 1000, calls=2) <= 1e-5, cfg.name


def test_other_atomic_kernels_keep_the_scale_kernel(session):
    """Kernels whose slices all add from the start (SIMT, mma.sync, the plain wgmma kernel) take no
    flags: the scale kernel runs first. (A warp-specialized kernel with an unstaged epilogue would
    take none either, tests/test_splitflags.py, but no such kernel passes the rules on sm_90.)"""
    cfgs = [preset("v6").replace(split_k=4, reduce="atomic", label="")]
    if session.spec.cc >= (8, 0):
        cfgs.append(preset("tf32x3", session.spec.arch).replace(split_k=4, reduce="atomic", label=""))
    if session.spec.cc == (9, 0):
        cfgs.append(preset("tf32x3-wgmma").replace(split_k=4, reduce="atomic", label=""))
    for cfg in cfgs:
        kernel = session.kernel(cfg)
        assert not cfg.split_flags and not kernel.fused
        assert kernel.prepared(333, 517, 1000, 1000, 517, 517).flag_words == 0
        assert _run(session, cfg, 333, 517, 1000, calls=2) <= 1e-5, cfg.name


def test_a_captured_graph_replays_the_two_launch_path(hopper):
    import cupy as cp

    session = hopper
    cfg = _configs(session.spec)["ws-128x64-k4"]
    kernel = session.kernel(cfg)
    rng = np.random.default_rng(5)
    M, N, K = 300, 400, 1200
    assert _one_launch(session, cfg, M, N, K)   # outside a capture
    A, B = _rand(cp, rng, (M, K)), _rand(cp, rng, (K, N))
    C = cp.zeros((M, N), cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    ops = Operands(M, N, K, A.data.ptr, K, B.data.ptr, N, C.data.ptr, N, 1.0, 1.0)
    with stream:
        kernel.launch(ops, stream)   # eager first: the stream has flags of its own now
        stream.synchronize()
        assert (cp.cuda.runtime.getDevice(), stream.ptr, 0) in splitflags._flags
        C.fill(0)
        stream.begin_capture()
        kernel.launch(ops, stream)   # captured: the scale kernel and the main one, W null
        graph = stream.end_capture()
    ref = A.astype(cp.float64) @ B.astype(cp.float64)
    for i in range(3):   # C += A@B on each replay
        graph.launch(stream)
        stream.synchronize()
        assert rel_error(C, (i + 1) * ref) <= 1e-5, i
