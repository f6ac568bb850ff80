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
