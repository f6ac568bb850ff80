"""One worker per GPU over one queue of items: each worker takes the next item as soon as it is free.

The grid search hands out (family, shape) tasks this way, and then the shapes of the timings stage.
``work(device, item)`` runs in the worker: in this process (``inline``, one device), in a thread per
device, or in a spawned process per device (``process``: ``work`` and the items must be picklable,
and each process opens its own CUDA context in its measuring worker). An exception in ``work`` is
that item's error and the worker goes on; a worker process that dies loses only its item, and a
new one takes its GPU (``restarts`` times per GPU).

>>> done = run_on_devices(["a", "bb", "ccc"], lambda device, item: len(item), [0], mode="inline")
>>> [(d.item, d.result, d.device) for d in done]
[('a', 1, 0), ('bb', 2, 0), ('ccc', 3, 0)]
"""
from __future__ import annotations

import collections
import multiprocessing
import queue
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

Work = Callable[[int, Any], Any]
MODES = ("inline", "thread", "process")


@dataclass(frozen=True)
class Done:
    """What became of one item: its result, or the error that ended it, and where and how long it ran."""

    index: int
    item: Any
    device: int
    result: Any = None
    error: str | None = None
    seconds: float = 0.0


def run_on_devices(items: Sequence[Any], work: Work, devices: Sequence[int], *, mode: str = "process",
                   on_done: Callable[[Done], None] | None = None, restarts: int = 2, poll: float = 0.5) -> list[Done]:
    """Run ``work(device, item)`` for every item, one worker per device; returns the outcomes in the
    order they finished (``on_done`` sees each as it comes)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}; valid: {', '.join(MODES)}")
    if mode == "inline":
        if len(devices) != 1:
            raise ValueError("mode 'inline' runs on one device")
        out = []
        for i, item in enumerate(items):
            out.append(_run(work, devices[0], i, item))
            if on_done:
                on_done(out[-1])
        return out
    return _Dispatcher(items, work, list(devices), mode, on_done, restarts, poll).run()


def _run(work: Work, device: int, index: int, item: Any) -> Done:
    t0 = time.monotonic()
    try:
        return Done(index, item, device, work(device, item), None, time.monotonic() - t0)
    except Exception as e:   # one item's failure (no candidate passed, a bad study): the grid goes on
        text = f"{type(e).__name__}: {e}".splitlines()[0]
        return Done(index, item, device, None, text, time.monotonic() - t0)


def _serve(work: Work, device: int, inbox: Any, outbox: Any) -> None:
    """A worker: run the items its inbox hands it until it receives None. A worker process ends on
    SIGTERM as on an exception, so its exit handlers stop its own measuring worker (a daemon)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        while True:
            msg = inbox.get()
            if msg is None:
                return
            index, item = msg
            outbox.put(_run(work, device, index, item))
    except KeyboardInterrupt:
        raise SystemExit(130) from None   # trials in flight are recorded by the trial runner


def _terminated(signum, frame) -> None:
    raise SystemExit(128 + signum)


class _Dispatcher:
    """Hands the next item to whichever worker is free; replaces workers that die."""

    def __init__(self, items, work, devices, mode, on_done, restarts, poll):
        self.items, self.work, self.devices, self.mode = list(items), work, devices, mode
        self.on_done, self.poll = on_done, poll
        self.restarts = {d: restarts for d in devices}
        self.pending = collections.deque(range(len(self.items)))
        self.ctx = multiprocessing.get_context("spawn") if mode == "process" else None
        self.outbox = self.ctx.Queue() if self.ctx else queue.Queue()
        self.workers: dict[int, tuple[Any, Any]] = {}   # device -> (process or thread, inbox)
        self.holding: dict[int, int] = {}                # device -> index of the item it runs
        self.done: list[Done] = []

    def run(self) -> list[Done]:
        try:
            for d in self.devices:
                if self.pending:
                    self._start(d)
            while self.holding:
                self._step()
        finally:
            self._stop()
        return self.done

    def _start(self, device: int) -> None:
        inbox = self.ctx.Queue() if self.ctx else queue.Queue()
        kind = self.ctx.Process if self.ctx else threading.Thread
        # A worker process is not a daemon: its work starts the measuring worker, a process of its own
        # (isolation from crashing kernels), which a daemon may not have; _stop ends it either way.
        worker = kind(target=_serve, args=(self.work, device, inbox, self.outbox), name=f"gemmgen-grid-gpu{device}",
                      daemon=self.ctx is None)
        worker.start()
        self.workers[device] = (worker, inbox)
        self._feed(device)

    def _feed(self, device: int) -> None:
        """The next item for this device's worker, or None (stop) when there is none."""
        if self.pending:
            index = self.pending.popleft()
            self.holding[device] = index
            self.workers[device][1].put((index, self.items[index]))
        else:
            self.holding.pop(device, None)
            self.workers[device][1].put(None)

    def _step(self) -> None:
        try:
            outcome = self.outbox.get(timeout=self.poll)
        except queue.Empty:
            self._reap()
            return
        self._finish(outcome)
        self._feed(outcome.device)

    def _finish(self, outcome: Done) -> None:
        self.done.append(outcome)
        if self.on_done:
            self.on_done(outcome)

    def _reap(self) -> None:
        """Fail the item of a worker that died, and give its GPU a new worker while items remain."""
        for device, index in list(self.holding.items()):
            worker = self.workers[device][0]
            if worker.is_alive():
                continue
            code = getattr(worker, "exitcode", None)
            del self.holding[device]
            self._finish(Done(index, self.items[index], device, None, f"the worker on GPU {device} died "
                              f"(exit code {code}) while running it"))
            if self.pending and self.restarts[device] > 0:
                self.restarts[device] -= 1
                self._start(device)

    def _stop(self) -> None:
        for device, (worker, inbox) in self.workers.items():
            if device in self.holding:   # interrupted: ask it to stop after its item
                inbox.put(None)
        for worker, _ in self.workers.values():
            worker.join(10)
            if self.ctx and worker.is_alive():
                worker.terminate()   # SIGTERM: its exit handlers stop its measuring worker
                worker.join(5)
            if self.ctx and worker.is_alive():
                worker.kill()
                worker.join(5)

