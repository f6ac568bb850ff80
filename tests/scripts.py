"""The benchmark scripts (benchmarks/*.py, not a package) as modules, for the tests that run them."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    """benchmarks/<name>.py, executed as a fresh module."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def refused(main, argv: list[str], capsys) -> str:
    """A script's ``main(argv)`` that must refuse: exit status 2, no traceback; its standard error."""
    with pytest.raises(SystemExit) as err:
        main(argv)
    out = capsys.readouterr().err
    assert err.value.code == 2 and "Traceback" not in out, out
    return out
