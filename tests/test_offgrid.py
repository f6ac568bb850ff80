"""benchmarks/offgrid.py without a GPU: jobs from the shipped H100 predictions, and the picks score."""
from __future__ import annotations

import json

import pytest

from tests.scripts import load, refused

offgrid = load("offgrid")


@pytest.fixture(scope="module")
def library():
    import importlib

    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.library import KernelLibrary

    dispatch = importlib.import_module("gemmgen.runtime.dispatch")
    found = load_device("h100", None, missing_ok=False)
    lib = KernelLibrary(known(found.name), found.entries, timings=found.timings)
    return {L: {f.config.name: f for fam in (None, "skinny") for f in lib.candidates("fp32", L, fam)}
            for L in dispatch.LAYOUTS}   # the skinny family too, as offgrid.py's jobs take it


def predicted(library, key: str, name: str) -> float:
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.counts import aligned_for

    s = Shape.parse(key)
    f = library[s.layout][name]
    return f.predict(s, aligned_for(f.config, s))


@pytest.fixture(scope="module")
def jobs():
    return offgrid.plan_jobs("h100", [([7], (15, 27))], top=3)["jobs"]


def test_jobs_hold_the_top_predictions_then_each_familys_best(jobs, library):
    from gemmgen.kernel.config import KernelConfig

    assert len(jobs) == 24 and len({j["shape"] for j in jobs}) == 24
    for j in jobs:
        configs = [KernelConfig.from_dict(d) for d in j["kernels"]]
        layout = j["shape"].split("/")[1]
        assert 3 <= len(configs) <= 6 and all(c.layout == layout for c in configs)
        assert len({c.name for c in configs}) == len(configs)
        times = [predicted(library, j["shape"], c.name) for c in configs]
        assert times[:3] == sorted(times[:3]) and max(times[:3]) <= min(times[3:], default=float("inf"))
        assert {c.family for c in configs} >= {"simt", "tf32x3"}
        for c, t in zip(configs[3:], times[3:]):   # an extra is its family's best, and a family new to the job
            assert c.family not in {x.family for x in configs[:configs.index(c)]}


def test_jobs_of_narrow_shapes_hold_a_skinny_kernel_though_the_dispatch_leaves_them_out():
    narrow = [j for j in offgrid.plan_jobs("h100", [(list(range(1, 9)), (15, 27))], top=3)["jobs"]
              if int(j["shape"].split("x")[1]) <= 32]
    assert narrow and all(any(d["family"] == "skinny" for d in j["kernels"]) for j in narrow)


def test_picks_score_the_dispatch_against_the_best_timed_kernel(jobs, library):
    """Rows timed exactly as predicted: every pick is the best (loss 1); a row whose predicted-best kernel ran
    twice as slow as another: that row's loss is 2."""
    from gemmgen.kernel.config import KernelConfig

    rows = []
    for j in jobs:
        names = [KernelConfig.from_dict(d).name for d in j["kernels"]]
        ms = {n: predicted(library, j["shape"], n) for n in names}
        rows.append({"shape": j["shape"], "cublas_ms": min(ms.values()), "ms": ms})
    got = offgrid.picks("h100", rows, {}, families=(None, "skinny"))
    assert sum(len(v) for v in got.values()) == 24
    assert all(a == pytest.approx(1.0) and b == pytest.approx(1.0) for v in got.values() for a, b, _ in v)
    first = rows[0]
    pick = min(first["ms"], key=first["ms"].get)
    first["ms"] = {n: (2.0 * t if n == pick else min(first["ms"].values())) for n, t in first["ms"].items()}
    losses = sorted(a for v in offgrid.picks("h100", rows, {}, families=(None, "skinny")).values() for a, _, _ in v)
    assert losses[-1] == pytest.approx(2.0) and losses[-2] == pytest.approx(1.0)


def test_every_adds_the_whole_family_that_takes_the_shape(jobs, library):
    """--every simt: each job holds its top and family-best kernels, then every other SIMT kernel its
    layout's dispatch models that accepts the shape, each once."""
    from gemmgen.base.shape import Shape
    from gemmgen.kernel.config import KernelConfig

    full = offgrid.plan_jobs("h100", [([7], (15, 27))], top=3, every=("simt",))["jobs"]
    plain = {j["shape"]: [KernelConfig.from_dict(d).name for d in j["kernels"]] for j in jobs}
    for j in full:
        s = Shape.parse(j["shape"])
        names = [KernelConfig.from_dict(d).name for d in j["kernels"]]
        simt = {n for n, f in library[s.layout].items()
                if f.config.family == "simt" and f.config.accepts(s.M, s.N, s.K) is None}
        assert len(names) == len(set(names)) and set(plain[j["shape"]]) <= set(names)
        assert names[:3] == plain[j["shape"]][:3]            # the top predictions first, as without --every
        assert {n for n in names if n.startswith("gg_simt")} == simt and len(simt) > 10


def test_bias_is_one_where_every_kernel_ran_as_predicted_and_follows_a_slow_one(jobs, library):
    from gemmgen.kernel.config import KernelConfig

    rows = [{"shape": j["shape"], "cublas_ms": 1.0,
             "ms": {n: predicted(library, j["shape"], n) for n in (KernelConfig.from_dict(d).name for d in j["kernels"])}}
            for j in jobs]
    got = offgrid.bias("h100", rows, {}, families=(None, "skinny"))
    assert {k.split()[0] for k in got} >= {"simt", "tf32x3"} and any(" near" in k or " far" in k for k in got)
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.counts import aligned_for
    near = 0
    for r in rows:   # each timing counted once, under near or far as the kernel's model says
        s = Shape.parse(r["shape"])
        near += sum(library[s.layout][n].measured_near(s, aligned_for(library[s.layout][n].config, s)) for n in r["ms"])
    assert sum(len(v) for k, v in got.items() if k.endswith(" near")) == near
    assert sum(len(v) for k, v in got.items() if k.endswith((" near", " far"))) == sum(len(r["ms"]) for r in rows)
    assert all(v == pytest.approx(1.0) for vals in got.values() for v in vals)
    assert sum(len(v) for k, v in got.items() if "waves" in k) == sum(len(r["ms"]) for r in rows)
    rows[0]["ms"] = {n: 3.0 * t for n, t in rows[0]["ms"].items()}
    slow = offgrid.bias("h100", rows, {}, families=(None, "skinny"))
    assert sorted(v for vals in slow.values() for v in vals)[-1] == pytest.approx(3.0)


@pytest.mark.parametrize("argv, says", [
    (["plan", "--gpu", "h100", "--seeds", "1-2", "--macs", "15:27", "--macs", "27:37", "--out", "x"], "one --macs"),
    (["plan", "--gpu", "h100", "--seeds", "a-b", "--macs", "15:27", "--out", "x"], "'a-b'"),
    (["plan", "--gpu", "h100", "--seeds", "1", "--macs", "40:12", "--out", "x"], "40:12"),
    (["plan", "--gpu", "rtx9999", "--seeds", "1", "--macs", "15:27", "--out", "x"], "rtx9999"),
    (["picks", "--gpu", "h100", "NONE.json"], "NONE.json"),
    (["picks", "--gpu", "h100", "JOBS", "--knob", "width=1"], "rows files"),
    (["picks", "--gpu", "h100", "ROWS", "--knob", "NOT_A_KNOB=1"], "NOT_A_KNOB"),
    (["time", "ROWS", "--out", "x"], "not a jobs file"),
    (["plan", "--gpu", "h100", "--seeds", "1", "--macs", "15:27", "--every", "simd", "--out", "x"], "simd"),
])
def test_bad_input_is_one_line(argv, says, tmp_path, capsys):
    (tmp_path / "rows.json").write_text("[]")
    (tmp_path / "jobs.json").write_text(json.dumps({"gpu": "x", "jobs": []}))
    argv = [str(tmp_path / "rows.json") if a == "ROWS" else str(tmp_path / "jobs.json") if a == "JOBS" else
            str(tmp_path / a) if a == "NONE.json" else a for a in argv]
    assert says in refused(offgrid.main, argv, capsys)


def test_max_k_keeps_only_the_shallow_shapes_of_the_draw(jobs):
    """--max-k 128: the jobs of the same draw whose K is at most 128, in the same kernels."""
    from gemmgen.base.shape import Shape

    shallow = offgrid.plan_jobs("h100", [([7], (15, 27))], top=3, max_k=128)["jobs"]
    want = {j["shape"]: j["kernels"] for j in jobs if Shape.parse(j["shape"]).K <= 128}
    assert 0 < len(shallow) < len(jobs) and {j["shape"]: j["kernels"] for j in shallow} == want
