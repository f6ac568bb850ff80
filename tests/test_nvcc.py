"""gemmgen.build: nvcc, parsing ptxas's report, compile errors as CompileFailure, a clear missing-nvcc error."""
from __future__ import annotations

import pytest

from gemmgen.build import logs, nvcc, parallel, resources
from gemmgen.base import CompileFailure

needs_nvcc = pytest.mark.skipif(not nvcc.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")

LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'main_k' for 'sm_86'
ptxas info    : Function properties for main_k
    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem, 424 bytes cmem[0]
ptxas info    : Compile time = 97.019 ms
ptxas info    : Compiling entry function 'main_k_scale' for 'sm_86'
ptxas info    : Function properties for main_k_scale
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]
"""


def test_parse_reads_every_kernel():
    found = resources.parse(LOG)
    assert set(found) == {"main_k", "main_k_scale"}
    k = found["main_k"]
    assert (k.arch, k.registers, k.smem_bytes, k.barriers) == ("sm_86", 255, 2048, 1)
    assert (k.stack_bytes, k.spill_stores, k.spill_loads, k.spills) == (24, 16, 12, 28)
    assert found["main_k_scale"].spills == 0 and found["main_k_scale"].registers == 16


def test_parse_ignores_properties_of_non_entry_functions():
    log = LOG.replace("Function properties for main_k_scale", "Function properties for _Z6helperv")
    assert resources.parse(log)["main_k_scale"].stack_bytes == 0


def test_report_names_missing_kernels():
    report = resources.PtxasReport("sm_90", resources.parse(LOG))
    assert report.spills == 28
    with pytest.raises(KeyError, match="main_k_scale"):
        report["nope"]


def test_missing_nvcc_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(nvcc.shutil, "which", lambda *a, **k: None)
    assert not nvcc.have_nvcc()
    with pytest.raises(nvcc.ToolkitMissing, match="CUDA_HOME"):
        nvcc.compile_cubin('extern "C" __global__ void k() {}')


def test_first_error_and_numbered_source():
    assert logs.first_error("a\nk.cu(2): error: bad\n") == "k.cu(2): error: bad"
    assert logs.numbered("x\ny").splitlines()[1] == "   2  y"


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@needs_nvcc
def test_compile_reports_resources():
    report = nvcc.compile_cubin('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }', "sm_80")
    assert report["k"].registers > 0 and report["k"].spills == 0 and report.arch == "sm_80"


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@needs_nvcc
def test_compile_error_is_a_compile_failure_with_the_log():
    with pytest.raises(CompileFailure) as err:
        nvcc.compile_cubin('extern "C" __global__ void k() { undefined_thing(); }', "sm_90")
    assert "undefined_thing" in err.value.reason and "undefined_thing" in err.value.detail
    assert "   1  extern" in err.value.detail                     # numbered source for the reader


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@needs_nvcc
def test_compile_many_keeps_order_and_returns_failures():
    good = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
    results = parallel.compile_many([(good, "sm_80"), ("garbage", "sm_86"), (good, "sm_90")])
    assert [type(r).__name__ for r in results] == ["PtxasReport", "CompileFailure", "PtxasReport"]
    assert [results[0].arch, results[2].arch] == ["sm_80", "sm_90"]


# nvcc's docstring examples compile with nvcc (+NVCC, +CUBLAS): tests/test_doctests.py runs them.
