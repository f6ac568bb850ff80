"""The kernel library picks per precision class: stored winners of the class, else its built-in
preset (no GPU needed: loading is stubbed out)."""
from __future__ import annotations

import warnings

import pytest

from gemmgen.base.devices import known
from gemmgen.runtime.precision import FALLBACK, fallback_config, PRECISIONS, resolve_precision
from gemmgen.runtime.library import KernelLibrary, NoTunedKernels
from gemmgen.kernel.presets import names, preset
from gemmgen.records.entry import Entry


def _entries(*specs):
    """Entries keyed by position, so the test does not depend on the store's key format."""
    return {f"e{i}": Entry.new(shape, cfg, tflops, 50.0, 10, "x") for i, (shape, cfg, tflops) in enumerate(specs)}


def _library(entries, gpu="h100", strict=False):
    lib = KernelLibrary(known(gpu), entries, strict=strict)
    lib._load = lambda config, measured: (config, measured)   # no compile, no GPU
    return lib


STORED = _entries(
    ("2048x2048x2048", preset("v13"), 45.0),
    ("4096x4096x4096", preset("tf32x3"), 52.0),
    ("4096x4096x4096", preset("tf32"), 115.0),
    ("4096x4096x4096", preset("wmma-fast"), 300.0),
    ("4096x4096x4096", preset("wmma-bf16"), 290.0),
)


def test_tf32_winners_never_serve_fp32_matmul():
    lib = _library(_entries(("4096x4096x4096", preset("tf32"), 115.0), ("2048x2048x2048", preset("v13"), 45.0)))
    assert [e.kernel_config.family for e in lib.entries.values()] == ["simt"]
    config, _ = lib.kernel_for(4096, 4096, 4096, "NN")
    assert config.family == "simt"                   # the nearest fp32 winner, not the faster tf32 one


@pytest.mark.parametrize("shape,precision,family,dtype", [
    ((4096, 4096, 4096), "fp32", "tf32x3", "f32"),   # 3xTF32 is fp32-accurate: it serves fp32
    ((2048, 2048, 2048), "fp32", "simt", "f32"),
    ((4096, 4096, 4096), "tf32", "tf32", "f32"),
    ((3000, 3000, 3000), "tf32", "tf32", "f32"),     # nearest tuned shape of the class
    ((4096, 4096, 4096), "f16", "wmma", "f16"),
    ((4096, 4096, 4096), "bf16", "wmma", "bf16"),
])
def test_each_precision_is_served_by_its_own_class(shape, precision, family, dtype):
    config, measured = _library(STORED).kernel_for(*shape, "NN", precision=precision)
    assert (config.family, config.dtype, config.precision) == (family, dtype, precision if dtype == "f32" else dtype)
    assert measured is not None


def test_the_faster_of_two_winners_at_one_shape():
    lib = _library(_entries(("4096x4096x4096", preset("v13"), 47.0), ("4096x4096x4096", preset("tf32x3"), 52.0)))
    assert lib.kernel_for(4096, 4096, 4096)[0].family == "tf32x3"


def test_fallback_per_precision_warns_once_per_class():
    lib = _library({})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tf32, _ = lib.kernel_for(1000, 1000, 1000, "NT", precision="tf32")
        tf32_tn, _ = lib.kernel_for(999, 1000, 1000, "TN", precision="tf32")
        half, measured = lib.kernel_for(1000, 1000, 1000, precision="bf16")
    # Hopper's wgmma preset serves TF32 where it fits; its 4 stages leave no room for a transposed A (TN)
    assert tf32.label == "tf32-wgmma" and tf32.layout == "NT" and measured is None
    assert tf32_tn.label == FALLBACK["tf32"] and tf32_tn.layout == "TN"
    assert half.dtype == "bf16" and half.family == "wmma"
    assert [str(w.message).count("built-in preset") for w in seen] == [1, 1]
    assert "no tuned tf32 kernel for 1000x1000x1000/NT" in str(seen[0].message)


def test_fp32_fallback_is_3xtf32_where_measured_faster():
    assert fallback_config("fp32", "sm_90").family == "tf32x3"
    assert fallback_config("fp32", "sm_86").label == "v13" and fallback_config("fp32", "sm_86").family == "simt"


@pytest.mark.parametrize("precision", PRECISIONS)
def test_every_fallback_names_a_preset(precision):
    assert FALLBACK[precision] in names()
    cfg = fallback_config(precision, "sm_80", "TT")
    assert cfg.layout == "TT" and (cfg.dtype if cfg.dtype != "f32" else cfg.precision) == precision


def test_strict_raises_naming_the_class():
    lib = _library(STORED, strict=True)
    assert lib.kernel_for(64, 64, 64, "NN", precision="f16")[0].dtype == "f16"   # the nearest NN f16 winner
    with pytest.raises(NoTunedKernels, match="no tuned f16 kernel for 64x64x64/TT"):
        lib.kernel_for(64, 64, 64, "TT", precision="f16")                       # none stored for TT


def test_unknown_precision_in_kernel_for_is_named():
    with pytest.raises(ValueError, match="'fp16' is not one of fp32, tf32, f16, bf16"):
        _library(STORED).kernel_for(64, 64, 64, precision="fp16")


@pytest.mark.parametrize("precision,dtype,expect", [
    (None, "f32", "fp32"), ("fp32", "f32", "fp32"), ("tf32", "f32", "tf32"),
    (None, "f16", "f16"), ("f16", "f16", "f16"), (None, "bf16", "bf16"), ("bf16", "bf16", "bf16"),
])
def test_precision_follows_dtype(precision, dtype, expect):
    assert resolve_precision(precision, dtype) == expect


@pytest.mark.parametrize("precision,dtype,words", [
    ("fp16", "f32", "precision='fp16' is not one of fp32, tf32, f16, bf16"),
    ("TF32", "f32", "is not one of"),
    ("tf32", "f16", "precision='tf32' needs float32 inputs, but A and B are float16"),
    ("fp32", "bf16", "needs float32 inputs, but A and B are bfloat16"),
    ("f16", "f32", r"precision='f16' needs float16 inputs, but A and B are float32 \(valid for them: fp32, tf32"),
    ("bf16", "f16", "needs bfloat16 inputs, but A and B are float16"),
])
def test_bad_or_contradicting_precision_is_named(precision, dtype, words):
    with pytest.raises(ValueError, match=words):
        resolve_precision(precision, dtype)


@pytest.mark.parametrize("request_", [(3907, 4137, 19, "TN"), (9742, 3385, 22, "NN"), (11395, 645, 74, "NN")])
def test_a_plan_runs_the_kernel_whose_prediction_made_it(monkeypatch, request_):
    """A copy into another layout is planned for one kernel of that layout (on these shapes of the
    shipped H100 timings, the plan copies both operands); plan_for runs that kernel, not the best
    prediction among all of the layout's kernels (an extrapolated cp.async kernel ran 0.72x cuBLAS
    where the planned one ran 0.85x)."""
    from gemmgen.records.lookup import load_device

    found = load_device("NVIDIA H100 80GB HBM3")
    lib = KernelLibrary(known("h100"), found.entries, 0, False, found.timings)
    monkeypatch.setattr(lib, "_load", lambda config, measured: config)   # no GPU: the config stands for it
    M, N, K, layout = request_
    lda, ldb = (K if layout[0] == "N" else M), (N if layout[1] == "N" else K)
    copy_a, copy_b, fit = lib.staged_fit(M, N, K, layout, lda, ldb, N)
    assert fit.config.layout != layout and copy_a and copy_b   # the plan changes layout
    assert lib.plan_for(M, N, K, layout, lda, ldb, N) == (fit.config, copy_a, copy_b)


def test_a_stored_skinny_entry_serves_no_request():
    """Without timings the nearest stored entry serves; a skinny one (the nearest here) is passed over for the
    next fp32 entry, as the timed kernels of the skinny family are (dispatch.serves)."""
    entries = _entries(("4096x16x4096", preset("skinny"), 20.0), ("2048x2048x2048", preset("v13"), 45.0))
    assert _library(entries).kernel_for(4096, 16, 4096, "NN")[0].family == "simt"


@pytest.mark.parametrize("name,change,aligned", [("v13", {}, False), ("v13", {"bounds": "none"}, True),
                                                 ("tf32x3-tma", {}, True)])
def test_a_loaded_gemm_kernel_answers_what_callers_read_from_its_config(name, change, aligned):
    """matmul, gemmgen.torch and the benchmarks read a kernel through library.Served (a route's kernel has no
    KernelConfig): a GEMM kernel's answers are its config's, and its launches its loaded binary's."""
    import types

    from gemmgen.runtime.library import Kernel, Served

    config = preset(name).replace(**change)
    loaded = types.SimpleNamespace(prepared=lambda *sizes: ("launch", sizes), workspace_floats=lambda M, N: M * N)
    kernel = Kernel(config, loaded)
    assert isinstance(kernel, Served)
    assert (kernel.name, kernel.family, kernel.precision, kernel.layout) == (config.name, config.family,
                                                                            config.precision, config.layout)
    assert kernel.aligned_pointers is aligned   # TMA descriptors, or the fast path's unchecked vector loads
    assert kernel.prepared(3, 4, 5, 5, 4, 4) == ("launch", (3, 4, 5, 5, 4, 4)) and kernel.workspace_floats(3, 4) == 12
