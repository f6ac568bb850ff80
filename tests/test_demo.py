"""``gemmgen demo`` without a GPU: it emits a kernel, builds it with its header's nvcc line and says why the
GPU part was skipped; ``python -m gemmgen`` is the ``gemmgen`` command. (On a GPU: tests/gpu/test_demo_gpu.py.)"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemmgen.base.devices import NoGpu, require_gpu
from gemmgen.build import nvcc
from gemmgen.cli import main
from gemmgen.cli.demo import offline, offline_text

REPO = Path(__file__).resolve().parents[1]


def _gpu_here() -> bool:
    try:
        require_gpu(0)
    except NoGpu:
        return False
    return True


no_gpu = pytest.mark.skipif(_gpu_here(), reason="a GPU is present: demo times matmul instead (tests/gpu)")


def _nowhere() -> str:
    raise nvcc.ToolkitMissing("nvcc not found (looked in PATH); install the CUDA toolkit or set CUDA_HOME")


def test_without_nvcc_the_source_is_written_and_the_build_skipped_with_the_reason(tmp_path):
    r = offline(tmp_path, "sm_86", find_nvcc=_nowhere)
    source = Path(r["source"])
    assert source == tmp_path / "v8.cu" and not r["built"] and "nvcc not found" in r["skipped"]
    assert r["build_line"] == "nvcc -cubin -O3 -std=c++17 -arch=sm_86 v8.cu -o v8.cubin"   # no nvcc: no harness
    assert f"// Build: {r['build_line']}\n" in source.read_text()
    said = offline_text("no CUDA GPU found", r)
    assert "GPU part skipped: no CUDA GPU found" in said and "build skipped: nvcc not found" in said
    assert r["build_line"] in said and str(tmp_path) in said


@no_gpu
@pytest.mark.slow
@pytest.mark.skipif(not nvcc.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
def test_demo_without_a_gpu_builds_the_kernel_and_its_program_says_no_gpu(capsys, tmp_path):
    assert main(["demo", "--out", str(tmp_path), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["gpu"] is None and r["gpu_skipped"] and r["built"], r
    assert r["source"] == str(tmp_path / "v8.cu") and Path(r["output"]).stat().st_size > 0
    assert f"// Build: {r['build_line']}\n" in Path(r["source"]).read_text()
    assert r["build_line"].split()[-4:] == (["v8.cu", "-lcublas", "-o", "v8"] if r["harness"] else ["v8.cu", "-o", "v8.cubin"])
    if r["harness"]:   # the program, run where there is no GPU, says so in one line
        done = subprocess.run([r["output"], "256", "256", "256"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 3 and done.stdout == ""
        assert done.stderr.startswith("no CUDA GPU/driver found: ") and done.stderr.count("\n") == 1, done.stderr


def test_a_bad_arch_is_refused_before_anything_is_written(capsys, tmp_path):
    code = main(["demo", "--out", str(tmp_path / "d"), "--arch", "sm_70"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "'sm_70'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("argv, words", [
    (["demo", "--rep-ms", "-1"], ["--rep-ms -1", "above 0"]),
    (["demo", "--arch", "gtx1080"], ["'gtx1080'", "sm_80"]),
])
def test_demo_bad_values_give_one_line(capsys, argv, words):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and all(w in err for w in words), err


def test_demo_out_that_is_a_file_gives_one_line(capsys, tmp_path):
    if _gpu_here():
        pytest.skip("a GPU is present: demo does not write a folder")
    (tmp_path / "f").write_text("")
    code = main(["demo", "--out", str(tmp_path / "f")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and str(tmp_path / "f") in err and len(err.strip().splitlines()) == 1


def test_python_m_gemmgen_is_the_gemmgen_command():
    done = subprocess.run([sys.executable, "-m", "gemmgen", "--help"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and "demo" in done.stdout and "doctor" in done.stdout
    same = subprocess.run([sys.executable, "-m", "gemmgen", "emit", "--preset", "v99"], capture_output=True,
                          text=True, cwd=REPO)
    assert same.returncode == 2 and same.stderr.startswith("gemmgen emit: error: unknown preset 'v99'")
    bare = subprocess.run([sys.executable, "-m", "gemmgen"], capture_output=True, text=True, cwd=REPO)
    assert bare.returncode == 2 and "demo" in bare.stderr       # as `gemmgen` alone: the help, on stderr
