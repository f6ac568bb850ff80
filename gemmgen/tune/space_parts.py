"""The pieces of a search space: checked expressions, cases of a parameter, parameters.

``gemmgen.tune.space`` loads them from a space file and draws configs with them.

>>> Expr.parse("stages == 2", "demo")({"stages": 2})
True
>>> Case("pow2", [32, 256]).internal(128)   # searched as log2: 2**7
7
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, fields
from typing import Any, Mapping, Protocol

from ..kernel.config import KernelConfig

KINDS = ("choices", "range", "pow2", "value", "derive")
SAMPLED = ("choices", "range", "pow2")
FIELDS = {f.name for f in fields(KernelConfig)}
# Only arithmetic, comparisons and boolean logic: a space file cannot call or import anything.
_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp,
            ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt,
            ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Name, ast.Load, ast.Constant, ast.Tuple,
            ast.List)


class SpaceError(ValueError):
    """A space or shapes file that cannot be used; the message names the file and the entry."""


class Trial(Protocol):
    """What drawing needs from a trial: an Optuna trial, FixedTrial, or a seeded random stand-in."""

    def suggest_categorical(self, name: str, choices: Any) -> Any: ...
    def suggest_int(self, name: str, low: int, high: int) -> int: ...


@dataclass(frozen=True)
class Expr:
    """A checked expression such as ``stages == 2`` or ``BM // warps_m``."""

    text: str
    names: frozenset

    @classmethod
    def parse(cls, text: str, where: str) -> "Expr":
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as e:
            raise SpaceError(f"{where}: cannot parse {text!r}: {e.msg}") from None
        bad = sorted({type(n).__name__ for n in ast.walk(tree) if not isinstance(n, _ALLOWED)})
        if bad:
            raise SpaceError(f"{where}: {text!r} uses {', '.join(bad)}; only arithmetic, comparisons, and/or/not")
        return cls(text, frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))

    def __call__(self, values: Mapping[str, Any]) -> Any:
        """The value, or None where it divides by zero (a condition then fails, a derived value is 0)."""
        env = {"true": True, "false": False, **values}
        try:
            return eval(compile(self.text, "<space>", "eval"), {"__builtins__": {}}, env)
        except ZeroDivisionError:
            return None


@dataclass(frozen=True)
class Case:
    """One way to set a parameter: its condition and its kind with the kind's argument."""

    kind: str
    arg: Any
    when: Expr | None = None

    def applies(self, values: Mapping[str, Any]) -> bool:
        return self.when is None or bool(self.when(values))

    def trial_name(self, name: str) -> str:
        # pow2 is searched as its exponent so TPE and CMA-ES see that 64 lies between 32 and 128
        return f"log2_{name}" if self.kind == "pow2" else name

    def draw(self, trial: Trial, name: str, values: Mapping[str, Any]) -> Any:
        if self.kind == "value":
            return self.arg
        if self.kind == "derive":
            value = self.arg(values)
            return 0 if value is None else value   # 0 breaks the POSITIVE rule: rejected, not crashed
        if self.kind == "choices":
            return trial.suggest_categorical(name, list(self.arg))
        lo, hi = self.bounds()
        picked = trial.suggest_int(self.trial_name(name), lo, hi)
        return 2 ** picked if self.kind == "pow2" else picked

    def bounds(self) -> tuple[int, int]:
        """Integer bounds as the trial sees them (exponents for pow2)."""
        lo, hi = self.arg
        return (int(math.log2(lo)), int(math.log2(hi))) if self.kind == "pow2" else (lo, hi)

    def internal(self, value: Any) -> Any:
        """The trial's value for a parameter value, or None when the value lies outside this case."""
        if self.kind == "choices":   # type too: True == 1, but a_kmajor=True is no pad of 1
            return value if any(c == value and type(c) is type(value) for c in self.arg) else None
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        lo, hi = self.bounds()
        if self.kind == "range":
            return value if lo <= value <= hi else None
        x = value.bit_length() - 1   # the exponent, when value is a power of two
        return x if value > 0 and value == 1 << x and lo <= x <= hi else None

    def grid_values(self) -> list:
        if self.kind == "choices":
            return list(self.arg)
        lo, hi = self.bounds()
        return list(range(lo, hi + 1))


@dataclass(frozen=True)
class Param:
    """A named parameter: its cases in order, and how to read it back from a config."""

    name: str
    cases: tuple[Case, ...]
    from_config: Expr | None = None

    def case_for(self, values: Mapping[str, Any]) -> Case | None:
        return next((c for c in self.cases if c.applies(values)), None)

    def value_in(self, config: KernelConfig) -> Any:
        """This parameter's value for a config (helpers are recovered through ``from_config``)."""
        if self.name in FIELDS:
            return getattr(config, self.name)
        return self.from_config(config.to_dict()) if self.from_config else None
