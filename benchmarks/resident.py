"""Resident blocks per SM of every timed kernel of a results file, from ptxas on this machine (nvcc, no GPU).

The dispatch model's latency term (gemmgen.runtime.predict) needs how many blocks of a kernel an SM
holds at once. `gemmgen search --grid` records the driver's count with the timings; results files
timed before it did lack it, and this script fills it in: each kernel is compiled for the file's GPU
(``nvcc -cubin -Xptxas -v``), and its registers, shared memory and threads give the count as CUDA's
occupancy calculator does (:meth:`gemmgen.build.resources.KernelResources.resident_blocks`).

    python benchmarks/resident.py results/nvidia-h100-80gb-hbm3.json            # print the counts
    python benchmarks/resident.py results/*.json --write                         # and store the missing ones

Also prints how far the register estimate of the rules (gemmgen.kernel.rules.registers) is from ptxas.
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="RESULTS.json")
    ap.add_argument("--write", action="store_true", help="store the counts where a kernel lacks one")
    ap.add_argument("--jobs", type=int, default=2, help="parallel nvcc runs (default 2)")
    args = ap.parse_args(argv)

    from gemmgen.base.devices import UnknownDevice, known
    from gemmgen.build.nvcc import compile_cubin
    from gemmgen.codegen.render import render
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.kernel.rules.registers import register_estimate

    compiled: dict[tuple[str, str], object] = {}
    for path in map(Path, args.files):
        try:
            data = json.loads(path.read_text())
            spec = known(data["device"]["name"])
            kernels = data["timings"]["kernels"]
            configs = {name: KernelConfig.from_dict(k["config"]) for name, k in kernels.items()}
        except (OSError, ValueError, KeyError, TypeError, UnknownDevice) as exc:
            raise SystemExit(f"resident: {path}: not a results file with timings of a known GPU ({exc})") from None

        def build(name: str):
            key = (name, spec.arch)
            if key not in compiled:
                compiled[key] = compile_cubin(render(configs[name], spec), spec.arch)[name]
            return name, compiled[key]

        filled, off = 0, []
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for i, (name, res) in enumerate(pool.map(build, sorted(kernels))):
                c = configs[name]
                blocks = res.resident_blocks(spec, c.threads, c.smem_bytes)
                est = register_estimate(c)
                off.append((est or res.registers) - res.registers)
                if kernels[name].get("resident") not in (None, blocks):
                    print(f"  {name}: stored {kernels[name]['resident']}, ptxas says {blocks} (kept)")
                elif "resident" not in kernels[name]:
                    kernels[name]["resident"], filled = blocks, filled + 1
                print(f"\r{path.name}: {i + 1}/{len(kernels)} kernels", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        counts: dict[int, int] = {}
        for k in kernels.values():
            counts[k.get("resident", 0)] = counts.get(k.get("resident", 0), 0) + 1
        off.sort()
        print(f"{path}: {spec.name}, {len(kernels)} kernels; resident blocks per SM: "
              + ", ".join(f"{b}: {n}" for b, n in sorted(counts.items()))
              + f"; register estimate minus ptxas: median {off[len(off) // 2]}, range {off[0]}..{off[-1]}")
        if args.write and filled:
            path.write_text(json.dumps(data, indent=2) + "\n")
            print(f"  wrote {filled} counts into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
