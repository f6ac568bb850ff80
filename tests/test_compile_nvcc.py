"""Every preset compiles with nvcc for sm_80, sm_86 and sm_90, and 100 random valid configs each for one
of them in turn; one preset of each kind (presets.representatives) compiles for every other architecture
CUDA 13 builds for (sm_75 to sm_121; tests/test_compile_nvrtc.py builds the same with NVRTC); every path
of the --harness main() builds into a program with cuBLAS (no GPU needed).

All compiles are queued at once through build.compile_many (one nvcc per core), so the module costs
about (jobs x 1.2 s) / cores; the tests then read the shared results. A random config is compiled for
one architecture, not all three: what it adds over the presets is another combination of template
paths, which do not depend on the architecture (the rules that do were checked for sm_86, the
strictest), and compiling each for three took two thirds of the module's time (about 4 of CI's 2-core
minutes) for that.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from gemmgen import build
from gemmgen.base import CompileFailure
from gemmgen.base.devices import ARCHS as EVERY_ARCH
from gemmgen.kernel.presets import names, preset, representatives, runs_on
from gemmgen.codegen.render import emit, render
from gemmgen.tune.space import sample_valid

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")]

ARCHS = ("sm_80", "sm_86", "sm_90")
# v5..v13 and the tensor-core presets: register-tiled kernels must not spill (the wgmma presets, at the
# register limit by design, have their own bound in tests/test_wgmma.py)
SPILL_FREE = [n for n in names()[names().index("v5"):] if not n.endswith("-wgmma")]
RANDOM_PER_LAYOUT = 25                            # x 4 layouts = 100 random configs, one arch each
# The other architectures get presets of every other kind in turn (each arch half its kinds, each kind
# half the archs): the template paths are the ones compiled for ARCHS, what is new is the architecture's
# ptxas, and tests/test_compile_nvrtc.py builds every kind for every arch through the same ptxas. All
# 45 pairs took 75 s of a busy 2-core CI machine; these 23 take about half.
OTHER_ARCHS = [(a, n) for i, a in enumerate(a for a in EVERY_ARCH if a not in ARCHS)
               for j, n in enumerate(representatives(a).values()) if (i + j) % 2 == 0]


# The interleaved SIMT loop (interleave = true) in every layout, on whole tiles and checked: v10's tile and
# the 256x128x16 tile of the shipped H100 SIMT kernels (247 registers without it).
INTERLEAVED = [c.replace(layout=lay, bounds=bounds, interleave=True, label="")
               for c in (preset("v10"), preset("v10").replace(BM=256, BK=16, WM=64, WN=64, WMITER=2, WNITER=4))
               for lay in ("NN", "NT", "TN", "TT") for bounds in ("none", "checked")]


def _random_configs():
    # Valid on the rtx3090 (sm_86: 99 KB of shared memory, the smallest of the three targets), so every
    # config is valid on sm_80 and sm_90 too; all four layouts, so every load path is compiled.
    return [c for lay in ("NN", "NT", "TN", "TT") for c in sample_valid(RANDOM_PER_LAYOUT, "sm_86", seed=11, layout=lay)]


@pytest.fixture(scope="module")
def compiled():
    """{(kind, name, arch): PtxasReport | CompileFailure} for presets and random configs."""
    jobs = [(("preset", n, a), render(preset(n, a), a)) for a in ARCHS for n in names() if runs_on(n, a)]
    jobs += [(("random", c.name, ARCHS[i % len(ARCHS)]), render(c, ARCHS[i % len(ARCHS)]))
             for i, c in enumerate(_random_configs())]   # layouts in turn too: each layout meets each arch
    jobs += [(("interleave", c.name, "sm_90"), render(c, "sm_90")) for c in INTERLEAVED]
    jobs += [(("arch", n, a), render(preset(n, a), a)) for a, n in OTHER_ARCHS]
    results = build.compile_many([(src, key[2]) for key, src in jobs])
    return {key: res for (key, _), res in zip(jobs, results)}


def _failures(compiled, kind):
    return {k: r.reason for k, r in compiled.items() if k[0] == kind and isinstance(r, CompileFailure)}


@pytest.mark.parametrize("arch", ARCHS)
def test_every_preset_compiles(compiled, arch):
    bad = {k: v for k, v in _failures(compiled, "preset").items() if k[2] == arch}
    assert not bad, bad
    for n in filter(lambda n: runs_on(n, arch), names()):
        report = compiled[("preset", n, arch)]
        assert preset(n, arch).name in report.kernels, report.log


@pytest.mark.parametrize("arch", sorted({a for a, _ in OTHER_ARCHS}))
def test_one_preset_of_each_kind_compiles_for_every_other_arch(compiled, arch):
    bad = {k: v for k, v in _failures(compiled, "arch").items() if k[2] == arch}
    assert not bad, bad
    for n in (n for a, n in OTHER_ARCHS if a == arch):
        report = compiled[("arch", n, arch)]
        assert report.arch == arch and preset(n, arch).name in report.kernels, report.log


@pytest.mark.parametrize("name", SPILL_FREE)
def test_register_tiled_presets_do_not_spill_on_sm_90(compiled, name):
    report = compiled[("preset", name, "sm_90")]
    assert isinstance(report, build.PtxasReport), report
    assert report.spills == 0, {k.name: (k.registers, k.spill_stores, k.spill_loads) for k in report.kernels.values()}


def test_random_valid_configs_compile(compiled):
    keys = [k for k in compiled if k[0] == "random"]
    assert len(keys) == 4 * RANDOM_PER_LAYOUT and {k[2] for k in keys} == set(ARCHS)
    assert not _failures(compiled, "random")


def test_interleaved_loops_compile_without_spills(compiled):
    reports = {k[1]: r for k, r in compiled.items() if k[0] == "interleave"}
    assert len(reports) == len(INTERLEAVED) and not _failures(compiled, "interleave")
    assert all(r.spills == 0 for r in reports.values()), {n: r.spills for n, r in reports.items()}


def test_registers_stay_within_the_hardware_limit(compiled):
    for key, report in compiled.items():
        if isinstance(report, build.PtxasReport):
            assert all(k.registers <= 255 for k in report.kernels.values()), key


# ---- the --harness programs ------------------------------------------------------------------
def _cublas_or_skip():
    try:
        return build.nvcc.cublas_flags()
    except build.ToolkitMissing as err:
        pytest.skip(str(err))


def _harness_path(c) -> tuple:
    """What the --harness main() of a config depends on (templates/harness.cu.j2's branches): two
    configs with the same path differ in the program only in constants and the kernel, which
    test_every_preset_compiles compiles already."""
    return (c.family == "naive", c.coalesced if c.family == "naive" else None, c.dtype, c.precision, c.mainloop,
            c.bounds, c.split_atomic, c.split_workspace, c.layout, c.smem_bytes > 48 * 1024)


def test_every_harness_path_builds_for_sm_90(tmp_path):
    """One program per distinct harness path among the presets (and a workspace TN and a fast NT
    variant): each build is a 5-second host compile with cuBLAS, and the 25 builds of every preset
    took two minutes of CI for 13 paths."""
    _cublas_or_skip()
    candidates = [preset(n, "sm_90") for n in names()]
    candidates.append(preset("v12").replace(reduce="workspace", layout="TN", label="v12-workspace-TN"))
    candidates.append(preset("v8").replace(bounds="none", layout="NT", label="v8-fast-NT"))
    configs = list({_harness_path(c): c for c in reversed(candidates)}.values())   # the first of each path
    assert {_harness_path(c) for c in configs} == {_harness_path(c) for c in candidates}

    def build_one(cfg):   # not `build`: that is the gemmgen.build module this calls
        try:
            build.build_program(emit(cfg, "sm_90", harness=True), tmp_path / cfg.label, cfg.target_arch("sm_90"))
            return None
        except CompileFailure as failure:
            return f"{cfg.label}: {failure.reason}"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        errors = [e for e in pool.map(build_one, configs) if e]
    assert not errors
    assert all(os.access(tmp_path / c.label, os.X_OK) for c in configs)
