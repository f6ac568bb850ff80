"""MeasureWorker isolation on the CPU: hangs, crashes and failures cost one worker, never the caller."""
from __future__ import annotations

import pytest

from gemmgen.base import RuntimeFailure, Timeout, WrongResult
from gemmgen.measure.worker import describe_cuda_error, MeasureWorker, WorkerError


@pytest.fixture
def worker():
    with MeasureWorker(factory="tests.fake_sessions:FakeSession", floor_s=5.0) as w:
        yield w


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
def test_hang_times_out_and_a_fresh_worker_takes_over(worker):
    first = worker.call("whoami")
    with pytest.raises(Timeout, match="timed out after 1 s"):
        worker.call("hang", timeout=1.0)
    assert worker.call("whoami") != first and worker.restarts == 1


def test_crash_becomes_runtime_failure_with_exit_code(worker):
    with pytest.raises(RuntimeFailure, match="exit code 3"):
        worker.call("crash")
    assert worker.call("ping") == "pong"


def test_expected_failure_passes_through_and_worker_survives(worker):
    pid = worker.call("whoami")
    with pytest.raises(WrongResult, match="relative error"):
        worker.call("wrong")
    assert worker.call("whoami") == pid


def test_bug_in_worker_is_not_disguised_as_kernel_failure(worker):
    with pytest.raises(WorkerError, match="KeyError"):
        worker.call("buggy")


def test_worker_that_cannot_start_says_why():
    with MeasureWorker(factory="tests.fake_sessions:BrokenSession") as w:
        with pytest.raises(RuntimeFailure, match="could not start: no CUDA device"):
            w.call("ping")


def test_timeout_grows_with_the_work():
    from gemmgen.base import Shape

    w = MeasureWorker(floor_s=10.0)
    assert w.timeout_for(None) == 10.0
    assert w.timeout_for(Shape(8192, 8192, 8192)) > w.timeout_for(Shape(4096, 4096, 4096)) > 10.0


def test_cuda_error_names_are_translated():
    assert describe_cuda_error(RuntimeError("cudaErrorIllegalAddress: an illegal memory access")) == "illegal memory access"
