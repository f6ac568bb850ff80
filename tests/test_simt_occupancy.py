"""benchmarks/simt_occupancy.py: the small SIMT tiles with more blocks an SM (session 35)."""
from __future__ import annotations

import json

import pytest

from gemmgen.kernel.config import KernelConfig
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules.registry import explain
from gemmgen.tune.grid import load_grid
from tests.scripts import load

SMALL = preset("v10").replace(BM=32, BN=32, BK=8, WM=16, WN=16, WMITER=2, WNITER=1, TM=2, TN=2, vec=2,
                              label="")


def test_small_unsplit_simt_tiles_get_two_register_caps_and_nothing_else_does():
    mod = load("simt_occupancy")
    assert SMALL.threads == 128 and not explain(SMALL, "h100")
    stored = [SMALL, SMALL.replace(split_k=4, reduce="workspace"), preset("v10"), preset("tf32x3-wgmma")]
    out = mod.candidates(stored, "h100")
    assert [c.min_blocks for c in out] == [6, 8]
    assert all(c.replace(min_blocks=1) == SMALL and not explain(c, "h100") for c in out)
    # a variant already stored is not named again
    assert [c.min_blocks for c in mod.candidates(stored + [out[0]], "h100")] == [8]
    # nor one the rules refuse: 6 blocks of this 6-stage 64x64x32 tile's shared memory exceed an SM's
    deep = SMALL.replace(BM=64, BN=64, BK=32, WM=32, WN=32, WMITER=8, stages=6, async_copy=True)
    assert deep.threads == 128 and not explain(deep, "h100")
    assert explain(deep.replace(min_blocks=6), "h100") and mod.candidates([deep], "h100") == []
    # nor one of a kernel whose min_blocks the search chose (3 and more: search/simt.json's `blocks`)
    assert mod.candidates([SMALL.replace(min_blocks=3)], "h100") == []


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_variant_is_timed_in_the_shipped_results(tmp_path, monkeypatch, gpu):
    """Both results files hold every variant the script names (it names none that is not timed), each
    timed on every launch-shallow grid shape of its layout, and the file it writes is this GPU's with no
    times."""
    mod, files = load("simt_occupancy"), load("candidates")
    shipped = json.loads((files.RESULTS / files.GPUS[gpu]).read_text())
    kernels = shipped["timings"]["kernels"]
    def original_stored(k):   # a variant of a stored kernel, not a tuned kernel that chose min_blocks > 2
        c = KernelConfig.from_dict(k["config"])
        return any(c.replace(min_blocks=b).name in kernels for b in (1, 2))
    variants = [n for n, k in kernels.items() if k["config"]["family"] == "simt" and k["config"]["min_blocks"] > 2
                and original_stored(k)]
    assert len(variants) > 60
    grid = [s.key for s in load_grid("hopper-launch-shallow").shapes]
    for n in variants:
        mine = {s for s in grid if s.endswith("/" + kernels[n]["config"]["layout"])}
        assert len(mine) == 12 and mine <= set(kernels[n]["ms"]), n
    stored = [KernelConfig.from_dict(k["config"]) for k in kernels.values()]
    assert mod.candidates(stored, gpu) == []
    # with the variants taken out of the shipped file, the script names exactly them, untimed
    shipped["timings"]["kernels"] = {n: k for n, k in kernels.items() if n not in variants}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / files.GPUS[gpu]).write_text(json.dumps(shipped))
    monkeypatch.setattr(mod, "RESULTS", tmp_path / "in")
    assert mod.main(["--gpu", gpu, "--out", str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out" / files.GPUS[gpu]).read_text())
    assert written["device"] == shipped["device"] and set(written["timings"]["kernels"]) == set(variants)
    assert not any(k["ms"] for k in written["timings"]["kernels"].values())
