"""Searching the tensor-core families: plans and studies per family, `gemmgen search --family`, and
where the winners are stored (CPU only: measurements are injected, the GPU side of the CLI is faked)."""
from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from gemmgen.records import store
from gemmgen.cli import main
from gemmgen.cli.search import parse_families
from gemmgen.base.devices import DeviceSpec, known
from gemmgen.cli.search_grid import family_names
from gemmgen.kernel.presets import all_presets
from gemmgen.tune.space import default_families
from gemmgen.base import Measurement, Shape
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules import explain
from gemmgen.tune.space import load_space, space_file, SpaceError
from gemmgen.tune.storage import open_storage, StudyError
from gemmgen.tune.plan import make_plan
from gemmgen.tune.driver import run_search

from test_search import speed

optuna.logging.set_verbosity(optuna.logging.WARNING)
SHAPE = Shape(1024, 1024, 1024)
H100 = {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "sm_count": 132, "driver": 13000, "cuda": 13020,
        "gemmgen": "0.1.0"}
FAMILY_SPEED = {"simt": 1.0, "tf32x3": 3.0, "tf32": 6.0}   # tensor cores: 3xTF32 beats SIMT, TF32 beats both


def fake_measure(config, shape):
    """A fake H100: the template landscape of test_search, scaled per family."""
    ms = 100.0 / (speed(config) * FAMILY_SPEED[config.family])
    return Measurement(config.name, shape, ms=ms, iqr_ms=0.01, cublas_ms=1.0, rel_error=1e-6)


def fake_gpu(device):
    return fake_measure


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path}/studies.db"


def trials_of(plan):
    return optuna.load_study(study_name=plan.study, storage=open_storage(plan.storage)).get_trials(deepcopy=False)


# ---- plans and studies ------------------------------------------------------------------------
def test_plan_of_a_family():
    plan = make_plan(SHAPE, "h100", family="tf32x3", storage="sqlite:///:memory:")
    assert plan.space.family == "tf32x3" and plan.study == "h100-tf32x3-1024x1024x1024-NN"
    assert make_plan(SHAPE, "h100", storage="sqlite:///:memory:").study == "h100-1024x1024x1024-NN"   # simt, as before
    assert make_plan(SHAPE, "a100", space=space_file("tf32"), storage="sqlite:///:memory:").space.family == "tf32"
    mine = make_plan(SHAPE, "h100", family="tf32", study="mine", several_families=True, several_shapes=True)
    assert mine.study == "mine-tf32-1024x1024x1024-NN"
    with pytest.raises(SpaceError, match="is of family 'simt', not 'tf32'"):
        make_plan(SHAPE, "h100", family="tf32", space=load_space("simt", "sm_90"))
    with pytest.raises(SpaceError, match="valid: simt, tf32, tf32x3"):
        make_plan(SHAPE, "h100", family="wmma")


def test_plan_takes_the_limits_of_the_device():
    """A GPU outside the table (detected) still gets its own shared memory in the space."""
    small = known("h100").__class__("detected", "Some GPU", (9, 0), 100, 99 * 1024, 100 * 1024)
    plan = make_plan(SHAPE, small, family="tf32", storage="sqlite:///:memory:")
    assert dict(plan.space.limits) == {"smem_per_block": 99 * 1024, "smem_per_sm": 100 * 1024}


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.parametrize("family", ["tf32", "tf32x3"])
def test_tensor_core_search_measures_its_preset_first(db, family):
    plan = make_plan(SHAPE, "h100", family=family, trials=12, storage=db, sampler="random")
    result = run_search(plan, fake_gpu)
    study = optuna.load_study(study_name=plan.study, storage=open_storage(db))
    presets = study.user_attrs["presets"]   # e.g. also the wgmma variant, enqueued as its config
    assert presets[0] == family and {preset(p).family for p in presets} == {family}
    assert study.user_attrs["family"] == family
    first = min(trials_of(plan), key=lambda t: t.number)
    assert first.user_attrs["preset"] == family and "log2_WM" in first.params   # enqueued as parameters
    measured = [t for t in trials_of(plan) if t.state == TrialState.COMPLETE]
    assert len(measured) == 12 and all(t.user_attrs["name"].startswith(f"gg_{family}_nn_") for t in measured)
    assert sum("preset" not in t.user_attrs for t in measured) >= 12 - len(presets)   # then sampled
    assert result.config.family == family and not explain(result.config, "h100")
    assert result.measurement.tflops >= first.value


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_a_family_never_resumes_another_familys_study(db):
    simt = make_plan(SHAPE, "h100", trials=3, storage=db, sampler="random", presets=False)
    x3 = make_plan(SHAPE, "h100", family="tf32x3", trials=4, storage=db, sampler="random", presets=False)
    run_search(simt, fake_gpu)
    run_search(x3, fake_gpu)
    assert simt.study != x3.study
    names = {plan.study: {t.user_attrs["name"] for t in trials_of(plan) if t.state == TrialState.COMPLETE}
             for plan in (simt, x3)}
    assert len(names[simt.study]) == 3 and len(names[x3.study]) == 4
    assert all(n.startswith("gg_simt_") for n in names[simt.study])
    assert all(n.startswith("gg_tf32x3_") for n in names[x3.study])
    # a name given by hand is refused by the family recorded in the study
    with pytest.raises(StudyError, match="family simt; this search is for .* tf32x3"):
        run_search(make_plan(SHAPE, "h100", family="tf32x3", study=simt.study, storage=db, presets=False), fake_gpu)


# ---- --family -----------------------------------------------------------------------------------
def test_parse_families():
    assert parse_families(None) is None and parse_families("TF32x3") == ["tf32x3"]   # None: the GPU's default
    assert parse_families("all")[:3] == ["simt", "tf32", "tf32x3"]
    assert parse_families("tf32, simt") == ["tf32", "simt"]
    assert parse_families(None, space="my.json") == [None] and parse_families("tf32", "my.json") == ["tf32"]
    for bad, words in [("wmmma", "unknown family wmmma; valid: simt, tf32, tf32x3"), ("simt,simt", "each family once"),
                       ("all,simt", "unknown family all"), (",", "each family once")]:
        with pytest.raises(ValueError, match=words):
            parse_families(bad)
    with pytest.raises(ValueError, match="one --family with it"):
        parse_families("simt,tf32", "my.json")


T4_LIKE = DeviceSpec("t4-like", "A Turing-like GPU", (7, 5), 40, 64 * 1024, 64 * 1024, max_threads_per_sm=1024,
                     l2_bytes=4 * 2**20, clock_mhz=1590, mem_gbs=320)


@pytest.mark.parametrize("device, families", [(known("h100"), ["simt", "tf32x3"]), (known("rtx3090"), ["simt", "tf32x3"]),
                                              (T4_LIKE, ["simt"])], ids=["h100", "rtx3090", "t4-like"])
def test_the_default_families_are_the_fp32_families_the_gpu_runs(device, families):
    """No --family: simt, and 3xTF32 where the GPU has TF32 tensor cores (sm_80 and newer; a Turing GPU's
    mma.sync has no TF32), never the TF32-accurate family nor skinny (matmul runs it only on request)."""
    assert default_families(device) == families
    assert family_names(None, device, None) == families
    assert family_names(["tf32x3"], T4_LIKE, None) == ["tf32x3"]   # a --family given is never changed
    tf32x3_runs = any(not explain(p, device) for p in all_presets() if p.family == "tf32x3")
    assert ("tf32x3" in families) == tf32x3_runs == (device.cc >= (8, 0))


def test_the_default_families_follow_the_detected_gpu_in_every_mode(monkeypatch, capsys, tmp_path):
    """The plan on a detected Turing GPU tunes simt only; on an H100 simt and tf32x3, for a --shape search
    and a shape-set one alike (a --timings-only --winners-from run too: test_search_grid)."""
    from gemmgen.base import devices

    argv = ["search", "--budget", "90s", "--dry-run", "--json", "--results", str(tmp_path / "r")]
    for device, want, modes in ((T4_LIKE, ["simt"], [["--shape", "512x512x512"]]),
                                (known("h100"), ["simt", "tf32x3"], [[], ["--shape", "512x512x512"]])):
        monkeypatch.setattr(devices, "detect", lambda device_id=0, d=device: d)
        for mode in modes:
            assert main([*argv, *mode]) == 0, capsys.readouterr().err
            assert json.loads(capsys.readouterr().out)["families"] == want, mode


def test_bad_family_is_a_one_line_error_before_any_gpu_work(capsys):
    assert main(["search", "--family", "tf64"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--family 'tf64': unknown family tf64; valid: simt, tf32, tf32x3" in err
    assert "or all" in err


def test_a_family_with_nothing_to_search_is_a_one_line_error_before_any_gpu_work(capsys, tmp_path):
    """The skinny kernels compute C with N or M up to 32: a square shape is refused before the GPU, and
    nothing is written."""
    assert main(["search", "--family", "skinny", "--shape", "512x512x512", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--family skinny: nothing to search on 512x512x512/NN: the skinny kernels" in err
    assert list(tmp_path.iterdir()) == []


def test_help_documents_the_families(capsys):
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    out = capsys.readouterr().out
    assert "--family" in out and "tf32x3" in out and "its own study" in out and "<shape>/<layout>/tf32" in out


# ---- the CLI with a fake GPU ----------------------------------------------------------------------
@pytest.fixture
def fake_cli(monkeypatch, tmp_path):
    """`gemmgen search` on a fake H100: detection, fingerprint and the measuring side are replaced."""
    from gemmgen.base import devices
    from gemmgen.tune import gpu as gpu_search

    monkeypatch.setattr(devices, "detect", lambda device_id=0: known("h100"))
    monkeypatch.setattr(devices, "fingerprint", lambda device_id=0: dict(H100))
    monkeypatch.setattr(gpu_search, "GpuMeasure", lambda: fake_gpu)
    monkeypatch.setattr(gpu_search, "NvrtcPrepare", lambda arch: None)
    monkeypatch.setattr(gpu_search, "GpuRetime", fake_retime)
    monkeypatch.setattr(store, "shipped_dir", lambda: None)
    return tmp_path / "results"


def fake_retime(device, rep_ms=None):
    """GpuRetime: none for the finalists (they keep their search times); the timings stage's, faked."""
    return None if rep_ms is None else (lambda configs, shape: [fake_measure(c, shape) for c in configs])


def search(capsys, results, *args):
    """A --shape search of the families' studies alone (the timings stage: test_search_shapes)."""
    code = main(["search", "--shape", "512x512x512", "--sampler", "random", "--results", str(results),
                 "--json", "--no-timings", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_search_all_families_stores_one_winner_per_precision(fake_cli, capsys):
    winners, err = search(capsys, fake_cli, "--family", "all", "--trials", "6")
    assert [w["family"] for w in winners][:3] == ["simt", "tf32", "tf32x3"]
    assert [w["study"] for w in winners][:3] == ["h100-512x512x512-NN", "h100-tf32-512x512x512-NN",
                                                 "h100-tf32x3-512x512x512-NN"]
    assert "search h100-tf32x3-512x512x512-NN: NVIDIA H100 80GB HBM3, tf32x3" in err
    assert "no skinny study for 512x512x512/NN: the skinny kernels compute N <= 32 (or M <= 32, swapped)" in err
    by = {w["family"]: w for w in winners}
    assert by["simt"]["key"] == by["tf32x3"]["key"] == "512x512x512/NN" and by["tf32"]["key"] == "512x512x512/NN/tf32"
    assert by["tf32"]["precision"] == "tf32" and by["tf32x3"]["precision"] == "fp32"
    entries = store.load_file(fake_cli / "nvidia-h100-80gb-hbm3.json").entries
    assert set(entries) == {"512x512x512/NN", "512x512x512/NN/tf32"}
    # simt was stored first, then the faster 3xTF32 winner took the fp32 entry
    assert entries["512x512x512/NN"].name == by["tf32x3"]["winner"] and entries["512x512x512/NN"].precision == "fp32"
    assert entries["512x512x512/NN/tf32"].name == by["tf32"]["winner"]
    assert entries["512x512x512/NN"].kernel_config.family == "tf32x3"


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_a_slower_family_does_not_displace_the_fp32_winner(fake_cli, capsys):
    search(capsys, fake_cli, "--family", "tf32x3", "--trials", "4")
    (simt,), _ = search(capsys, fake_cli, "--family", "simt", "--trials", "4")
    assert simt["family"] == "simt" and simt["entry"]["family"] == "tf32x3"
    entries = store.load_file(fake_cli / "nvidia-h100-80gb-hbm3.json").entries
    assert entries["512x512x512/NN"].kernel_config.family == "tf32x3"
    code = main(["search", "--shape", "512x512x512", "--sampler", "random", "--results", str(fake_cli),
                 "--trials", "5", "--family", "simt", "--no-timings"])
    out = capsys.readouterr().out
    assert code == 0 and "not stored: 512x512x512/NN keeps the faster tf32x3 kernel gg_tf32x3_nn_" in out


def test_search_resumes_each_family_in_its_own_study(fake_cli, capsys):
    search(capsys, fake_cli, "--family", "tf32x3", "--trials", "3")
    (again,), _ = search(capsys, fake_cli, "--family", "tf32x3", "--trials", "5")
    assert again["study"] == "h100-tf32x3-512x512x512-NN" and again["counts"]["measured"] == 5
