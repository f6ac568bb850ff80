"""What uniform random draws from a search space give on a device: the share the rules reject before
anything is compiled, and which rules (CPU only, no study).

>>> from gemmgen.base.devices import known
>>> from gemmgen.tune.space import load_space
>>> invalid_draws(load_space("simt", "sm_90"), known("h100"), n=100).drawn
100
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from ..base.devices import DeviceSpec
from ..kernel.rules import explain
from .space import Space, _RandomTrial


@dataclass(frozen=True)
class Draws:
    """What random draws from a space gave on a device: how many broke a rule, and which rules."""

    drawn: int
    invalid: int
    rules: tuple[tuple[str, int], ...] = ()   # (rule, draws it rejected), most frequent first

    @property
    def share(self) -> float:
        """The invalid share of the draws (0..1)."""
        return self.invalid / self.drawn if self.drawn else 0.0


def invalid_draws(space: Space, device: DeviceSpec, n: int = 1000, seed: int = 0, layout: str = "NN") -> Draws:
    """Draw ``n`` configs uniformly (CPU only) and count those the rules reject on ``device``: the share of
    a search's draws that would be told invalid instead of measured.

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.tune.space import load_space
    >>> draws = invalid_draws(load_space("simt", "sm_86"), known("rtx3090"), n=200)
    >>> draws.drawn, draws.share < 0.5
    (200, True)
    """
    rng, invalid, rules = random.Random(seed), 0, Counter()
    for _ in range(n):
        violations = explain(space.sample(_RandomTrial(rng), layout), device)
        invalid += bool(violations)
        rules.update({v.rule for v in violations})
    return Draws(n, invalid, tuple(rules.most_common()))
