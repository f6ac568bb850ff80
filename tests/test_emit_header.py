"""The header of an emitted kernel: its config JSON copies back, and its nvcc build line builds it."""
from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from gemmgen.build import nvcc
from gemmgen.cli import main
from gemmgen.kernel.presets import names


def emitted(capsys, *argv) -> str:
    assert main(["emit", *argv]) == 0
    return capsys.readouterr().out


def config_lines(code: str) -> list[str]:
    """The lines between 'Config' and the blank comment line."""
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("// Config")) + 1
    return lines[start:lines.index("//", start)]


def header_config(code: str) -> dict:
    """The header's config JSON, with the comment marks taken off."""
    return json.loads("\n".join(line[len("//   "):] for line in config_lines(code)))


def build_line(code: str) -> str:
    return next(line for line in code.splitlines() if line.startswith("// Build: "))[len("// Build: "):]


def test_every_preset_header_has_one_build_line(capsys):
    for name in names():
        code = emitted(capsys, "--preset", name)
        assert code.count("\n// Build: nvcc ") == 1 and build_line(code).endswith("k.cu -o k.cubin"), name


@pytest.mark.parametrize("name", names())
def test_header_config_copies_back_to_the_same_kernel(capsys, tmp_path, name):
    code = emitted(capsys, "--preset", name, "--set", "label=a label, with commas: and colons")
    assert all(len(line) <= 101 for line in config_lines(code)) and len(config_lines(code)) > 1
    path = tmp_path / "c.json"
    path.write_text(json.dumps(header_config(code)))
    again = emitted(capsys, "--config", str(path))
    kernel = lambda text: text.splitlines()[1].split()[3]     # "// gemmgen kernel NAME ..."
    assert kernel(again) == kernel(code) and header_config(again) == header_config(code)


@pytest.mark.parametrize("name, arch, line", [
    ("v8", "sm_90", "nvcc -cubin -O3 -std=c++17 -arch=sm_90 k.cu -o k.cubin"),
    ("v8", "rtx3090", "nvcc -cubin -O3 -std=c++17 -arch=sm_86 k.cu -o k.cubin"),
    ("tf32x3-wgmma", "h100", "nvcc -cubin -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a k.cu -o k.cubin"),
    ("wmma-bf16", "a100", "nvcc -cubin -O3 -std=c++17 -arch=sm_80 k.cu -o k.cubin"),
    ("v0", "l4", "nvcc -cubin -O3 -std=c++17 -arch=sm_89 k.cu -o k.cubin"),
])
def test_build_line_names_the_target(capsys, name, arch, line):
    assert build_line(emitted(capsys, "--preset", name, "--arch", arch)) == line
    harness = emitted(capsys, "--preset", name, "--arch", arch, "--harness")
    assert build_line(harness) == line.replace("-cubin ", "").replace("-o k.cubin", "-lcublas -o k")
    assert f"//   build: {build_line(harness)}" in harness      # the harness section says the same


def test_emit_to_a_file_prints_its_build_line(capsys, tmp_path):
    target = tmp_path / "w.cu"
    assert main(["emit", "--preset", "tf32-wgmma", "--harness", "-o", str(target)]) == 0
    err = capsys.readouterr().err
    wrote = [line for line in err.splitlines() if line.startswith("wrote ")]   # (then the no-GPU notice, if any)
    assert wrote[0].endswith(f"-gencode=arch=compute_90a,code=sm_90a {target} -lcublas -o {tmp_path / 'w'}")


def _run_build_line(code: str, tmp_path) -> subprocess.CompletedProcess:
    """Run the header's build line in tmp_path, cuBLAS from wherever gemmgen finds it (the toolkit, or
    NVIDIA's wheel as the harness header describes)."""
    (tmp_path / "k.cu").write_text(code)
    words = shlex.split(build_line(code))
    if "-lcublas" in words:
        at = words.index("-lcublas")
        words[at:at + 1] = nvcc.cublas_flags()
    words[0] = nvcc.nvcc_path()
    return subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(not nvcc.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
@pytest.mark.parametrize("name, harness", [("v0", False), ("v5", False), ("v8", False), ("tf32x3", False), ("wmma", False),
                                           ("tf32x3-wgmma", False), ("tf32x3-wgmma", True)])
def test_the_header_build_line_builds_the_kernel(capsys, tmp_path, name, harness):
    if harness:
        try:
            nvcc.cublas_flags()
        except nvcc.ToolkitMissing as err:
            pytest.skip(str(err))
    code = emitted(capsys, "--preset", name, *(["--harness"] if harness else []))
    done = _run_build_line(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ("k" if harness else "k.cubin")).stat().st_size > 0
    assert "warning" not in done.stderr.lower(), done.stderr   # e.g. #177: a variable declared but never used
