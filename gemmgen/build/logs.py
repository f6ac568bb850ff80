"""Reading compiler output: the first error of a log, and the source with line numbers to read it against."""
from __future__ import annotations


def first_error(log: str) -> str:
    """The first line of a compiler log that says 'error', else its first line.

    >>> first_error('k.cu(3): warning: x\\nk.cu(7): error: identifier "BM" is undefined')
    'k.cu(7): error: identifier "BM" is undefined'
    """
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no output")


def numbered(code: str) -> str:
    """The source with line numbers, so a log's 'kernel.cu(123)' can be found (like CuPy's dump).

    >>> numbered("a\\nb")
    '   1  a\\n   2  b'
    """
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(code.splitlines(), 1))
