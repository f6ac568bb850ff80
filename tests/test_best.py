"""One meaning of a preset name per GPU: v13 is the stored winner for the target, else the built-in
best, whichever entry point asks (emit, bench, gemmgen.bench, the runtime's fallback). No GPU needed."""
from __future__ import annotations

import argparse
import warnings

import pytest

from gemmgen.base.devices import known
from gemmgen.cli import bench as cli_bench
from gemmgen.cli.options import add_config_options, config_from_args
from gemmgen.kernel.presets import preset
from gemmgen.records import store
from gemmgen.records.best import resolve_preset, resolve_presets, stored_best
from gemmgen.records.entry import Entry
from gemmgen.records.store import record
from gemmgen.runtime.library import KernelLibrary

RTX3090 = {"name": "NVIDIA GeForce RTX 3090", "cc": "8.6", "sm_count": 82}
TUNED = preset("v10").replace(BK=16, WN=64, WNITER=4, label="")        # a winner no preset equals
FAST = TUNED.replace(bounds="none")                                    # whole 128x128 tiles only


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Empty shipped and user results folders of our own."""
    monkeypatch.setattr(store, "shipped_dir", lambda: None)
    monkeypatch.setenv("GEMMGEN_RESULTS", str(tmp_path / "user"))


def _store(*configs_tflops):
    entries = [Entry.new(f"{1024 * (i + 1)}x1024x1024", c, t, 30.0, 50, arch="sm_90") for i, (c, t) in enumerate(configs_tflops)]
    return record(RTX3090, entries).entries


def test_without_results_v13_is_the_built_in_best_of_the_architecture():
    assert stored_best(known("rtx3090")) is None
    assert resolve_preset("v13", "rtx3090") == preset("v13", "sm_86")
    assert resolve_preset("v13", "rtx3090") != preset("v13", "sm_90")     # the target's architecture decides


def test_the_fastest_stored_fp32_nn_winner_is_v13():
    _store((preset("v8"), 10.0), (TUNED, 20.0), (preset("tf32"), 90.0), (TUNED.replace(layout="NT"), 30.0))
    v13 = resolve_preset("v13", "rtx3090")
    assert v13 == TUNED and v13.label == "v13"               # tf32 and NT winners are not v13
    assert resolve_preset("v8", "rtx3090") == preset("v8")   # other names are always built in
    assert TUNED in resolve_presets(known("rtx3090"))


def test_emit_and_bench_mean_the_same_v13():
    _store((TUNED, 20.0))
    parser = argparse.ArgumentParser()
    add_config_options(parser)
    emitted, _ = config_from_args(parser.parse_args(["--preset", "v13", "--arch", "rtx3090"]))
    benched = cli_bench.configs_from_args(argparse.Namespace(preset=["v13"], config=[], overrides=[]),
                                          known("rtx3090"))
    assert emitted == benched[0] == TUNED


def _fallback(entries, *request):
    lib = KernelLibrary(known("rtx3090"), entries)
    lib._load = lambda config, measured: config                 # no compile, no GPU
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        config = lib.kernel_for(*request)
    return config, str(seen[0].message)


def test_the_runtime_falls_back_to_the_same_v13():
    config, words = _fallback(_store((TUNED, 20.0)), 1000, 1000, 1000, "NT")   # no NT winner: fall back
    assert config == TUNED.replace(layout="NT") and config.label == "v13" and "stored preset v13" in words


def test_the_runtime_keeps_the_built_in_v13_where_the_stored_one_cannot_run_the_shape():
    config, words = _fallback(_store((FAST, 20.0)), 1000, 1000, 1000, "NT")    # 1000 is no whole tile
    assert config == preset("v13", "sm_86").replace(layout="NT") and "built-in preset v13" in words
