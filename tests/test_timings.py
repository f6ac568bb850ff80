"""Kernel timings in a results file: written with record(), merged (newer times win), read back, and
malformed tables named in one line."""
from __future__ import annotations

import json

import pytest

from gemmgen.kernel.presets import preset
from gemmgen.records import ResultsError, Timings, load_device, load_file, record
from gemmgen.records.entry import Entry

GPU = {"name": "Example GPU", "cc": "9.0", "sm_count": 132}


def test_timings_round_trip_through_the_results_file(tmp_path):
    v10, wg = preset("v10"), preset("tf32x3-wgmma")
    t = Timings.empty().add(v10, "1024x1024x1024", 0.51, cublas_ms=0.40).add(wg, "1024x1024x1024", 0.03)
    saved = record(GPU, [Entry.new("1024x1024x1024", v10, 4.2, 5.4, 10, arch="sm_90")], tmp_path, timings=t)
    again = load_file(saved.path)
    assert again.timings == t
    assert again.timings.kernels[wg.name].ms == {"1024x1024x1024/NN": 0.03}
    assert again.timings.cublas == {"fp32": {"1024x1024x1024/NN": 0.40}}
    assert {k.config.name for k in again.timings.of_precision("fp32")} == {v10.name, wg.name}
    assert again.timings.of_precision("tf32") == []


def test_newer_times_replace_older_ones_and_others_stay(tmp_path):
    v10 = preset("v10")
    record(GPU, [], tmp_path, timings=Timings.empty().add(v10, "512x512x512", 1.0).add(v10, "256x256x256", 0.2))
    merged = record(GPU, [], tmp_path, timings=Timings.empty().add(v10, "512x512x512", 0.7))
    assert merged.timings.kernels[v10.name].ms == {"512x512x512/NN": 0.7, "256x256x256/NN": 0.2}
    assert load_device("Example GPU", tmp_path).timings == merged.timings


def test_resident_blocks_are_kept_through_merges_and_the_file(tmp_path):
    v10, wg = preset("v10"), preset("tf32x3-wgmma")
    first = Timings.empty().add(v10, "512x512x512", 1.0, resident=2).add(wg, "512x512x512", 0.3)
    record(GPU, [], tmp_path, timings=first)
    merged = record(GPU, [], tmp_path, timings=Timings.empty().add(v10, "256x256x256", 0.2))   # no count: kept
    assert merged.timings.kernels[v10.name].resident == 2 and merged.timings.kernels[wg.name].resident == 0
    stored = json.loads(merged.path.read_text())["timings"]["kernels"]
    assert stored[v10.name]["resident"] == 2 and "resident" not in stored[wg.name]
    newer = record(GPU, [], tmp_path, timings=Timings.empty().add(v10, "256x256x256", 0.2, resident=3))
    assert newer.timings.kernels[v10.name].resident == 3


def test_a_file_without_timings_reads_as_empty_and_is_written_without_them(tmp_path):
    saved = record(GPU, [Entry.new("64x64x64", preset("v6"), 0.1, 0.2, 3, arch="sm_90")], tmp_path)
    assert saved.timings.kernels == {} and "timings" not in json.loads(saved.path.read_text())


@pytest.mark.parametrize("bad, words", [
    ({"kernels": {"x": {"config": {"BM": "big"}, "ms": {}}}}, "kernel 'x' is malformed"),
    ({"kernels": {"x": {"config": {}, "ms": {"1x1x1": 1.0}}}}, "holds the config of 'gg_simt"),
    ({"kernels": {"x": {"ms": {}}}}, "kernel 'x' is malformed"),
    ({"kernels": {"x": {"config": {}, "ms": {}, "resident": "two"}}}, "kernel 'x' is malformed"),
    ({"kernels": {"x": {"config": {}, "ms": {}, "resident": -1}}}, "resident = -1; give blocks per SM"),
    ([1, 2], "is a list, not an object"),
])
def test_malformed_timings_are_named(tmp_path, bad, words):
    path = tmp_path / "example-gpu.json"
    path.write_text(json.dumps({"schema": 1, "device": GPU, "entries": {}, "timings": bad}))
    with pytest.raises(ResultsError, match="timings") as info:
        load_file(path)
    assert words in str(info.value) and "\n" not in str(info.value)
