"""A results file of candidate kernels with no times: what ``gemmgen search --timings-only --winners-from``
times on a grid, then ``benchmarks/merge_timings.py`` adds to the shipped file. Shared by the scripts
that name a family's candidates (skinny_kernels.py, ws_kernels.py, simt_occupancy.py, lean_tiles.py)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Sequence

RESULTS = Path(__file__).resolve().parent.parent / "results"
GPUS = {"h100": "nvidia-h100-80gb-hbm3.json", "h200": "nvidia-h200.json"}


def write(configs: Sequence, gpu: str, out: Path) -> Path:
    """Write ``configs`` (KernelConfigs) as the timings of a results file for ``gpu`` (a GPUS key, whose
    shipped file gives the schema and device) into folder ``out``, named as that GPU's results; its path."""
    shipped = json.loads((RESULTS / GPUS[gpu]).read_text())
    data = {"schema": shipped["schema"], "device": shipped["device"], "entries": {},
            "timings": {"kernels": {c.name: {"config": c.to_dict(), "ms": {}} for c in configs}, "cublas": {}}}
    out.mkdir(parents=True, exist_ok=True)
    path = out / GPUS[gpu]
    path.write_text(json.dumps(data, indent=1))
    return path


def main_for(make: Callable[[str, list], list], description: str, argv=None, results: Path = RESULTS) -> int:
    """The command line of a script that derives candidates from a GPU's shipped kernels: ``--gpu`` and
    ``--out``; ``make(gpu, stored)`` names the configs from the KernelConfigs stored in that GPU's file
    under ``results``, and they are written as :func:`write` does."""
    from gemmgen.kernel.config import KernelConfig
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--gpu", choices=sorted(GPUS), required=True,
                    help="whose shipped kernels, and whose results file names the device")
    ap.add_argument("--out", type=Path, required=True, help="folder for the file (named as the GPU's results)")
    args = ap.parse_args(argv)
    shipped = json.loads((results / GPUS[args.gpu]).read_text())
    stored = [KernelConfig.from_dict(k["config"]) for k in shipped["timings"]["kernels"].values()]
    configs = make(args.gpu, stored)
    print(f"{len(configs)} kernels -> {write(configs, args.gpu, args.out)}")
    return 0
