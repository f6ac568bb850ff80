"""gemmgen: generate, verify, time and autotune specialized CUDA SGEMM kernels."""
from __future__ import annotations

__version__ = "0.1.0"

from .config import ConfigError, KernelConfig
from .presets import preset
from .render import KernelSource, emit, render
from .rules import InvalidConfig, Violation, explain, validate

__all__ = [
    "__version__", "ConfigError", "InvalidConfig", "KernelConfig", "KernelSource", "Violation",
    "emit", "explain", "preset", "render", "validate",
]
