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
