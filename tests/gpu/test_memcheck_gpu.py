"""compute-sanitizer's memcheck over the hand-written routes (memcheck_routes.py): no read or write outside
the operands' exact buffers, in every layout, misaligned, with odd lengths. Skipped where the tool is
missing; compute-sanitizer needs a GPU it supports (not gVisor's)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parent


def _sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    fallback = Path(cuda) / "bin" / "compute-sanitizer"
    return found or (str(fallback) if fallback.exists() else None)


def test_the_handwritten_routes_stay_inside_their_buffers():
    tool = _sanitizer()
    if tool is None:
        pytest.skip("compute-sanitizer is not on PATH nor in $CUDA_HOME/bin")
    run = subprocess.run([tool, "--tool", "memcheck", "--padding", "64", "--error-exitcode", "3", "--print-limit", "10",
                          sys.executable, str(HERE / "memcheck_routes.py")],
                         capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    if "Device not supported" in out:
        pytest.skip("compute-sanitizer does not support this device")
    assert run.returncode == 0 and "memcheck routes: done" in out and "ERROR SUMMARY: 0 errors" in out, out[-3000:]
