"""gemmgen.base.gpus and .devices: every architecture CUDA 13 builds for is a target with a GPU to stand
for it, a GPU outside the table is described by the driver's properties, and a command without --arch
says when it targets the H100 because no GPU is present."""
from __future__ import annotations

import pytest

from gemmgen.base.devices import (ARCH_LIMITS, ARCHS, KNOWN, REPRESENTATIVE, NoGpu, UnknownDevice, arch_note,
                                  default_notice, for_arch, known, resolve_alias, spec_from_properties, target)
from gemmgen.base.gpus import MMA_TF32_FLOP_PER_CLK_SM

# Properties as CuPy's getDeviceProperties gives them, with the two clocks CUDA 13 gives as device
# attributes only (kHz), as detect() completes them: an RTX 5090 and a T4 (their specifications' values).
RTX5090 = {"name": b"NVIDIA GeForce RTX 5090", "major": 12, "minor": 0, "multiProcessorCount": 170,
           "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 101376, "sharedMemPerMultiprocessor": 102400,
           "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "maxThreadsPerBlock": 1024,
           "maxThreadsPerMultiProcessor": 1536, "l2CacheSize": 100663296, "clockRate": 2407000,
           "memoryClockRate": 14001000, "memoryBusWidth": 512}
T4 = {"name": b"Tesla T4", "major": 7, "minor": 5, "multiProcessorCount": 40, "sharedMemPerBlock": 49152,
      "sharedMemPerBlockOptin": 65536, "sharedMemPerMultiprocessor": 65536, "regsPerBlock": 65536,
      "regsPerMultiprocessor": 65536, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiProcessor": 1024,
      "l2CacheSize": 4194304, "clockRate": 1590000, "memoryClockRate": 5001000, "memoryBusWidth": 256}


def test_every_arch_has_limits_rates_and_a_gpu():
    assert list(ARCHS) == ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_103", "sm_110",
                           "sm_120", "sm_121"]
    assert set(ARCH_LIMITS) == set(REPRESENTATIVE) == set(MMA_TF32_FLOP_PER_CLK_SM) == set(ARCHS)
    for arch in ARCHS:
        d = for_arch(arch)
        assert d.arch == arch and d.key == REPRESENTATIVE[arch]
        assert d.smem_per_block_optin == ARCH_LIMITS[arch].smem_per_block_optin <= d.smem_per_sm   # 1 KB kept from sm_80


def test_every_entry_has_what_a_time_model_needs():
    for key, d in KNOWN.items():
        assert d.sm_count > 0 and d.clock_mhz > 0 and d.mem_gbs > 0, key
        assert d.fp32_tflops > 0 and (d.tf32_mma_tflops > 0) == (d.cc >= (8, 0)), key
        assert (d.wgmma_tf32_tflops > 0) == (d.arch == "sm_90"), key
        assert d.max_threads_per_sm == ARCH_LIMITS[d.arch].max_threads_per_sm, key


@pytest.mark.parametrize("gpu,fp32,tf32", [
    ("a100", 19.5, 156), ("rtx3090", 35.6, 35.6), ("a10", 31.2, 62.5), ("rtx4090", 82.6, 82.6), ("l4", 30.3, 60.6),
    ("l40s", 91.6, 183), ("h100", 66.9, 267.6), ("rtx5090", 104.8, 104.8), ("t4", 8.1, 0),
])
def test_peak_rates_match_the_datasheets(gpu, fp32, tf32):
    """Dense FP32 and mma.sync TF32 peaks at the boost clock: the datasheets' numbers (Hopper's mma.sync
    is half its wgmma rate, 535 TFLOP/s at 1980 MHz)."""
    d = known(gpu)
    assert d.fp32_tflops == pytest.approx(fp32, rel=0.01)
    assert d.tf32_mma_tflops == pytest.approx(tf32, rel=0.01)


@pytest.mark.parametrize("name,key", [
    ("Tesla T4", "t4"), ("NVIDIA GeForce RTX 2080 Ti", "rtx2080ti"), ("NVIDIA A30", "a30"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA GH200 480GB", "gh200"), ("NVIDIA H20", "h20"), ("NVIDIA B200", "b200"), ("NVIDIA GB200", "gb200"),
    ("NVIDIA GeForce RTX 5090", "rtx5090"), ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000"),
    ("NVIDIA GB10", "gb10"), ("NVIDIA H200 141GB HBM3e", "h200"), ("a100", "a100"), ("4070ti-super", "4070ti-super"),
])
def test_driver_names_resolve(name, key):
    assert resolve_alias(name) == key


def test_a_gpu_in_the_table_keeps_its_datasheet_clock_and_bandwidth():
    spec = spec_from_properties(RTX5090)
    assert (spec.key, spec.arch, spec.sm_count, spec.clock_mhz, spec.mem_gbs) == ("rtx5090", "sm_120", 170, 2407, 1792)
    assert spec == KNOWN["rtx5090"].__class__(**{**KNOWN["rtx5090"].to_dict(), "l2_bytes": 100663296,
                                                 "smem_per_block_optin": 101376, "smem_per_sm": 102400})


def test_an_unknown_gpu_is_described_by_its_properties():
    """A part the table lacks (a cut-down RTX 5090 under another name, a T4 variant) keeps every limit
    the driver reports and gets its clock and bandwidth from it: 14001 MHz x 512 bits x 2 / 8 = 1792 GB/s."""
    spec = spec_from_properties({**RTX5090, "name": "NVIDIA GeForce RTX 5080 Mobile", "multiProcessorCount": 60,
                                 "clockRate": 1500000, "memoryClockRate": 12001000, "memoryBusWidth": 256})
    assert (spec.key, spec.name, spec.cc, spec.sm_count, spec.clock_mhz) == (
        "detected", "NVIDIA GeForce RTX 5080 Mobile", (12, 0), 60, 1500)
    assert spec.mem_gbs == pytest.approx(12001e6 * 256 / 8 * 2 / 1e9)
    assert (spec.smem_per_block_optin, spec.smem_per_sm, spec.max_threads_per_sm, spec.l2_bytes) == (
        101376, 102400, 1536, 100663296)
    assert spec.fma_lanes == 128 and spec.tf32_flop_per_clk == 256          # sm_120's rates
    t4 = spec_from_properties({**T4, "name": b"NVIDIA T4G"})
    assert (t4.key, t4.arch, t4.mem_gbs, t4.smem_per_block_optin, t4.fma_lanes, t4.tf32_mma_tflops) == (
        "detected", "sm_75", pytest.approx(320.064), 65536, 64, 0)


def test_a_newer_gpu_counts_as_the_last_architecture_before_it():
    spec = spec_from_properties({**RTX5090, "name": "NVIDIA Future", "major": 13, "minor": 0})
    assert spec.arch == "sm_130" and spec.fma_lanes == 128 and spec.tf32_flop_per_clk == 256


def _absent():
    raise NoGpu("no CUDA GPU found: the NVIDIA driver (libcuda.so.1) is not installed on this machine")


def test_no_gpu_and_no_arch_targets_the_h100_and_says_so():
    said = []
    assert target(None, say=said.append, find=_absent).key == "h100"
    assert said == [default_notice(known("h100"))] == ["no GPU found: targeting sm_90 (h100); pass --arch to choose"]


def test_a_named_target_or_a_present_gpu_says_nothing():
    said = []
    assert target("sm_120", say=said.append, find=_absent).key == "rtx5090"
    assert target(None, say=said.append, find=lambda: spec_from_properties(T4)).key == "t4"
    assert said == []
    with pytest.raises(UnknownDevice, match="unknown target ''"):
        target("", say=said.append, find=_absent)


def test_datacenter_blackwell_says_it_runs_the_mma_sync_kernels():
    said = []
    for arch in ARCHS:
        target(arch, say=said.append)
    assert said == [arch_note(for_arch(a)) for a in ("sm_100", "sm_103", "sm_110")]
    assert all("mma.sync" in line and "tcgen05" in line for line in said)
