"""A results file of candidate kernels with no times: what ``gemmgen search --timings-only --winners-from``
times on a grid, then ``benchmarks/merge_timings.py`` adds to the shipped file. Shared by the scripts
that name a family's candidates (skinny_kernels.py, ws_kernels.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

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
