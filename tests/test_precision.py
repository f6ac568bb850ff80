"""The runtime's built-in fallbacks on every architecture: a GPU that gemmgen has no stored results for,
in its table or not, is served by presets valid on its architecture (no wgmma off Hopper, no cp.async
or TF32 on Turing), and what no family serves there is refused by name."""
from __future__ import annotations

import pytest

from gemmgen.base.devices import ARCHS, for_arch, spec_from_properties
from gemmgen.codegen.render import render
from gemmgen.kernel.rules import explain
from gemmgen.runtime.library import KernelLibrary
from gemmgen.runtime.precision import PRECISIONS, fallback_config

# Where no family computes the class: TF32 and bf16 need sm_80 (mma.sync .tf32, bf16 wmma).
REFUSED = {("sm_75", "tf32"): "TENSOR_CORE_ARCH", ("sm_75", "bf16"): "WMMA_ARCH"}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_fallbacks_are_valid_on_every_arch(arch, precision):
    for layout in ("NN", "NT", "TN", "TT"):
        cfg = fallback_config(precision, arch, layout)
        rules = [v.rule for v in explain(cfg, arch)]
        if (arch, precision) in REFUSED:
            assert REFUSED[(arch, precision)] in rules
            continue
        assert rules == [], (cfg.label, layout)
        assert not cfg.uses_wgmma or arch == "sm_90"


@pytest.mark.filterwarnings("ignore:gemmgen. no tuned")   # the built-in presets serve: what is checked here
def test_an_unknown_gpu_is_served_by_presets_of_its_arch():
    """A GPU the table lacks, described by its driver (a 60-SM sm_120 part): every class is served by a
    config that renders for it, none of them wgmma."""
    spec = spec_from_properties({"name": "NVIDIA GeForce RTX 5070", "major": 12, "minor": 0, "multiProcessorCount": 48,
                                 "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 101376,
                                 "sharedMemPerMultiprocessor": 102400, "regsPerBlock": 65536,
                                 "regsPerMultiprocessor": 65536, "maxThreadsPerBlock": 1024,
                                 "maxThreadsPerMultiProcessor": 1536, "l2CacheSize": 48 * 2**20, "clockRate": 2512000,
                                 "memoryClockRate": 14001000, "memoryBusWidth": 192})
    lib = KernelLibrary(spec, {})
    lib._load = lambda config, measured: (config, measured)   # no compile, no GPU
    for precision in PRECISIONS:
        for M, N, K in ((4096, 4096, 4096), (1000, 777, 513)):
            config, _ = lib.kernel_for(M, N, K, "NN", precision=precision)
            assert not config.uses_wgmma and explain(config, spec) == [], (precision, config.label)
            assert render(config, spec).code


def test_turing_serves_fp32_and_f16():
    t4 = for_arch("sm_75")
    assert fallback_config("fp32", t4).family == "simt"
    assert fallback_config("f16", t4).label == "wmma" and not fallback_config("f16", t4).async_copy
