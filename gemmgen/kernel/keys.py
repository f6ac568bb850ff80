"""The config's keys as a user sees them: each parameter's type, default, valid values and meaning.

The meaning is read from the comment beside each field of :class:`~.config.KernelConfig`, so what
``gemmgen emit --list-keys`` prints cannot drift from the class.

>>> [row[:3] for row in key_docs()][:2]
[('family', 'str', 'simt'), ('layout', 'str', 'NN')]
>>> dict((k, d) for k, _, _, d in key_docs())["BK"]
'depth of one K step staged in shared memory'
"""
from __future__ import annotations

import inspect
import io
import tokenize
from dataclasses import fields
from typing import Any

from .config import BOUNDS, DTYPES, FAMILIES, FRAGMENT_LOADS, LAYOUTS, MAINLOOPS, REDUCTIONS, SCHEDULERS, KernelConfig

# The categorical parameters' valid values (the rules check them).
CHOICES = {"family": FAMILIES, "layout": LAYOUTS, "dtype": DTYPES, "mainloop": MAINLOOPS, "scheduler": SCHEDULERS,
           "bounds": BOUNDS,
           "reduce": REDUCTIONS, "frag": FRAGMENT_LOADS}


def key_docs() -> list[tuple[str, str, Any, str]]:
    """(key, type name, default, meaning) of every config parameter, in the class's order."""
    names = {f.name for f in fields(KernelConfig)}
    docs: dict[str, list[str]] = {}
    current = None
    try:
        source = inspect.getsource(KernelConfig)
    except (OSError, TypeError):   # installed without sources: the keys, types and defaults still
        source = ""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.start[1] == 4:      # a field's line: `    BM: int = 128  # ...`,
            current = tok.string if tok.string in names else None   # or a method's: its comments are not docs
        elif tok.type == tokenize.COMMENT and current and not tok.string.startswith("# ----"):
            docs.setdefault(current, []).append(tok.string.lstrip("# ").strip())
    return [(f.name, type(f.default).__name__, f.default, " ".join(docs.get(f.name, [])))
            for f in fields(KernelConfig)]
