"""benchmarks/knobs.py and ab_plans.py's arguments without a GPU: a knob names a field of the planner's
Policy, each side gets a Policy with its value (in the field's own type; no module changed), and bad input
is one line before any GPU work."""
from __future__ import annotations

import argparse
import sys

import pytest

from tests.scripts import BENCHMARKS, load, refused


def _knobs():
    sys.path.insert(0, str(BENCHMARKS))
    return load("knobs")


def test_a_knob_builds_a_policy_per_side_and_changes_no_module():
    from gemmgen.runtime import small
    from gemmgen.runtime.policy import DEFAULT

    knobs, ap = _knobs(), argparse.ArgumentParser()
    wanted = knobs.parse_knobs(ap, ["outer_k=8,0", "outer_big=8388608,1e15"], "outer_k=8,0")
    a, b = knobs.side_policy(wanted, 0), knobs.side_policy(wanted, 1)
    assert a == DEFAULT and (b.outer_k, b.outer_big) == (0, 10**15) and type(b.outer_k) is int
    assert small.serves(2048, 2048, 4, "fp32", None, policy=a) == "outer"
    assert small.serves(2048, 2048, 4, "fp32", None, policy=b) is None   # outer taken out on side B
    assert small.serves(2048, 2048, 4, "fp32", None) == "outer"           # the defaults as they were


@pytest.mark.parametrize("argv,named", [
    (["--knob", "NOPE=1,2", "--shape", "8x8x8"], "'NOPE' is not a field of gemmgen.runtime.policy.Policy"),
    (["--knob", "small.WAVES=1,2", "--shape", "8x8x8"], "'small.WAVES' is not a field"),
    (["--knob", "outer_k=1,2.5", "--shape", "8x8x8"], "outer_k=2.5 is not a whole number"),
    (["--knob", "latency_simt=0,2", "--shape", "8x8x8"], "give 0 or 1"),
    (["--knob", "outer_k=8,0", "--shapes", "nope.toml"], "shapes file 'nope.toml' does not exist"),
    (["--knob", "outer_k=8,0", "--shapes", "README.md"], "is not a list of [[shape]]"),
    (["--shape", "8x8x8"], "nothing to compare")])
def test_ab_plans_names_bad_input_before_any_gpu_work(argv, named, capsys, monkeypatch):
    monkeypatch.chdir(BENCHMARKS.parent)
    assert named in refused(load("ab_plans").main, argv, capsys)
