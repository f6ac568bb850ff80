"""The wheel is self-contained: built, installed into a fresh venv outside the checkout, it emits kernels.

This is what a user gets from `pip install gemmgen`: templates/, search/ and results/ must travel
inside the wheel (pyproject.toml maps them into the package), and nothing may be read from the
checkout. Needs the `build` and `hatchling` packages (the `test` extra) and a package index for the
wheel's dependencies.
"""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gemmgen.kernel.presets import preset

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


def _run(cmd, **kwargs):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # --no-isolation: build with the hatchling installed by the test extra, no download of a backend.
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, REPO])
    (built,) = out.glob("gemmgen-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", root / "env"])
    _run([root / "env" / "bin" / "python", "-m", "pip", "install", "--quiet", wheel])
    return root / "env"


def test_wheel_ships_the_data_folders(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    templates = sorted(p.name for p in (REPO / "templates").iterdir() if p.suffix in (".j2", ".cu"))
    assert {"pipeline.cuh.j2", "common.cuh.j2", "gemv.cu", "small.cu"} <= set(templates)   # *.cu: plain CUDA, read as is
    for template in templates:
        assert f"gemmgen/templates/{template}" in names
    assert "gemmgen/cli/__init__.py" in names and "gemmgen/build/nvcc.py" in names
    assert not any(n.startswith(("tests/", "templates/")) for n in names)


def _clean_env() -> dict:
    # Nothing may point back at the checkout: no PYTHONPATH, and the command runs from elsewhere.
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def test_installed_wheel_emits_from_another_directory(venv, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = _run([venv / "bin" / "gemmgen", "emit", "--preset", "v8"], cwd=elsewhere, env=_clean_env())
    assert preset("v8").name in out and 'extern "C" __global__' in out
    assert "// Produced by: gemmgen emit --preset v8" in out


def test_installed_wheel_finds_its_own_templates(venv, tmp_path):
    code = "import gemmgen.base.paths as p; print(p.data_dir('templates')); print(p.data_dir('search'))"
    out = _run([venv / "bin" / "python", "-c", code], cwd=tmp_path, env=_clean_env())
    templates, search = (Path(line) for line in out.splitlines())
    assert venv.resolve() in templates.resolve().parents and REPO not in templates.resolve().parents
    assert templates.name == "templates" and search.name == "search"
