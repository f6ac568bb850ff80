"""benchmarks/knobs.py and ab_plans.py's arguments without a GPU: a knob names a constant of the dispatch
modules or of the hand-written routes (qualified by its module where two hold one), its values are set per
side in the constant's own type and put back, and bad input is one line before any GPU work."""
from __future__ import annotations

import argparse
import sys

import pytest

from tests.scripts import BENCHMARKS, load, refused


def _knobs():
    sys.path.insert(0, str(BENCHMARKS))
    return load("knobs")


def test_a_qualified_name_sets_its_module_only_and_a_bare_one_every_holder():
    from gemmgen.runtime import gemv, small

    knobs, ap = _knobs(), argparse.ArgumentParser()
    wanted = {"small.WAVES": (1.0, 3.0), "OUTER_K": (8.0, 0.0)}
    owners = knobs.knob_owners(ap, wanted, knobs.MODULES + knobs.ROUTES)
    assert owners["small.WAVES"] == [small] and owners["OUTER_K"] == [small]
    assert knobs.knob_owners(ap, {"WAVES": (1.0, 2.0)}, knobs.ROUTES)["WAVES"] == [gemv, small]
    before = (gemv.WAVES, small.WAVES, small.OUTER_K)
    with knobs.restored(owners):
        knobs.set_side(wanted, owners, 1)
        assert (gemv.WAVES, small.WAVES, small.OUTER_K) == (before[0], 3, 0) and type(small.WAVES) is int
        assert small.serves(2048, 2048, 4, "fp32", None) is None   # outer taken out on side B (below OUTER_BIG)
    assert (gemv.WAVES, small.WAVES, small.OUTER_K) == before


@pytest.mark.parametrize("argv,named", [
    (["--knob", "NOPE=1,2", "--shape", "8x8x8"], "'NOPE' is not a constant of gemmgen.runtime's dispatch, staging, predict, gemv, small"),
    (["--knob", "small.NOPE=1,2", "--shape", "8x8x8"], "'small.NOPE' is not a constant"),
    (["--knob", "small.WAVES=1,2.5", "--shape", "8x8x8"], "2.5 is not a whole number"),
    (["--knob", "OUTER_K=8,0", "--shapes", "nope.toml"], "shapes file 'nope.toml' does not exist"),
    (["--knob", "OUTER_K=8,0", "--shapes", "README.md"], "is not a list of [[shape]]"),
    (["--shape", "8x8x8"], "nothing to compare")])
def test_ab_plans_names_bad_input_before_any_gpu_work(argv, named, capsys, monkeypatch):
    monkeypatch.chdir(BENCHMARKS.parent)
    assert named in refused(load("ab_plans").main, argv, capsys)


def test_plans_diff_keeps_to_the_dispatch_modules(capsys):
    """plans_diff.py compares GEMM plans (staged_fit): the routes' constants change none, so it refuses them."""
    knobs = _knobs()
    with pytest.raises(SystemExit):
        knobs.knob_owners(argparse.ArgumentParser(), {"OUTER_K": (8.0, 0.0)})
    assert "'OUTER_K' is not a constant of gemmgen.runtime's dispatch, staging, predict" in capsys.readouterr().err
