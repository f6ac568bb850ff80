"""Fixtures the CPU tests share."""
from __future__ import annotations

import ctypes

import pytest


@pytest.fixture
def no_driver(monkeypatch):
    """libcuda cannot be loaded, as on a machine without a GPU (every machine then answers the same)."""
    real_cdll = ctypes.CDLL

    def cdll(name, *args, **kwargs):
        if "libcuda" in str(name):
            raise OSError(f"{name}: cannot open shared object file")
        return real_cdll(name, *args, **kwargs)

    monkeypatch.setattr(ctypes, "CDLL", cdll)
