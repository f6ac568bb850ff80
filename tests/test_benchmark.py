"""Benchmark rows, the seed-000 table and JSON, with an injected measure function."""
from __future__ import annotations

import json

from gemmgen.benchmark import run, table, to_json
from gemmgen.outcome import Measurement, RuntimeFailure, Shape
from gemmgen.presets import preset


def fake_measure(cfg, shape):
    if cfg.label == "v11":
        raise RuntimeFailure("illegal memory access")
    ms = {"v5": 4.0, "v10": 2.0}[cfg.label]
    return Measurement(cfg.name, shape, ms, 0.01, 2.5, 1e-7, reps=10, registers=128, smem_bytes=16640, occupancy=0.125)


def test_rows_table_and_json():
    shapes = [Shape(4096, 4096, 4096), Shape(1000, 1000, 1000, "NT")]
    progress = []
    rows = run([preset("v5"), preset("v10"), preset("v11")], shapes, fake_measure, lambda i, n, r: progress.append((i, n)))
    assert progress[-1] == (6, 6) and rows[3].config.layout == "NT"
    text = table(rows)
    assert "cuBLAS (baseline)" in text and "FAILED runtime: illegal memory access" in text
    v10 = next(line for line in text.splitlines() if line.startswith("| v10"))
    assert "68.72" in v10 and "125.0" in v10          # 2*4096^3 / 2 ms, and 2.5 ms / 2 ms
    data = json.loads(json.dumps(to_json(rows, {"name": "fake"})))
    assert data["rows"][2]["failure"]["kind"] == "runtime" and data["rows"][1]["ratio"] == 1.25
