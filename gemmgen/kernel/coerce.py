"""Reading config values from JSON or the command line: each converted to its parameter's type, or refused by name.

>>> coerce("BM", "64", int), coerce("async_copy", "yes", bool), coerce("layout", "nt", str)
(64, True, 'NT')
>>> coerce("BM", "big", int)
Traceback (most recent call last):
gemmgen.kernel.coerce.ConfigError: BM = 'big' is not an integer
"""
from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import Any

TYPE_WORDS = {int: "an integer", bool: "a boolean (true or false)", str: "a string"}


class ConfigError(ValueError):
    """A config dictionary names an unknown key or holds a value of the wrong type."""


def coerce(key: str, value: Any, kind: type) -> Any:
    """Convert a JSON or command-line value to the parameter's type, or say why it cannot be."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key} = {value!r} is not a boolean; use true or false")
    if kind is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key} = {value!r} is not an integer")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} = {value!r} is not an integer") from None
    if not isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} is not a string")
    return value.upper() if key == "layout" else value


@functools.lru_cache(maxsize=None)
def field_types(cls: type) -> dict[str, type]:
    """Each field of a dataclass with the type of its default (int, bool or str for KernelConfig)."""
    return {f.name: type(f.default) for f in dataclasses.fields(cls)}


def coerced(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """A dataclass's keyword arguments from a dictionary of JSON or command-line values, converted to
    their fields' types; one ConfigError names every unknown key, or every bad value, at once."""
    types = field_types(cls)
    unknown = sorted(set(data) - set(types))
    if unknown:
        raise ConfigError(f"unknown config key(s) {', '.join(unknown)}; valid keys: {', '.join(types)}")
    values, errors = {}, []
    for k, v in data.items():
        try:
            values[k] = coerce(k, v, types[k])
        except ConfigError as err:
            errors.append(str(err))
    if errors:
        raise ConfigError("; ".join(errors))
    return values


def typed(config: Any) -> dict[str, Any]:
    """Check a constructed config's fields against their types (an int for counts, a bool for switches,
    a string for names): the NumPy integers and bools a sampler may give, as Python's, or one
    ConfigError naming each bad field; a wrong type would otherwise fail far from where it was made.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Config:
    ...     BM: int = 128
    ...     prefetch: bool = False
    >>> typed(Config(BM="abc", prefetch=2))
    Traceback (most recent call last):
    gemmgen.kernel.coerce.ConfigError: KernelConfig: BM = 'abc' (str) is not an integer; prefetch = 2 (int) is not a boolean (true or false) (KernelConfig.from_dict converts text values)
    """
    changed, bad = {}, []
    for name, kind in field_types(type(config)).items():
        value = getattr(config, name)
        if type(value) is kind or kind is bool and isinstance(value, bool) or kind is str and isinstance(value, str):
            continue
        if kind is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            changed[name] = int(value)
        elif kind is bool and getattr(getattr(value, "dtype", None), "kind", "") == "b":
            changed[name] = bool(value)
        else:
            bad.append(f"{name} = {value!r} ({type(value).__name__}) is not {TYPE_WORDS[kind]}")
    if bad:
        raise ConfigError(f"KernelConfig: {'; '.join(bad)} (KernelConfig.from_dict converts text values)")
    return changed
