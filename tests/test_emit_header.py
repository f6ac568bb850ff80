"""The header of an emitted kernel: its config JSON copies back, and its nvcc build line builds it,
naming the file the source was written to."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gemmgen.build import nvcc
from gemmgen.cli import main
from gemmgen.cli.emit import stdout_file
from gemmgen.codegen.render import render
from gemmgen.kernel.presets import names, preset

REPO = Path(__file__).resolve().parents[1]


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
        assert code.count("\n// Build: nvcc ") == 1 and build_line(code).endswith("KERNEL.cu -o KERNEL.cubin"), name


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
    ("v8", "sm_90", "nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin"),
    ("v8", "rtx3090", "nvcc -cubin -O3 -std=c++17 -arch=sm_86 KERNEL.cu -o KERNEL.cubin"),
    ("tf32x3-wgmma", "h100", "nvcc -cubin -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a KERNEL.cu -o KERNEL.cubin"),
    ("wmma-bf16", "a100", "nvcc -cubin -O3 -std=c++17 -arch=sm_80 KERNEL.cu -o KERNEL.cubin"),
    ("v0", "l4", "nvcc -cubin -O3 -std=c++17 -arch=sm_89 KERNEL.cu -o KERNEL.cubin"),
])
def test_build_line_names_the_target(capsys, name, arch, line):
    assert build_line(emitted(capsys, "--preset", name, "--arch", arch)) == line
    harness = emitted(capsys, "--preset", name, "--arch", arch, "--harness")
    assert build_line(harness) == line.replace("-cubin ", "").replace("-o KERNEL.cubin", "-lcublas -o KERNEL")
    assert f"//   build: {build_line(harness)}" in harness      # the harness section says the same
    assert "//   run:   ./KERNEL M N K" in harness


# ---- the file the build line names ---------------------------------------------------------------
def test_build_line_names_the_output_file(capsys, tmp_path):
    target = tmp_path / "mykern.cu"
    assert main(["emit", "--preset", "v8", "--harness", "-o", str(target)]) == 0
    code = target.read_text()
    assert build_line(code) == f"nvcc -O3 -std=c++17 -arch=sm_90 {target} -lcublas -o {tmp_path / 'mykern'}"
    assert f"//   run:   {tmp_path / 'mykern'} M N K" in code and "KERNEL" not in code
    wrote = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("wrote "))
    assert wrote.endswith(build_line(code))     # the same line as the header's


def test_build_line_names_a_file_without_the_cu_suffix(capsys, tmp_path):
    target = tmp_path / "kernel.txt"
    assert main(["emit", "--preset", "v5", "-o", str(target)]) == 0
    assert build_line(target.read_text()).endswith(f"-x cu {target} -o {target}.out.cubin")   # nvcc reads it as CUDA


def test_build_line_names_the_file_stdout_is_redirected_to(tmp_path):
    with open(tmp_path / "foo.cu", "w") as out:          # gemmgen emit --preset v8 > foo.cu
        done = subprocess.run([sys.executable, "-m", "gemmgen", "emit", "--preset", "v8"], stdout=out,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_importing_this_checkout())
    assert done.returncode == 0, done.stderr
    assert build_line((tmp_path / "foo.cu").read_text()) == "nvcc -cubin -O3 -std=c++17 -arch=sm_90 foo.cu -o foo.cubin"


def test_build_line_names_a_placeholder_for_a_pipe(tmp_path):
    done = subprocess.run([sys.executable, "-m", "gemmgen", "emit", "--preset", "v8"], capture_output=True,
                          text=True, cwd=tmp_path, env=_importing_this_checkout())    # stdout is a pipe
    assert done.returncode == 0 and build_line(done.stdout).endswith(" KERNEL.cu -o KERNEL.cubin")


def _importing_this_checkout() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def test_stdout_file_is_the_regular_file_written_to(tmp_path):
    with open(tmp_path / "a.cu", "w") as f:
        assert stdout_file(f) == str(tmp_path / "a.cu")
    read, write = os.pipe()
    with os.fdopen(read) as r, os.fdopen(write, "w") as w:
        assert stdout_file(w) is None and stdout_file(r) is None              # a pipe is no file
    with open(tmp_path / "gone.cu", "w") as f:
        os.unlink(tmp_path / "gone.cu")
        assert stdout_file(f) is None                                         # no name to give
    assert stdout_file(object()) is None                                      # no descriptor (io.StringIO)


def test_stdout_file_is_relative_below_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with open("sub/b.cu", "w") as f:
        assert stdout_file(f) == os.path.join("sub", "b.cu")


def test_the_digest_does_not_depend_on_the_file_named():
    plain, named = render(preset("v8"), "sm_90"), render(preset("v8"), "sm_90", file="mine.cu")
    assert named.code != plain.code and "mine.cu" in named.code and named.digest == plain.digest


def test_emit_to_a_file_prints_its_build_line(capsys, tmp_path):
    target = tmp_path / "w.cu"
    assert main(["emit", "--preset", "tf32-wgmma", "--harness", "-o", str(target)]) == 0
    err = capsys.readouterr().err
    wrote = [line for line in err.splitlines() if line.startswith("wrote ")]   # (then the no-GPU notice, if any)
    assert wrote[0].endswith(f"-gencode=arch=compute_90a,code=sm_90a {target} -lcublas -o {tmp_path / 'w'}")


def _run_build_line(code: str, tmp_path) -> subprocess.CompletedProcess:
    """Run the header's build line in tmp_path, cuBLAS from wherever gemmgen finds it (the toolkit, or
    NVIDIA's wheel as the harness header describes)."""
    (tmp_path / "KERNEL.cu").write_text(code)
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
    assert (tmp_path / ("KERNEL" if harness else "KERNEL.cubin")).stat().st_size > 0
    assert "warning" not in done.stderr.lower(), done.stderr   # e.g. #177: a variable declared but never used


def test_an_exported_winner_names_its_own_file(tmp_path):
    from gemmgen.records import Entry, record
    from gemmgen.records.export import export

    cfg = preset("v10")
    record({"name": "Example GPU", "cc": "9.0"}, [Entry.new("1024x1024x1024", cfg, 9.0, 10.0, 5, arch="sm_90")],
           tmp_path / "results")
    cu, manifest = export("Example GPU", "1024x1024x1024", tmp_path / "out", tmp_path / "results")
    assert build_line(cu.read_text()) == f"nvcc -cubin -O3 -std=c++17 -arch=sm_90 {cfg.name}.cu -o {cfg.name}.cubin"
    assert json.loads(manifest.read_text())["source_matches"]     # the file's name is not part of the digest
