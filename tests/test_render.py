"""Rendering: every preset renders, templates are strict, and golden files catch accidental changes.

Regenerate the golden files after an intended template change with

    GEMMGEN_UPDATE_GOLDEN=1 python -m pytest tests/test_render.py

and review the diff (`git diff tests/golden`) before committing it.
"""
from __future__ import annotations

import os
from pathlib import Path

import jinja2
import pytest

from gemmgen.config import KernelConfig
from gemmgen.presets import all_presets, names, preset
from gemmgen.render import KernelSource, emit, environment, render
from gemmgen.rules import InvalidConfig
from gemmgen.space import sample_valid

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GEMMGEN_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_90"])
def test_every_preset_renders(arch):
    for cfg in all_presets(arch):
        src = render(cfg, arch, command=f"gemmgen emit --preset {cfg.label}")
        assert isinstance(src, KernelSource) and src.name == cfg.name
        assert f'extern "C" __global__ void' in src.code and cfg.name in src.code
        assert f"Produced by: gemmgen emit --preset {cfg.label}" in src.code
        assert "dynamic shared memory" in src.code         # launch geometry in the header


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_random_configs_render(layout):
    for cfg in sample_valid(10, "sm_86", seed=7, layout=layout):
        assert cfg.name in render(cfg, "sm_86").code


def test_split_k_sources_name_their_helper_kernels():
    atomic = render(preset("v12"))
    assert atomic.kernel_names == (f"{atomic.name}_scale", atomic.name)
    workspace = render(preset("v12").replace(reduce="workspace"))
    assert f"{workspace.name}_reduce" in workspace.code


def test_harness_is_appended_only_when_asked():
    plain, full = emit(preset("v8")), emit(preset("v8"), harness=True)
    assert "int main(" not in plain
    build = lambda code: next(line for line in code.splitlines() if line.startswith("// Build: "))
    assert build(plain) == "// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 k.cu -o k.cubin"
    assert build(full) == "// Build: nvcc -O3 -std=c++17 -arch=sm_90 k.cu -lcublas -o k"   # a program
    assert full.replace(build(full), build(plain)).startswith(plain) and "int main(int argc, char** argv)" in full
    assert "cublasSgemm" in full and "cudaEventElapsedTime" in full


def test_harness_opts_in_to_large_shared_memory_only_when_needed():
    big = preset("v10").replace(BK=32, stages=4, async_copy=True, prefetch=False)
    assert big.smem_bytes > 48 * 1024
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize" in emit(big, "h100", harness=True)


def test_templates_are_strict_about_missing_variables():
    env = environment()
    assert env.undefined is jinja2.StrictUndefined
    with pytest.raises(jinja2.UndefinedError):
        env.get_template("naive.cu.j2").render(c=preset("v1"))          # no `g`
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ c.no_such_field }}").render(c=preset("v1"))


def test_invalid_config_raises_before_rendering():
    with pytest.raises(InvalidConfig):
        emit(KernelConfig(BM=96, WM=64), "h100")


def test_rendering_is_deterministic():
    assert render(preset("v10")).digest == render(preset("v10")).digest


# ---- golden files ----------------------------------------------------------------------------
GOLDEN_CASES = {
    "v1": (preset("v1"), False),
    "v5": (preset("v5"), False),
    "v8": (preset("v8"), False),
    "v12": (preset("v12"), False),
    "v10_tt_workspace_fast": (preset("v10").replace(layout="TT", split_k=2, reduce="workspace",
                                                    bounds="none", label=""), False),
    "v6_harness": (preset("v6"), True),
    "wmma": (preset("wmma"), False),
    "wmma_fast_tn_workspace": (preset("wmma-fast").replace(layout="TN", split_k=2, reduce="workspace", label=""), False),
    "wmma_bf16_harness": (preset("wmma-bf16"), True),
}


@pytest.mark.parametrize("case", GOLDEN_CASES)
def test_golden_source(case):
    cfg, harness = GOLDEN_CASES[case]
    code = emit(cfg, "h100", command=f"gemmgen emit golden {case}", harness=harness)
    path = GOLDEN / f"{case}.cu"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(code)
    assert path.exists(), f"{path} is missing: run GEMMGEN_UPDATE_GOLDEN=1 python -m pytest {__file__}"
    assert code == path.read_text(), (f"{case} renders differently from {path}; if the change is intended, "
                                      "regenerate with GEMMGEN_UPDATE_GOLDEN=1 and review the diff")


def test_golden_files_have_no_strays():
    expected = {f"{case}.cu" for case in GOLDEN_CASES}
    assert {p.name for p in GOLDEN.glob("*.cu")} <= expected
