"""``--knob NAME=A,B`` for the A/B scripts (ab_plans.py times the two sides on a GPU, plans_diff.py lists
the plans they disagree on without one): a field of gemmgen.runtime.policy.Policy, A on side A and B on
side B. Each side's library is built with its own Policy (``dataclasses.replace`` of the defaults, or of
the results file's policy); no module constant is changed."""
from __future__ import annotations

import argparse

from gemmgen.runtime.policy import FIELDS, Policy, field_value


def parse_knobs(ap: argparse.ArgumentParser, texts: list[str], example: str) -> dict[str, tuple[float, float]]:
    """'NAME=A,B' texts -> {NAME: (A, B)}; a NAME that is no Policy field, a value that does not fit the
    field's type (a fraction for a whole-number field), or anything else is ``ap.error`` naming the text."""
    knobs = {}
    for knob in texts:
        name, _, values = knob.partition("=")
        if name in knobs:
            ap.error(f"--knob {name}: given more than once; give each field once")
        try:
            knobs[name] = tuple(float(v) for v in values.split(","))
        except ValueError:
            knobs[name] = ()
        if len(knobs[name]) != 2:
            ap.error(f"--knob {knob!r}: give NAME=A,B with two numbers, e.g. {example}")
        if name not in FIELDS:
            ap.error(f"--knob {name!r} is not a field of gemmgen.runtime.policy.Policy "
                     f"(fields: {', '.join(FIELDS)})")
        for v in knobs[name]:
            try:
                field_value(name, v, "--knob")
            except ValueError as err:
                ap.error(str(err))
    return knobs


def side_policy(knobs: dict[str, tuple[float, float]], side: int, base: Policy | None = None) -> Policy:
    """``base`` (the defaults) with every knob's field at its value on ``side`` (0: A, 1: B).

    >>> side_policy({"margin": (0.05, 0.1), "min_stage_k": (16, 32)}, 1).min_stage_k
    32
    """
    return Policy.overridden({name: values[side] for name, values in knobs.items()}, "--knob", base)
