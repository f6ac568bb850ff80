"""Where a warp-specialized wgmma kernel's or a SIMT kernel's time goes, block by block: clock stamps planted
into its source.

    python benchmarks/ws_timeline.py KERNEL@MxNxK [KERNEL@MxNxK ...] [--json FILE]      (GPU)

KERNEL is a kernel of the shipped results (any GPU's file); the layout is the kernel's. The script renders
the kernel, plants stamps (benchmarks/stamps.py: %globaltimer, clock64 and the block's SM) at its
milestones and, in a warp-specialized kernel, clock counters around its roles' waits and work; gates and
times the planted kernel against the plain one and cuBLAS; runs it RUNS more times after an L2 flush and
prints, per kernel, the median over those runs of:

  grid     when the blocks enter after the first (median, last), when the last ends, the SMs used and
           blocks an SM, how long an SM has blocks (its first entry to its last end; and the mean over all
           the GPU's SMs as a share of the grid's span), the globaltimer's step (figures near it are noise);
           each figure's median is taken on its own
  phases   medians over the blocks: entry -> the first stage landed -> split -> the consumers' first stage
           -> the epilogue -> the end (warp-specialized), entry -> the first stage landed -> the epilogue
           -> the end (SIMT, thread 0's; the end after a barrier)
  regions  (warp-specialized) the clocks each role spent per block: the producer waiting on full and empty,
           splitting B, issuing copies; the consumers waiting on ready, splitting A, issuing wgmma, waiting
           for them, adding the partial

The kernels it knows: cp.async warp-specialized 3xTF32, one block an SM, one tile a block (not persistent),
unsplit K; cp.async SIMT kernels of unsplit K; at most 16384 blocks. The regions are counted by one
producer thread and one thread of consumer 0. The stamps cost a few percent (planted vs plain in the header
line). Session 39 found with it that a 128x128 3xTF32 K step takes 1.3-1.4 us where its tensor work is
0.78 us: the two consumers split A in step while the tensor cores idle, and the producer's split of B took
0.78 us a stage (0.48-0.67 once it loaded two float4s at a time). The SIMT stamps and the grid line are for
the launch-sized shapes (session 45: Nsight Compute saw the SMs idle 1.8 us of a 4.3 us tiny SIMT kernel,
cuBLAS's alike): where that time sits, the blocks' entry, their work or the grid's drain.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from stamps import (BLOCKS, PHASES, REGIONS, SIMT_PHASES, SIMT_STAMPS, STAMPS, kind_of,  # noqa: E402
                    known_kind, plant)


def configs() -> dict:
    """Kernel name -> config (dict) over the shipped results files."""
    out: dict = {}
    for f in sorted((ROOT / "results").glob("*.json")):
        for n, k in json.loads(f.read_text())["timings"]["kernels"].items():
            out.setdefault(n, k["config"])
    return out


def kernel_at(text: str, known: dict) -> tuple[str, str]:
    """KERNEL@MxNxK -> (KERNEL, MxNxK); ValueError where KERNEL is none of ``known`` (the shipped results')."""
    name, _, mnk = text.partition("@")
    if name not in known:
        raise ValueError(f"unknown kernel {name!r}: name one of the shipped results' kernels (gemmgen results plan ...)")
    return name, mnk


def sizes(mnk: str, text: str) -> tuple[int, int, int]:
    """MxNxK of the item ``text`` -> (M, N, K); ValueError unless three positive sizes."""
    dims = mnk.split("x")
    if len(dims) != 3 or not all(d.isdecimal() and int(d) > 0 for d in dims):
        raise ValueError(f"bad shape {mnk!r} in {text!r}: want KERNEL@MxNxK with positive sizes")
    M, N, K = map(int, dims)
    return M, N, K


def parse_item(text: str, known: dict) -> tuple[str, str]:
    """KERNEL@MxNxK -> (kernel, MxNxK); ValueError naming what is wrong."""
    from gemmgen.kernel.config import KernelConfig

    name, mnk = kernel_at(text, known)
    why = known_kind(known[name])
    if why:
        raise ValueError(f"kernel {name!r} is {why}: the stamps fit cp.async warp-specialized 3xTF32 kernels, "
                         "one block an SM, one tile a block, unsplit K, and cp.async SIMT kernels of unsplit K")
    M, N, K = sizes(mnk, text)
    g = KernelConfig.from_dict(known[name]).grid(M, N, K)
    if g[0] * g[1] * g[2] > BLOCKS:
        raise ValueError(f"{text!r} launches {g[0] * g[1] * g[2]} blocks; the stamps hold {BLOCKS}: take a smaller shape")
    return name, mnk


RUNS = 9   # flushed runs whose stamps are read: each figure is the median of the runs' figures


def grid_figures(t, blocks: int, sm_count: int) -> dict:
    """One run's grid, from its stamps ``t`` (blocks x 32: globaltimer ns at 0..14, the SM at 15): when the
    blocks enter after the first (median, last), when the last ends, the SMs that ran blocks and how many
    each (median, most), how long an SM had blocks (its first entry to its last end: median, and the mean
    over all ``sm_count`` SMs, idle ones at 0, as a share of the grid's span), and the globaltimer's
    step (the least gap between distinct stamps: figures near it are noise)."""
    import numpy as np

    t = t[:blocks]
    if not (t[:, [0, 14]] > 0).all():
        raise SystemExit("ws_timeline: a block left no entry or end stamp (the planted anchors moved?)")
    g0, end = t[:, 0].min(), t[:, 14].max()
    entry = (t[:, 0] - g0) / 1e3
    sms = np.unique(t[:, 15], return_counts=True)
    spans = [(t[t[:, 15] == s, 14].max() - t[t[:, 15] == s, 0].min()) / 1e3 for s in sms[0]]
    gaps = np.diff(np.unique(t[:, [0, 14]]))
    return {"entry_median_us": float(np.median(entry)), "entry_last_us": float(entry.max()),
            "last_block_end_us": float((end - g0) / 1e3), "sms_used": len(sms[0]),
            "blocks_per_sm_median": float(np.median(sms[1])), "blocks_per_sm_most": int(sms[1].max()),
            "sm_busy_median_us": float(np.median(spans)),
            "sm_busy_share": float(sum(spans) * 1e3 / sm_count / max(end - g0, 1)),
            "timer_step_us": float(gaps.min() / 1e3) if len(gaps) else 0.0}


def measure(session, config, shape, code: str, kind: str = "ws") -> dict:
    """Gate and time the planted and the plain kernel against cuBLAS; RUNS more flushed runs' stamps."""
    import cupy
    import numpy as np

    planted, plain = session.retime([config, config], shape, rep_ms=40, codes=[code, None], validated=True)
    k = session.kernel(config, code, validated=True)
    def buffer(name: str, count: int):
        v = k.module.get_global_var(name)
        if not isinstance(v, cupy.cuda.MemoryPointer):
            v = cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(int(v), count * 8, k.module), 0)
        return cupy.ndarray((count,), cupy.uint64, v)
    tl, acc = buffer("gg_tl", BLOCKS * 32), buffer("gg_acc", BLOCKS * 16)
    stream = cupy.cuda.get_current_stream()
    blocks = int(np.prod(config.grid(shape.M, shape.N, shape.K)))
    mhz, assumed = (planted.clock_mhz[1], False) if planted.clock_mhz[1] else (session.spec.clock_mhz, True)
    stamps, phases = (SIMT_STAMPS, SIMT_PHASES) if kind == "simt" else (STAMPS, PHASES)
    runs = []
    for _ in range(RUNS):
        tl.fill(0)
        acc.fill(0)
        session.flush(stream)
        k.launch(session.problem(shape).operands(1.0, 0.0))
        stream.synchronize()
        t = tl.get().reshape(BLOCKS, 32)[:blocks].astype(np.int64)
        clocks = t[:, 16:]
        def span(a: int, b: int):
            ok = (clocks[:, a] > 0) & (clocks[:, b] > 0)
            return float(np.median((clocks[ok, b] - clocks[ok, a]) / mhz)) if ok.any() else None
        regions = {}
        if kind == "ws":   # only the warp-specialized stamps count clocks by region
            sums = acc.get().reshape(BLOCKS, 16)[:blocks].astype(np.int64)
            regions = {v: float(np.median(sums[:, i])) / mhz for i, v in REGIONS.items()}
        runs.append({"phases_us": {f"{stamps[a]} -> {stamps[b]}": span(a, b) for a, b in phases},
                     "regions_us": regions, "grid": grid_figures(t, blocks, session.spec.sm_count)})
    def median(get):
        got = [v for v in map(get, runs) if v is not None]
        return round(float(np.median(got)), 3) if got else None
    return {"kernel": config.name, "shape": str(shape), "blocks": blocks, "sm_mhz": mhz, "mhz_assumed": assumed,
            "planted_us": planted.ms * 1e3, "plain_us": plain.ms * 1e3, "cublas_us": plain.cublas_ms * 1e3,
            "runs": RUNS, "grid": {key: median(lambda r: r["grid"][key]) for key in runs[0]["grid"]},
            "phases_us": {key: median(lambda r: r["phases_us"][key]) for key in runs[0]["phases_us"]},
            "regions_us": {key: median(lambda r: r["regions_us"][key]) for key in runs[0]["regions_us"]}}


def report(row: dict) -> str:
    g = row["grid"]
    lines = [f"{row['kernel']} at {row['shape']}: {row['blocks']} blocks, plain {row['plain_us']:.1f} us "
             f"(planted {row['planted_us']:.1f}), cuBLAS {row['cublas_us']:.1f} us; clocks at {row['sm_mhz']} "
             f"MHz{' (assumed)' if row['mhz_assumed'] else ''}; medians of {row['runs']} flushed runs",
             f"  grid: blocks enter {g['entry_median_us']} us after the first (the last {g['entry_last_us']}), the last "
             f"ends at {g['last_block_end_us']} us; {g['sms_used']:g} SMs ran {g['blocks_per_sm_median']:g} blocks "
             f"each (at most {g['blocks_per_sm_most']:g}), busy {g['sm_busy_median_us']} us (all SMs: "
             f"{g['sm_busy_share']:.0%} of the span); globaltimer step {g['timer_step_us']} us"]
    lines += [f"  {k:70s} {v if v is not None else '-':>8} us" for k, v in row["phases_us"].items()]
    if row["regions_us"]:
        lines += ["  per block, clocks by region:"] + [f"    {k:40s} {v:8.2f} us" for k, v in row["regions_us"].items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("items", nargs="+", metavar="KERNEL@MxNxK")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    known = configs()
    try:
        items = [parse_item(i, known) for i in args.items]
        if args.json and not Path(args.json).resolve().parent.is_dir():
            raise ValueError(f"--json {args.json!r}: its folder does not exist")
    except ValueError as err:
        print(f"ws_timeline: {err}", file=sys.stderr)
        return 2

    from gemmgen.base.shape import Shape
    from gemmgen.codegen.render import render_validated
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.measure.session import Session

    session, rows = Session(0), []
    for name, mnk in items:
        config = KernelConfig.from_dict(known[name])
        kind = kind_of(known[name])
        row = measure(session, config, Shape.parse(f"{mnk}/{config.layout}"),
                      plant(render_validated(config, session.spec.arch).code, kind), kind)
        print(report(row), flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
