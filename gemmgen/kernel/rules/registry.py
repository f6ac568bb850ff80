"""The one rule registry: every family's rules in the order they are checked, and the entry points.

A config is checked against a target (a :class:`~gemmgen.base.devices.DeviceSpec`, a GPU name such
as ``"h100"`` or an architecture such as ``"sm_86"``) before anything is rendered or compiled.
:func:`explain` returns every violation; :func:`validate` raises :class:`InvalidConfig` with them.
There is no default target: a kernel valid on an H100 may not fit an RTX 3090.

>>> from gemmgen.kernel.config import KernelConfig
>>> [v.rule for v in explain(KernelConfig(BM=96, WM=64), "h100")]
['WARP_TILE', 'VECTORIZE']
"""
from __future__ import annotations

from typing import Union

from ...base.devices import DeviceSpec, for_arch
from ..config import KernelConfig
from . import common, skinny, tensor_core, tiled, tma, wgmma, wmma
from .rule import Rule, Violation

DeviceLike = Union[DeviceSpec, str]
# Checked in this order: every family's basics, the tiled families' shared rules, then each family's own.
RULES: tuple[Rule, ...] = (*common.RULES, *tiled.RULES, *tensor_core.RULES, *wmma.RULES, *wgmma.RULES, *skinny.RULES)
# A warp-specialized kernel (mainloop ws_cpasync, ws_tma) is checked by the rules every family obeys and its own: the cp.async
# kernels' tile, copy and register rules describe kernels it is not.
TMA_RULES: tuple[Rule, ...] = (*common.RULES, *tma.RULES)


class InvalidConfig(ValueError):
    """A config breaks one or more rules; ``violations`` lists them all."""

    def __init__(self, config: KernelConfig, violations: list[Violation]):
        self.config = config
        self.violations = violations
        lines = "\n  ".join(str(v) for v in violations)
        super().__init__(f"invalid kernel config {config.label or config.name}:\n  {lines}")


def as_device(target: DeviceLike) -> DeviceSpec:
    """A DeviceSpec from a spec, a GPU name or an architecture (sm_75 ... sm_121, devices.ARCHS).

    >>> as_device("sm_86").key
    'rtx3090'
    """
    if target is None:
        raise TypeError("a target is required: a DeviceSpec, a GPU name (h100) or an architecture (sm_90)")
    return target if isinstance(target, DeviceSpec) else for_arch(target)


def explain(config: KernelConfig, target: DeviceLike) -> list[Violation]:
    """Every rule the config breaks on ``target`` (a DeviceSpec, GPU name or sm_XX); [] if valid.

    >>> explain("v8", "sm_90")
    Traceback (most recent call last):
    TypeError: expected a KernelConfig, got str 'v8': make one with gemmgen.preset('v8'), KernelConfig(...) or KernelConfig.from_dict(...)
    """
    if not isinstance(config, KernelConfig):
        hint = f"gemmgen.preset({config!r})" if isinstance(config, str) else "gemmgen.preset('v8')"
        raise TypeError(f"expected a KernelConfig, got {type(config).__name__} {config!r:.40}: make one with {hint}, "
                        "KernelConfig(...) or KernelConfig.from_dict(...)")
    dev = as_device(target)
    out: list[Violation] = []
    for rule in TMA_RULES if config.warp_specialized else RULES:
        reason = rule.check(config, dev) if rule.applies(config) else None
        if reason:
            out.append(Violation(rule.name, reason))
            if rule.name in common.STRUCTURAL:  # later rules divide by these values
                return out
    return out


def validate(config: KernelConfig, target: DeviceLike) -> KernelConfig:
    """Return the config unchanged, or raise InvalidConfig listing every violated rule on ``target``."""
    violations = explain(config, target)
    if violations:
        raise InvalidConfig(config, violations)
    return config


def rule_names() -> list[str]:
    """Names of all rules, in the order they are checked."""
    return [rule.name for rule in RULES] + [rule.name for rule in tma.RULES]
