"""Reading config values from JSON or the command line: each converted to its parameter's type, or refused by name.

>>> coerce("BM", "64", int), coerce("async_copy", "yes", bool), coerce("layout", "nt", str)
(64, True, 'NT')
>>> coerce("BM", "big", int)
Traceback (most recent call last):
gemmgen.kernel.coerce.ConfigError: BM = 'big' is not an integer
"""
from __future__ import annotations

from typing import Any


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
