"""The README's install command brings everything the tests and the offered options need, and CI runs
that command and nothing else: a green CI means a new user's set-up works."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
CI = (REPO / ".ci" / "run").read_text()
PYPROJECT = (REPO / "pyproject.toml").read_text()


def _install_command() -> str:
    section = README.split("## Install and test", 1)[1].split("\n\n", 2)[1]
    return next(line.strip() for line in section.splitlines() if line.startswith("    "))


def _list(name: str) -> list[str]:
    """A list of requirements in pyproject.toml: `name = [...]` (an extra, or the dependencies)."""
    found = re.search(rf"^{re.escape(name)} = \[(.*?)\]", PYPROJECT, re.MULTILINE | re.DOTALL)
    assert found, name
    return re.findall(r'"([^"]+)"', found.group(1))


def test_ci_installs_with_the_readme_command_and_nothing_else():
    installs = [ln.strip() for ln in CI.splitlines() if "pip install" in ln and not ln.lstrip().startswith("#")]
    assert installs == [_install_command()]


def test_readme_install_names_the_test_extra_and_a_cuda_extra():
    extras = re.search(r'\.\[([\w,]+)\]', _install_command()).group(1).split(",")
    assert "test" in extras and ("cuda13" in extras or "cuda12" in extras)


def test_cuda_extras_bring_nvrtc_and_cublas_of_their_cuda():
    for extra, suffix in (("cuda13", ""), ("cuda12", "-cu12")):
        names = [re.split(r"[<>=!~\[]", req)[0] for req in _list(extra)]
        assert f"nvidia-cuda-nvrtc{suffix}" in names and f"nvidia-cublas{suffix}" in names, (extra, names)
        assert any(n.startswith(f"cupy-{extra}") for n in names), (extra, names)


def test_offered_sampler_and_test_libraries_are_installed():
    assert any(req.startswith("cmaes") for req in _list("dependencies"))     # search --sampler cmaes
    test = _list("test")
    for needed in ("pytest", "psycopg2-binary", "matplotlib", "build", "hatchling"):
        assert any(req.startswith(needed) for req in test), needed
