"""GPU tests: skipped cleanly, with the reason, where CuPy or a CUDA GPU is missing."""
from __future__ import annotations

import pytest


def _gpu_missing() -> str | None:
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA GPU visible"
    except Exception as exc:  # ImportError, or a CUDA driver error on a machine without a GPU
        return f"no usable CuPy/CUDA ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _gpu_missing()
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def session():
    from gemmgen.measure.session import Session

    return Session(0)


@pytest.fixture(scope="module")
def hopper(session):
    """The session on an sm_90 GPU (wgmma and TMA need sm_90a); elsewhere the test skips."""
    if session.spec.cc != (9, 0):
        pytest.skip(f"wgmma and TMA need sm_90a; this GPU is {session.spec.arch}")
    return session


@pytest.fixture(scope="module")
def worker():
    from gemmgen.measure.worker import MeasureWorker

    with MeasureWorker(0, floor_s=20.0) as w:
        yield w


@pytest.fixture(autouse=True)
def fresh_prepared_calls():
    """Each test plans its own matmul requests: a test that swaps the library (monkeypatch) must not
    meet a request prepared by another test with another plan."""
    from gemmgen.runtime.calls import forget

    forget()
    yield
    forget()
