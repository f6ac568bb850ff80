"""The results store (gemmgen.records) and the dispatch rule that reads it (gemmgen.runtime.dispatch): CPU only."""
from __future__ import annotations

import json
import multiprocessing
import time

import pytest

from gemmgen.base import files
from gemmgen.records import keys, listing, store
from gemmgen.kernel.config import KernelConfig
from gemmgen.runtime.dispatch import dispatch, log_distance
from gemmgen.records.export import export
from gemmgen.records.listing import list_rows, show_rows
from gemmgen.records.lookup import load_all, load_device
from gemmgen.base import Shape
from gemmgen.kernel.presets import preset
from gemmgen.codegen.render import render
from gemmgen.base.files import locked
from gemmgen.records.entry import Entry, ResultsError
from gemmgen.records.store import load_file, record, slug

H100 = {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "sm_count": 132, "driver": 12040,
        "cuda": 12040, "gemmgen": "0.1.0"}
FILE = "nvidia-h100-80gb-hbm3.json"
FAST = preset("v10").replace(bounds="none", label="")  # whole tiles only: 128 x 128, K % 8


def entry(key: str, tflops: float, config: KernelConfig | None = None) -> Entry:
    return Entry.new(key, config or preset("v10"), tflops, 25.0, 100, source_hash="h" * 64)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A shipped folder and a user folder of our own, so no test touches the real ones."""
    shipped, user = tmp_path / "shipped", tmp_path / "user"
    shipped.mkdir()
    monkeypatch.setattr(store, "shipped_dir", lambda: shipped)
    monkeypatch.setenv("GEMMGEN_RESULTS", str(user))
    return shipped, user


def ship(shipped, fingerprint, entries):
    """Write a shipped file the way a maintainer would (record refuses the shipped folder)."""
    data = store.DeviceResults(dict(fingerprint), {e.key: e for e in entries}).to_dict()
    path = shipped / f"{slug(fingerprint['name'])}.json"
    path.write_text(json.dumps(data))
    return path


# ---- file format -----------------------------------------------------------------------------------
def test_slug_of_device_names():
    assert slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert slug("NVIDIA A100-SXM4-80GB") == "nvidia-a100-sxm4-80gb"


def test_record_writes_schema_fingerprint_and_every_field(isolated):
    _, user = isolated
    record(H100, [entry("4096x4096x4096", 20.0)])
    data = json.loads((user / FILE).read_text())
    assert data["schema"] == 1 and data["device"] == H100
    e = data["entries"]["4096x4096x4096/NN"]
    assert KernelConfig.from_dict(e["config"]) == preset("v10") and e["name"] == preset("v10").name
    assert (e["tflops"], e["cublas_tflops"], e["ratio"], e["trials"]) == (20.0, 25.0, 0.8, 100)
    assert e["date"].startswith("20") and e["env"] == {"driver": 12040, "cuda": 12040, "gemmgen": "0.1.0"}
    assert load_file(user / FILE).entries["4096x4096x4096/NN"].tflops == 20.0


def test_default_source_hash_is_the_rendered_digest():
    e = Entry.new("64x64x64/NN", preset("v6"), 1.0, 2.0, 3, arch="sm_90")
    assert e.source_hash == render(preset("v6"), "h100").digest


def test_the_source_hash_names_its_target():
    """The header's build line names the target, so a hash is of the source for one architecture."""
    assert Entry.new("64x64x64/NN", preset("v6"), 1.0, 2.0, 3, arch="sm_86").source_hash == \
        render(preset("v6"), "rtx3090").digest != render(preset("v6"), "h100").digest
    with pytest.raises(TypeError, match="arch"):
        Entry.new("64x64x64/NN", preset("v6"), 1.0, 2.0, 3)


# ---- atomic write and lock -------------------------------------------------------------------------
def half_then_fail(data, handle, **kw):
    handle.write(json.dumps(data)[:40])  # a crash mid-write: the temp file holds half a document
    raise OSError("disk full")


@pytest.mark.parametrize("where, breaker", [("json", half_then_fail), ("fsync", None)])
def test_failed_write_leaves_old_file_intact(isolated, monkeypatch, where, breaker):
    _, user = isolated
    record(H100, [entry("1024x1024x1024", 10.0)])
    before = (user / FILE).read_bytes()
    if where == "json":
        monkeypatch.setattr(files.json, "dump", breaker)
    else:
        monkeypatch.setattr(files.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError("I/O error")))
    with pytest.raises(OSError):
        record(H100, [entry("1024x1024x1024", 99.0), entry("2048x2048x2048", 5.0)])
    monkeypatch.undo()
    assert (user / FILE).read_bytes() == before
    assert [p.name for p in user.iterdir() if p.suffix == ".tmp"] == []
    assert list(load_file(user / FILE).entries) == ["1024x1024x1024/NN"]


def _write_many(folder, first, count, barrier):
    barrier.wait()  # start both writers together so their read-modify-write cycles overlap
    for i in range(first, first + count):
        record(H100, [entry(f"{64 + i}x64x64", float(i))], folder)


@pytest.mark.slow   # seconds: many draws, a compile or several processes
def test_concurrent_writers_keep_every_entry(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_write_many, args=(tmp_path, first, 30, barrier)) for first in (0, 30)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    keys = set(load_file(tmp_path / FILE).entries)
    assert keys == {f"{64 + i}x64x64/NN" for i in range(60)}


def _record_one(folder):
    record(H100, [entry("8x8x8", 1.0)], folder)


def test_writer_waits_for_the_lock(tmp_path):
    ctx = multiprocessing.get_context("fork")
    with locked(tmp_path / FILE):
        child = ctx.Process(target=_record_one, args=(tmp_path,))
        child.start()
        time.sleep(0.5)
        assert child.is_alive() and not (tmp_path / FILE).exists()  # blocked on our lock
    child.join(30)
    assert child.exitcode == 0 and "8x8x8/NN" in load_file(tmp_path / FILE).entries


# ---- merge -----------------------------------------------------------------------------------------
def test_merge_keeps_the_faster_entry(isolated):
    _, user = isolated
    record(H100, [entry("4096x4096x4096", 20.0, preset("v10"))])
    record(H100, [entry("4096x4096x4096", 15.0, preset("v9"))])
    assert load_file(user / FILE).entries["4096x4096x4096/NN"].name == preset("v10").name
    record(H100, [entry("4096x4096x4096", 22.0, preset("v11")), entry("512x512x512", 3.0)])
    got = load_file(user / FILE).entries
    assert got["4096x4096x4096/NN"].name == preset("v11").name and got["4096x4096x4096/NN"].tflops == 22.0
    assert set(got) == {"4096x4096x4096/NN", "512x512x512/NN"}


def test_lookup_merges_shipped_and_user_by_speed(isolated):
    shipped, user = isolated
    ship(shipped, H100, [entry("4096x4096x4096", 30.0, preset("v11")), entry("256x256x256", 1.0)])
    record(H100, [entry("4096x4096x4096", 20.0, preset("v10")), entry("128x128x128", 0.5)])
    dev = load_device(H100)
    assert set(dev.entries) == {"4096x4096x4096/NN", "256x256x256/NN", "128x128x128/NN"}
    assert dev.entries["4096x4096x4096/NN"].name == preset("v11").name
    assert dev.entries["128x128x128/NN"].origin == str(user / FILE)


# ---- precision classes -----------------------------------------------------------------------------
TF32, TF32X3 = preset("tf32").replace(label=""), preset("tf32x3").replace(label="")


def test_keys_carry_the_precision_except_fp32():
    assert entry("64x64x64", 1.0, TF32).key == "64x64x64/NN/tf32"
    assert entry("64x64x64", 1.0, TF32X3).key == entry("64x64x64", 1.0).key == "64x64x64/NN"
    assert entry("64x64x64/TN", 1.0, TF32.replace(layout="TN")).key == "64x64x64/TN/tf32"
    assert [entry("64x64x64", 1.0, c).precision for c in (TF32, TF32X3, preset("v10"))] == ["tf32", "fp32", "fp32"]
    assert Entry.new("64x64x64/NN/tf32", TF32, 1.0, 2.0, 3, "h").key == "64x64x64/NN/tf32"
    with pytest.raises(ValueError, match="names precision tf32, but gg_simt"):
        Entry.new("64x64x64/NN/tf32", preset("v10"), 1.0, 2.0, 3, "h")
    assert keys.entry_key("64x64x64/NT", "bf16") == "64x64x64/NT/bf16"
    assert keys.parse_key("64x64x64/NT/f16") == (Shape(64, 64, 64, "NT"), "f16")
    for bad in ("64x64x64/NN/fp32", "64x64x64/NN/", "64x64x64/NN/tf32/x"):
        with pytest.raises(ValueError, match="64x64x64"):
            keys.parse_key(bad)


def test_fp32_accurate_families_compete_for_one_key(isolated):
    """simt and 3xTF32 both keep fp32 accuracy: the faster is what an fp32 request gets; TF32 lives beside."""
    _, user = isolated
    record(H100, [entry("4096x4096x4096", 45.0, preset("v10"))])
    record(H100, [entry("4096x4096x4096", 80.0, TF32X3), entry("4096x4096x4096", 150.0, TF32)])
    record(H100, [entry("4096x4096x4096", 46.0, preset("v11"))])   # a later, slower simt winner
    got = load_file(user / FILE).entries
    assert set(got) == {"4096x4096x4096/NN", "4096x4096x4096/NN/tf32"}
    assert got["4096x4096x4096/NN"].name == TF32X3.name and got["4096x4096x4096/NN"].precision == "fp32"
    assert got["4096x4096x4096/NN/tf32"].name == TF32.name and got["4096x4096x4096/NN/tf32"].tflops == 150.0
    record(H100, [entry("4096x4096x4096", 81.0, preset("v12"))])   # and a faster simt one takes it back
    assert load_file(user / FILE).entries["4096x4096x4096/NN"].kernel_config.family == "simt"


def test_precision_is_written_and_keys_sort_fp32_first(isolated):
    _, user = isolated
    record(H100, [entry("512x512x512", 1.0, TF32), entry("4096x4096x4096", 2.0), entry("512x512x512", 3.0)])
    data = json.loads((user / FILE).read_text())
    assert list(data["entries"]) == ["512x512x512/NN", "512x512x512/NN/tf32", "4096x4096x4096/NN"]
    assert data["entries"]["512x512x512/NN/tf32"]["precision"] == "tf32"
    assert [r["shape"] for r in show_rows("h100")] == list(data["entries"])
    assert load_device(H100).entries["512x512x512/NN/tf32"].shape == Shape(512, 512, 512)


def test_old_files_without_precision_load(isolated):
    """Files written before precision classes: plain keys, no precision field; read off the config."""
    shipped, _ = isolated
    old = {k: v for k, v in entry("4096x4096x4096", 20.0).to_dict().items() if k != "precision"}
    old["config"] = {k: v for k, v in old["config"].items() if k not in ("dtype", "mainloop")}
    (shipped / FILE).write_text(json.dumps({"schema": 1, "device": H100, "entries": {"4096x4096x4096/NN": old}}))
    e = load_device(H100).entries["4096x4096x4096/NN"]
    assert e.precision == "fp32" and e.kernel_config == preset("v10") and e.tflops == 20.0
    assert Entry("1x1x1/NN", {}, "a", "", 1.0, 2.0, 0.5, "", 1).precision == "fp32"   # positional, as before


def test_shipped_results_still_load():
    from gemmgen.base.paths import data_dir

    for path in data_dir("results").glob("*.json"):
        assert all(e.precision == "fp32" for e in load_file(path).entries.values()), path


@pytest.mark.parametrize("key, config, extra, words", [
    ("64x64x64/NN", TF32, {}, "holds a tf32 kernel (tf32) under the key fp32; its key is '64x64x64/NN/tf32'"),
    ("64x64x64/NN/tf32", TF32X3, {}, "holds a fp32 kernel (tf32x3) under the key tf32; its key is '64x64x64/NN'"),
    ("64x64x64/NN/tf32", TF32, {"precision": "f16"}, "under the field 'precision' f16"),
    ("64x64x64/NN/fp32", preset("v10"), {}, "keyed without a precision"),
])
def test_entry_under_the_wrong_precision_is_refused(tmp_path, key, config, extra, words):
    data = {**entry("64x64x64", 1.0, config).to_dict(), **extra}
    (tmp_path / FILE).write_text(json.dumps({"schema": 1, "device": H100, "entries": {key: data}}))
    with pytest.raises(ResultsError) as err:
        load_file(tmp_path / FILE)
    assert str(tmp_path / FILE) in str(err.value) and words in str(err.value)


# ---- errors ----------------------------------------------------------------------------------------
def test_corrupt_file_error_names_the_file_and_is_not_overwritten(isolated):
    _, user = isolated
    user.mkdir()
    (user / FILE).write_text('{"schema": 1, "device": ')
    with pytest.raises(ResultsError) as err:
        load_device(H100)
    assert str(user / FILE) in str(err.value) and "not valid JSON" in str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    with pytest.raises(ResultsError):
        record(H100, [entry("64x64x64", 1.0)])
    assert (user / FILE).read_text() == '{"schema": 1, "device": '


@pytest.mark.parametrize("content, words", [
    ({"schema": 2, "device": H100, "entries": {}}, "schema 2"),
    ({"device": H100, "entries": {}}, "schema None"),
    ([1, 2], "not a results object"),
    ({"schema": 1, "device": H100, "entries": {"4096x4096x4096/NN": {"name": "x"}}}, "'4096x4096x4096/NN' lacks"),
    ({"schema": 1, "device": H100, "entries": {"64x64x64/NT": {**entry("64x64x64", 1).to_dict()}}},
     "NN kernel under a NT key"),
    ({"schema": 1, "device": H100, "entries": {"64x64x64/NN": {**entry("64x64x64", 1).to_dict(),
                                                                "config": {"BM": "big"}}}}, "BM"),
])
def test_bad_content_error_names_file_and_problem(tmp_path, content, words):
    (tmp_path / FILE).write_text(json.dumps(content))
    with pytest.raises(ResultsError) as err:
        load_file(tmp_path / FILE)
    assert str(tmp_path / FILE) in str(err.value) and words in str(err.value)


def test_results_of_another_gpu_are_refused(isolated):
    _, user = isolated
    record(H100, [entry("64x64x64", 1.0)])
    with pytest.raises(ResultsError, match="sm_count 132.*sm_count 114"):
        record({**H100, "sm_count": 114}, [entry("64x64x64", 2.0)])
    a100 = {"name": "NVIDIA A100-SXM4-80GB", "cc": "8.0"}
    (user / FILE).write_text(json.dumps({"schema": 1, "device": a100, "entries": {}}))
    with pytest.raises(ResultsError, match="NVIDIA A100-SXM4-80GB.*never mixed"):
        record(H100, [entry("64x64x64", 2.0)])
    with pytest.raises(ResultsError, match="whose file is nvidia-a100-sxm4-80gb.json"):
        load_file(user / FILE)  # a copied file is refused even when only read


def test_new_software_versions_are_accepted_and_stamped(isolated):
    _, user = isolated
    record(H100, [entry("64x64x64", 1.0)])
    record({**H100, "driver": 13000}, [entry("128x128x128", 1.0)])
    got = load_file(user / FILE)
    assert got.device["driver"] == 13000
    assert got.entries["64x64x64/NN"].env["driver"] == 12040
    assert got.entries["128x128x128/NN"].env["driver"] == 13000


# ---- shipped folder ---------------------------------------------------------------------------------
def test_shipped_folder_is_never_written(isolated):
    shipped, user = isolated
    path = ship(shipped, H100, [entry("4096x4096x4096", 1.0)])
    before = path.read_bytes()
    record(H100, [entry("4096x4096x4096", 50.0)])
    assert path.read_bytes() == before and sorted(p.name for p in shipped.iterdir()) == [FILE]
    assert (user / FILE).exists()
    with pytest.raises(ResultsError, match="read only"):
        record(H100, [entry("4096x4096x4096", 60.0)], results=shipped)
    assert path.read_bytes() == before


def test_results_argument_overrides_user_folder(isolated, tmp_path):
    _, user = isolated
    record(H100, [entry("64x64x64", 1.0)], results=tmp_path / "mine")
    assert (tmp_path / "mine" / FILE).exists() and not user.exists()
    assert "64x64x64/NN" in load_device(H100, tmp_path / "mine").entries
    assert load_device(H100).entries == {}


# ---- dispatch ---------------------------------------------------------------------------------------
def tuned(*items):
    return {e.key: e for e in (entry(k, t, c) for k, t, c in items)}


def test_log_distance():
    assert log_distance(Shape(8, 8, 8), Shape(8, 8, 8)) == 0
    assert log_distance(Shape(1, 1, 1), Shape(4, 1, 1)) == pytest.approx(1.3862944)


def test_dispatch_exact_shape_wins():
    t = tuned(("1000x1000x1000", 5.0, preset("v6")), ("1024x1024x1024", 9.0, preset("v10")))
    assert dispatch(t, 1000, 1000, 1000).name == preset("v6").name
    assert dispatch(t, 1000, 1000, 1000, "nn").name == preset("v6").name


def test_dispatch_nearest_is_by_log_distance():
    # 1500 is linearly nearer 256 than 8192, but 8192/1500 = 5.5 < 1500/256 = 5.9
    t = tuned(("256x256x256", 1.0, preset("v6")), ("8192x8192x8192", 9.0, preset("v10")))
    assert dispatch(t, 1500, 1500, 1500).key == "8192x8192x8192/NN"
    assert dispatch(t, 1300, 1300, 1300).key == "256x256x256/NN"


def test_dispatch_skips_kernels_that_do_not_accept_the_shape():
    t = tuned(("4096x4096x4096", 30.0, FAST), ("256x256x256", 1.0, preset("v6")))
    assert dispatch(t, 4096, 4096, 4096).key == "4096x4096x4096/NN"
    assert dispatch(t, 4000, 4000, 4000).key == "256x256x256/NN"       # 4000 % 128 != 0
    assert dispatch(t, 4096, 4096, 4096, lda=4097).key == "256x256x256/NN"  # exact, but misaligned rows


def test_dispatch_none_when_nothing_accepts():
    t = tuned(("4096x4096x4096", 30.0, FAST), ("2048x2048x2048", 20.0, FAST))
    assert dispatch(t, 1000, 1000, 1000) is None
    assert dispatch({}, 64, 64, 64) is None


def test_dispatch_never_crosses_layouts():
    nt = preset("v10").replace(layout="NT")
    t = tuned(("1024x1024x1024", 9.0, preset("v10")), ("64x64x64/NT", 1.0, nt))
    assert dispatch(t, 1024, 1024, 1024, "NT").key == "64x64x64/NT"
    assert dispatch(t, 1024, 1024, 1024, "TN") is None


# ---- devices, list, show ----------------------------------------------------------------------------
def test_device_found_by_alias_and_stem(isolated):
    record(H100, [entry("64x64x64", 1.0)])
    for name in ("h100", "nvidia-h100-80gb-hbm3", "NVIDIA H100 80GB HBM3"):
        assert load_device(name, missing_ok=False).name == H100["name"]
    with pytest.raises(ResultsError, match="no tuned results for 'rtx3090'.*NVIDIA H100 80GB HBM3"):
        load_device("rtx3090", missing_ok=False)
    pcie = {"name": "NVIDIA H100 PCIe", "cc": "9.0", "sm_count": 114}
    assert load_device(pcie).entries == {}  # a fingerprint never borrows another part's results


def test_api_lookup_reads_only_its_own_gpu_file(isolated):
    _, user = isolated
    record(H100, [entry("64x64x64", 1.0)])
    (user / "nvidia-l4.json").write_text("garbage")
    assert "64x64x64/NN" in load_device(H100).entries
    with pytest.raises(ResultsError, match="nvidia-l4.json: not valid JSON"):
        list_rows()


def test_list_and_show_rows(isolated):
    shipped, _ = isolated
    ship(shipped, {"name": "NVIDIA L4", "cc": "8.9", "sm_count": 58}, [entry("512x512x512", 2.0)])
    record(H100, [entry("4096x4096x4096", 20.0), entry("512x512x512", 4.0)])
    rows = {r["device"]: r for r in list_rows()}
    assert set(rows) == {"NVIDIA L4", H100["name"]}
    assert all(set(r) == set(listing.LIST_COLUMNS) for r in rows.values())
    assert rows[H100["name"]]["shapes"] == 2 and rows[H100["name"]]["best_tflops"] == 20.0
    shown = show_rows("h100")
    assert [r["shape"] for r in shown] == ["512x512x512/NN", "4096x4096x4096/NN"]  # numeric order
    assert set(shown[0]) == set(listing.SHOW_COLUMNS) and shown[1]["ratio"] == 0.8
    assert set(load_all()) == set(rows)


# ---- export ----------------------------------------------------------------------------------------
def test_export_writes_source_and_manifest(isolated, tmp_path):
    cfg = preset("v10")
    record(H100, [Entry.new("4096x4096x2048", cfg, 20.0, 25.0, 200, arch="sm_90")])
    cu, manifest = export("h100", "4096x4096x2048", tmp_path / "out")
    code = cu.read_text()
    assert cu.name == f"{cfg.name}.cu" and 'extern "C"' in code and cfg.name in code
    m = json.loads(manifest.read_text())
    assert KernelConfig.from_dict(m["config"]) == cfg and m["name"] == cfg.name
    assert m["source_hash"] == m["rendered_hash"] == render(cfg, "h100").digest and m["source_matches"]
    assert m["measured"]["tflops"] == 20.0 and m["measured"]["ratio"] == 0.8
    assert m["launch"] == {"kernels": [cfg.name], "grid": [32 * 32, 1, 1], "block": [256, 1, 1],
                           "smem_bytes": cfg.smem_bytes}
    assert m["device"]["name"] == H100["name"] and m["file"] == cu.name


def test_export_flags_a_source_that_changed_since_measured(isolated, tmp_path):
    record(H100, [entry("1024x1024x1024", 5.0)])  # recorded hash 'hhhh...' is not today's source
    _, manifest = export(H100, "1024x1024x1024/NN", tmp_path)
    assert json.loads(manifest.read_text())["source_matches"] is False


def test_export_of_missing_shape_names_the_nearest_in_one_short_line(isolated, tmp_path):
    far = [entry(f"{16 * i}x{16 * i}x{16 * i}", 5.0) for i in range(1, 60)]
    record(H100, [entry("1024x1024x1024", 5.0), entry("1024x1024x1024/NT", 5.0, preset("v6").replace(layout="NT")), *far])
    with pytest.raises(ResultsError, match="measured at 2048x2048x2048/NN; nearest of its 61 measured shapes: "
                                           "1024x1024x1024/NN, .*61 tuned shapes") as err:
        export("h100", "2048x2048x2048", tmp_path / "out")
    assert len(str(err.value)) < 300 and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ResultsError, match="not MxNxK"):
        export("h100", "big", tmp_path)


def test_export_takes_the_fastest_kernel_measured_at_the_shape_grid_timings_too(isolated, tmp_path):
    """A kernel the tuning grid timed faster than the search's stored winner is the one exported (the one
    v13 and the dispatch's candidates name); its manifest says the grid measured it."""
    from gemmgen.records.best import resolve_preset
    from gemmgen.records.timings import Timings

    winner, faster = preset("v10"), preset("v10").replace(BK=16)
    key = "4096x4096x4096"
    grid = Timings.empty().add(faster, key, 1.0, cublas_ms=2.0).add(preset("v8"), key, 9.0)
    record(H100, [Entry.new(key, winner, 2 * 4096 ** 3 / 2.0e9, 50.0, 20, arch="sm_90")], timings=grid)
    cu, manifest = export("h100", key, tmp_path)
    m = json.loads(manifest.read_text())
    assert cu.name == f"{faster.name}.cu" and m["measured"]["by"] == "tuning grid" and m["source_matches"] is None
    assert m["measured"]["ms"] == 1.0 and m["measured"]["ratio"] == 2.0
    assert resolve_preset("v13", "h100").name == faster.name           # v13 is the kernel export writes
    grid_slower = Timings.empty().add(faster, key, 5.0)
    record(H100, [], timings=grid_slower)                                # the search's winner is faster now
    assert export("h100", key, tmp_path / "2")[0].name == f"{winner.name}.cu"
    assert resolve_preset("v13", "h100").name == winner.name


def test_export_into_an_unwritable_folder_is_one_error_and_leaves_nothing(isolated, tmp_path):
    record(H100, [entry("1024x1024x1024", 5.0)])
    with pytest.raises(ResultsError, match="cannot write into '/proc/gemmgen-x'.*--out"):
        export("h100", "1024x1024x1024", "/proc/gemmgen-x")
