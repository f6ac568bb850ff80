"""First-call tuning scored offline: what `gemmgen.tune_first_calls(N)` would pick on oracle files, no GPU.

For each row of an oracle file (`offgrid.py time` / session 41's launch oracles: a shape, cuBLAS's time and
the times of many kernels on it), the dispatch's own-layout pick and the candidates first-call tuning
would time (`KernelLibrary.alternatives(top=N, per_family=2)`, the pick among them) are looked up among the
row's timed kernels; tuning's choice is the fastest of those, each time multiplied by a random factor of
--noise (log-normal sd: a first call measures once, with noise), drawn --draws times. Prints, per N,
cuBLAS over the pick's time (geomean), the share of rows under 0.9x, and how many candidates the row had
timed; beside it the model's pick alone and the best timed kernel. Rows whose pick was not timed are left
out (named in the count).

    python benchmarks/tune_offline.py --gpu h100 docs/bench/h100-launch-oracle-s41-20261127.json --top 1 --top 3
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from matmul_vs_cublas import geomean  # noqa: E402


def score(lib, rows: list[dict], tops: list[int], noise: float, draws: int) -> dict:
    """{"pick": [...], "best": [...], top: [(ratio, candidates timed), ...]}: cuBLAS / time per row."""
    from gemmgen.base.shape import Shape
    from gemmgen.runtime.policy import DEFAULT
    from gemmgen.runtime.dispatch import choose

    out: dict = {"pick": [], "best": [], "skipped": 0, **{t: [] for t in tops}}
    for r in rows:
        s = Shape.parse(r["shape"])
        lda = s.M if s.layout[0] == "T" else s.K
        ldb = s.K if s.layout[1] == "T" else s.N
        fit = choose(lib.candidates("fp32", s.layout), s.M, s.N, s.K, s.layout, lda, ldb, s.N)
        ms = r["ms"]
        if fit is None or fit.config.name not in ms:
            out["skipped"] += 1
            continue
        out["pick"].append(r["cublas_ms"] / ms[fit.config.name])
        out["best"].append(r["cublas_ms"] / min(ms.values()))
        for top in tops:
            names = {fit.config.name} | {c.name for c in lib.alternatives(s.M, s.N, s.K, s.layout, lda, ldb, s.N,
                                                                          top=top, per_family=2)}
            timed = sorted(n for n in names if n in ms)
            rnd = random.Random(f"{r['shape']}/{top}")
            for _ in range(draws):
                seen = {n: ms[n] * math.exp(rnd.gauss(0.0, noise)) for n in timed}
                chosen = min(timed, key=seen.get)
                if seen[chosen] > seen[fit.config.name] * (1.0 - DEFAULT.tune_margin):
                    chosen = fit.config.name   # as the runtime: a candidate must beat the plan by the policy's tune_margin
                out[top].append((r["cublas_ms"] / ms[chosen], len(timed)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", nargs="+", type=Path, help="oracle files (JSON with rows of shape, cublas_ms, ms)")
    ap.add_argument("--gpu", required=True, help="the GPU whose shipped results pick (h100, h200)")
    ap.add_argument("--top", type=int, action="append", help="tune_first_calls(N) to score (repeatable; default 3)")
    ap.add_argument("--noise", type=float, default=0.05, help="log-normal sd of a first call's timing (default 0.05)")
    ap.add_argument("--draws", type=int, default=20, help="noisy draws per row (default 20)")
    args = ap.parse_args(argv)
    tops = args.top or [3]
    if any(not 1 <= t <= 16 for t in tops) or args.noise < 0 or args.draws < 1:
        ap.error(f"--top takes 1..16 (got {tops}), --noise >= 0 (got {args.noise}), --draws >= 1 (got {args.draws})")
    rows = []
    for path in args.rows:
        try:
            rows += json.loads(path.read_text())["rows"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            ap.error(f"{path}: not an oracle file ({type(exc).__name__}: {exc})")

    from gemmgen.base.devices import UnknownDevice, known
    from gemmgen.records.lookup import ResultsError, load_device
    from gemmgen.runtime.library import KernelLibrary

    try:
        found = load_device(args.gpu, None, missing_ok=False)
        lib = KernelLibrary(known(found.name), found.entries, timings=found.timings)
    except (ResultsError, UnknownDevice) as exc:
        ap.error(str(exc))
    got = score(lib, rows, tops, args.noise, args.draws)
    n = len(got["pick"])
    print(f"{found.name}: {n} rows ({got['skipped']} left out: the pick untimed), noise {args.noise}, {args.draws} draws")
    under = lambda xs: 100.0 * sum(x < 0.9 for x in xs) / len(xs) if xs else float("nan")
    print(f"  model's pick        {geomean(got['pick']):.3f}x cuBLAS, under 0.9x {under(got['pick']):.1f}%")
    for top in tops:
        ratios = [x for x, _ in got[top]]
        cands = sum(c for _, c in got[top]) / max(1, len(got[top]))
        print(f"  tune_first_calls({top:>2}) {geomean(ratios):.3f}x, under 0.9x {under(ratios):.1f}%, "
              f"{cands:.1f} candidates timed a row")
    print(f"  best timed          {geomean(got['best']):.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
