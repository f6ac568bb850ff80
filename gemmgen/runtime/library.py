"""The tuned kernels of one GPU and the rule that picks one for a shape and a precision.

Stored entries are grouped by their config's precision class (``KernelConfig.precision``: fp32 for
simt and 3xTF32, tf32, f16 or bf16 for the half family), and a request is served only by its own
class: a tf32 winner never serves an fp32 call. Within a class, the dispatch rule (lookup.dispatch):
the exact tuned shape if present; else the tuned config of the nearest tuned shape (log-distance
over M, N, K) among those that accept the shape; else the built-in preset of the class
(:data:`FALLBACK`), with one warning, or an error with strict=True.

>>> resolve_precision(None, "f16"), resolve_precision("tf32", "f32")
('f16', 'tf32')
>>> fallback_config("fp32", "sm_86").label, fallback_config("fp32", "sm_90", "TN").label
('v13', 'tf32x3')
>>> fallback_config("fp32", "sm_90").label, fallback_config("tf32", "sm_90").label
('tf32x3-wgmma', 'tf32-wgmma')
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Mapping, Optional

from .config import KernelConfig
from .launch import LoadedKernel, Operands
from .presets import preset
from .render import render

PRECISIONS = ("fp32", "tf32", "f16", "bf16")   # the classes matmul's precision= takes
DTYPE_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# The built-in preset per precision class, used where no stored result fits. fp32: v13 (SIMT, tuned
# per architecture), except where 3xTF32 measured faster: on the H100 52.5 vs 46.7 TFLOP/s at 4096^3
# and 53.0 vs 46.7 at 8192^3 (docs/PERFORMANCE.md). f16/bf16: the 128x256 cp.async wmma kernels.
FALLBACK = {"fp32": "v13", "tf32": "tf32", "f16": "wmma-fast", "bf16": "wmma-bf16"}
FALLBACK_BY_ARCH = {("sm_90", "fp32"): "tf32x3"}
# Hopper's wgmma variant reads A and B in the NN layout only (rules_wgmma.WGMMA_LAYOUT); there it beats
# the mma.sync kernels (H100, 8192^3: 3xTF32 87 vs 53 TFLOP/s, TF32 161 vs 111; docs/PERFORMANCE.md).
FALLBACK_NN = {("sm_90", "fp32"): "tf32x3-wgmma", ("sm_90", "tf32"): "tf32-wgmma"}


class NoTunedKernels(LookupError):
    """strict=True and no tuned result fits the request."""


def resolve_precision(precision: Optional[str], dtype: str) -> str:
    """The precision class a call asks for: ``precision`` checked against the inputs' dtype
    ("f32", "f16", "bf16"); None means the inputs' own class (fp32 for float32 inputs).

    >>> resolve_precision("tf32", "f16")
    Traceback (most recent call last):
    ...
    ValueError: precision='tf32' needs float32 inputs, but A and B are float16 (valid for them: f16 or None)
    """
    valid = ("fp32", "tf32") if dtype == "f32" else (dtype,)
    if precision is None:
        return valid[0]
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r} is not one of {', '.join(PRECISIONS)} or None "
                         "(None: fp32 for float32 inputs, the inputs' own type for float16/bfloat16)")
    if precision not in valid:
        need = DTYPE_NAMES["f32" if precision in ("fp32", "tf32") else precision]
        raise ValueError(f"precision={precision!r} needs {need} inputs, but A and B are {DTYPE_NAMES[dtype]} "
                         f"(valid for them: {', '.join(valid)} or None)")
    return precision


def fallback_config(precision: str, arch: str, layout: str = "NN") -> KernelConfig:
    """The built-in config that serves a precision class where nothing stored fits (see FALLBACK)."""
    name = FALLBACK_BY_ARCH.get((arch, precision), FALLBACK[precision])
    if layout == "NN":
        name = FALLBACK_NN.get((arch, precision), name)
    cfg = preset(name, arch)
    if precision in ("f16", "bf16") and cfg.dtype != precision:
        cfg = cfg.replace(dtype=precision)   # a half preset serves both input types
    return cfg.replace(layout=layout)


def by_precision(entries: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """Stored entries grouped by their config's precision class (their keys are kept as they are)."""
    groups: dict[str, dict[str, object]] = {}
    for key, e in entries.items():
        groups.setdefault(e.kernel_config.precision, {})[key] = e
    return groups


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
    """Tuned results for one GPU plus compiled-kernel caches (memory here, disk in compile.py).

    ``entries`` holds the fp32 class (what matmul serves by default); ``classes`` every class.
    """

    def __init__(self, spec, entries: dict, device_id: int = 0, strict: bool = False):
        self.classes = by_precision(entries)
        self.entries = self.classes.get("fp32", {})
        self.spec, self.device_id, self.strict = spec, device_id, strict
        self._kernels: dict[str, Kernel] = {}
        self._choice: dict[tuple, Kernel] = {}
        self._warned: set[str] = set()

    def kernel_for(self, M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
                   ldb: int | None = None, ldc: int | None = None, precision: str = "fp32") -> Kernel:
        """The kernel the dispatch rule picks for this problem and precision class (cached per
        argument tuple); ``precision`` is one of PRECISIONS (f16/bf16 kernels read half inputs)."""
        key = (M, N, K, layout, lda, ldb, ldc, precision)
        kernel = self._choice.get(key)
        if kernel is None:
            if precision not in PRECISIONS:
                raise ValueError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
            kernel = self._choice[key] = self._pick(*key)
        return kernel

    def _pick(self, M, N, K, layout, lda, ldb, ldc, precision) -> Kernel:
        from .lookup import dispatch

        entry = dispatch(self.classes.get(precision, {}), M, N, K, layout, lda, ldb, ldc)
        if entry is not None:
            return self._load(entry.kernel_config, entry.to_dict())
        what = f"{precision} kernel for {M}x{N}x{K}/{layout} on {self.spec.name}"
        if self.strict:
            raise NoTunedKernels(f"no tuned {what} (strict=True); run `gemmgen search` or pass strict=False")
        config = fallback_config(precision, self.spec.arch, layout)
        if precision not in self._warned:
            warnings.warn(f"gemmgen: no tuned {what}; using the built-in preset {config.label} "
                          "(run `gemmgen search` to tune)", stacklevel=4)
            self._warned.add(precision)
        return self._load(config, None)

    def _load(self, config: KernelConfig, measured: Optional[dict]) -> Kernel:
        from .compile import compile_source

        if config.name not in self._kernels:
            binary = compile_source(render(config, self.spec), self.spec.arch)
            self._kernels[config.name] = Kernel(config, LoadedKernel(config, binary), measured)
        return self._kernels[config.name]
