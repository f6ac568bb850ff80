"""Copies before the kernel (the planner's copy plans and guards, runtime.planner): a request is served through a transposing copy where a
kernel of another layout is predicted faster by more than the copy costs, and only then; checked on
synthetic timings (kernels that behave as the model says) and on the shipped H100 results."""
from __future__ import annotations

from pathlib import Path

from gemmgen.base.devices import known
from gemmgen.base.shape import Shape
from gemmgen.kernel.presets import preset
from gemmgen.records.store import load_file
from gemmgen.runtime.library import KernelLibrary
from gemmgen.runtime.counts import counts
from gemmgen.runtime.planner import Planner, Request
from gemmgen.runtime.policy import DEFAULT
from gemmgen.runtime.predict import Fitted
from gemmgen.runtime.staging import copied_ld

H100 = known("h100")
BW = H100.mem_gbs * 1e6 * 0.7
NN = preset("tf32x3-wgmma")                # cp.async kernel, NN
TMA = preset("tf32x3-tma")                 # NT only
SIZES = (512, 1024, 2048, 4096, 8192)


def synthetic(cfg, shape, u):
    a, b, _, _ = counts(cfg, shape, H100.sm_count)
    return u * a + 0.01 * b


STEP_NT = 0.004 * (176 / 128) * (32 / 64)   # the NN kernel's time per step for the TMA tile's work


def fits(tma_speed: float, policy=DEFAULT):
    """An NN kernel and an NT TMA kernel ``tma_speed`` times as fast per K step, each timed on cubes."""
    nn = Fitted.fit(NN, {Shape(n, n, n): synthetic(NN, Shape(n, n, n), 0.004) for n in SIZES}, H100, policy=policy)
    nt = Fitted.fit(TMA, {Shape(n, n, n, "NT"): synthetic(TMA, Shape(n, n, n, "NT"), STEP_NT / tma_speed)
                          for n in SIZES}, H100, policy=policy)
    return lambda layout: {"NN": [nn], "NT": [nt]}.get(layout, [])


def stage_plan(fits_for, M, N, K, layout, lda, ldb, ldc, policy=DEFAULT):
    """(copy A, copy B, time model) of the planner's plan among the kernels ``fits_for(layout)`` gives."""
    planner = Planner(H100, {}, policy=policy, timed=lambda precision, lay, family: fits_for(lay))
    plan = planner.plan(Request(M, N, K, layout, lda, ldb, ldc), ("timed",))
    return plan.copy_a, plan.copy_b, plan.fit


def test_copied_leading_dimensions_round_up():
    assert copied_ld("A", "N", 100, 7, 4097, 4) == 4100 and copied_ld("A", "T", 4097, 7, 64, 4) == 4100
    assert copied_ld("B", "N", 100, 33, 8, 4) == 36 and copied_ld("B", "T", 100, 33, 4097, 4) == 4100


def test_a_much_faster_kernel_of_another_layout_is_reached_by_transposing_b():
    fits_for = fits(tma_speed=1.4)
    copy_a, copy_b, fit = stage_plan(fits_for, 4096, 4096, 4096, "NN", 4096, 4096, 4096)
    assert (copy_a, copy_b, fit.config.layout) == (False, True, "NT")


def test_no_layout_change_where_the_copy_eats_the_gain():
    copy_a, copy_b, fit = stage_plan(fits(1.04), 4096, 4096, 4096, "NN", 4096, 4096, 4096)
    assert (copy_a, copy_b, fit.config.layout) == (False, False, "NN")   # 4% < the margin plus the copy
    copy_a, copy_b, fit = stage_plan(fits(1.4), 64, 64, 64, "NN", 64, 64, 64)
    assert (copy_a, copy_b, fit.config.layout) == (False, False, "NN")   # far under min_pack_ms


def test_mid_size_requests_change_layout_only_into_tma_kernels_for_deep_k_and_cheap_copies():
    """Between min_pack_ms and small_pack_ms of predicted time, a layout change must also feed a TMA
    kernel, K of at least min_stage_k, and cost at most copy_share of that kernel (planner.small_copy).
    The times below are the fits' own: no extrapolation markup (these fits are measured on cubes only)
    and no tensor-core bound (the TMA kernel at 5x runs twice the wgmma datasheet rate)."""
    bare = DEFAULT.replace(extrapolated=0.0, mma_floor=0.0)
    fits = lambda speed: globals()["fits"](speed, bare)
    assert stage_plan(fits(1.4), 1536, 1536, 1024, "NN", 1024, 1536, 1536)[:2] == (False, True)  # 0.15 ms own
    assert stage_plan(fits(1.4), 4096, 4096, 48, "NN", 48, 4096, 4096)[:2] == (False, True)    # K = 48 >= 16
    assert stage_plan(fits(1.4), 4096, 4096, 12, "NN", 12, 4096, 4096)[:2] == (False, False)   # K = 12 < 16
    # 256x4096x2048: own 0.14 ms, the TMA kernel 0.045 ms, B's copy 0.039 ms: 86% of the kernel's time
    assert stage_plan(fits(5.0), 256, 4096, 2048, "NN", 2048, 4096, 4096)[:2] == (False, False)
    assert stage_plan(fits(5.0), 128, 4096, 4096, "NN", 4096, 4096, 4096)[:2] == (False, True)  # 0.27 ms own


def test_mid_size_requests_never_copy_into_a_cp_async_kernel():
    """A cp.async NT kernel 1.6x as fast per step draws a 1536x1536x1024 NN request (0.15 ms) over only at
    twice its K, where the request is predicted at 0.2 ms or more."""
    nn = fits(1.0)("NN")[0]
    nt = Fitted.fit(NN.replace(layout="NT"), {Shape(n, n, n, "NT"): synthetic(NN, Shape(n, n, n), 0.004 / 1.6)
                                              for n in SIZES}, H100)
    fits_for = lambda layout: {"NN": [nn], "NT": [nt]}.get(layout, [])
    assert stage_plan(fits_for, 1536, 1536, 1024, "NN", 1024, 1536, 1536)[:2] == (False, False)
    assert stage_plan(fits_for, 1536, 1536, 2048, "NN", 2048, 1536, 1536)[:2] == (False, True)


def test_unaligned_rows_are_copied_where_the_copy_beats_even_the_aligned_prediction():
    """4096x4096x1023 NT: the rows as they are run no faster than the cp.async kernel's aligned
    prediction (0.59 ms); aligned copies (0.035 ms, more than cheap_pack of the product) plus the TMA
    kernel (0.44 ms) beat it, with no unaligned measurement anywhere near."""
    cp = Fitted.fit(NN.replace(layout="NT"), {Shape(n, n, n, "NT"): synthetic(NN, Shape(n, n, n), 0.004)
                                              for n in SIZES}, H100)
    fits_for = lambda layout: {"NT": [cp, fits(1.4)("NT")[0]]}.get(layout, [])
    copy_a, copy_b, fit = stage_plan(fits_for, 4096, 4096, 1023, "NT", 1023, 1023, 4096)
    assert (copy_a, copy_b, fit.config.warp_specialized) == (True, True, True)


FAR = (32768, 512, 512, "NN", 512, 512, 512)   # far from every cube either kernel was timed on; B is small


def test_no_layout_change_on_a_cp_async_kernels_extrapolation():
    """A cp.async kernel of another layout, measured on cubes only, never draws a far shape over: its
    fits err by up to 30% off the grid."""
    nn = fits(1.0)("NN")[0]
    nt = Fitted.fit(NN.replace(layout="NT"), {Shape(n, n, n, "NT"): synthetic(NN, Shape(n, n, n), 0.004 / 1.4)
                                              for n in SIZES}, H100)
    copy_a, copy_b, fit = stage_plan(lambda lay: {"NN": [nn], "NT": [nt]}.get(lay, []), *FAR)
    assert fit.config.layout == "NN" and not (copy_a or copy_b)


def test_no_layout_change_on_extrapolation_where_the_own_layout_is_measured_near():
    """The request's own kernel measured at the shape, the TMA kernel only on cubes: the own layout stays."""
    M, N, K = FAR[:3]
    timed = {Shape(n, n, n): synthetic(NN, Shape(n, n, n), 0.004) for n in SIZES}
    timed[Shape(M, N, K)] = synthetic(NN, Shape(M, N, K), 0.004)
    nn = Fitted.fit(NN, timed, H100)
    nt = fits(1.4)("NT")[0]
    copy_a, copy_b, fit = stage_plan(lambda lay: {"NN": [nn], "NT": [nt]}.get(lay, []), *FAR)
    assert fit.config.layout == "NN" and not (copy_a or copy_b)


def test_a_tma_kernels_extrapolation_competes_with_the_own_layouts():
    """Both layouts extrapolated from cubes: the TMA kernel's fit (1-6% off on untimed shapes, measured)
    is compared like a measured one, so the faster TMA kernel serves the far shape through a copy of B."""
    copy_a, copy_b, fit = stage_plan(fits(1.4), *FAR)
    assert (copy_a, copy_b, fit.config.layout) == (False, True, "NT")


def test_shipped_h100_results_serve_large_nn_through_the_tma_kernel_and_small_ones_as_they_are():
    path = Path(__file__).resolve().parent.parent / "results" / "nvidia-h100-80gb-hbm3.json"
    r = load_file(path)
    lib = KernelLibrary(H100, r.entries, 0, False, r.timings)
    fits_for = lambda layout: lib.candidates("fp32", layout)
    copy_a, copy_b, fit = stage_plan(fits_for, 4096, 4096, 4096, "NN", 4096, 4096, 4096)
    assert fit.config.warp_specialized and fit.config.layout == "NT" and (copy_a, copy_b) == (False, True)
    copy_a, copy_b, fit = stage_plan(fits_for, 4096, 4096, 4096, "TT", 4096, 4096, 4096)
    assert fit.config.warp_specialized and (copy_a, copy_b) == (True, False)
    copy_a, copy_b, fit = stage_plan(fits_for, 1000, 1000, 1000, "NN", 1000, 1000, 1000)
    assert fit.config.layout == "NN" and not (copy_a or copy_b)


def test_shipped_h100_results_copy_a_skinny_operand_into_a_split_tma_kernel_and_no_wide_one():
    """Under small_pack_ms a split TMA kernel is reached only where the copy is a small share of it
    (split_copy_share): 4096x16x16384 NN copies B (1 MB) into the split 128x32 TMA kernel; 143x849x3291
    NN, whose B copy would cost about as much as that kernel, runs as it is."""
    path = Path(__file__).resolve().parent.parent / "results" / "nvidia-h100-80gb-hbm3.json"
    r = load_file(path)
    lib = KernelLibrary(H100, r.entries, 0, False, r.timings)
    fits_for = lambda layout: lib.candidates("fp32", layout)
    copy_a, copy_b, fit = stage_plan(fits_for, 4096, 16, 16384, "NN", 16384, 16, 16)
    assert fit.config.warp_specialized and fit.config.split_k > 1 and (copy_a, copy_b) == (False, True)
    copy_a, copy_b, fit = stage_plan(fits_for, 143, 849, 3291, "NN", 3291, 849, 849)
    assert fit.config.layout == "NN" and not (copy_a or copy_b)


def test_a_plans_predicted_time_reads_the_rows_as_the_copies_leave_them():
    """plan_ms: a plan that keeps unaligned rows is predicted on unaligned rows (4-byte copies), one that
    copies them on aligned rows plus the copies. `gemmgen results plan` printed the aligned prediction
    for both (28x8883x19 NN: 8.8 us against its own candidate line's 10.5)."""
    from gemmgen.runtime.staging import copies_ms, plan_ms

    fit = fits(1.0)("NN")[0]
    M, N, K = 3001, 2999, 1001                                    # A's and B's rows unaligned
    as_is = plan_ms(fit, M, N, K, "NN", K, N, False, False, BW)
    copied = plan_ms(fit, M, N, K, "NN", K, N, True, True, BW)
    s = Shape(M, N, K)
    assert as_is == fit.predict(s, False) and as_is > 1.1 * fit.predict(s, True)
    assert copied == fit.predict(s, True) + copies_ms(M, N, K, "NN", "NN", True, True, BW)
    assert plan_ms(fit, 4096, 4096, 4096, "NN", 4096, 4096, False, False, BW) == fit.predict(Shape(4096, 4096, 4096))
