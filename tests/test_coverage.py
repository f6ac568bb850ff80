"""benchmarks/coverage.py without a GPU: jobs from the shipped H100 predictions, and the picks score."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import coverage  # noqa: E402


@pytest.fixture(scope="module")
def jobs():
    return coverage.plan_jobs("h100", [([7], (15, 27))], top=3)["jobs"]


def test_jobs_hold_the_top_predictions_of_the_shapes_layout_and_each_family(jobs):
    from gemmgen.kernel.config import KernelConfig

    assert len(jobs) == 24 and len({j["shape"] for j in jobs}) == 24
    for j in jobs:
        configs = [KernelConfig.from_dict(d) for d in j["kernels"]]
        layout = j["shape"].split("/")[1]
        assert 3 <= len(configs) <= 5 and all(c.layout == layout for c in configs)
        assert len({c.name for c in configs}) == len(configs)
        assert {c.family for c in configs} >= {"simt", "tf32x3"}


def test_picks_score_the_dispatch_against_the_best_timed_kernel(jobs, tmp_path):
    """Rows timed exactly as predicted: every pick is the best (loss 1); a row whose predicted-best kernel ran
    twice as slow as another: that row's loss is 2."""
    from gemmgen.base.devices import known
    from gemmgen.base.shape import Shape
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.counts import aligned_for
    from gemmgen.runtime.library import KernelLibrary

    found = load_device("h100", None, missing_ok=False)
    lib = KernelLibrary(known(found.name), found.entries, timings=found.timings)
    rows = []
    for j in jobs:
        s = Shape.parse(j["shape"])
        fits = {f.config.name: f for f in lib.candidates("fp32", s.layout, None)}
        names = [KernelConfig.from_dict(d).name for d in j["kernels"]]
        ms = {n: fits[n].predict(s, aligned_for(fits[n].config, s)) for n in names}
        rows.append({"shape": j["shape"], "cublas_ms": min(ms.values()), "ms": ms})
    got = coverage.picks("h100", rows, {})
    assert sum(len(v) for v in got.values()) == 24
    assert all(a == pytest.approx(1.0) and b == pytest.approx(1.0) for v in got.values() for a, b, _ in v)
    first = rows[0]
    pick = min(first["ms"], key=first["ms"].get)
    first["ms"] = {n: (2.0 * t if n == pick else min(first["ms"].values())) for n, t in first["ms"].items()}
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    got = coverage.picks("h100", json.loads((tmp_path / "rows.json").read_text()), {})
    losses = sorted(a for v in got.values() for a, _, _ in v)
    assert losses[-1] > 1.5 and losses[-2] == pytest.approx(1.0)


def test_bad_input_is_one_line(capsys):
    with pytest.raises(SystemExit) as err:
        coverage.main(["plan", "--gpu", "h100", "--seeds", "1-2", "--macs", "15:27", "--macs", "27:37", "--out", "x"])
    assert err.value.code == 2 and "one --macs for each --seeds" in capsys.readouterr().err


def test_a_missing_rows_file_or_unknown_constant_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        coverage.main(["picks", "--gpu", "h100", str(tmp_path / "none.json")])
    assert err.value.code == 2 and "none.json" in capsys.readouterr().err
    (tmp_path / "rows.json").write_text("[]")
    with pytest.raises(SystemExit) as err:
        coverage.main(["picks", "--gpu", "h100", str(tmp_path / "rows.json"), "--knob", "NOT_A_KNOB=1"])
    assert err.value.code == 2 and "NOT_A_KNOB" in capsys.readouterr().err
