"""What a measurement returns: a Measurement, or a typed failure that is data, not a crash.

Expected failures (a config the rules reject, a compile error, a crash, a hang, a wrong result)
become values the search records as failed trials; anything else propagates.

>>> str(Timeout(2.5))
'timed out after 2.5 s'
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional

from .shape import Shape


@dataclass(frozen=True)
class Measurement:
    """A kernel that passed the correctness gate, timed against cuBLAS in the same run."""

    name: str
    shape: Shape
    ms: float                      # median time of the kernel
    iqr_ms: float                  # interquartile range of the kernel's times
    cublas_ms: float               # median time of cuBLAS in the kernel's precision mode, interleaved with it
    rel_error: float               # relative Frobenius error of A@B against float64 (the gate's err_fp64)
    reps: int = 0
    clock_mhz: tuple[int, int] = (0, 0)   # SM clock at start and end (NVML), 0 where unknown
    registers: int = 0
    smem_bytes: int = 0
    occupancy: float = 0.0         # resident warps / maximum warps per SM
    resident: int = 0              # resident blocks per SM (the driver's occupancy calculator), 0 where unknown
    extra: dict = field(default_factory=dict)   # the gate's errors and bound, the cuBLAS mode ("baseline"), ...

    @property
    def tflops(self) -> float:
        return self.shape.flops / (self.ms * 1e-3) / 1e12

    @property
    def cublas_tflops(self) -> float:
        return self.shape.flops / (self.cublas_ms * 1e-3) / 1e12 if self.cublas_ms else 0.0

    @property
    def ratio(self) -> float:
        """Speed relative to cuBLAS (>1 is faster)."""
        return self.cublas_ms / self.ms if self.ms else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = self.shape.key
        d.update(tflops=self.tflops, cublas_tflops=self.cublas_tflops, ratio=self.ratio)
        return d


class Failure(Exception):
    """A candidate kernel that cannot be used; ``kind`` names the class of failure for records."""

    kind = "failure"

    def __init__(self, reason: str, detail: Optional[str] = None):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail

    def __reduce__(self):  # survive pickling across worker processes
        return (self.__class__, (self.reason, self.detail))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "reason": self.reason}


class Rejected(Failure):
    """The config breaks the rules for this device or shape (never compiled)."""

    kind = "invalid"


class CompileFailure(Failure):
    """NVRTC or nvcc rejected the source."""

    kind = "compile"


class RuntimeFailure(Failure):
    """The kernel crashed (illegal memory access, trap, launch failure)."""

    kind = "runtime"


class Timeout(Failure):
    """The kernel did not finish within its time limit; the worker running it was killed."""

    kind = "timeout"

    def __init__(self, seconds, detail: Optional[str] = None):
        reason = seconds if isinstance(seconds, str) else f"timed out after {seconds:g} s"
        super().__init__(reason, detail)


class WrongResult(Failure):
    """The kernel's output failed the correctness gate (NaN/Inf, unwritten elements, error too large)."""

    kind = "wrong"
