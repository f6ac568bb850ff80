"""Run one config and cuBLAS once each at a shape, for Nsight Compute to capture, and dump the SASS.

    ncu --clock-control none -k regex:'gg_|gemm' python benchmarks/profile_once.py v13 4096
    ncu ... python benchmarks/profile_once.py tf32x3-tma 4096 NT     (a preset or a config's JSON file, a layout)
    ncu ... python benchmarks/profile_once.py cfg.json 2240x7425x68 NT   (N for N^3, or MxNxK)

cuBLAS runs in the config's own mode (SGEMM for the fp32-accurate families, TF32 mode for tf32).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import cupy as cp

from gemmgen.build.nvrtc import compile_source
from gemmgen.measure.launch import LoadedKernel
from gemmgen.kernel.config import KernelConfig
from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import mode_of
from gemmgen.measure.problem import Problem
from gemmgen.base import Shape
from gemmgen.codegen.render import render


def sass_mix(cubin: bytes, name: str) -> str:
    """Instruction counts of the kernel's SASS (FFMA share, LDS/STS widths, local memory)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        sass = subprocess.run(["cuobjdump", "-sass", fh.name], capture_output=True, text=True).stdout
    ops = [line.split()[1].rstrip(";") for line in sass.splitlines() if line.strip().startswith("/*") and "*/" in line
           and len(line.split()) > 1 and not line.split()[1].startswith("/*")]
    ops = [o for o in ops if o[0].isalpha() or o.startswith("@")]
    counts = {}
    for o in ops:
        o = o.split(".")[0] if not o.startswith("@") else "predicated"
        counts[o] = counts.get(o, 0) + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:14]
    total = sum(counts.values())
    return f"{name}: {total} SASS instructions; " + ", ".join(f"{k} {v}" for k, v in top)


def main() -> int:
    label, size = sys.argv[1], sys.argv[2]
    M, N, K = (int(x) for x in size.split("x")) if "x" in size else (int(size),) * 3
    layout = sys.argv[3] if len(sys.argv) > 3 else "NN"
    if label.endswith(".json"):
        with open(label) as fh:
            cfg = KernelConfig.from_dict(json.load(fh))
    else:
        cfg = preset(label, "sm_90")
    cfg = cfg.replace(layout=layout)
    binary = compile_source(render(cfg, "sm_90"), "sm_90")
    print(sass_mix(binary.cubin, cfg.name), flush=True)
    k = LoadedKernel(cfg, binary)
    prob = Problem(Shape(M, N, K, layout), dtype=cfg.dtype)
    out = cp.empty((M, N), cp.float32)
    k.launch(prob.operands())
    prob.cublas(out=out, mode=mode_of(cfg))
    cp.cuda.Device().synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
