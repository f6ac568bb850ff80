"""``--knob NAME=A,B`` for the A/B scripts (ab_plans.py times the two sides on a GPU, plans_diff.py lists
the plans they disagree on without one): a module constant of gemmgen.runtime.dispatch, .staging or
.predict (and, for ab_plans.py, of the hand-written routes .gemv and .small), set to A on side A and to B
on side B. NAME may name its module, ``small.WAVES``: a bare name sets the constant in every module that
holds it."""
from __future__ import annotations

import argparse
import contextlib
import importlib
from collections.abc import Iterator
from types import ModuleType

MODULES = ("gemmgen.runtime.dispatch", "gemmgen.runtime.staging", "gemmgen.runtime.predict")
ROUTES = ("gemmgen.runtime.gemv", "gemmgen.runtime.small")   # which requests skip the GEMM kernels, and how


def _attr(name: str) -> str:
    """The constant's own name: 'small.WAVES' -> 'WAVES'."""
    return name.rpartition(".")[2]


def parse_knobs(ap: argparse.ArgumentParser, texts: list[str], example: str) -> dict[str, tuple[float, float]]:
    """'NAME=A,B' texts -> {NAME: (A, B)}; anything else is ``ap.error`` naming the text and ``example``."""
    knobs = {}
    for knob in texts:
        name, _, values = knob.partition("=")
        if name in knobs:
            ap.error(f"--knob {name}: given more than once; give each constant once")
        try:
            knobs[name] = tuple(float(v) for v in values.split(","))
        except ValueError:
            knobs[name] = ()
        if len(knobs[name]) != 2:
            ap.error(f"--knob {knob!r}: give NAME=A,B with two numbers, e.g. {example}")
    return knobs


def knob_owners(ap: argparse.ArgumentParser, knobs: dict[str, tuple[float, float]],
                modules: tuple[str, ...] = MODULES) -> dict[str, list[ModuleType]]:
    """The modules of ``modules`` that hold each constant (upper-case name; 'small.WAVES': that module's
    only); one that none holds, or a fraction given to an integer constant (set_side would cut it), is
    ``ap.error``."""
    loaded = [importlib.import_module(m) for m in modules]
    owners = {}
    for name in knobs:
        where, _, attr = name.rpartition(".")
        owners[name] = [m for m in loaded if hasattr(m, attr) and attr.isupper()
                        and where in ("", m.__name__.rpartition(".")[2])]
    for name, found in owners.items():
        if not found:
            listed = ", ".join(m.rpartition(".")[2] for m in modules)
            ap.error(f"--knob {name!r} is not a constant of gemmgen.runtime's {listed}")
        current = getattr(found[0], _attr(name))
        for v in knobs[name]:
            if isinstance(current, int) and not isinstance(current, bool) and v != int(v):
                ap.error(f"--knob {name}: {v:g} is not a whole number, and the constant is one ({current})")
    return owners


def set_side(knobs: dict[str, tuple[float, float]], owners: dict[str, list[ModuleType]], side: int) -> None:
    """Every knob's constant to its value on ``side`` (0: A, 1: B), in the constant's own type."""
    for name, values in knobs.items():
        for m in owners[name]:
            setattr(m, _attr(name), type(getattr(m, _attr(name)))(values[side]))


@contextlib.contextmanager
def restored(owners: dict[str, list[ModuleType]]) -> Iterator[None]:
    """Put every owned constant back to the value it has on entry when the block ends, also by an error
    (a script's ``main`` run in a test process leaves the dispatch as it found it)."""
    saved = {name: [getattr(m, _attr(name)) for m in found] for name, found in owners.items()}
    try:
        yield
    finally:
        for name, found in owners.items():
            for m, value in zip(found, saved[name]):
                setattr(m, _attr(name), value)
