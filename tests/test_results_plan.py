"""`gemmgen results plan`: the dispatch's plan for a shape from the shipped results, on a CPU."""
from __future__ import annotations

import json

from gemmgen.cli import main
from gemmgen.records.lookup import load_device


def test_one_block_per_sm_is_not_picked_where_split_k_runs_twice_as_fast(capsys):
    """128x4096x4096 TN on the H100: the unsplit 64x64 kernel (one block an SM for 128 K steps) runs
    144 us, the split kernels 69-72 us (shipped timings); the plan must be one of those."""
    assert main(["results", "plan", "h100", "128x4096x4096/TN", "--json", "--top", "20"]) == 0
    rows = json.loads(capsys.readouterr().out)
    timed = load_device("h100").timings.kernels
    picked = timed[rows["plan"]["kernel"]]
    assert picked.config.split_k > 1 and picked.ms["128x4096x4096/TN"] < 0.08
    ms = [c["predicted_ms"] for c in rows["candidates"]]
    assert ms == sorted(ms) and rows["plan"]["predicted_ms"] == ms[0]      # no copies: the plan leads
    assert rows["cublas_ms"] > 0 and all(c["u"] >= 0 and c["w"] >= 0 and c["v"] >= 0 for c in rows["candidates"])


def test_a_ragged_shape_plans_copies_and_the_family_option_restricts(capsys):
    assert main(["results", "plan", "h100", "4097x4097x4097"]) == 0
    out = capsys.readouterr().out
    assert "after copying A and B into layout NT" in out and "cuBLAS measured" in out
    assert main(["results", "plan", "h200", "500x60x3000/TT", "--family", "simt", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [rows["plan"]["kernel"]] + [c["kernel"] for c in rows["candidates"]]
    assert all(n.startswith("gg_simt_") for n in names) and rows["cublas_ms"] is None   # off the grid


def test_one_row_or_column_of_c_names_the_matrix_vector_route(capsys):
    assert main(["results", "plan", "h200", "1x4096x4096/NN"]) == 0
    assert capsys.readouterr().out.startswith("NVIDIA H200, 1x4096x4096/NN: gg_gemv_cols_k32\n  the matrix-vector route")
    assert main(["results", "plan", "h100", "5000x1x300/NT", "--family", "simt", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows["plan"]["kernel"] == "gg_gemv_rows8" and rows["candidates"] == [] and rows["plan"]["copies"] == ""
    assert main(["results", "plan", "h200", "1x4096x4096/NN", "--family", "tf32x3"]) == 0   # a GEMM family asked for
    assert capsys.readouterr().out.split(":", 1)[1].split()[0].startswith("gg_tf32x3_")
