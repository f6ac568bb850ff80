"""Where a warp-specialized wgmma kernel's time goes, block by block: clock stamps planted into its source.

    python benchmarks/ws_timeline.py KERNEL@MxNxK [KERNEL@MxNxK ...] [--json FILE]      (GPU)

KERNEL is a kernel of the shipped results (any GPU's file); the layout is the kernel's. The script renders
the kernel, plants stamps (%globaltimer and clock64) at the producer's and the consumers' milestones and
clock counters around their waits and their work, gates and times the planted kernel against the plain
one and cuBLAS, runs it once more after an L2 flush and prints, per kernel, medians over its blocks:

  phases   entry -> the first stage landed -> split -> the consumers' first stage -> the epilogue -> the end
  regions  the clocks each role spent per block: the producer waiting on full and empty, splitting B,
           issuing copies; the consumers waiting on ready, splitting A, issuing wgmma, waiting for them,
           adding the partial

The kernels it knows: cp.async warp-specialized 3xTF32, one block an SM, one tile a block (not persistent),
unsplit K, at most 16384 blocks. The regions are counted by one producer thread and one thread of
consumer 0. The stamps cost a few percent (planted vs plain in the header line). Session 39 found with it
that a 128x128 3xTF32 K step takes 1.3-1.4 us where its tensor work is 0.78 us: the two consumers split A
in step while the tensor cores idle, and the producer's split of B took 0.78 us a stage (0.48-0.67 once it
loaded two float4s at a time).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = 16384          # blocks the stamp buffers hold

HEAD = rf"""
__device__ unsigned long long gg_tl[{BLOCKS} * 32];   // per block: 16 %globaltimer stamps, then their clock64
__device__ unsigned long long gg_acc[{BLOCKS} * 16];  // per block: clocks by region (producer 0..3, consumer 0 8..12)
__device__ __forceinline__ void tl_stamp(int i) {{
    unsigned long long g, c;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    gg_tl[blockIdx.x * 32 + i] = g; gg_tl[blockIdx.x * 32 + 16 + i] = c;
}}
#define TL(i) tl_stamp(i)
#define TK(v) {{ const long long now_ = clock64(); v += now_ - tk_mark; tk_mark = now_; }}
"""

STAMPS = {0: "entry", 1: "inputs ready (griddepcontrol.wait)", 2: "producer: first stage landed",
          3: "producer: first stage split", 5: "consumer 0: first stage ready", 6: "consumer 0: epilogue",
          14: "consumer 0: end"}
PHASES = [(0, 1), (1, 2), (2, 3), (3, 5), (5, 6), (6, 14), (0, 14)]
REGIONS = {0: "producer: waiting on full", 1: "producer: splitting B", 2: "producer: waiting on empty",
           3: "producer: issuing copies", 8: "consumer: waiting on ready", 9: "consumer: splitting A",
           10: "consumer: issuing wgmma", 11: "consumer: waiting for wgmma", 12: "consumer: adding the partial"}


def plant(code: str) -> str:
    """The kernel source with the stamps; SystemExit naming an anchor the template no longer has (the
    cp.async warp-specialized 3xTF32 kernels without split-K are the ones it knows)."""
    # A ragged K's last stage has a copy of the consumer's step of its own (after the loop): its anchors, and
    # stamps, are there twice.
    steps = 2 if "if (kfull < ktiles) {" in code else 1

    def sub(old: str, new: str, times: int = 1) -> None:
        nonlocal code
        if code.count(old) != times:
            raise SystemExit(f"ws_timeline: this kernel's source has {code.count(old)} of the anchor {old[:60]!r}, "
                             f"not {times}")
        code = code.replace(old, new)

    sub('extern "C" __global__', HEAD + '\nextern "C" __global__')
    sub("    const int wg = threadIdx.x / 128;", "    const int wg = threadIdx.x / 128;\n    if (threadIdx.x == 0) TL(0);")
    sub('asm volatile("griddepcontrol.wait;" ::: "memory");   // the copies or the scale ahead of this kernel are done\n    #endif',
        'asm volatile("griddepcontrol.wait;" ::: "memory");\n    #endif\n    if (threadIdx.x == 0) TL(1);')
    sub("setmaxnreg_dec<72>();", "setmaxnreg_dec<72>(); long long tk_mark = clock64(), PF = 0, PS = 0, PE = 0, PC = 0;")
    sub("mbar_wait(&full[s], ((f - LEAD) / STAGES) & 1);",
        "mbar_wait(&full[s], ((f - LEAD) / STAGES) & 1); TK(PF) if (t == 0 && f == LEAD) TL(2);")
    sub("if (lane == 0) mbar_arrive(&ready[s]);", "if (lane == 0) mbar_arrive(&ready[s]); TK(PS) if (t == 0 && f == LEAD) TL(3);")
    sub("if (f >= STAGES) mbar_wait(&empty[s], ((f / STAGES) - 1) & 1);",
        "if (f >= STAGES) mbar_wait(&empty[s], ((f / STAGES) - 1) & 1); TK(PE)")
    sub("cp_async_arrive(&full[s]);", "cp_async_arrive(&full[s]); TK(PC)")
    sub("        return;\n    }\n\n    // ---- consumers",
        "        if (t == 0) { unsigned long long* q = gg_acc + blockIdx.x * 16; q[0] = PF; q[1] = PS; q[2] = PE; q[3] = PC; }\n"
        "        return;\n    }\n\n    // ---- consumers")
    inc = re.search(r"setmaxnreg_inc<\d+>\(\);", code)
    sub(inc.group(0) if inc else "setmaxnreg_inc<", (inc.group(0) if inc else "") +
        " long long tk_mark = clock64(), CR = 0, CA = 0, CW = 0, CT = 0, CP = 0;\n    bool tl_first = true;")
    old = "mbar_wait(&ready[s], (kt / STAGES) & 1);"
    sub(old, old + " TK(CR) if (threadIdx.x == 128 && tl_first && kt == 0) TL(5);", steps)
    sub("wgmma_fence();", "TK(CA) wgmma_fence();", steps)
    sub("wgmma_commit();", "wgmma_commit(); TK(CW)", steps)
    sub("wgmma_wait<0>();", "wgmma_wait<0>(); TK(CT)", steps)
    sub("if (tid == 0) mbar_arrive(&empty[s]);", "if (tid == 0) mbar_arrive(&empty[s]); TK(CP)", steps)
    sub("// ---- epilogue: C = alpha * acc + beta * C;",
        "if (threadIdx.x == 128 && tl_first) TL(6); tl_first = false;\n        // ---- epilogue: C = alpha * acc + beta * C;")
    body = code.rstrip()
    if not body.endswith("}"):
        raise SystemExit("ws_timeline: the source does not end with the kernel's closing brace")
    return body[:-1] + ("    if (threadIdx.x == 128) { TL(14); unsigned long long* q = gg_acc + blockIdx.x * 16 + 8;"
                        " q[0] = CR; q[1] = CA; q[2] = CW; q[3] = CT; q[4] = CP; }\n}\n")


def configs() -> dict:
    """Kernel name -> config (dict) over the shipped results files."""
    out: dict = {}
    for f in sorted((ROOT / "results").glob("*.json")):
        for n, k in json.loads(f.read_text())["timings"]["kernels"].items():
            out.setdefault(n, k["config"])
    return out


def known_kind(c: dict) -> str | None:
    """Why the stamps do not fit a config (a dict), or None: they are written for cp.async warp-specialized
    3xTF32 kernels of one block an SM, one tile a block and unsplit K."""
    if not (c["family"] == "tf32x3" and c.get("tma") and c["async_copy"]):
        return "not a cp.async warp-specialized 3xTF32 kernel"
    if c["min_blocks"] != 1 or c["split_k"] != 1 or c.get("persistent") or c.get("pingpong"):
        return "two blocks an SM, split K or a persistent grid"
    return None


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
                         "one block an SM, one tile a block, unsplit K")
    M, N, K = sizes(mnk, text)
    g = KernelConfig.from_dict(known[name]).grid(M, N, K)
    if g[0] * g[1] * g[2] > BLOCKS:
        raise ValueError(f"{text!r} launches {g[0] * g[1] * g[2]} blocks; the stamps hold {BLOCKS}: take a smaller shape")
    return name, mnk


def measure(session, config, shape, code: str) -> dict:
    """Gate and time the planted and the plain kernel against cuBLAS; one more flushed run's stamps."""
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
    tl.fill(0)
    acc.fill(0)
    stream = cupy.cuda.get_current_stream()
    session.flush(stream)
    k.launch(session.problem(shape).operands(1.0, 0.0))
    stream.synchronize()
    blocks = int(np.prod(config.grid(shape.M, shape.N, shape.K)))
    t = tl.get().reshape(BLOCKS, 32)[:blocks].astype(np.int64)
    sums = acc.get().reshape(BLOCKS, 16)[:blocks].astype(np.int64)
    mhz, assumed = (planted.clock_mhz[1], False) if planted.clock_mhz[1] else (session.spec.clock_mhz, True)
    clocks = t[:, 16:]
    def span(a: int, b: int):
        ok = (clocks[:, a] > 0) & (clocks[:, b] > 0)
        return round(float(np.median((clocks[ok, b] - clocks[ok, a]) / mhz)), 3) if ok.any() else None
    g0 = t[:, 0].min()
    return {"kernel": config.name, "shape": str(shape), "blocks": blocks, "sm_mhz": mhz, "mhz_assumed": assumed,
            "planted_us": planted.ms * 1e3, "plain_us": plain.ms * 1e3, "cublas_us": plain.cublas_ms * 1e3,
            "last_block_end_us": round(float((t[:, 14].max() - g0) / 1e3), 2),
            "phases_us": {f"{STAMPS[a]} -> {STAMPS[b]}": span(a, b) for a, b in PHASES},
            "regions_us": {v: round(float(np.median(sums[:, i])) / mhz, 3) for i, v in REGIONS.items()}}


def report(row: dict) -> str:
    lines = [f"{row['kernel']} at {row['shape']}: {row['blocks']} blocks, plain {row['plain_us']:.1f} us "
             f"(planted {row['planted_us']:.1f}), cuBLAS {row['cublas_us']:.1f} us; last block ends at "
             f"{row['last_block_end_us']} us; clocks at {row['sm_mhz']} MHz{' (assumed)' if row['mhz_assumed'] else ''}"]
    lines += [f"  {k:70s} {v if v is not None else '-':>8} us" for k, v in row["phases_us"].items()]
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
        row = measure(session, config, Shape.parse(f"{mnk}/{config.layout}"),
                      plant(render_validated(config, session.spec.arch).code))
        print(report(row), flush=True)
        rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
