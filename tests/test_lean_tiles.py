"""benchmarks/lean_tiles.py: the cuBLAS-like small SIMT tiles (session 36, rejected)."""
from __future__ import annotations

import json

from gemmgen.kernel.rules.registry import explain
from tests.scripts import load


def test_lean_tiles_are_4x4_thread_tiles_with_a_register_cap_each_rule_accepts():
    mod = load("lean_tiles")
    out = mod.candidates("h100")
    assert len(out) == 56 and len({c.name for c in out}) == 56
    assert {c.layout for c in out} == {"NN", "NT", "TN", "TT"}
    for c in out:
        assert (c.TM, c.TN, c.WMITER, c.WNITER, c.frag, c.split_k) == (4, 4, 1, 1, "lds", 1)
        assert not explain(c, "h100")
        assert c.min_blocks * c.threads * mod.REGS <= 65536 < (c.min_blocks + 1) * c.threads * mod.REGS
    # BK 8 with 128 or more threads cannot load 16-byte vectors of A's and B's tiles, so only BK 16 is left
    assert {(c.BM, c.BN, c.BK) for c in out if c.threads > 64} == {(64, 32, 16), (32, 64, 16), (64, 64, 16)}
    # a name already stored is not named again
    assert len(mod.candidates("h100", {out[0].name})) == 55


def test_the_file_it_writes_is_the_gpus_with_no_times(tmp_path):
    mod, files = load("lean_tiles"), load("candidates")
    assert mod.main(["--gpu", "h200", "--out", str(tmp_path)]) == 0
    written = json.loads((tmp_path / files.GPUS["h200"]).read_text())
    shipped = json.loads((files.RESULTS / files.GPUS["h200"]).read_text())
    assert written["device"] == shipped["device"] and len(written["timings"]["kernels"]) == 56
    assert not any(k["ms"] for k in written["timings"]["kernels"].values())
