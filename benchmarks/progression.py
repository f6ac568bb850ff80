"""Regenerate docs/PERFORMANCE.md's progression table: presets v0..v13 against cuBLAS, same run.

    GEMMGEN_COMMIT=$(git rev-parse --short HEAD) python -m benchmarks.progression \
        --shape 4096x4096x4096 --shape 8192x8192x8192 --out progression.md --json progression.json

Writes a markdown section (device, driver, CUDA, date, command, commit, one table per shape) that is
pasted into docs/PERFORMANCE.md as it stands.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import gemmgen
from gemmgen.base.devices import detect, fingerprint
from gemmgen.measure.benchmark import table, to_json
from gemmgen.records.best import resolve_preset


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--preset", action="append", default=[])
    ap.add_argument("--out", default="progression.md")
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=float, default=200)
    args = ap.parse_args(argv)
    shapes = args.shape or ["4096x4096x4096", "8192x8192x8192"]
    configs = [resolve_preset(p, detect(0)) for p in args.preset] or None   # v13 as gemmgen.bench means it
    progress = lambda i, n, r: print(f"[{i}/{n}] {r.label} {r.shape}: "
                                     f"{f'{r.measurement.tflops:.2f} TFLOP/s' if r.measurement else r.failure}", flush=True)
    rows = gemmgen.bench(configs, shapes, progress=progress, rep_ms=args.rep_ms)
    fp = fingerprint(0)
    clocks = sorted({c for r in rows if r.measurement for c in r.measurement.clock_mhz})
    head = (f"- Device: {fp['name']} ({fp['sm_count']} SMs, cc {fp['cc']}), driver API {fp['driver']}, "
            f"CUDA runtime {fp['cuda']}, SM clock readings {clocks[0]}-{clocks[-1]} MHz\n"
            f"- Date: {datetime.date.today()}. Commit: {os.environ.get('GEMMGEN_COMMIT', 'unknown')}.\n"
            f"- Command: `python -m benchmarks.progression {' '.join(sys.argv[1:])}`\n")
    with open(args.out, "w") as fh:
        fh.write(head + "\n" + table(rows) + "\n")
    if args.json:
        json.dump(to_json(rows, fp), open(args.json, "w"), indent=1)
    print(open(args.out).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
