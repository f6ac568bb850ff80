"""The correctness gate: a kernel must be as accurate as cuBLAS in the same mode, measured against a
float64 reference on fresh random inputs, before it is ever timed, reported or stored.

Two runs: alpha=1, beta=0 with C poisoned with NaN (every element must be written, and C must not
be read), then alpha=0.5, beta=3 on random C (the epilogue must read C exactly once). In each, our
relative Frobenius error against float64 may be at most :func:`allowed` for cuBLAS's error there:
1.5 x cuBLAS's, never below the class's floor, never above its ceiling.

>>> round(allowed("fp32", 2e-6), 12)     # SGEMM's error at 8192^3, times 1.5
3e-06
>>> allowed("fp32", 3e-8) == FLOOR["fp32"], allowed("f16", 0.0) == FLOOR["f16"]   # cuBLAS (nearly) exact
(True, True)
"""
from __future__ import annotations

from ..base.outcome import WrongResult

FACTOR = 1.5   # at most 1.5 x the error of cuBLAS in the same mode, on the same inputs
# The floor of the bound where cuBLAS is (nearly) exact: tiny K, or f16/bf16 inputs, whose products
# are exact in fp32. fp32 class: 3xTF32 drops small*small and truncates its TF32 parts (the
# warp-specialized cp.async kernels round A's small part), ~2^-21 per product whatever K, while SGEMM
# at K=1 rounds once (2^-24); 2^-19 is twice that, 32 fp32 unit roundoffs. tf32: cuBLAS in TF32 mode
# runs fp32 kernels where tensor cores do not pay (M or N = 1, K = 1, small ragged shapes: measured
# 2e-8..3e-7 on an H100), while a TF32 kernel's rounded operands err ~2.6e-4 at every shape; the floor
# is 2^-11 (one TF32 unit roundoff, 4.9e-4), so where cuBLAS does use TF32 (1.5 x 2.6e-4 = 3.9e-4) its
# error still decides above it. f16/bf16: 16 fp32 unit roundoffs, since only the fp32 accumulation
# errs and the tensor core's accumulator truncates.
FLOOR = {"fp32": 2.0 ** -19, "tf32": 2.0 ** -11, "f16": 2.0 ** -20, "bf16": 2.0 ** -20}
# The ceiling (and the fixed bound of earlier gemmgen): it holds even if the cuBLAS reference itself
# went wrong. fp32 accumulation over K=8192 lands near 2e-6; TF32 products err ~3e-4, so 5e-3 leaves
# a 10x margin; f16/bf16 inputs err only in the accumulation, whose truncation costs ~1e-5 at K=8192.
CEILING = {"fp32": 1e-5, "tf32": 5e-3, "f16": 1e-4, "bf16": 1e-4}
BOUND = CEILING["fp32"]
CASES = ((1.0, 0.0, True), (0.5, 3.0, False))


def mode_of(config) -> str:
    """The precision class a config is held to, which names the cuBLAS mode it is compared with:
    its input type for f16/bf16 inputs, else ``config.precision`` ("fp32" for simt and tf32x3, "tf32").

    >>> from gemmgen.kernel.presets import preset
    >>> mode_of(preset("v10")), mode_of(preset("tf32x3")), mode_of(preset("tf32"))
    ('fp32', 'fp32', 'tf32')
    """
    return config.dtype if config.dtype != "f32" else config.precision


def gate_bound(config) -> float:
    """The most relative error a config's class may ever have (the gate's ceiling): 1e-5 for
    fp32-accurate families, 5e-3 for tf32, 1e-4 for f16/bf16 inputs.

    >>> from gemmgen.kernel.presets import preset
    >>> gate_bound(preset("v10")), gate_bound(preset("tf32x3")), gate_bound(preset("tf32"))
    (1e-05, 1e-05, 0.005)
    """
    return CEILING[mode_of(config)]


def allowed(mode: str, cublas_err: float) -> float:
    """Our allowed error given cuBLAS's in the same mode: min(ceiling, max(floor, 1.5 x cuBLAS's))."""
    if mode not in CEILING:
        raise ValueError(f"precision class {mode!r} is not one of {', '.join(CEILING)}")
    return min(CEILING[mode], max(FLOOR[mode], FACTOR * cublas_err))


def rel_error(out, ref) -> float:
    """||out - ref||_F / ||ref||_F, computed in float64."""
    import cupy

    diff = out.astype(cupy.float64) - ref.astype(cupy.float64)
    den = float(cupy.linalg.norm(ref.astype(cupy.float64)))
    return float(cupy.linalg.norm(diff)) / den if den else float(cupy.linalg.norm(diff))


def judge(errors: list[dict], what: str = "") -> dict:
    """The gate's verdict on each case's errors (err_fp64, cublas_err_fp64, err_cublas, bound):
    raise WrongResult naming the first case over its bound, else return the first case's (the plain
    product A@B, what `gemmgen bench` reports), with err_cublas the worst over the cases.

    >>> judge([{"err_fp64": 1e-6, "cublas_err_fp64": 9e-7, "err_cublas": 5e-7, "bound": 2e-6},
    ...        {"err_fp64": 3e-7, "cublas_err_fp64": 3e-7, "err_cublas": 8e-7, "bound": 1.9e-6}])
    {'err_fp64': 1e-06, 'cublas_err_fp64': 9e-07, 'err_cublas': 8e-07, 'bound': 2e-06}
    """
    for e in errors:
        if not e["err_fp64"] <= e["bound"]:   # NaN fails too
            raise WrongResult(f"relative error {e['err_fp64']:.3g} against fp64 exceeds {e['bound']:.3g} "
                              f"(cuBLAS's is {e['cublas_err_fp64']:.3g}; {e.get('case', '')}){what}")
    first = {k: v for k, v in errors[0].items() if k != "case"}
    return {**first, "err_cublas": max(e["err_cublas"] for e in errors)}


def check(kernel, problem, bound: float | None = None) -> dict[str, float]:
    """Run the gate; return the errors of the plain product (see :func:`judge`), or raise WrongResult.

    ``bound`` replaces the relative bound by a fixed one (for experiments).
    """
    mode = mode_of(kernel.config)
    errors = []
    for alpha, beta, poison in CASES:
        c0 = problem.fill_c(poison)
        kernel.launch(problem.operands(alpha, beta))
        out = problem.C
        _finite(out, alpha, beta)
        ref = problem.reference64(alpha, beta, c0)
        ours_cublas = problem.cublas(out=c0.copy(), mode=mode, alpha=alpha, beta=beta)
        cublas_err = rel_error(ours_cublas, ref)
        errors.append({"err_fp64": rel_error(out, ref), "cublas_err_fp64": cublas_err,
                       "err_cublas": rel_error(out, ours_cublas),
                       "bound": allowed(mode, cublas_err) if bound is None else bound,
                       "case": f"alpha={alpha}, beta={beta}"})
    return judge(errors, f", shape {problem.shape}, cuBLAS mode {mode}")


def _finite(out, alpha: float, beta: float) -> None:
    import cupy

    bad = ~cupy.isfinite(out)
    count = int(bad.sum())
    if count:
        i, j = divmod(int(cupy.flatnonzero(bad)[0]), out.shape[1])
        raise WrongResult(f"{count} of {out.size} outputs are NaN/Inf, first at row {i}, column {j} "
                          f"(alpha={alpha}, beta={beta}{', C poisoned with NaN' if beta == 0 else ''}): "
                          "unwritten or wrongly indexed")
