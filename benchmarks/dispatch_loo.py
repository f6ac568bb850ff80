"""How well the dispatch rule generalizes, from the shipped timings alone (no GPU): leave one grid shape out.

For each M x N x K of the tuning grid, every measurement of it (all layouts) is taken out of the
timings, the dispatch plans the request from what is left
(:meth:`gemmgen.runtime.library.KernelLibrary.staged_fit`, the rule gemmgen.matmul uses), and the plan is scored with the times that were taken out: the picked
kernel's measured time (plus the predicted copies, if the plan copies) against the fastest kernel
measured on that shape in its own layout without copies (the best; a plan with copies can beat it)
and against cuBLAS SGEMM's time there. Plans whose kernel was never timed on the shape (a kernel of
another layout serving the request) are counted but not scored.

    python -m benchmarks.dispatch_loo --gpu h100
    python -m benchmarks.dispatch_loo --gpu h200 --layout NN --worst 20 --json loo.json
    python -m benchmarks.dispatch_loo --gpu h100 --set WIDTH=0.8 --set PRIOR=0.2
    python -m benchmarks.dispatch_loo --gpu h100 --hold-out search/grid-hopper-few-rows.json   # a regime unseen
    python -m benchmarks.dispatch_loo --gpu h100 --hold-out search/grid-hopper.json \
        --hold-out search/grid-hopper-skinny.json --folds 5      # 5-fold cross-validation over both grids

A grid neighbour is one grid step away, where a shape chosen by someone else lies half a step from the
nearest one on average: the scores are a pessimistic bound on the dispatch's off-grid choices, and a
way to compare variants of the rule (``--set NAME=VALUE`` changes a constant of
gemmgen.runtime.predict, .dispatch or .staging) on thousands of recorded times without a GPU.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from benchmarks.matmul_vs_cublas import geomean


def held_out(timings, out: set):
    """The timings without any measurement of the M x N x K in ``out`` (any layout)."""
    from gemmgen.base.shape import Shape
    from gemmgen.records.timings import KernelTimes, Timings

    def keep(key: str) -> bool:
        s = Shape.parse(key)
        return (s.M, s.N, s.K) not in out
    kernels = {n: KernelTimes(k.config, {s: t for s, t in k.ms.items() if keep(s)}, k.resident)
               for n, k in timings.kernels.items()}
    return Timings(kernels, timings.cublas)


def score(timings, spec, key: str, family: str | None, lib=None) -> dict | None:
    """One held-out shape's row: the plan from the other shapes' timings (or from ``lib``, a library
    of timings without it), and its measured outcome."""
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.library import KernelLibrary
    from gemmgen.runtime.staging import copies_ms, plan_ms

    s = Shape.parse(key)
    mnk = (s.M, s.N, s.K)
    measured = {n: k.ms[key] for n, k in timings.kernels.items()
                if key in k.ms and k.config.precision == "fp32" and (family is None or k.config.family == family)}
    cublas = timings.cublas.get("fp32", {}).get(key)
    if not measured or (cublas is None and lib is None):
        return None
    lib = lib or KernelLibrary(spec, {}, timings=held_out(timings, {mnk}), policy=_policy())
    lda = s.K if s.layout[0] == "N" else s.M
    ldb = s.N if s.layout[1] == "N" else s.K
    pack_a, pack_b, fit = lib.staged_fit(*mnk, s.layout, lda, ldb, s.N, "fp32", family)
    if fit is None:
        return None
    run = fit.config.layout
    run_key = Shape(*mnk, run).key
    ms = timings.kernels.get(fit.config.name)
    ms = ms.ms.get(run_key) if ms else None
    copies = copies_ms(*mnk, s.layout, run, pack_a, pack_b, lib.copy_bandwidth)
    oracle = min(measured, key=measured.get)
    row = {"shape": key, "cublas_ms": cublas, "oracle_ms": measured[oracle], "oracle": oracle,
           "kernel": fit.config.name, "copies": "A" * pack_a + "B" * pack_b, "predicted_ms": None,
           "ms": None if ms is None else ms + copies}
    row["predicted_ms"] = plan_ms(fit, *mnk, s.layout, lda, ldb, pack_a, pack_b, lib.copy_bandwidth)
    return row


_POLICY: list = []   # the Policy --set makes, for every library this script builds


def set_constants(pairs: list[str], prog: str = "dispatch_loo"):
    """The planner's Policy with NAME=VALUE fields set (gemmgen.runtime.policy.Policy), kept for this script's
    libraries and returned; SystemExit names a bad pair."""
    from gemmgen.runtime.policy import Policy

    values = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        try:
            values[name] = float(value)
        except ValueError:
            raise SystemExit(f"{prog}: --set {pair!r}: {value!r} is not a number") from None
    try:
        policy = Policy.overridden(values, f"{prog}: --set")
    except ValueError as err:
        raise SystemExit(str(err)) from None
    _POLICY[:] = [policy]
    return policy


def _policy():
    from gemmgen.runtime.policy import DEFAULT

    return _POLICY[0] if _POLICY else DEFAULT


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h100", help="the results of this GPU (h100, h200; default h100)")
    ap.add_argument("--results", metavar="DIR", help="read results from DIR instead of the shipped ones")
    ap.add_argument("--family", help="restrict the dispatch to one family (e.g. simt)")
    ap.add_argument("--layout", action="append", default=[], help="score only these layouts (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a field of gemmgen.runtime.policy.Policy to change first (repeatable)")
    ap.add_argument("--worst", type=int, default=15, metavar="N", help="print the N rows of most regret")
    ap.add_argument("--json", metavar="FILE", help="write every row here")
    ap.add_argument("--hold-out", metavar="GRID", action="append", default=[],
                    help="leave out every shape of this grid file at once (repeatable), fit once, and score "
                         "those shapes: a whole regime the dispatch has not seen, not one shape at a time")
    ap.add_argument("--folds", type=int, default=1, metavar="N",
                    help="with --hold-out: N-fold cross-validation instead, each fold leaving out every N-th "
                         "of the grids' shapes (sorted) and fitting on the rest (the other grids' too)")
    args = ap.parse_args(argv)

    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device

    set_constants(args.set)
    try:
        spec = known(args.gpu)
    except (KeyError, ValueError) as exc:
        raise SystemExit(f"dispatch_loo: --gpu {args.gpu!r}: {exc}") from None
    found = load_device(spec.key, args.results)
    keys = sorted(found.timings.cublas.get("fp32", {}))
    keys = [k for k in keys if not args.layout or k.split("/")[1] in args.layout]
    if args.hold_out:
        from gemmgen.base.shape import Shape
        from gemmgen.runtime.library import KernelLibrary

        grid = set()
        for path in args.hold_out:
            try:
                grid |= set(json.loads(Path(path).read_text())["shapes"])
            except (OSError, ValueError, KeyError) as exc:
                raise SystemExit(f"dispatch_loo: --hold-out {path!r}: not a grid file ({exc})") from None
        timed = {key for k in found.timings.kernels.values() for key in k.ms}   # cuBLAS's times are not merged
        mnks = sorted({(s.M, s.N, s.K) for s in map(Shape.parse, grid)})
        keys = sorted(k for k in grid & timed if not args.layout or k.split("/")[1] in args.layout)
        folds = max(1, args.folds)
        rows = []
        for i in range(folds):
            out = set(mnks[i::folds])
            lib = KernelLibrary(spec, {}, timings=held_out(found.timings, out), policy=_policy())
            for key in keys:
                s = Shape.parse(key)
                if (s.M, s.N, s.K) in out:
                    row = score(found.timings, spec, key, args.family, lib)
                    if row is not None:
                        rows.append(row)
            print(f"\r{i + 1}/{folds} folds", end="", file=sys.stderr, flush=True)
    else:
        rows = []
        for i, key in enumerate(keys):
            row = score(found.timings, spec, key, args.family)
            if row is not None:
                rows.append(row)
            print(f"\r{i + 1}/{len(keys)} shapes", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    scored = [r for r in rows if r["ms"] is not None]
    if not scored:
        raise SystemExit("dispatch_loo: no held-out shape could be scored (no timings in these results?)")
    regret = [r["ms"] / r["oracle_ms"] for r in scored]
    plain = [r for r in scored if not r["copies"]]
    print(f"{spec.name}: {len(scored)} grid shapes scored, family {args.family or 'any'}; not scored: "
          f"{len(rows) - len(scored)} plans whose kernel was not timed there (a kernel of another layout "
          "serving the request)")
    print(f"  pick / best (time ratio, geomean; best: the fastest kernel timed there in the request's layout, "
          f"no copies): {geomean(regret):.3f} over all plans, {geomean(r['ms'] / r['oracle_ms'] for r in plain):.3f} "
          f"over the {len(plain)} without copies; over 1.10: {sum(x > 1.1 for x in regret)}, "
          f"over 1.25: {sum(x > 1.25 for x in regret)}")
    vs = [r for r in scored if r["cublas_ms"]]
    print(f"  vs cuBLAS ({len(vs)} shapes with its time): pick {geomean(r['cublas_ms'] / r['ms'] for r in vs):.3f}x "
          f"(copies at their predicted time), best {geomean(r['cublas_ms'] / r['oracle_ms'] for r in vs):.3f}x")
    err = [r["ms"] / r["predicted_ms"] for r in scored]
    err.sort()
    print(f"  measured / predicted: median {err[len(err) // 2]:.2f}, 10th-90th percentile "
          f"{err[len(err) // 10]:.2f}-{err[(9 * len(err)) // 10]:.2f}")
    print(f"\n{'shape':<22} {'pick/best':>11} {'pick':>7} {'best':>7}  kernel")
    for r in sorted(scored, key=lambda r: -r["ms"] / r["oracle_ms"])[:args.worst]:
        vs_pick, vs_best = ((f"{r['cublas_ms'] / r['ms']:>6.2f}x", f"{r['cublas_ms'] / r['oracle_ms']:>6.2f}x")
                            if r["cublas_ms"] else ("     -", "     -"))
        print(f"{r['shape']:<22} {r['ms'] / r['oracle_ms']:>11.3f} {vs_pick} {vs_best}  {r['kernel']}"
              f"{' copies ' + r['copies'] if r['copies'] else ''}")
    if args.json:
        Path(args.json).write_text(json.dumps({"gpu": spec.name, "set": args.set, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
