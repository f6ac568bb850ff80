"""The analytic time model and the built-in kernels (runtime/analytic.py, runtime/builtin.py), checked on
the shipped GPUs' recorded timings: what a GPU with no results runs, replayed without a GPU."""
from __future__ import annotations

import json
import math
import statistics
import warnings
from functools import lru_cache

import pytest

from gemmgen.base.devices import known
from gemmgen.base.paths import data_dir
from gemmgen.base.shape import Shape
from gemmgen.kernel.rules import explain
from gemmgen.records.timings import Timings
from gemmgen.runtime import analytic, builtin
from gemmgen.runtime.library import KernelLibrary, NoTunedKernels

FILES = {"h100": "nvidia-h100-80gb-hbm3.json", "h200": "nvidia-h200.json"}


@lru_cache(maxsize=None)
def recorded(gpu: str) -> Timings:
    return Timings.from_dict(json.loads((data_dir("results") / FILES[gpu]).read_text())["timings"])


def shape_table(gpu: str, family: str | None = None) -> dict[str, dict[str, float]]:
    """{shape key: {kernel name: ms}} of the shapes at least five kernels of the class were timed on."""
    table: dict[str, dict[str, float]] = {}
    for k in recorded(gpu).of_precision("fp32"):
        if k.config.family == "skinny" or (family and k.config.family != family):
            continue
        for key, ms in k.ms.items():
            table.setdefault(key, {})[k.config.name] = ms
    return {key: row for key, row in table.items() if len(row) >= 5}


def test_coefficients_fitted_on_one_gpu_predict_the_other():
    """The model's point: constants per mainloop kind, the GPU's own rates in the units. Fitted on the
    H100's timings, the H200's (more bandwidth, same SMs) are predicted within a median 25%."""
    coef = analytic.fit_coefficients(((k.config, k.resident, k.shapes()) for k in recorded("h100").of_precision("fp32")),
                                     known("h100"))
    models = [(analytic.Analytic.make(k.config, known("h200"), coef), k.shapes())
              for k in recorded("h200").of_precision("fp32")[::5]]
    assert analytic.log_error(models) < math.log(1.25)


def test_shipped_coefficients_are_those_the_shipped_timings_give():
    """search/builtin.json's coefficients come from the H100's timings (the file says so): refitting
    gives them back, so the data file is not edited by hand."""
    stored = builtin.load()["coefficients"]
    coef = analytic.fit_coefficients(((k.config, k.resident, k.shapes()) for k in recorded("h100").of_precision("fp32")),
                                     known("h100"))
    assert {k: list(v) for k, v in coef.items()} == stored


@pytest.mark.parametrize("gpu, family, bound", [("h100", None, 1.12), ("h200", None, 1.12), ("h200", "simt", 1.12)])
def test_out_of_the_box_picks_replayed_on_recorded_times(gpu, family, bound):
    """A library with no results plans every recorded grid shape (every third); where the kernel it picks
    was timed there, its time over the best time anyone measured there: geomean under ``bound`` (the
    shipped results, fitted to those times, pick about the best)."""
    lib = KernelLibrary(known(gpu), {}, timings=Timings.empty())
    ratios = []
    for key, row in sorted(shape_table(gpu, family).items())[::3]:
        s = Shape.parse(key)
        if s.M == 1 or s.N == 1:
            continue
        copy_a, copy_b, fit = lib.staged_fit(s.M, s.N, s.K, s.layout, *s.lds, s.N, "fp32", family)
        assert fit is not None, key
        assert isinstance(fit, analytic.Analytic)
        if not (copy_a or copy_b) and fit.config.name in row:
            ratios.append(row[fit.config.name] / min(row.values()))
    assert len(ratios) > 100
    assert math.exp(statistics.fmean(math.log(r) for r in ratios)) < bound


def test_the_c_tile_coefficient_is_never_fitted_under_its_floor():
    """Times that a free fit would explain without C tiles (here: only the K steps cost) still get the
    C-tile floor: a C tile is not written faster than the DRAM bandwidth."""
    from gemmgen.kernel.presets import preset

    spec, c = known("h100"), preset("v10")
    truth = analytic.Analytic.make(c, spec, {"simt": (1.3, 0.0, 0.0, 0.0, 0.0)})
    times = {Shape(n, n, k): truth.fitted(Shape(n, n, k)) for n in (512, 2048, 4096) for k in (16, 256, 4096)}
    coef = analytic.fit_coefficients([(c, 0, times)], spec)["simt"]
    assert coef[3] == pytest.approx(analytic.FLOORS[3]) and all(x >= f for x, f in zip(coef, analytic.FLOORS))
    assert all(x >= f for cf in builtin.load()["coefficients"].values() for x, f in zip(cf, analytic.FLOORS))


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_out_of_the_box_picks_against_recorded_cublas_times(gpu):
    """Every recorded shape with a cuBLAS time, planned as matmul plans it with no results: where the
    picked kernel was timed there, its speed against cuBLAS. Shallow-K shapes, whose C tiles are most
    of the time, were the ones under 0.8x while the model let C tiles cost almost nothing."""
    from gemmgen.runtime.library import PRODUCT
    from gemmgen.runtime.planner import Planner, Request

    timings = recorded(gpu)
    planner = Planner(known(gpu), {}, Timings.empty(), PRODUCT)
    times = {k.config.name: k.ms for k in timings.of_precision("fp32")}
    ratios = {}
    for key, cublas in timings.cublas["fp32"].items():
        s = Shape.parse(key)
        plan = planner.plan(Request(s.M, s.N, s.K, s.layout))
        ms = times.get(plan.config.name, {}).get(Shape(s.M, s.N, s.K, plan.config.layout).key) if plan.config else None
        if ms:
            ratios[key] = cublas / ms
    low = sorted(k for k, r in ratios.items() if r < 0.8)
    assert len(ratios) > 500 and len(low) <= 2, low
    assert math.exp(statistics.fmean(map(math.log, ratios.values()))) > 1.3


@pytest.mark.parametrize("gpu, families", [("rtx3090", {"simt", "tf32x3"}), ("a100", {"simt", "tf32x3"}),
                                           ("h100", {"simt", "tf32x3"})])
def test_built_in_kernels_are_valid_where_they_are_offered(gpu, families):
    spec = known(gpu)
    fits = builtin.builtin_fits(spec, "fp32")
    assert fits and {f.config.family for f in fits} == families
    assert all(not explain(f.config, spec) for f in fits)
    wgmma = any(f.config.uses_wgmma for f in fits)
    assert wgmma == (spec.cc == (9, 0))
    assert builtin.builtin_fits(spec, "tf32") == []       # other classes keep their preset


def test_a_gpu_with_no_tf32_tensor_cores_gets_simt_only():
    spec = known("rtx3090")
    turing = type(spec)(**{**spec.to_dict(), "key": "detected", "cc": (7, 5)})
    assert {f.config.family for f in builtin.builtin_fits(turing, "fp32")} == {"simt"}


def test_planning_without_results_needs_no_gpu_and_strict_refuses():
    lib = KernelLibrary(known("h100"), {}, timings=Timings.empty())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = lib.staged_fit(3000, 5000, 700, "NT", 700, 700, 5000)[2]
    assert isinstance(fit, analytic.Analytic) and not caught   # planning alone warns of nothing
    strict = KernelLibrary(known("h100"), {}, strict=True, timings=Timings.empty())
    assert strict.candidates("fp32", "NN") == []
    with pytest.raises(NoTunedKernels):
        strict.kernel_for(3000, 5000, 700, "NN")


def test_portfolio_greedy_prefers_broad_kernels():
    t = {"s1": {"a": 1.0, "b": 2.0, "c": 1.1}, "s2": {"a": 3.0, "b": 1.0, "c": 1.2}, "s3": {"b": 1.0}}
    assert builtin.choose_portfolio([t], 1) == ["b"]                 # b alone is nearest overall
    assert builtin.choose_portfolio([t], 3, allowed=["a", "c"]) == ["c", "a"]
    assert builtin.choose_portfolio([t], 5, start=["b"])[:1] == ["b"]


def test_untimed_built_in_kernels_compete_behind_a_margin_where_load_asks():
    """A GPU whose results time a few kernels: as load() builds its library, the built-in kernels it did
    not time compete builtin_margin slower than their model; a library built without it keeps to the timed ones."""
    from gemmgen.kernel.presets import preset

    spec = known("h100")
    timings = Timings.empty().add(preset("v10"), "4096x4096x4096", 3.0).add(preset("v10"), "1024x1024x1024", 0.06)
    plain = KernelLibrary(spec, {}, timings=timings)
    assert [f.config.name for f in plain.candidates("fp32", "NN")] == [preset("v10").name]
    from gemmgen.runtime.policy import DEFAULT

    mixed = KernelLibrary(spec, {}, timings=timings, policy=DEFAULT.replace(untimed_builtins=True)).candidates("fp32", "NN")
    built = [f for f in mixed if isinstance(f, analytic.Analytic)]
    assert len(built) > 20 and all(f.margin == DEFAULT.builtin_margin for f in built)
    alone = {f.config.name: f for f in builtin.builtin_fits(spec, "fp32")}
    s = Shape(3000, 5000, 700)
    f = built[0]
    base = alone[f.config.name] if f.config.name in alone else None
    if base is not None:
        assert f.predict(s) - f.base == pytest.approx((base.predict(s) - base.base) * DEFAULT.builtin_margin)


def test_results_plan_of_a_gpu_with_no_results_shows_the_built_in_choice(capsys):
    from gemmgen.cli import main

    assert main(["results", "plan", "rtx3090", "3000x5000x700/NT", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    text = json.dumps(rows)
    assert "gg_simt" in text or "gg_tf32x3" in text
    assert "_wg" not in text    # no wgmma before Hopper


def test_a_built_in_kernel_timed_in_any_layout_is_not_modelled_beside_its_measurements():
    spec = known("h100")
    every = builtin.builtin_fits(spec, "fp32")
    one = next(f.config for f in every if f.config.layout == "NN")
    tn = one.replace(layout="TN")
    left = {f.config.name for f in builtin.builtin_fits(spec, "fp32", timed=[tn], margin=1.25)}
    same_tile = [f for f in every if f.config.replace(layout="NN").name == one.name]   # the tile in any layout
    assert one.name not in left and len(left) == len(every) - len(same_tile) and len(same_tile) >= 1


def test_task_timeout_never_exceeds_the_tuning_time_left():
    from gemmgen.tune.budget import task_timeout

    assert task_timeout(600, 1, 4) == 600 and task_timeout(600, 10, 2) == 120 and task_timeout(-5, 3, 1) == 0
