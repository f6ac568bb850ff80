"""The product speaks of itself, not of how it was built: no tracked file names a work session or an
issue by number (the reason goes in a line, the history in git). The pattern is assembled from parts so
that this file does not match it."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORDS = re.compile("(" + "sess" + r"ions? [0-9]|" + "iss" + r"ue [0-9])", re.IGNORECASE)


def _tracked() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_no_tracked_text_file_names_a_session_or_an_issue_by_number():
    found = []
    for path in _tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):   # binary files (images), or gone from the work tree
            continue
        found += [f"{path.relative_to(ROOT)}: {m.group(0)!r}" for m in WORDS.finditer(text)][:3]
    assert not found, "\n".join(found[:20])


def test_the_pattern_catches_what_it_is_for():
    assert WORDS.search("as measured in S" + "ession 12") and WORDS.search("the i" + "ssue 11 set")
    assert not WORDS.search("a worker session of 12 processes") and not WORDS.search("issues 3 launches")
