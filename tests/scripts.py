"""The benchmark suites (the package benchmarks/, run as ``python -m benchmarks.NAME``) for the tests that
run them."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    """The module benchmarks.<name>, imported afresh (a test's changes to it do not reach the next test)."""
    return importlib.reload(importlib.import_module(f"benchmarks.{name}"))


def refused(main, argv: list[str], capsys) -> str:
    """A script's ``main(argv)`` that must refuse: exit status 2, no traceback; its standard error."""
    with pytest.raises(SystemExit) as err:
        main(argv)
    out = capsys.readouterr().err
    assert err.value.code == 2 and "Traceback" not in out, out
    return out
