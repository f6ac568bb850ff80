"""benchmarks/shallow_floor.py without a GPU: its input checks (one line, exit 2, nothing timed) and its CUDA
source, every one-shot tile instantiated, through nvcc."""
from __future__ import annotations

import subprocess

import pytest

from gemmgen.build import nvcc
from tests.scripts import load, refused


@pytest.mark.parametrize("argv, says", [
    (["--shape", "100x100x500"], "K <= 160"),
    (["--shape", "100x100x50/NT"], "the probe takes NN shapes"),
    (["--shape", "100x100"], "100x100"),
    (["--rep-ms", "0"], "--rep-ms 0"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys):
    assert says in refused(load("shallow_floor").main, argv, capsys)


@pytest.mark.skipif(not nvcc.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
def test_the_probe_kernels_compile_for_every_tile(tmp_path):
    mod = load("shallow_floor")
    src = tmp_path / "floor.cu"
    src.write_text(mod.SRC + "".join(
        f"template __global__ void shallow<{a},{b},{c},{d}>(int, int, int, const float*, int, const float*, int, "
        f"float*, int);\n" for a, b, c, d in mod.TILES))
    done = subprocess.run([nvcc.nvcc_path(), "-cubin", "-arch=sm_90", "-std=c++17", "-o", str(tmp_path / "f.cubin"),
                           str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "f.cubin").stat().st_size > 0
