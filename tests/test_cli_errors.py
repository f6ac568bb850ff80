"""Every bad invocation of every command: a non-zero exit, one line on stderr that names the bad value
and what would be valid, no traceback, and nothing created (no file, folder or database).

The CLI runs in this process (its main()) with HOME and the XDG folders in a temporary folder, the
working directory there too, and no CUDA driver (libcuda cannot be loaded), so the GPU commands fail
the same way on every machine: an option that is checked only after GPU detection shows up as a
"no CUDA GPU" line instead of its own. Paths that must not exist are inside the temporary folder.
"""
from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
import sys

import pytest

from gemmgen.cli import main
from gemmgen.base.devices import NoGpu, require_gpu
from gemmgen.base.paths import data_dir

NO_GPU = "no CUDA GPU found"
INSTALL = "pip install 'gemmgen[cuda13]'"
CASES = {   # argv ({t}: the temporary folder), words the error line must contain
    # emit / explain: config values
    "family=bogus": ("emit --preset v8 --set family=bogus", ["'bogus'", "naive, simt, tf32, tf32x3, wmma"]),
    "empty -o": (["emit", "--preset", "v8", "-o", ""], ["-o ''", "file name"]),
    "vec=0": ("emit --preset v8 --set vec=0", ["vec = 0", "at least 1"]),
    "vec=0 tf32": ("emit --preset tf32 --set vec=0", ["vec = 0", "at least 1"]),
    "vec=0 wmma": ("emit --preset wmma --set vec=0", ["vec = 0", "at least 1"]),
    "vec=3": ("emit --preset v8 --set vec=3", ["vec", "3"]),
    "BM=0": ("emit --preset v8 --set BM=0", ["BM = 0", "at least 1"]),
    "BM=-1": ("emit --preset v8 --set BM=-1", ["BM = -1", "at least 1"]),
    "split_k=0": ("emit --preset v12 --set split_k=0", ["split_k = 0", "at least 1"]),
    "two bad keys": ("emit --preset v8 --set BM=abc --set TM=xyz", ["BM = 'abc'", "TM = 'xyz'", "integer"]),
    "bad key and bool": ("explain --preset v8 --set BM=abc --set prefetch=maybe", ["BM = 'abc'", "'maybe'", "true or false"]),
    "layout=XY": ("emit --preset v8 --set layout=XY", ["'XY'", "NN, NT, TN, TT"]),
    "dtype": ("emit --preset v8 --set dtype=f64", ["'f64'", "f32, f16, bf16"]),
    "mainloop": ("emit --preset tf32 --set mainloop=foo", ["'foo'", "simt, mma_sync, wgmma, ws_cpasync, ws_tma"]),
    "swizzle": ("emit --preset v8 --set swz_a=3", ["swz_a = 3", "16"]),
    "unknown key": ("emit --preset v8 --set tile=3", ["tile", "valid keys", "BM"]),
    "not KEY=VALUE": ("emit --preset v8 --set =3", ["'=3'", "KEY=VALUE"]),
    "arch": ("emit --preset v8 --arch sm_20", ["'sm_20'", "sm_80", "h100"]),
    "empty arch": ("explain --preset v8 --arch=", ["''", "sm_80"]),
    "wgmma on sm_80": ("emit --preset tf32x3-wgmma --arch sm_80", ["WGMMA_ARCH", "sm_90a"]),
    "preset": ("emit --preset V8", ["'V8'", "v0", "wmma"]),
    "config missing": ("emit --config {t}/missing.json", ["missing.json", "No such file"]),
    "config folder": ("emit --config {t}/folder", ["folder", "directory"]),
    "config not JSON": ("emit --config {t}/bad.txt", ["bad.txt", "not valid JSON"]),
    "config list": ("emit --config {t}/list.json", ["list.json", "JSON list", "expected an object"]),
    "output folder missing": ("emit --preset v8 -o {t}/missing/k.cu", ["missing/k.cu", "No such file"]),
    "no source": ("explain", ["--preset", "--config", "v8"]),
    "key twice": ("emit --preset v8 --set BK=16 --set BK=8", ["BK", "twice", "BK=16", "BK=8", "once"]),
    "config not text": ("emit --config {t}/binary.json", ["binary.json", "not text", "0xff"]),
    "explain config not text": ("explain --config {t}/binary.json", ["binary.json", "not text"]),
    "presets arch": ("presets --arch nope", ["'nope'", "sm_80", "h100"]),
    # search: every option before the GPU
    "trials": ("search --trials -5", ["--trials -5", "at least 1"]),
    "trials 0": ("search --trials 0", ["--trials 0", "at least 1"]),
    "trials type": ("search --trials abc", ["'abc'", "int"]),
    "timeout": ("search --timeout -1", ["--timeout -1", "above 0"]),
    "timeout nan": ("search --timeout nan", ["--timeout nan", "above 0"]),
    "jobs": ("search --jobs 0", ["--jobs 0", "at least 1"]),
    "seed": ("search --seed -1", ["--seed -1", "at least 0"]),
    "storage scheme": ("search --storage badscheme://x", ["'badscheme://x'", "badscheme", "sqlite:///", "postgresql://"]),
    "storage not a URL": ("search --storage nothing", ["'nothing'", "sqlite:///"]),
    "storage driver": ("search --storage mysql://u:secret@h/db", ["mysql://u:***@h/db", "MySQLdb"]),
    "space missing": ("search --space {t}/missing.json", ["missing.json", "no such file"]),
    "space empty": ("search --space {t}/empty.json", ["empty.json", '"schema": 1']),
    "space folder": ("search --space {t}/folder", ["folder", "give a file"]),
    "space of another family": ("search --family tf32 --space {t}/simt.json", ["simt.json", "'simt'", "'tf32'"]),
    "unknown --gpu": ("search --gpu nosuchgpu", ["'nosuchgpu'", "h100", "rtx3090"]),
    "family": ("search --family bogus", ["bogus", "simt, tf32, tf32x3"]),
    "sampler": ("search --sampler bogus", ["'bogus'", "tpe", "cmaes"]),
    "grid sampler": ("search --sampler grid", ["'grid'", "choose from 'tpe', 'random', 'cmaes'"]),
    "budget": ("search --budget 30", ["--budget '30'", "90s, 10m, 1h or 1h30m"]),
    "negative shape": ("search --shape -1x2x3", ["--shape '-1x2x3'", "valid: MxNxK"]),
    "shape": ("search --shape 0x1x1", ["'0x1x1'", "below 1"]),
    "shape text": ("search --shape abc", ["'abc'", "MxNxK"]),
    "shape layout": ("search --shape 64x64x64/XY", ["'XY'", "NN, NT, TN, TT"]),
    "shapes missing": ("search --shapes {t}/missing.json", ["missing.json", "no such file"]),
    "shapes empty": ("search --shapes {t}/noshapes.json", ["noshapes.json", "no shapes", "4096x4096x4096"]),
    "shapes bad": ("search --shapes {t}/badshapes.json", ["badshapes.json", "'0x1x1'"]),
    "devices": ("search --devices a", ["'a'", "0,1"]),
    "devices twice": ("search --devices 0,0", ["'0,0'", "once"]),
    "devices negative": ("search --devices -1", ["'-1'", "0,1"]),
    "study": ("search --study=", ["--study ''", "give a name"]),
    "results file": ("search --results {t}/bad.txt", ["bad.txt", "is a file", "folder"]),
    "results tree": ("search --results {t}/missing/dir", ["missing/dir", "does not exist"]),
    "no GPU": ("search", [NO_GPU]),
    # bench
    "rep-ms": ("bench --rep-ms -1", ["--rep-ms -1", "above 0"]),
    "rep-ms 0": ("bench --rep-ms 0", ["--rep-ms 0", "above 0"]),
    "bench BM=0": ("bench --set BM=0", ["BM = 0", "at least 1"]),
    "bench two bad keys": ("bench --preset v8 --set BM=abc --set TM=xyz", ["BM = 'abc'", "TM = 'xyz'"]),
    "bench preset": ("bench --preset bogus", ["'bogus'", "v0", "v13"]),
    "bench config": ("bench --config {t}/missing.json", ["missing.json", "no such file"]),
    "bench shape": ("bench --shape 0x1x1", ["'0x1x1'", "below 1"]),
    "bench layout": ("bench --layout XY", ["'XY'", "NN"]),
    "bench device": ("bench --device -1", ["--device -1", "at least 0"]),
    "bench negative shape": ("bench --shape -1x2x3", ["'-1x2x3'", "below 1"]),
    "bench huge shape": ("bench --shape 3000000000x1x1", ["'3000000000x1x1'", "2147483647"]),
    "bench shape beyond memory": ("bench --shape 2000000x2000000x1", ["'2000000x2000000x1'", "141 GB"]),
    "bench plot folder": ("bench --plot {t}/missing/p.png", ["missing/p.png", "does not exist"]),
    "bench too much smem": ("bench --preset tf32x3-wgmma --set stages=9", ["SHARED_MEMORY", "stages = 9"]),
    "bench no GPU": ("bench --preset v8", [NO_GPU]),
    # results
    "results gpu": ("results show nosuchgpu", ["'nosuchgpu'", "GPUs with results"]),
    "results shape": ("results export h100 abc", ["'abc/NN'", "MxNxK"]),
    "results entry": ("results export h100 1x1x1", ["1x1x1/NN", "nearest", "16x16x16/NN", "tuned shapes"]),
    "results entry short": ("results export h100 3x5x7", ["3x5x7/NN", "nearest", "`gemmgen results show GPU`"]),
    "results out unwritable": ("results export h100 4096x4096x4096 --out /proc/gemmgen-x", ["'/proc/gemmgen-x'", "--out"]),
    "results negative shape": ("results export h100 -1x2x3", ["'-1x2x3/NN'", "below 1"]),
    "results out tree": ("results export h100 4096x4096x4096 --out {t}/missing/dir", ["missing/dir", "does not exist"]),
    "results out file": ("results export h100 4096x4096x4096 --out {t}/bad.txt", ["bad.txt", "is a file"]),
    "results folder": ("results list --results {t}/missing", ["missing", "does not exist"]),
    "tuned clear all": ("results tuned --clear", ["--clear", "name the GPU"]),
    "results action": ("results frob", ["'frob'", "list", "export"]),
    "plan shape": ("results plan h100 12x5", ["'12x5'", "MxNxK"]),
    "plan layout": ("results plan h100 64x64x64/XT", ["'XT'", "NN, NT, TN, TT"]),
    "plan family": ("results plan h100 64x64x64 --family tf32", ["family='tf32'", "simt, tf32x3"]),
    "plan gpu": ("results plan nosuchgpu 64x64x64", ["'nosuchgpu'", "GPUs with results"]),
    "plan top": ("results plan h100 64x64x64 --top 0", ["--top 0", "1 or more"]),
    "plan negative shape": ("results plan h100 -1x2x3", ["'-1x2x3'", "below 1"]),
    "plan huge shape": ("results plan h100 1000000000000x1000000000000x1000000000000", ["M = 1000000000000", "2147483647"]),
    "plan shape beyond int": ("results plan h100 3000000000x3000000000x3", ["M = 3000000000", "2147483647"]),
    "plan shape beyond memory": ("results plan h100 2000000x2000000x1", ["'2000000x2000000x1'", "141 GB"]),
    "tuned gpu": ("results tuned nope", ["'nope'", "h100", "kept picks"]),
    # report
    "report storage": ("report --study x --out {t}/out --storage badscheme://x", ["'badscheme://x'", "sqlite:///"]),
    "report no database": ("report --study nosuchstudy --out {t}/out", ["studies.db", "gemmgen search"]),
    "report sqlite file": ("report --study x --out {t}/out --storage sqlite:///{t}/missing.db",
                           ["missing.db", "no such database file"]),
    "report study": ("report --study nosuchstudy --out {t}/out --storage sqlite:///{t}/studies.db",
                     ["'nosuchstudy'", "valid: demo"]),
    "report out": ("report --study demo --out {t}/missing/out --storage sqlite:///{t}/studies.db",
                   ["missing/out", "does not exist"]),
    "report results": ("report --study demo --out {t}/out --results {t}/missing", ["missing", "does not exist"]),
    # the command line itself
    "command": ("frobnicate", ["'frobnicate'", "emit"]),
    "option": ("presets --fast", ["--fast"]),
}


@pytest.fixture(scope="module")
def studies_db(tmp_path_factory):
    """A SQLite storage holding one study, 'demo' (made once: creating Optuna's schema takes ~0.5 s)."""
    import optuna

    path = tmp_path_factory.mktemp("db") / "studies.db"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(storage=f"sqlite:///{path}", study_name="demo", direction="maximize")
    return path


@pytest.fixture
def sandbox(tmp_path, monkeypatch, studies_db, no_driver):
    """A temporary HOME, XDG folders and working directory, input files, and no CUDA driver."""
    home = tmp_path / "home"
    for var, sub in (("HOME", ""), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"), ("XDG_CONFIG_HOME", "config")):
        monkeypatch.setenv(var, str(home / sub))
    for var in ("GEMMGEN_RESULTS", "GEMMGEN_CACHE", "MPLCONFIGDIR"):
        monkeypatch.delenv(var, raising=False)
    home.mkdir()
    monkeypatch.chdir(home)
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    for name, text in (("empty.json", "{}"), ("list.json", "[1, 2]"), ("bad.txt", "x"),
                       ("noshapes.json", '{"shapes": []}'), ("badshapes.json", '{"shapes": ["0x1x1"]}')):
        (tmp_path / name).write_text(text)
    (tmp_path / "simt.json").write_text((data_dir("search") / "simt.json").read_text())
    shutil.copy(studies_db, tmp_path / "studies.db")
    return tmp_path


def files(root) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def run(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as stop:          # argparse's own exits
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES)
def test_bad_invocation_is_one_line_naming_the_value(sandbox, capsys, case):
    argv, words = CASES[case]
    before = files(sandbox)
    words_of = argv if isinstance(argv, list) else argv.split(" ")   # a list where an argument is empty
    code, out, err = run(capsys, [a.replace("{t}", str(sandbox)) for a in words_of])
    assert code not in (0, None), (code, out, err)
    assert out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.endswith("\n"), err
    for word in words:
        assert word in err, (word, err)
    if NO_GPU not in words:
        assert NO_GPU not in err, "an option was checked only after GPU detection"
    assert files(sandbox) == before, "a failed command left files behind"


def test_explain_of_an_invalid_config_says_why_on_one_line(sandbox, capsys):
    code, out, err = run(capsys, ["explain", "--preset", "v8", "--set", "family=bogus", "--no-ptxas"])
    assert code == 1 and "x FAMILY" in out
    assert len(err.splitlines()) == 1 and "'bogus'" in err and "naive, simt" in err


@pytest.mark.parametrize("argv", [["search"], ["bench", "--preset", "v8"]])
def test_missing_cupy_says_what_to_install(sandbox, capsys, monkeypatch, argv):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    before = files(sandbox)
    code, out, err = run(capsys, argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "CuPy is not installed" in err and INSTALL in err and "gemmgen[cuda12]" in err
    assert files(sandbox) == before


def test_matmul_without_cupy_says_what_to_install(monkeypatch):
    import gemmgen

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    monkeypatch.setitem(sys.modules, "cupy", None)        # `import cupy` fails as if it were absent
    with pytest.raises(NoGpu, match=r"CuPy is not installed.*gemmgen\[cuda13\]"):
        gemmgen.matmul(None, None)


class _FakeRuntime:
    class CUDARuntimeError(RuntimeError):
        pass

    def __init__(self, count):
        self.count = count

    def getDeviceCount(self):
        if isinstance(self.count, Exception):
            raise self.count
        return self.count


@pytest.mark.parametrize("count, device, words", [
    (_FakeRuntime.CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient"), 0,
     ["no usable CUDA GPU", "cudaErrorInsufficientDriver", "gemmgen[cuda12]"]),
    (0, 0, [NO_GPU, "sees no device"]),
    (2, 3, ["no CUDA device 3", "0..1"]),
])
def test_require_gpu_names_what_is_missing(monkeypatch, count, device, words):
    """A driver is present (libcuda loads) but CuPy's runtime finds no usable device."""
    import types

    runtime = _FakeRuntime(count)
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))
    runtime.CUDARuntimeError = _FakeRuntime.CUDARuntimeError
    monkeypatch.setitem(sys.modules, "cupy", fake)
    real_find, real_cdll = importlib.util.find_spec, ctypes.CDLL
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" else real_find(name, *a))
    monkeypatch.setattr(ctypes, "CDLL", lambda name, *a, **k: object() if "libcuda" in name else real_cdll(name, *a, **k))
    with pytest.raises(NoGpu) as err:
        require_gpu(device)
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_console_script_bad_option_has_no_traceback_and_no_side_effect(tmp_path):
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "d"), "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_CONFIG_HOME": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "gemmgen.cli", "search", "--trials", "-5"], cwd=tmp_path,
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr == "gemmgen search: error: --trials -5: must be at least 1\n"
    assert list(tmp_path.iterdir()) == []


def test_report_lists_the_studies_it_has(sandbox, capsys):
    code, _, err = run(capsys, ["report", "--study", "dem", "--out", str(sandbox / "o"),
                                "--storage", f"sqlite:///{sandbox / 'studies.db'}"])
    assert code == 2 and err.rstrip().endswith("valid: demo") and not (sandbox / "o").exists()
