"""The correctness gate: a kernel must match cuBLAS (strict fp32) and a float64 reference on fresh
random inputs before it is ever timed, reported or stored.

Two runs: alpha=1, beta=0 with C poisoned with NaN (every element must be written, and C must not
be read), then alpha=0.5, beta=3 on random C (the epilogue must read C exactly once).
"""
from __future__ import annotations

from .outcome import WrongResult

BOUND = 1e-5   # relative Frobenius error; fp32 accumulation over K=8192 lands near 1e-6
# Per accuracy class (KernelConfig.precision). TF32 rounds each operand to 10 mantissa bits (unit
# roundoff 2^-11 = 4.9e-4): products carry ~3e-4 relative error, so 5e-3 leaves a 10x margin while
# still catching a wrong index (relative error ~1). 3xTF32 is fp32-accurate and keeps BOUND.
BOUNDS = {"fp32": BOUND, "tf32": 5e-3}
CASES = ((1.0, 0.0, True), (0.5, 3.0, False))


def rel_error(out, ref) -> float:
    """||out - ref||_F / ||ref||_F, computed in float64."""
    import cupy

    diff = out.astype(cupy.float64) - ref.astype(cupy.float64)
    den = float(cupy.linalg.norm(ref.astype(cupy.float64)))
    return float(cupy.linalg.norm(diff)) / den if den else float(cupy.linalg.norm(diff))


def gate_bound(config) -> float:
    """The relative error a config's results may have: 1e-5 for fp32-accurate families, 5e-3 for tf32.

    >>> from gemmgen.presets import preset
    >>> gate_bound(preset("v10")), gate_bound(preset("tf32x3")), gate_bound(preset("tf32"))
    (1e-05, 1e-05, 0.005)
    """
    return BOUNDS[config.precision]


def check(kernel, problem, bound: float | None = None) -> dict[str, float]:
    """Run the gate; return the worst errors against cuBLAS and float64, or raise WrongResult.

    ``bound`` defaults to :func:`gate_bound` of the kernel's config.
    """
    bound = gate_bound(kernel.config) if bound is None else bound
    worst = {"err_cublas": 0.0, "err_fp64": 0.0}
    for alpha, beta, poison in CASES:
        c0 = problem.fill_c(poison)
        kernel.launch(problem.operands(alpha, beta))
        out = problem.C
        _finite(out, alpha, beta)
        ref32 = problem.cublas() * alpha + (beta * c0 if beta else 0.0)
        errs = {"err_cublas": rel_error(out, ref32), "err_fp64": rel_error(out, problem.reference64(alpha, beta, c0))}
        for key, err in errs.items():
            if not err <= bound:
                raise WrongResult(f"relative error {err:.3g} against {key[4:]} exceeds {bound:g} "
                                  f"(alpha={alpha}, beta={beta}, shape {problem.shape})")
            worst[key] = max(worst[key], err)
    return worst


def _finite(out, alpha: float, beta: float) -> None:
    import cupy

    bad = ~cupy.isfinite(out)
    count = int(bad.sum())
    if count:
        i, j = divmod(int(cupy.flatnonzero(bad)[0]), out.shape[1])
        raise WrongResult(f"{count} of {out.size} outputs are NaN/Inf, first at row {i}, column {j} "
                          f"(alpha={alpha}, beta={beta}{', C poisoned with NaN' if beta == 0 else ''}): "
                          "unwritten or wrongly indexed")
