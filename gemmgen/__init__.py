"""gemmgen: generate, verify, time and autotune specialized CUDA SGEMM kernels.

>>> import gemmgen
>>> cfg = gemmgen.preset("v10")
>>> 'extern "C"' in gemmgen.emit(cfg)
True
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import presets
from .api import bench, load, matmul
from .config import ConfigError, KernelConfig
from .library import Kernel, KernelLibrary, NoTunedKernels
from .lookup import dispatch, load_device
from .outcome import (CompileFailure, Failure, Measurement, Rejected, RuntimeFailure, Shape, Timeout,
                      WrongResult)
from .presets import preset
from .render import KernelSource, emit, render
from .rules import InvalidConfig, Violation, explain, validate
from .store import Entry, ResultsError, record

__all__ = [
    "__version__", "CompileFailure", "ConfigError", "Entry", "Failure", "InvalidConfig", "Kernel",
    "KernelConfig", "KernelLibrary", "KernelSource", "Measurement", "NoTunedKernels", "Rejected",
    "ResultsError", "RuntimeFailure", "Shape", "Timeout", "Violation", "WrongResult", "bench",
    "dispatch", "emit", "explain", "load", "load_device", "matmul", "preset", "presets", "record",
    "render", "validate",
]
