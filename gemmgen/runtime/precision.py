"""Precision classes: what ``matmul(precision=...)`` asks for, and the preset that serves a class when
no stored winner fits.

Stored entries are grouped by their config's precision class (``KernelConfig.precision``: fp32 for
simt and 3xTF32, tf32, f16 or bf16 for the half family), and a request is served only by its own
class: a tf32 winner never serves an fp32 call.

>>> resolve_precision(None, "f16"), resolve_precision("tf32", "f32")
('f16', 'tf32')
>>> fallback_config("fp32", "sm_86").label, fallback_config("fp32", "sm_90", "TN").label
('v13', 'tf32x3-wgmma')
>>> fallback_config("fp32", "sm_90").label, fallback_config("tf32", "sm_90").label
('tf32x3-wgmma', 'tf32-wgmma')
"""
from __future__ import annotations

from typing import Mapping, Optional

from ..kernel.config import KernelConfig
from ..kernel.presets import preset, runs_on
from ..kernel.rules import DeviceLike, as_device, explain
from ..records.best import resolve_preset
from ..records.entry import Entry

PRECISIONS = ("fp32", "tf32", "f16", "bf16")   # the classes matmul's precision= takes
DTYPE_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# The built-in preset per precision class, used where no stored result fits. fp32: v13 (SIMT, tuned
# per architecture), except where 3xTF32 measured faster: on the H100 52.5 vs 46.7 TFLOP/s at 4096^3
# and 53.0 vs 46.7 at 8192^3 (docs/PERFORMANCE.md). f16/bf16: the 128x256 cp.async wmma kernels.
FALLBACK = {"fp32": "v13", "tf32": "tf32", "f16": "wmma-fast", "bf16": "wmma-bf16"}
FALLBACK_BY_ARCH = {("sm_90", "fp32"): "tf32x3"}
FALLBACK_PLAIN = {"f16": "wmma"}   # where the class's preset does not run (Turing: no cp.async for wmma-fast's stages)
# Hopper's wgmma variant beats the mma.sync kernels (H100, 8192^3: 3xTF32 87 vs 53 TFLOP/s, TF32 161 vs
# 111; docs/PERFORMANCE.md) in every layout where its preset fits (tf32-wgmma's 4 stages leave no room
# for the transposed A of layouts TN and TT, so those keep mma.sync).
FALLBACK_WGMMA = {("sm_90", "fp32"): "tf32x3-wgmma", ("sm_90", "tf32"): "tf32-wgmma"}
# The template families of each precision class, for matmul(family=...): the preset that serves a family
# is its class's where the families agree, else the family's own.
FAMILIES = {"simt": "fp32", "tf32x3": "fp32", "tf32": "tf32", "wmma": "f16/bf16"}
FAMILY_PRESET = {"simt": "v13", "tf32x3": "tf32x3", "tf32": "tf32", "wmma": "wmma-fast"}


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

    >>> fallback_name("fp32", "sm_90", "TT"), fallback_name("tf32", "sm_90", "TN"), fallback_name("f16", "sm_80")
    ('tf32x3-wgmma', 'tf32', 'wmma-fast')
    >>> fallback_name("fp32", "sm_100"), fallback_name("tf32", "sm_120"), fallback_name("f16", "sm_75")
    ('v13', 'tf32', 'wmma')
    """
    name = FALLBACK_BY_ARCH.get((arch, precision), FALLBACK[precision])
    if precision in FALLBACK_PLAIN and not runs_on(name, arch):
        name = FALLBACK_PLAIN[precision]
    wgmma = FALLBACK_WGMMA.get((arch, precision))
    if wgmma and not explain(preset(wgmma).replace(layout=layout), arch):
        return wgmma
    return name


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


def check_family(family: Optional[str], precision: str) -> None:
    """ValueError unless ``family`` is None or a template family of the precision class.

    >>> check_family("tf32", "fp32")
    Traceback (most recent call last):
    ...
    ValueError: family='tf32' computes the tf32 class, not fp32; families of fp32: simt, tf32x3 (or None)
    """
    if family is None:
        return
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {', '.join(FAMILIES)} or None (None: any family of the "
                         "precision class)")
    if precision not in FAMILIES[family].split("/"):
        valid = [f for f, c in FAMILIES.items() if precision in c.split("/")]
        raise ValueError(f"family={family!r} computes the {FAMILIES[family]} class, not {precision}; families of "
                         f"{precision}: {', '.join(valid)} (or None)")


def family_fallback(family: str, precision: str, target: DeviceLike, layout: str = "NN") -> KernelConfig:
    """The preset that serves ``family`` where nothing stored fits: the class's fallback where it is of
    that family, else the family's own preset (v13 for simt), in ``layout``.

    >>> family_fallback("simt", "fp32", "sm_90").label, family_fallback("tf32x3", "fp32", "sm_90").label
    ('v13', 'tf32x3-wgmma')
    """
    cfg = fallback_config(precision, target, layout)
    if cfg.family == family:
        return cfg
    device = as_device(target)
    return resolve_preset(FAMILY_PRESET[family], device, {}).replace(layout=layout)


def by_precision(entries: Mapping[str, Entry]) -> dict[str, dict[str, Entry]]:
    """Stored entries grouped by their config's precision class (their keys are kept as they are)."""
    groups: dict[str, dict[str, Entry]] = {}
    for key, e in entries.items():
        groups.setdefault(e.kernel_config.precision, {})[key] = e
    return groups
