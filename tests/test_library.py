"""The kernel library keeps only fp32-accurate entries (no GPU needed to build one)."""
from __future__ import annotations

from gemmgen.devices import known
from gemmgen.library import KernelLibrary
from gemmgen.presets import preset
from gemmgen.store import Entry


def test_tf32_winners_never_serve_fp32_matmul():
    fast_tf32 = Entry.new("4096x4096x4096", preset("tf32"), 115.0, 52.0, 10, "x")
    simt = Entry.new("2048x2048x2048", preset("v13"), 45.0, 50.0, 10, "y")
    lib = KernelLibrary(known("h100"), {e.key: e for e in (fast_tf32, simt)})
    assert list(lib.entries) == [simt.key]
