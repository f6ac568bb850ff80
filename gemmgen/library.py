"""The tuned kernels of one GPU and the rule that picks one for a shape.

Dispatch rule (see lookup.dispatch): the exact tuned shape if present; else the tuned config of the
nearest tuned shape (log-distance over M, N, K) among those that accept the shape; else the best
preset that accepts it (v13 for the architecture), with one warning, or an error with strict=True.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Optional

from .config import KernelConfig
from .launch import LoadedKernel, Operands
from .presets import preset
from .render import render


class NoTunedKernels(LookupError):
    """strict=True and no tuned result fits the request."""


@dataclass
class Kernel:
    """One loaded kernel: call it with Operands; ``measured`` is what the search recorded (or None)."""

    config: KernelConfig
    loaded: LoadedKernel
    measured: Optional[dict] = None

    @property
    def source(self) -> str:
        return render(self.config).code

    def __call__(self, ops: Operands, stream=None) -> None:
        self.loaded.launch(ops, stream)


class KernelLibrary:
    """Tuned results for one GPU plus compiled-kernel caches (memory here, disk in compile.py)."""

    def __init__(self, spec, entries: dict, device_id: int = 0, strict: bool = False):
        # matmul promises fp32 accuracy: a stored tf32 winner must never serve it
        entries = {k: e for k, e in entries.items() if e.kernel_config.precision == "fp32"}
        self.spec, self.entries, self.device_id, self.strict = spec, entries, device_id, strict
        self._kernels: dict[str, Kernel] = {}
        self._choice: dict[tuple, Kernel] = {}
        self._warned = False

    def kernel_for(self, M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
                   ldb: int | None = None, ldc: int | None = None) -> Kernel:
        """The kernel the dispatch rule picks for this problem (cached per argument tuple)."""
        key = (M, N, K, layout, lda, ldb, ldc)
        if key not in self._choice:
            self._choice[key] = self._pick(*key)
        return self._choice[key]

    def _pick(self, M, N, K, layout, lda, ldb, ldc) -> Kernel:
        from .lookup import dispatch

        entry = dispatch(self.entries, M, N, K, layout, lda, ldb, ldc)
        if entry is not None:
            return self._load(entry.kernel_config, entry.to_dict())
        if self.strict:
            raise NoTunedKernels(f"no tuned kernel for {M}x{N}x{K}/{layout} on {self.spec.name} "
                                 "(strict=True); run `gemmgen search` or pass strict=False")
        if not self._warned:
            warnings.warn(f"gemmgen: no tuned kernel fits {M}x{N}x{K}/{layout} on {self.spec.name}; "
                          "using the built-in preset v13 (run `gemmgen search` to tune)", stacklevel=4)
            self._warned = True
        return self._load(preset("v13", self.spec.arch).replace(layout=layout), None)

    def _load(self, config: KernelConfig, measured: Optional[dict]) -> Kernel:
        from .compile import compile_source

        if config.name not in self._kernels:
            binary = compile_source(render(config, self.spec), self.spec.arch)
            self._kernels[config.name] = Kernel(config, LoadedKernel(config, binary), measured)
        return self._kernels[config.name]
