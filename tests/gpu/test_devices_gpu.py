"""The present GPU as gemmgen reads it (CUDA 13 gives the clocks as device attributes only), and a GPU
outside the table: the same GPU under a name gemmgen does not know is described by its properties and
served, each precision class, by presets valid on its architecture, checked against float64."""
from __future__ import annotations

import numpy as np
import pytest

from gemmgen.base.devices import ARCHS, detect, spec_from_properties
from gemmgen.measure.launch import Operands
from gemmgen.runtime.library import KernelLibrary

pytestmark = pytest.mark.gpu


def _properties() -> dict:
    import cupy

    rt = cupy.cuda.runtime
    props = dict(rt.getDeviceProperties(0))
    props.setdefault("clockRate", rt.deviceGetAttribute(13, 0))         # cudaDevAttrClockRate, kHz
    props.setdefault("memoryClockRate", rt.deviceGetAttribute(36, 0))   # cudaDevAttrMemoryClockRate, kHz
    return props


def test_detect_reads_the_driver():
    spec, props = detect(0), _properties()
    assert spec.arch in ARCHS and spec.cc == (props["major"], props["minor"])
    assert spec.sm_count == props["multiProcessorCount"] and spec.l2_bytes == props["l2CacheSize"]
    assert spec.clock_mhz > 500 and spec.mem_gbs > 100 and spec.fp32_tflops > 1


@pytest.mark.filterwarnings("ignore:gemmgen. no tuned")   # the built-in presets serve: what is checked here
@pytest.mark.parametrize("precision", ["fp32", "tf32", "f16"])
def test_a_gpu_outside_the_table_runs_matmul(precision):
    import cupy

    spec = spec_from_properties({**_properties(), "name": "NVIDIA Unlisted GPU"})
    assert spec.key == "detected" and spec.clock_mhz > 500 and spec.mem_gbs > 100
    lib = KernelLibrary(spec, {})
    M, N, K = 1000, 777, 513
    rng = np.random.default_rng(1)
    dtype = np.float16 if precision == "f16" else np.float32
    A, B = (rng.standard_normal(s).astype(dtype) for s in ((M, K), (K, N)))
    dA, dB = cupy.asarray(A), cupy.asarray(B)
    dC = cupy.full((M, N), cupy.nan, cupy.float32)   # poisoned: every element must be written
    kernel = lib.kernel_for(M, N, K, "NN", precision=precision)
    kernel(Operands(M, N, K, dA.data.ptr, K, dB.data.ptr, N, dC.data.ptr, N))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    err = np.abs(cupy.asnumpy(dC) - ref).max() / np.abs(ref).max()
    assert err < {"fp32": 1e-5, "tf32": 5e-3, "f16": 1e-2}[precision], (kernel.config.label, err)
