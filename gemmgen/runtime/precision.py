"""Precision classes: what ``matmul(precision=...)`` asks for, and the preset that serves a class when
no stored winner fits.

Stored entries are grouped by their config's precision class (``KernelConfig.precision``: fp32 for
simt and 3xTF32, tf32, f16 or bf16 for the half family), and a request is served only by its own
class: a tf32 winner never serves an fp32 call.

>>> resolve_precision(None, "f16"), resolve_precision("tf32", "f32")
('f16', 'tf32')
>>> fallback_config("fp32", "sm_86").label, fallback_config("fp32", "sm_90", "TN").label
('v13', 'tf32x3')
>>> fallback_config("fp32", "sm_90").label, fallback_config("tf32", "sm_90").label
('tf32x3-wgmma', 'tf32-wgmma')
"""
from __future__ import annotations

from typing import Mapping, Optional

from ..kernel.config import KernelConfig
from ..kernel.rules import DeviceLike, as_device
from ..records.best import resolve_preset
from ..records.entry import Entry

PRECISIONS = ("fp32", "tf32", "f16", "bf16")   # the classes matmul's precision= takes
DTYPE_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# The built-in preset per precision class, used where no stored result fits. fp32: v13 (SIMT, tuned
# per architecture), except where 3xTF32 measured faster: on the H100 52.5 vs 46.7 TFLOP/s at 4096^3
# and 53.0 vs 46.7 at 8192^3 (docs/PERFORMANCE.md). f16/bf16: the 128x256 cp.async wmma kernels.
FALLBACK = {"fp32": "v13", "tf32": "tf32", "f16": "wmma-fast", "bf16": "wmma-bf16"}
FALLBACK_BY_ARCH = {("sm_90", "fp32"): "tf32x3"}
# Hopper's wgmma variant (every layout since the transposed-A stage; the fallback still serves NN): it beats
# the mma.sync kernels (H100, 8192^3: 3xTF32 87 vs 53 TFLOP/s, TF32 161 vs 111; docs/PERFORMANCE.md).
FALLBACK_NN = {("sm_90", "fp32"): "tf32x3-wgmma", ("sm_90", "tf32"): "tf32-wgmma"}


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


def fallback_name(precision: str, arch: str, layout: str = "NN") -> str:
    """The preset that serves a precision class on an architecture where nothing stored fits (see FALLBACK).

    >>> fallback_name("fp32", "sm_90", "NN"), fallback_name("f16", "sm_80", "TT")
    ('tf32x3-wgmma', 'wmma-fast')
    """
    name = FALLBACK_BY_ARCH.get((arch, precision), FALLBACK[precision])
    return FALLBACK_NN.get((arch, precision), name) if layout == "NN" else name


def fallback_config(precision: str, target: DeviceLike, layout: str = "NN",
                    entries: Mapping[str, Entry] | None = None) -> KernelConfig:
    """The config of :func:`fallback_name`, resolved as every entry point resolves a preset
    (:func:`gemmgen.records.best.resolve_preset`: v13 is ``entries``' stored winner, if any, else
    built in), in ``layout`` and, for the half family, the requested input type."""
    device = as_device(target)
    cfg = resolve_preset(fallback_name(precision, device.arch, layout), device, entries if entries is not None else {})
    if precision in ("f16", "bf16") and cfg.dtype != precision:
        cfg = cfg.replace(dtype=precision)   # a half preset serves both input types
    return cfg.replace(layout=layout)


def by_precision(entries: Mapping[str, Entry]) -> dict[str, dict[str, Entry]]:
    """Stored entries grouped by their config's precision class (their keys are kept as they are)."""
    groups: dict[str, dict[str, Entry]] = {}
    for key, e in entries.items():
        groups.setdefault(e.kernel_config.precision, {})[key] = e
    return groups
