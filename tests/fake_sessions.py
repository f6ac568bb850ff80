"""Stand-in measuring sessions for worker tests on machines without a GPU."""
from __future__ import annotations

import os
import time

from gemmgen.base.devices import known
from gemmgen.base import WrongResult


class FakeSession:
    """Behaves like gemmgen.measure.session.Session, with misbehaviours on request."""

    def __init__(self, device_id: int):
        self.spec = known("h100")
        self.pid = os.getpid()

    def ping(self):
        return "pong"

    def whoami(self):
        return self.pid

    def hang(self):
        time.sleep(3600)

    def crash(self):
        os._exit(3)   # like a driver abort: the process vanishes without answering

    def wrong(self):
        raise WrongResult("relative error 0.5 against fp64 exceeds 1e-05")

    def buggy(self):
        raise KeyError("a bug, not a bad kernel")


class BrokenSession:
    def __init__(self, device_id: int):
        raise RuntimeError("no CUDA device")


class GridSession(FakeSession):
    """A fake GPU behind the real isolated worker: kernels named in $GEMMGEN_FAKE_CRASH kill the process,
    like an illegal memory access that poisons the CUDA context."""

    def measure(self, config, shape, rep_ms=100.0, validated=False):
        return self.retime([config], shape, rep_ms=rep_ms, validated=validated)[0]

    def retime(self, configs, shape, rep_ms=100.0, validated=False):
        from gemmgen.base import Measurement

        crash = set(os.environ.get("GEMMGEN_FAKE_CRASH", "").split(","))
        if any(c.name in crash for c in configs):
            os._exit(3)
        return [Measurement(c.name, shape, ms=1.0 + 1.0 / c.BM + c.split_k / 100, iqr_ms=0.0, cublas_ms=1.5,
                            rel_error=1e-7) for c in configs]
