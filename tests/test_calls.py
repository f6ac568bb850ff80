"""The prepared request (gemmgen.runtime.calls) without a GPU: a fake kernel records its launch."""
from __future__ import annotations

import types

import pytest

from gemmgen.runtime import calls
from gemmgen.runtime.arrays import span_offsets


def _prepared(out_span=(0, 4 * 64 * 32)):
    launched = []

    def prepared(M, N, K, lda, ldb, ldc):
        return lambda *args: launched.append(((M, N, K, lda, ldb, ldc), args))

    kernel = types.SimpleNamespace(layout="NN", prepared=prepared, workspace_floats=lambda M, N: 0)   # a library.Served
    matrix = lambda shape, strides: types.SimpleNamespace(shape=shape, strides=strides, itemsize=4)
    spans = (span_offsets(matrix((64, 16), (64, 4))), span_offsets(matrix((16, 32), (4, 64))))   # A rows, B columns
    call = calls.Prepared(kernel, 64, 32, 16, "NT", 16, 16, 32, False, False, (64, 16), (32, 16), spans, out_span)
    return call, launched


def test_a_call_launches_the_kernel_with_its_pointers_scalars_and_stream():
    call, launched = _prepared()
    call(0x1000, 0x9000, 0x20000, 0.5, 2.0, types.SimpleNamespace(ptr=77))
    assert launched == [((64, 32, 16, 16, 16, 32), (0x1000, 0x9000, 0x20000, 0.5, 2.0, 77, 0, False))]


@pytest.mark.parametrize("pc,which", [
    (0x20000, None),                 # C far from both
    (0x1000 + 4 * 64 * 16, None),    # C starts right after A's last element
    (0x1000 + 4 * 64 * 16 - 4, "A"),  # ... or on it
    (0x1000 - 4 * 64 * 32 + 4, "A"),  # C ends one float into A
    (0x9000 + 4 * 100, "B"),
])
def test_overlap_of_out_with_a_or_b_is_found_from_the_prepared_spans(pc, which):
    call, _ = _prepared()
    assert call.overlaps(0x1000, 0x9000, pc) == which


def test_forget_drops_this_threads_prepared_requests():
    calls.kept()["x"] = 1
    calls.forget()
    assert "x" not in calls.kept()


def _refusing():
    """A real programmatic launch (gemmgen.measure.pdl.Dependent) whose driver entry refuses with
    CUresult 1, as a stream capture that cannot record the attribute does; and the calls it got."""
    from gemmgen.measure.pdl import Dependent

    refused = []
    dependent = Dependent((4, 1, 1), (256, 1, 1), 0)
    dependent.fn = lambda config, function, argv, extra: refused.append((config, function)) or 1
    return dependent, refused


def test_a_refused_programmatic_launch_falls_back_to_a_plain_one(monkeypatch):
    """The workspace reduce goes out as a programmatic dependent on sm_90 (gemmgen.measure.pdl); where the
    driver refuses that launch, the reduce is launched plainly (after the main kernel) and stays so."""
    from gemmgen.kernel.presets import preset
    from gemmgen.measure import launch as launch_module

    cfg = preset("v6").replace(split_k=3, reduce="workspace")
    kernel = types.SimpleNamespace(config=cfg, _main=11, _scale=0, _reduce=33, dependent=False, waits=False,
                                   fused=False, device=0, sm_count=132, after_copies=True, after_scale=True)
    plain = []
    monkeypatch.setattr(launch_module, "launch_kernel", lambda fn, *args: plain.append(fn))
    ln = launch_module.Launch(kernel, 300, 200, 100, 100, 200, 200)
    ln.reduce_after, refused = _refusing()
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0x4000)
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0x4000)
    assert len(refused) == 1 and refused[0][1] == 33   # tried once, with the reduce kernel
    assert ln.reduce_after.refused == 1
    assert plain == [11, 33, 11, 33]   # main, reduce; main, reduce
    assert ln.reduce.params.W == 0x4000 and ln.main.params.W == 0x4000


def test_a_handwritten_reduce_goes_behind_until_the_driver_refuses(monkeypatch):
    """gemv's and small's reduce (runtime.handwritten.Behind): a programmatic dependent while the driver
    takes it, then plain launches, the refused one included, without asking the driver again."""
    from gemmgen.measure import launch as launch_module
    from gemmgen.runtime import handwritten
    from gemmgen.runtime.small import _REDUCE

    plain = []
    monkeypatch.setattr(launch_module, "launch_kernel", lambda fn, *args: plain.append((fn, args[:3])))
    monkeypatch.setattr(handwritten, "pdl", lambda: True)
    behind = handwritten.Behind(44, (3, 1, 1), _REDUCE)
    taken, answers = [], iter([0, 0, 1])
    behind.dependent.fn = lambda config, function, argv, extra: taken.append((function, config)) or next(answers)
    for _ in range(5):
        behind(7)
    assert [f for f, _ in taken] == [44, 44, 44] and plain == [(44, (3, 1, 1))] * 3


def _waiting_launch(monkeypatch, cfg, after_copies=True, after_scale=True):
    """A Launch of a kernel that waits for the grid ahead of it (a wgmma kernel on sm_90), started early
    behind copies and a scale kernel as ``after_copies`` and ``after_scale`` say: plain launches and
    programmatic ones recorded by function."""
    from gemmgen.measure import launch as launch_module

    kernel = types.SimpleNamespace(config=cfg, _main=11, _scale=22 if cfg.split_atomic else 0, _reduce=0,
                                   dependent=False, waits=True, fused=cfg.split_flags, device=0, sm_count=132,
                                   after_copies=after_copies, after_scale=after_scale)
    plain, early = [], []
    monkeypatch.setattr(launch_module, "launch_kernel", lambda fn, *args: plain.append(fn))
    monkeypatch.setattr(launch_module, "Dependent", lambda grid, block, smem: lambda fn, stream, argv: early.append(fn) or True)
    return launch_module.Launch(kernel, 300, 200, 100, 100, 200, 200), plain, early


def test_a_waiting_kernel_starts_early_only_behind_copies_or_its_scale(monkeypatch):
    """The main kernel goes out as a programmatic dependent where the kernel just ahead of it wrote its
    inputs (matmul's copies: behind=True; an atomic split's scale kernel), and plainly otherwise: the
    kernel ahead of an unsplit call without copies is someone else's, which it must not overtake."""
    from gemmgen.kernel.presets import preset

    ln, plain, early = _waiting_launch(monkeypatch, preset("tf32x3-wgmma"))
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7)
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0, True)
    assert plain == [11] and early == [11]
    ln, plain, early = _waiting_launch(monkeypatch, preset("tf32x3-wgmma"), after_copies=False)
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0, True)
    assert plain == [11] and early == []              # not behind copies where the kernel is told so

    ln, plain, early = _waiting_launch(monkeypatch, preset("tf32x3-wgmma").replace(split_k=4))
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7)
    assert plain == [22] and early == [11]            # the scale plainly, the main kernel behind it
    ln, plain, early = _waiting_launch(monkeypatch, preset("tf32x3-wgmma").replace(split_k=4), after_scale=False)
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7)
    assert plain == [22, 11] and early == []


def test_a_refused_early_main_kernel_is_launched_plainly_from_then_on(monkeypatch):
    from gemmgen.kernel.presets import preset

    ln, plain, _ = _waiting_launch(monkeypatch, preset("tf32x3-wgmma"))
    ln.main_after, refused = _refusing()
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0, True)
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0, True)
    assert len(refused) == 1 and plain == [11, 11]


def test_a_call_with_copies_says_its_kernel_runs_behind_them(monkeypatch):
    call, launched = _prepared()
    copied = []
    call.copies = lambda pa, pb, base, stream: (copied.append((pb, base, stream)), (pa, base))[1]
    call.floats = 32 * 16
    monkeypatch.setattr(calls, "staging_buffer", lambda floats, stream: types.SimpleNamespace(
        data=types.SimpleNamespace(ptr=0x50000)))
    call(0x1000, 0x9000, 0x20000, 1.0, 0.0, types.SimpleNamespace(ptr=77))
    assert copied == [(0x9000, 0x50000, 77)]
    assert launched == [((64, 32, 16, 16, 16, 32), (0x1000, 0x50000, 0x20000, 1.0, 0.0, 77, 0x50000 + 4 * 32 * 16, True))]


def test_a_split_flags_kernel_in_one_wave_runs_alone(monkeypatch):
    """An atomic split of the warp-specialized kernels whose blocks fit one wave gets its stream's split
    flags in W and no scale kernel (launched plainly: the kernel ahead is someone else's); where no flags
    are to be had (a graph capture) or its blocks take more waves, the scale kernel runs first and the
    main kernel starts behind it, W null."""
    from gemmgen.kernel.presets import preset
    from gemmgen.measure import launch as launch_module

    cfg = preset("tf32x3-ws").replace(BN=64, WN=64, stages=6, split_k=4)   # 300 x 200: 3 x 4 tiles, 48 blocks
    asked = []
    monkeypatch.setattr(launch_module, "flags_for", lambda dev, stream, count: asked.append((dev, stream, count)) or 0x9000)
    ln, plain, early = _waiting_launch(monkeypatch, cfg)
    assert ln.flag_words == 12
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7)
    assert plain == [11] and early == [] and ln.main.params.W == 0x9000 and asked == [(0, 7, 12)]
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7, 0, True)   # behind matmul's copies: it may start early
    assert plain == [11] and early == [11]

    monkeypatch.setattr(launch_module, "flags_for", lambda dev, stream, count: 0)
    ln(0x1000, 0x2000, 0x3000, 1.0, 0.0, 7)
    assert plain == [11, 22] and early == [11, 11] and not ln.main.params.W

    wide = cfg.replace(split_k=16)   # 12 x 16 blocks: more than 132 at once
    ln, plain, early = _waiting_launch(monkeypatch, wide)
    assert ln.flag_words == 0 and not wide.split_one_launch(300, 200, 132)
