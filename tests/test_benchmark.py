"""Benchmark rows, their table and JSON, with an injected measure function; `gemmgen bench`
end to end with a stand-in worker; benchmarks/matmul_vs_cublas.py's rows."""
from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from gemmgen.measure.benchmark import run, table, to_json
from gemmgen.base.devices import known
from gemmgen.base import Measurement, RuntimeFailure, Shape
from gemmgen.kernel.presets import preset
from tests.scripts import load

CUBLAS_MS = {"fp32": 2.5, "tf32": 1.25}
CUBLAS_ERR = {"fp32": 1.1e-6, "tf32": 2.6e-4}


def fake_measure(cfg, shape):
    if cfg.label == "v11":
        raise RuntimeFailure("illegal memory access")
    ms = {"v5": 4.0, "v10": 2.0, "tf32x3": 1.6, "tf32": 1.0}[cfg.label]
    mode = "tf32" if cfg.label == "tf32" else "fp32"
    err = {"v5": 1.2e-6, "v10": 1.3e-6, "tf32x3": 1.4e-6, "tf32": 2.7e-4}[cfg.label]
    extra = {"err_fp64": err, "cublas_err_fp64": CUBLAS_ERR[mode], "bound": 1.5 * CUBLAS_ERR[mode],
             "err_cublas": err / 2, "baseline": mode}
    return Measurement(cfg.name, shape, ms, 0.01, CUBLAS_MS[mode], err, reps=10, registers=128,
                       smem_bytes=16640, occupancy=0.125, extra=extra)


def test_rows_table_and_json():
    shapes = [Shape(4096, 4096, 4096), Shape(1000, 1000, 1000, "NT")]
    progress = []
    rows = run([preset("v5"), preset("v10"), preset("v11")], shapes, fake_measure, lambda i, n, r: progress.append((i, n)))
    assert progress[-1] == (6, 6) and rows[3].config.layout == "NT"
    text = table(rows)
    assert "cuBLAS fp32 (baseline)" in text and "FAILED runtime: illegal memory access" in text
    v10 = next(line for line in text.splitlines() if line.startswith("| v10"))
    assert "68.72" in v10 and "125.0" in v10          # 2*4096^3 / 2 ms, and 2.5 ms / 2 ms
    assert "1.3e-06" in v10 and "1.1e-06" in v10      # our error vs float64 beside cuBLAS's
    data = json.loads(json.dumps(to_json(rows, {"name": "fake"})))
    assert data["rows"][2]["failure"]["kind"] == "runtime" and data["rows"][1]["ratio"] == 1.25
    assert data["rows"][1]["err_fp64"] == 1.3e-6 and data["rows"][1]["cublas_err_fp64"] == 1.1e-6
    assert data["rows"][1]["baseline"] == "fp32" and data["rows"][1]["bound"] == pytest.approx(1.65e-6)


def test_each_precision_has_its_own_cublas_baseline_row():
    rows = run([preset("v10"), preset("tf32x3"), preset("tf32")], [Shape(4096, 4096, 4096)], fake_measure)
    lines = table(rows).splitlines()
    fp32 = next(line for line in lines if "cuBLAS fp32 (baseline)" in line)
    tf32 = next(line for line in lines if "cuBLAS tf32 (baseline)" in line)
    assert "2.500" in fp32 and "1.1e-06" in fp32      # SGEMM's time and error
    assert "1.250" in tf32 and "2.6e-04" in tf32      # cuBLAS TF32's
    x3 = next(line for line in lines if line.startswith("| tf32x3"))
    assert "156.2" in x3 and "| fp32 " in x3           # 3xTF32 is timed against strict SGEMM
    plain = next(line for line in lines if line.startswith("| tf32 "))
    assert "125.0" in plain and "| tf32 " in plain


def test_measurement_without_gate_errors_still_tabulates():
    """Older or injected measurements carry no extra: mode fp32, error from rel_error."""
    fake = lambda cfg, shape: Measurement(cfg.name, shape, 2.0, 0.01, 2.5, 3e-7)
    text = table(run([preset("v10")], [Shape(64, 64, 64)], fake))
    assert "cuBLAS fp32 (baseline)" in text and "3.0e-07" in text


class FakeWorker:
    """Stands in for gemmgen.measure.worker.MeasureWorker in `gemmgen bench` (no GPU, no process)."""

    def __init__(self, device_id=0, **_):
        self.spec = known("h100")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def call(self, method, *args, **kwargs):
        return "pong" if method == "ping" else fake_measure(*args)


def _bench_args(**changes):
    base = dict(preset=["v10", "tf32"], config=[], overrides=[], shape=["512x512x512"], layout="NN",
                device=0, rep_ms=1.0, json=False, plot=None)
    return SimpleNamespace(**{**base, **changes})


def test_cli_bench_reports_errors_and_modes(monkeypatch, capsys):
    from gemmgen.cli import bench

    monkeypatch.setattr("gemmgen.measure.worker.MeasureWorker", FakeWorker)
    monkeypatch.setattr("gemmgen.base.devices.require_gpu", lambda device_id=0: None)   # the fake worker is the GPU
    assert bench.run(_bench_args()) == 0
    out, err = capsys.readouterr()
    assert "cuBLAS tf32 (baseline)" in out and "against float64" in out
    assert "of cuBLAS tf32, error 2.7e-04 (cuBLAS 2.6e-04)" in err
    assert bench.run(_bench_args(json=True)) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["baseline"] for r in rows] == ["fp32", "tf32"] and rows[1]["cublas_err_fp64"] == 2.6e-4


def test_matmul_vs_cublas_writes_its_rows_after_each_one(tmp_path, monkeypatch):
    """benchmarks/matmul_vs_cublas.py --json: a run cut short (here in the second seed's second shape, as a
    device's time limit would end it) leaves every row it measured in the file, tagged with its seed."""
    import gemmgen.base.devices as devices

    mvc = load("matmul_vs_cublas")
    calls = []

    def measure(M, N, K, layout, rep_ms, family):
        calls.append((M, N, K, layout))
        if len(calls) == 6:
            raise KeyboardInterrupt
        return {"shape": f"{M}x{N}x{K}", "layout": layout, "ratio": 1.0 + len(calls), "gemmgen_tflops": 2.0,
                "cublas_tflops": 1.0, "kernel": "k", "err_gemmgen": 1e-7, "err_cublas": 1e-7}

    cupy = SimpleNamespace(cuda=SimpleNamespace(Device=lambda: SimpleNamespace(id=0)))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(devices, "detect", lambda i: known("h100"))
    monkeypatch.setattr(mvc, "prebuild", lambda shapes, family, jobs: 0)
    monkeypatch.setattr(mvc, "measure", measure)
    out = tmp_path / "rows.json"
    with pytest.raises(KeyboardInterrupt):
        mvc.main(["--random", "4", "--seed", "5", "--seed", "6", "--macs", "15:27", "--json", str(out)])
    rows = json.loads(out.read_text())["rows"]     # the first seed's four rows and the second's first
    assert [r["ratio"] for r in rows] == [2.0, 3.0, 4.0, 5.0, 6.0] and [r["seed"] for r in rows] == [5] * 4 + [6]
    assert [f"{r['shape']}/{r['layout']}" for r in rows] == ["%dx%dx%d/%s" % c for c in calls[:5]]
    assert [p.name for p in tmp_path.iterdir()] == ["rows.json"]


def test_matmul_vs_cublas_tune_sets_first_call_tuning_and_rows_name_the_pick(monkeypatch, capsys, tmp_path):
    """--tune N turns first-call tuning on (a bad N is one line, exit 2); a row names the kept pick."""
    from gemmgen.runtime import autotune, picks

    mvc = load("matmul_vs_cublas")
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setattr(picks, "_kept", {})
    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        mvc.main(["--tune", "99", "--shape", "64x64x64"])
    assert exc.value.code == 2 and "--tune: candidates=99" in capsys.readouterr().err
    lib = SimpleNamespace(spec=SimpleNamespace(name="GPU X"))
    assert mvc.tuned_pick(lib, 64, 48, 32, "NN", 32, 48, None) is None       # off: no pick to name
    autotune.tune_first_calls(2)
    assert mvc.tuned_pick(lib, 64, 48, 32, "NN", 32, 48, None) is None       # on, nothing kept yet
    key = picks.request_key(64, 48, 32, "NN", 32, 48, 48, "fp32", None, True)
    picks.remember("GPU X", key, {"kernel": "gg_simt_nn_x", "us": {"gg_simt_nn_x": 5.0}})
    assert mvc.tuned_pick(lib, 64, 48, 32, "NN", 32, 48, None)["kernel"] == "gg_simt_nn_x"
