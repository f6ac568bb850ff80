"""gemmgen: generate, verify, time and autotune specialized CUDA SGEMM kernels.

The package is laid out as the pipeline, one folder per stage, each importing only the ones before it:
``base`` (shared values) -> ``kernel`` (config, presets, rules) -> ``codegen`` (CUDA source) ->
``build`` (NVRTC, nvcc) -> ``measure`` (launch, gate, time) -> ``tune`` (search) -> ``records``
(results files) -> ``runtime`` (matmul), then this module (the public names) and ``cli``.

>>> import gemmgen
>>> cfg = gemmgen.preset("v10")
>>> 'extern "C"' in gemmgen.emit(cfg, "sm_90")
True
"""
from __future__ import annotations

from .base import (CompileFailure, Failure, Measurement, Rejected, RuntimeFailure, Shape, Timeout, WrongResult,
                   __version__)
from .codegen import KernelSource, emit, render
from .kernel import ConfigError, InvalidConfig, KernelConfig, Violation, explain, preset, presets, validate
from .records import Entry, ResultsError, load_device, record
from .runtime import Kernel, KernelLibrary, NoTunedKernels, bench, dispatch, load, matmul, tune_first_calls

__all__ = [
    "__version__", "CompileFailure", "ConfigError", "Entry", "Failure", "InvalidConfig", "Kernel",
    "KernelConfig", "KernelLibrary", "KernelSource", "Measurement", "NoTunedKernels", "Rejected",
    "ResultsError", "RuntimeFailure", "Shape", "Timeout", "Violation", "WrongResult", "bench",
    "dispatch", "emit", "explain", "load", "load_device", "matmul", "preset", "presets", "record",
    "render", "tune_first_calls", "validate",
]
