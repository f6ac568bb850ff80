"""Split flags: what lets an atomic split-K kernel run without its scale kernel.

An atomic split-K kernel adds every slice's alpha * partial into C, so C must first hold beta * C; a
``_scale`` kernel launched ahead of it did that. The warp-specialized kernels (``config.split_flags``;
templates/common.cuh.j2 and ws_epilogue.cuh.j2, ``split_clear``) do it themselves when W points at
flags: slice 0's consumers set C's tile to beta * C before their first stage, meet at a barrier, and one
thread sets the tile's word; in each block of the other slices one thread waits for the word before the
consumer barrier that precedes every atomic add (by then long set), then counts the block. Slice 0's
blocks come first in the grid (blockIdx.z = 0) and never wait, so every wait ends; the last waiting block
zeroes the word, so the words are zero whenever the kernel has finished and one buffer serves every such
launch on a stream in turn. Given a null W the kernel needs the
scale kernel, as before: what :class:`.launch.Launch` does where this module has no flags to give, and
where the blocks take more than one wave (``config.split_one_launch``).

Flags belong to a stream (kernels on one stream run one after another; two streams at once would share
words): one zeroed buffer per (device, stream), allocated on first use and grown, never freed (a stream
made and dropped per call leaves 16 KB each time; a stream handle reused while the destroyed stream's work
still runs would share its words). The per-thread default stream is one handle for a stream of each
thread: its buffers are per thread. A stream
being captured into a CUDA graph gets none (the graph keeps the two launches, and replaying it never
touches a buffer that eager work uses): one cudaStreamIsCapturing per such launch.

Measured on the H100: the second launch cost 0.8-2.6 us of 7-30 us (60 launch-sized split
plans, main kernel alone against the sequence). In one launch, the 45 plans' geomean went from 1.281x to
1.307x cuBLAS (interleaved in one process); re-timed, the stored pairs under 30 us ran 0.95-1.00x their
two-launch times in one wave of blocks and 1.09-1.32x over 2-4 waves, hence the one-wave rule. A first
design, slice 0 writing C in its epilogue and the other slices waiting for that, ran 1.18x against 1.30x.
"""
from __future__ import annotations

import threading

WORDS_PER_TILE = 1           # one word per tile of C (templates/common.cuh.j2: blockIdx.x)
_MIN_WORDS = 1 << 12         # 16 KB: 4096 tiles, more than a one-wave launch has

PER_THREAD = 2               # cudaStreamPerThread: one handle, a stream of each thread's own
_flags: dict[tuple[int, int, int], tuple[int, int]] = {}   # (device, stream, thread or 0) -> (pointer, words)
_lock = threading.Lock()
_runtime = None                                        # cupy.cuda.runtime, imported on first use


def words(tiles: int) -> int:
    """Flag words a launch over ``tiles`` tiles of C needs."""
    return tiles * WORDS_PER_TILE


def flags_for(device: int, stream: int, count: int) -> int:
    """A pointer to at least ``count`` zeroed flag words for kernels on ``stream`` (a raw CUDA stream of
    ``device``), or 0 where there are none to give: a stream being captured into a CUDA graph, whose
    replays may run beside eager work on the same buffer."""
    global _runtime
    if _runtime is None:
        from cupy.cuda import runtime as _runtime
    if _runtime.streamIsCapturing(stream):
        return 0
    key = (device, stream, threading.get_ident() if stream == PER_THREAD else 0)
    found = _flags.get(key)
    if found is not None and found[1] >= count:
        return found[0]
    with _lock:
        found = _flags.get(key)
        if found is not None and found[1] >= count:
            return found[0]
        size = max(_MIN_WORDS, 1 << (count - 1).bit_length())
        # a buffer outgrown stays allocated: kernels queued on the stream may still use it
        ptr = _runtime.malloc(4 * size)
        _runtime.memsetAsync(ptr, 0, 4 * size, stream)   # ordered before every kernel queued after it
        _flags[key] = (ptr, size)
        return ptr
