"""gemmgen.measure.splitflags without a GPU: CUDA's allocation, memset and capture query recorded by a
test double; what is given to which stream, when a buffer grows, and what a capture gets."""
from __future__ import annotations

import pytest

from gemmgen.measure import splitflags


@pytest.fixture
def cuda(monkeypatch):
    """CuPy's runtime calls recorded: malloc hands out 0x1000, 0x2000, ...; streams in ``capturing``
    report a capture."""
    from cupy.cuda import runtime

    calls = {"malloc": [], "memset": [], "capturing": set()}

    def malloc(nbytes):
        calls["malloc"].append(nbytes)
        return 0x1000 * len(calls["malloc"])

    monkeypatch.setattr(runtime, "malloc", malloc)
    monkeypatch.setattr(runtime, "memsetAsync", lambda ptr, value, nbytes, stream: calls["memset"].append((ptr, value, nbytes, stream)))
    monkeypatch.setattr(runtime, "streamIsCapturing", lambda stream: stream in calls["capturing"])
    monkeypatch.setattr(splitflags, "_flags", {})
    monkeypatch.setattr(splitflags, "_runtime", runtime)
    return calls


def test_a_stream_gets_one_zeroed_buffer_and_keeps_it(cuda):
    p = splitflags.flags_for(0, 7, 100)
    assert p == 0x1000 and splitflags.flags_for(0, 7, 3000) == p   # within the first buffer's 4096 words
    assert cuda["malloc"] == [4 * 4096] and cuda["memset"] == [(0x1000, 0, 4 * 4096, 7)]   # zeroed on its stream


def test_streams_and_devices_get_buffers_of_their_own(cuda):
    ptrs = {splitflags.flags_for(0, 7, 10), splitflags.flags_for(0, 8, 10), splitflags.flags_for(1, 7, 10)}
    assert len(ptrs) == 3 and len(cuda["malloc"]) == 3


def test_a_buffer_too_small_is_replaced_by_a_zeroed_larger_one(cuda):
    first = splitflags.flags_for(0, 7, 10)
    bigger = splitflags.flags_for(0, 7, 5000)
    assert bigger != first and cuda["malloc"][-1] == 4 * 8192   # the next power of two
    assert cuda["memset"][-1] == (bigger, 0, 4 * 8192, 7)
    assert splitflags.flags_for(0, 7, 10) == bigger   # the old one is never handed out again


def test_a_capturing_stream_gets_none_and_nothing_is_allocated(cuda):
    cuda["capturing"].add(9)
    assert splitflags.flags_for(0, 9, 10) == 0 and cuda["malloc"] == []
    cuda["capturing"].discard(9)
    assert splitflags.flags_for(0, 9, 10) == 0x1000
    cuda["capturing"].add(9)
    assert splitflags.flags_for(0, 9, 10) == 0        # not even the buffer it has: a graph replays anywhere
    assert len(cuda["malloc"]) == 1


def test_words_count_one_per_tile():
    assert splitflags.words(264) == 264 * splitflags.WORDS_PER_TILE


def test_the_per_thread_default_stream_gets_a_buffer_per_thread(cuda):
    """cudaStreamPerThread (handle 2) is a different stream in each thread: buffers must not be shared."""
    import threading

    got, alive = [], threading.Barrier(3)

    def work():
        got.append(splitflags.flags_for(0, splitflags.PER_THREAD, 10))
        alive.wait()   # all three threads live at once (an exited thread's id may be reused)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 3
    assert splitflags.flags_for(0, 7, 10) == splitflags.flags_for(0, 7, 10)   # other handles: one per stream


def test_only_staged_warp_specialized_atomic_splits_clear_c_themselves():
    """split_flags: the staged epilogue's consumer barrier orders every consumer's clear of C before any
    consumer's adds; an unstaged one (256x128 tiles over 2 stages) has none, nor do other families."""
    from gemmgen.kernel.presets import preset

    ws = preset("tf32x3-ws").replace(label="")
    assert ws.replace(BN=64, WN=64, stages=6, split_k=4).split_flags
    assert ws.replace(BN=24, WN=24, stages=6, split_k=4, swap=True).split_flags
    assert not ws.replace(BM=256, BN=128, WN=128, stages=2, split_k=2).split_flags          # unstaged
    assert not ws.replace(BN=64, WN=64, stages=6, split_k=4, reduce="workspace").split_flags
    assert not ws.replace(stages=2, scheduler="persistent", persistent_blocks=16).split_flags
    assert not preset("v6").replace(split_k=4, reduce="atomic").split_flags
    c = ws.replace(BN=64, WN=64, stages=6, split_k=4)                                       # 128x64 tiles
    assert c.split_one_launch(300, 200, 132) and not c.replace(split_k=16).split_one_launch(300, 200, 132)


@pytest.mark.parametrize("swap", [False, True])
def test_rendered_one_launch_split_orders_clear_wait_and_adds_through_barriers(swap):
    """In the rendered kernel slice 0's consumers meet at a barrier after their clear and only then does one
    thread publish; a waiting block's one poller runs before the staging barrier that precedes every add
    (moving the wait behind it, or the publish before the barrier, would race)."""
    import re

    from gemmgen.codegen.render import render
    from gemmgen.kernel.presets import preset

    cfg = preset("tf32x3-ws").replace(BN=24 if swap else 64, WN=24 if swap else 64, stages=6, split_k=4,
                                      swap=swap, label="")
    assert cfg.split_flags
    body = render(cfg, "sm_90").code
    body = body[body.index("if (first_slice) {"):]
    clear, publish = body.index("*p = beta == 0.0f"), body.index("split_publish(flag)")
    assert clear < body.index("bar.sync 1,") < publish
    assert re.search(r"if \(cw == 0 && tid == 0\) split_publish\(flag\);", body)
    wait = body.index("split_wait(flag)")
    assert re.search(r"!first_slice && cw == 0 && tid == 0\) split_wait\(flag\)", body)
    staging = body.index("bar.sync 1,", wait)
    assert publish < wait < staging < body.index("atomicAdd(out", wait)
    assert body.count("split_wait(flag)") == 1
