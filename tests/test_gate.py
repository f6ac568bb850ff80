"""The accuracy gate's bound per precision class and its verdicts, on fake errors and a fake kernel
and problem (no GPU needed)."""
from __future__ import annotations

import doctest

import pytest

from gemmgen import gate
from gemmgen.gate import CEILING, FLOOR, allowed, check, gate_bound, judge, mode_of
from gemmgen.outcome import WrongResult
from gemmgen.presets import names, preset


def test_bound_is_one_and_a_half_cublas_error():
    assert allowed("fp32", 2e-6) == pytest.approx(3e-6)
    assert allowed("tf32", 4e-4) == pytest.approx(6e-4)
    assert allowed("f16", 4e-6) == pytest.approx(6e-6)


@pytest.mark.parametrize("mode", ["fp32", "tf32", "f16", "bf16"])
def test_exact_cublas_does_not_make_the_bound_zero(mode):
    assert allowed(mode, 0.0) == FLOOR[mode] > 0


@pytest.mark.parametrize("mode", ["fp32", "tf32", "f16", "bf16"])
def test_a_broken_reference_cannot_open_the_gate(mode):
    """A cuBLAS call gone wrong (error ~1) still leaves the class's ceiling."""
    assert allowed(mode, 1.0) == CEILING[mode] < 1e-2


def test_floors_sit_between_unit_roundoff_and_ceiling():
    assert 2.0 ** -24 < FLOOR["fp32"] < CEILING["fp32"]       # above one fp32 rounding, under 1e-5
    assert 2.0 ** -24 < FLOOR["f16"] == FLOOR["bf16"] < CEILING["f16"]
    # cuBLAS "TF32" runs fp32 kernels at M or N = 1, K = 1 and small shapes (error ~1e-7), while TF32
    # operands alone err ~2.6e-4: the floor sits just above that, one TF32 unit roundoff
    assert 2.6e-4 < FLOOR["tf32"] == 2.0 ** -11 < 1.5 * 2.6e-3 < CEILING["tf32"]


def test_unknown_class_is_named():
    with pytest.raises(ValueError, match="'fp64' is not one of fp32, tf32, f16, bf16"):
        allowed("fp64", 1e-6)


def test_mode_of_each_family_and_dtype():
    assert mode_of(preset("v10")) == mode_of(preset("tf32x3")) == "fp32"   # 3xTF32 is held to SGEMM
    assert mode_of(preset("tf32")) == "tf32"
    assert mode_of(preset("v10").replace(dtype="f16")) == "f16"            # half inputs: their own type
    assert mode_of(preset("tf32").replace(dtype="bf16")) == "bf16"


def test_every_preset_has_a_class_and_ceiling():
    for name in names():
        cfg = preset(name)
        assert mode_of(cfg) in CEILING and gate_bound(cfg) == CEILING[mode_of(cfg)], name


def test_gate_bound_keeps_its_old_values():
    assert gate_bound(preset("tf32")) == 5e-3 and gate_bound(preset("tf32x3")) == gate_bound(preset("v10")) == 1e-5


def _case(ours, cublas, mode="fp32"):
    return {"err_fp64": ours, "cublas_err_fp64": cublas, "err_cublas": abs(ours - cublas),
            "bound": allowed(mode, cublas), "case": "alpha=1.0, beta=0.0"}


def test_judge_passes_within_bound_and_reports_the_plain_product():
    out = judge([_case(1.2e-6, 1.1e-6), _case(4e-7, 3e-7)])
    assert out["err_fp64"] == 1.2e-6 and out["cublas_err_fp64"] == 1.1e-6
    assert out["bound"] == FLOOR["fp32"] and "case" not in out


@pytest.mark.parametrize("ours,cublas,mode", [
    (1.0, 1e-6, "fp32"),            # wrong indexing: error ~1
    (2.6e-4, 1e-6, "fp32"),         # TF32 accuracy passed off as fp32
    (6e-6, 3e-6, "fp32"),           # twice SGEMM's error
    (8e-4, 2.6e-4, "tf32"),         # three times cuBLAS TF32's
    (float("nan"), 1e-6, "fp32"),   # NaN never passes
])
def test_judge_rejects_what_is_over_the_bound(ours, cublas, mode):
    with pytest.raises(WrongResult, match="relative error .* against fp64 exceeds"):
        judge([_case(1e-7, 1e-7, mode), _case(ours, cublas, mode)], ", shape 64x64x64/NN")


class FakeC:
    def copy(self):
        return self


class FakeProblem:
    """Stands in for gemmgen.problem.Problem: errors are planted, not computed."""

    shape = "64x64x64/NN"

    def __init__(self, cublas_err):
        self.cublas_err, self.modes = cublas_err, []

    def fill_c(self, poison):
        return FakeC()

    def operands(self, alpha, beta):
        return (alpha, beta)

    def reference64(self, alpha, beta, c0):
        return "ref"

    def cublas(self, out=None, mode=None, alpha=1.0, beta=0.0):
        self.modes.append((mode, alpha, beta))
        return "cublas"

    C = "ours"


class FakeKernel:
    def __init__(self, config, ours_err):
        self.config, self.ours_err, self.launched = config, ours_err, []

    def launch(self, ops):
        self.launched.append(ops)


def _fake_errors(monkeypatch, kernel, problem):
    errors = {("ours", "ref"): kernel.ours_err, ("cublas", "ref"): problem.cublas_err, ("ours", "cublas"): 1e-7}
    monkeypatch.setattr(gate, "rel_error", lambda out, ref: errors[(out, ref)])
    monkeypatch.setattr(gate, "_finite", lambda out, alpha, beta: None)


def test_check_runs_both_cases_against_cublas_in_the_kernels_mode(monkeypatch):
    kernel, problem = FakeKernel(preset("tf32"), 3e-4), FakeProblem(2.6e-4)
    _fake_errors(monkeypatch, kernel, problem)
    out = check(kernel, problem)
    assert kernel.launched == [(1.0, 0.0), (0.5, 3.0)]
    assert problem.modes == [("tf32", 1.0, 0.0), ("tf32", 0.5, 3.0)]   # same alpha/beta as the kernel
    assert out == {"err_fp64": 3e-4, "cublas_err_fp64": 2.6e-4, "err_cublas": 1e-7, "bound": allowed("tf32", 2.6e-4)}


def test_check_holds_tf32x3_to_sgemm(monkeypatch):
    kernel, problem = FakeKernel(preset("tf32x3"), 2.6e-4), FakeProblem(1e-6)
    _fake_errors(monkeypatch, kernel, problem)
    with pytest.raises(WrongResult, match="cuBLAS mode fp32"):
        check(kernel, problem)
    assert problem.modes[0][0] == "fp32"


def test_check_takes_a_fixed_bound(monkeypatch):
    kernel, problem = FakeKernel(preset("v10"), 5e-6), FakeProblem(1e-6)
    _fake_errors(monkeypatch, kernel, problem)
    assert check(kernel, problem, bound=1e-5)["bound"] == 1e-5


@pytest.mark.parametrize("module", ["gemmgen.gate", "gemmgen.library", "gemmgen.benchmark"])   # problem's need a GPU:
                                                                                            # tests/test_doctests.py
def test_docstring_examples_run(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
