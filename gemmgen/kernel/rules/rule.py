"""What a rule is: a named check of a config on a device that returns None or the reason, in words.

Each family's module fills a :class:`RuleSet` with its checks; :mod:`.registry` lists the sets
once, in the order :func:`~gemmgen.kernel.rules.registry.explain` runs them. Nothing registers
itself by being imported.

>>> rules = RuleSet()
>>> @rules.add("EVEN_BM", "simt")
... def _even(c, d):
...     return None if c.BM % 2 == 0 else f"BM = {c.BM} is odd"
>>> [(r.name, r.families) for r in rules]
[('EVEN_BM', ('simt',))]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from ...base.devices import DeviceSpec
from ..config import FAMILIES, KernelConfig

Check = Callable[[KernelConfig, DeviceSpec], Optional[str]]
ANY_FAMILY = "*"   # a rule for every config, whatever its family names (even one that does not exist)


@dataclass(frozen=True)
class Violation:
    """A broken rule: its name and the reason with the numbers involved."""

    rule: str
    reason: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.reason}"


@dataclass(frozen=True)
class Rule:
    """A check and the families it applies to."""

    name: str
    check: Check
    families: tuple[str, ...]

    def applies(self, config: KernelConfig) -> bool:
        return ANY_FAMILY in self.families or config.family in self.families


class RuleSet:
    """An ordered list of rules, filled by the :meth:`add` decorator in one family's module."""

    def __init__(self) -> None:
        self._rules: list[Rule] = []

    def add(self, name: str, *families: str) -> Callable[[Check], Check]:
        """Add a check for the given families (all families when none are named)."""
        def deco(check: Check) -> Check:
            self._rules.append(Rule(name, check, families or FAMILIES))
            return check
        return deco

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules)


def choice(value, valid) -> str | None:
    """None when ``value`` is one of ``valid``, else the sentence that lists the valid ones.

    >>> choice("ZZ", ("NN", "NT"))
    "'ZZ' is not one of NN, NT"
    """
    return None if value in valid else f"{value!r} is not one of {', '.join(map(str, valid))}"
