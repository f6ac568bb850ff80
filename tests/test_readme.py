"""The README stays in step with CI and the presets: same test command, one table row per preset."""
from __future__ import annotations

import re
from pathlib import Path

from gemmgen.kernel.presets import describe, names

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
CI = (REPO / ".ci" / "run").read_text()


def _install_and_test_commands() -> list[str]:
    section = README.split("## Install and test", 1)[1].split("\n\n", 2)[1]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_readme_has_two_commands_install_then_test():
    install, test = _install_and_test_commands()
    assert install.startswith("python -m pip install -e ") and test == "python -m pytest"


def test_ci_runs_the_readme_test_command():
    _, test = _install_and_test_commands()
    assert re.search(rf"^{re.escape(test)}$", CI, re.MULTILINE), f"{test!r} is not a line of .ci/run"


def test_ci_treats_no_tests_as_failure():
    assert '"$status" -eq 5' in CI


def test_every_preset_has_a_row():
    for name in names():
        row = next((ln for ln in README.splitlines() if ln.startswith(f"| {name} |")), None)
        assert row, f"README has no row for {name}"
        assert describe(name).replace("__shfl_sync", "`__shfl_sync`") in row


def test_readme_opens_with_a_users_install_then_one_command_then_the_developers():
    from gemmgen.cli import COMMANDS

    blocks = [b.strip() for b in README.split("\n\n") if b.startswith("    ")]
    assert blocks[:2] == ['pip install "gemmgen[cuda13]"', 'pip install "gemmgen[cuda12]"']
    first = blocks[2].split()
    assert first[0] == "gemmgen" and first[1] in COMMANDS, blocks[2]
    assert blocks[3].splitlines()[0].startswith("python -m pip install -e ")   # the developers' install, after
