"""``gemmgen demo`` on a GPU: the matmul-vs-cuBLAS table's numbers parse, and both libraries' errors
against float64 are small, on every shape (the ragged one included)."""
from __future__ import annotations

import json
import math
import re

import pytest

from gemmgen.cli import main
from gemmgen.cli.demo import COLUMNS, SHAPES

pytestmark = pytest.mark.gpu


def test_demo_json_rows_are_accurate_and_timed(capsys):
    assert main(["demo", "--json", "--rep-ms", "20"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["gpu"]["name"] and found["gpu"]["arch"].startswith("sm_")
    assert [f"{r['shape']}/{r['layout']}" for r in found["rows"]] == [s if "/" in s else f"{s}/NN" for s in SHAPES]
    for r in found["rows"]:
        assert r["ok"] and r["err_gemmgen"] <= r["bound"] <= 1e-5 and 0 < r["err_cublas"] <= 1e-5, r
        assert 0 < r["max_err_gemmgen"] < 1e-4 and 0 < r["max_err_cublas"] < 1e-4, r   # NaN fails too
        assert all(math.isfinite(r[k]) and r[k] > 0 for k in ("gemmgen_tflops", "cublas_tflops", "speedup")), r
        assert r["speedup"] == pytest.approx(r["gemmgen_tflops"] / r["cublas_tflops"], rel=1e-9)


def test_demo_table_parses(capsys):
    assert main(["demo", "--rep-ms", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(out) if line.startswith("shape "))
    assert re.split(r"\s{2,}", out[head]) == list(COLUMNS)
    rows = [re.split(r"\s{2,}", line) for line in out[head + 1:head + 1 + len(SHAPES)]]
    for shape, layout, cublas, ours, speedup, err_ours, err_cublas, ok in rows:
        assert re.fullmatch(r"\d+x\d+x\d+", shape) and layout in ("NN", "NT", "TN", "TT")
        assert float(cublas) > 0 and float(ours) > 0 and speedup.endswith("x") and float(speedup[:-1]) > 0
        assert float(err_ours) <= 1e-5 and float(err_cublas) <= 1e-5 and ok == "yes"
