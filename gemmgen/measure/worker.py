"""Isolation: measurements run in a worker process that owns the CUDA context.

An illegal memory access, a trap or a hang kills only the worker; the caller gets a typed failure
(RuntimeFailure, Timeout) and the next call starts a fresh worker, so later measurements are
unaffected.

    >>> from gemmgen.kernel.presets import preset
    >>> with MeasureWorker(device_id=0) as w:                      # doctest: +GPU
    ...     m = w.call("measure", preset("v10"), Shape(4096, 4096, 4096))
"""
from __future__ import annotations

import multiprocessing as mp
import traceback
from typing import Any

from ..base.outcome import Failure, RuntimeFailure, Timeout
from ..base.shape import Shape

_CUDA_ERRORS = {
    "cudaErrorIllegalAddress": "illegal memory access",
    "cudaErrorLaunchFailure": "unspecified launch failure (trap or fault)",
    "cudaErrorAssert": "device-side assert",
    "cudaErrorIllegalInstruction": "illegal instruction (trap)",
    "cudaErrorMisalignedAddress": "misaligned address",
    "cudaErrorLaunchOutOfResources": "too many resources requested for launch",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "illegal memory access",
    "CUDA_ERROR_LAUNCH_FAILED": "unspecified launch failure (trap or fault)",
}


def describe_cuda_error(exc: BaseException) -> str:
    """A short reason for a CUDA error raised through CuPy."""
    text = str(exc)
    for key, words in _CUDA_ERRORS.items():
        if key in text:
            return words
    return text.splitlines()[0] if text else type(exc).__name__


def _load_factory(path: str):
    """'package.module:Name' -> the object (tests inject fake sessions this way)."""
    import importlib

    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve(conn, device_id: int, factory: str) -> None:
    """Worker loop: answer (method, args, kwargs) requests on a session until told to stop."""
    try:
        session = _load_factory(factory)(device_id)
        conn.send(("ready", session.spec))
    except Exception as exc:  # no GPU, no CuPy: report and stop
        conn.send(("error", RuntimeFailure(f"worker could not start: {exc}")))
        return
    while True:
        request = conn.recv()
        if request is None:
            return
        method, args, kwargs = request
        try:
            conn.send(("ok", getattr(session, method)(*args, **kwargs)))
        except Failure as exc:
            conn.send(("error", exc))
        except Exception as exc:
            if _is_cuda_error(exc):   # the context is poisoned: report, then die
                conn.send(("error", RuntimeFailure(describe_cuda_error(exc), traceback.format_exc())))
                return
            conn.send(("raise", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def _is_cuda_error(exc: BaseException) -> bool:
    name = type(exc).__name__
    return name in ("CUDARuntimeError", "CUDADriverError") or "cudaError" in str(exc)


class WorkerError(RuntimeError):
    """An unexpected exception inside the worker (a bug, not a bad kernel)."""


class MeasureWorker:
    """A measuring process on one GPU (it runs a :class:`~gemmgen.measure.session.Session`),
    restarted after any crash or timeout."""

    def __init__(self, device_id: int = 0, floor_s: float = 10.0, start_timeout_s: float = 120.0,
                 factory: str = "gemmgen.measure.session:Session"):
        self.device_id, self.floor_s, self.start_timeout_s = device_id, floor_s, start_timeout_s
        self.factory = factory
        self._proc = None
        self._conn = None
        self.spec = None
        self.restarts = 0

    def __enter__(self) -> "MeasureWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def timeout_for(self, shape: Shape | None, count: int = 1) -> float:
        """Seconds a call may take: a floor plus time for ~50 runs at 0.2 TFLOP/s per kernel."""
        flops = shape.flops if shape else 0.0
        return self.floor_s + count * 50 * flops / 0.2e12

    def call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """Run ``Session.method(*args, **kwargs)`` in the worker; failures come back raised as Failure."""
        self._ensure_started()
        shape = next((a for a in args if isinstance(a, Shape)), None)
        count = len(args[0]) if method == "retime" else 1
        limit = timeout if timeout is not None else self.timeout_for(shape, count)
        self._conn.send((method, args, kwargs))
        if not self._conn.poll(limit):
            self._kill()
            raise Timeout(limit, f"{method} did not answer within {limit:.1f} s; worker killed")
        try:
            status, value = self._conn.recv()
        except EOFError:
            code = self._kill()
            raise RuntimeFailure(f"worker died (exit code {code})") from None
        if status == "raise":
            raise WorkerError(value)
        if status == "error":
            if not self._proc.is_alive() or isinstance(value, RuntimeFailure):
                self._kill()
            raise value
        return value

    def _ensure_started(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            return
        ctx = mp.get_context("spawn")   # a forked child would inherit a CUDA context: never fork
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, self.device_id, self.factory), daemon=True)
        self._proc.start()
        self._conn = parent
        if not parent.poll(self.start_timeout_s):
            self._kill()
            raise Timeout(self.start_timeout_s, "worker did not start")
        status, value = parent.recv()
        if status != "ready":
            self._kill()
            raise value
        self.spec = value

    def _kill(self) -> int | None:
        if self._proc is None:
            return None
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join(10)
        code = self._proc.exitcode
        self._proc, self._conn = None, None
        self.restarts += 1
        return code

    def close(self) -> None:
        """Stop the worker politely (or kill it if it does not answer)."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(5)
            except (BrokenPipeError, OSError):
                pass
        self._kill()
