"""Validation of a KernelConfig before anything is rendered: named rules with reasons and numbers.

- ``registry``: the one list of rules, :func:`explain`, :func:`validate`, :class:`InvalidConfig`;
- ``rule``: what a rule is (:class:`Violation`, :class:`Rule`, :class:`RuleSet`);
- ``common``, ``tiled``, ``tensor_core``, ``wmma``, ``wgmma``: each family's rules;
- ``registers``: one register-estimate model per family, and the check they share;
- ``instructions``: tile shapes of mma.sync, wmma and wgmma.
"""
from .registers import register_estimate
from .registry import DeviceLike, InvalidConfig, as_device, explain, rule_names, validate
from .rule import Violation

__all__ = ["DeviceLike", "InvalidConfig", "Violation", "as_device", "explain", "register_estimate", "rule_names",
           "validate"]
