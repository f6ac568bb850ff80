"""Replay an A/B without a GPU: plan each shape of a ``benchmarks/ab_plans.py --json`` file again, with a
results folder and dispatch constants of your choice, and score each plan with the A/B's measured ratio
where it is one of the two plans the A/B timed (a plan that is neither is counted as unknown).

    python benchmarks/replay_ab.py docs/bench/h100-ab-unsplit-kernels-seeds1-12-s15-20261125.json results \\
        --set EXTRAPOLATED=0.2

In-sample by construction: a constant chosen this way still needs an A/B on seeds the replay never saw.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dispatch_loo import set_constants  # noqa: E402
from matmul_vs_cublas import geomean, packed_lds  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ab", help="an ab_plans.py --json file")
    ap.add_argument("results", help="the results folder to plan with (e.g. results)")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a field of gemmgen.runtime.policy.Policy")
    args = ap.parse_args(argv)

    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.library import KernelLibrary

    policy = set_constants(args.set, "replay_ab")
    spec = known(args.gpu)
    found = load_device(spec.name, args.results)
    lib = KernelLibrary(spec, found.entries, timings=found.timings, policy=policy)
    rows = json.load(open(args.ab))["rows"]
    scored, unknown = [], 0
    for r in rows:
        M, N, K = map(int, r["shape"].split("x"))
        L = r["layout"]
        _, _, fit = lib.staged_fit(M, N, K, L, *packed_lds(M, N, K, L), N, "fp32", None)
        plans = {r["a_plan"].split(" ")[0]: r["a_ratio"], r["b_plan"].split(" ")[0]: r["b_ratio"]}
        if fit.config.name in plans:
            scored.append(plans[fit.config.name])
        else:
            unknown += 1
    print(f"{len(rows)} shapes: A {geomean(r['a_ratio'] for r in rows):.3f}x, "
          f"B {geomean(r['b_ratio'] for r in rows):.3f}x; "
          f"replayed plans {geomean(scored):.3f}x over {len(scored)} scored, {unknown} neither A's nor B's plan")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
