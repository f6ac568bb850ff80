"""Stage 1, the kernel as data: a KernelConfig, the presets, and the rules a config must obey.

- ``config``: :class:`KernelConfig`, every template parameter and the geometry derived from them
  (threads, shared memory, layouts, split-K reduction); ``naming`` spells its procedural name and
  ``coerce`` reads its values from JSON or the command line.
- ``presets``: the progression v0..v13 and the tensor-core presets (v13 here is the built-in best
  per architecture; ``gemmgen.records.best`` puts a stored search winner in its place).
- ``rules/``: one registry of named rules, :func:`explain` and :func:`validate` against a target.
"""
from .coerce import ConfigError
from .config import KernelConfig
from .presets import UnknownPreset, all_presets, describe, names, preset, runs_on
from .rules import InvalidConfig, Violation, explain, register_estimate, rule_names, validate

__all__ = ["ConfigError", "InvalidConfig", "KernelConfig", "UnknownPreset", "Violation", "all_presets", "describe",
           "explain", "names", "preset", "register_estimate", "rule_names", "runs_on", "validate"]
