"""Rendering: every preset renders, templates are strict, and golden files catch accidental changes.

Regenerate the golden files after an intended template change with

    GEMMGEN_UPDATE_GOLDEN=1 python -m pytest tests/test_render.py

and review the diff (`git diff tests/golden`) before committing it.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jinja2
import pytest

from gemmgen.kernel.config import KernelConfig
from gemmgen.kernel.presets import all_presets, names, preset
from gemmgen.codegen.render import emit, environment, KernelSource, render
from gemmgen.kernel.rules import InvalidConfig, explain
from gemmgen.runtime import builtin
from gemmgen.tune.space import sample_valid

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GEMMGEN_UPDATE_GOLDEN") == "1"


KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(')


def defined_kernels(code: str) -> list[str]:
    """Names of the kernels a source defines, in order."""
    return KERNEL.findall(code)


def header_config(code: str) -> dict:
    """The config the header prints under '// Config (JSON ...):', wrapped between its key-value pairs
    over comment lines: the lines without their comment marks are the JSON."""
    lines = code.split("// Config (JSON", 1)[1].split("\n", 1)[1].split("//\n", 1)[0].splitlines()
    return json.loads("\n".join(line[len("//   "):] for line in lines))


def test_the_helpers_read_a_source():
    code = ('// Config (JSON, one key-value pair never split):\n//   {"BM": 128,\n//    "BN": 64}\n//\n'
            'extern "C" __global__ void __launch_bounds__(256, 1) k_a(int M)')
    assert header_config(code) == {"BM": 128, "BN": 64} and defined_kernels(code) == ["k_a"]


def _check_source(src: KernelSource, cfg: KernelConfig) -> None:
    """The source defines exactly the kernels the launch sequence names, and its header records the
    config it was rendered from and that config's launch geometry."""
    assert sorted(defined_kernels(src.code)) == sorted(cfg.kernel_names)
    assert header_config(src.code) == cfg.to_dict()
    assert f"dynamic shared memory = {cfg.smem_bytes} bytes" in src.code


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_90"])
def test_every_preset_renders(arch):
    for cfg in all_presets(arch):
        src = render(cfg, arch, command=f"gemmgen emit --preset {cfg.label}")
        _check_source(src, cfg)
        assert f"Produced by: gemmgen emit --preset {cfg.label}" in src.code


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_random_configs_render(layout):
    for cfg in sample_valid(10, "sm_86", seed=7, layout=layout):
        _check_source(render(cfg, "sm_86"), cfg)


HELPER = re.compile(r"^__device__ __forceinline__ [^(]*?(\w+)\(|^constexpr \w+ (\w+) =", re.M)


def uncalled_helpers(code: str) -> list[str]:
    """Device functions and file-scope constants a source defines that nothing else in it names."""
    code = re.sub(r"//.*", "", code)
    return [n for m in HELPER.finditer(code) for n in m.groups() if n and len(re.findall(rf"\b{n}\b", code)) == 1]


def _odd_n8_tiles() -> list[KernelConfig]:
    """mma.sync kernels whose warp tile is an odd number of n8 tiles wide (1, 3): B's last tile is read alone."""
    out = []
    for family in ("tf32", "tf32x3"):
        for c in sample_valid(3, "sm_80", seed=11, layout="TT", family=family):
            out += [d for wn in (8, 24) if not explain(d := c.replace(WN=wn, BN=c.BN // c.WN * wn), "sm_80")]
    return out


def test_a_source_defines_only_the_helpers_it_calls():
    assert uncalled_helpers("__device__ __forceinline__ int f(int x) { return x; }\nconstexpr int K = 2;\n"
                            "__device__ __forceinline__ void g(float* p) { p[0] = f(K); }") == ["g"]
    cases = [(cfg, arch) for arch in ("sm_80", "sm_90") for cfg in all_presets(arch)]
    cases += [(KernelConfig.from_dict(d), "sm_90") for d in builtin.load()["kernels"]]
    cases += [(cfg, "sm_80") for cfg in _odd_n8_tiles()]
    cases += [(cfg, "sm_86") for cfg in sample_valid(8, "sm_86", seed=5, layout="NT")]
    assert any(cfg.WN == 8 for cfg, _ in cases) and any(cfg.WN == 24 for cfg, _ in cases)
    found = {cfg.name: uncalled_helpers(render(cfg, arch).code) for cfg, arch in cases}
    assert {name: helpers for name, helpers in found.items() if helpers} == {}


def test_split_k_sources_name_their_helper_kernels():
    atomic = render(preset("v12"), "sm_90")
    assert atomic.kernel_names == (f"{atomic.name}_scale", atomic.name)
    workspace = render(preset("v12").replace(reduce="workspace"), "sm_90")
    assert f"{workspace.name}_reduce" in workspace.code


@pytest.mark.parametrize("cfg", [preset("v12"), preset("tf32x3-wgmma").replace(split_k=4), preset("tf32x3-tma").replace(split_k=2)])
def test_split_k_reduce_waits_for_the_main_kernel_on_hopper(cfg):
    """The workspace reduce may start early on sm_90 (gemmgen.measure.pdl): it waits before it reads the
    slices' partials; below sm_90 the instruction is compiled out. The Hopper GEMM kernels (wgmma) wait
    too, before they touch A, B or C (they start early behind matmul's copies or the scale kernel);
    the others carry no griddepcontrol outside the reduce."""
    ws = cfg.replace(reduce="workspace")
    code = render(ws, "sm_90").code
    body = code[code.index(f"{ws.name}_reduce("):]
    assert body.index("#if __CUDA_ARCH__ >= 900") < body.index("griddepcontrol.wait") < body.index("sum +=")
    for c in (cfg, cfg.replace(split_k=1)):                                     # atomic split-K, unsplit
        code = render(c, "sm_90").code
        if not c.uses_wgmma:
            assert "griddepcontrol" not in code
            continue
        main = code[code.index(f"void __launch_bounds__"):]
        main = main[main.index(f"{c.name}("):]
        assert code.count("griddepcontrol.wait") == 1
        wait = main.index("griddepcontrol.wait")
        assert main.index("#if __CUDA_ARCH__ >= 900") < wait
        for first_touch in ("cp_async", "tma_load", "atomicAdd", "C[", "*p ="):
            if first_touch in main:
                assert wait < main.index(first_touch), first_touch


@pytest.mark.parametrize("cfg", [preset("tf32x3-wgmma"), preset("tf32x3-tma"), preset("tf32x3-ws"),
                                 preset("tf32x3-ws-m"), preset("tf32x3-tma").replace(BN=128, WN=128, scheduler="persistent", persistent_blocks=132),
                                 preset("tf32-tma"), preset("f16-tma"), preset("tf32x3-ws").replace(split_k=4)],
                         ids=lambda c: c.name)
def test_every_hopper_gemm_kernel_waits_before_it_touches_memory(cfg):
    """A Hopper GEMM kernel may start before the copies or the scale kernel ahead of it have finished
    (gemmgen.measure.launch.LoadedKernel's after_copies, after_scale), so its one griddepcontrol.wait comes before any
    copy, TMA load, global read or store, in the main kernel (not in a helper it calls later)."""
    code = render(cfg, "sm_90").code
    main = code[code.index(f"void __launch_bounds__"):]
    main = main[main.index(f"{cfg.name}("):]
    assert main.count("griddepcontrol.wait") == 1
    wait = main.index("griddepcontrol.wait")
    touches = [m for m in ("cp_async<", "tma_load(", "atomicAdd(", "C[", "*p =", "A[", "B[", "out +", "__ldg(")
               if m in main]
    assert touches and all(wait < main.index(m) for m in touches), [m for m in touches if main.index(m) < wait]


def test_harness_is_appended_only_when_asked():
    plain, full = emit(preset("v8"), "sm_90"), emit(preset("v8"), "sm_90", harness=True)
    assert "int main(" not in plain
    build = lambda code: next(line for line in code.splitlines() if line.startswith("// Build: "))
    assert build(plain) == "// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_90 KERNEL.cu -o KERNEL.cubin"
    assert build(full) == "// Build: nvcc -O3 -std=c++17 -arch=sm_90 KERNEL.cu -lcublas -o KERNEL"   # a program
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


def test_rendering_names_its_target():
    """No silent default GPU: what is valid on an H100 may not fit an RTX 3090."""
    big = preset("v10").replace(BK=32, stages=4, async_copy=True, prefetch=False)   # 132 KB of shared memory
    with pytest.raises(TypeError):
        render(big)
    with pytest.raises(TypeError, match="a target is required"):
        render(big, None)
    assert big.name in render(big, "h100").code
    with pytest.raises(InvalidConfig, match="SHARED_MEMORY"):
        render(big, "rtx3090")


def test_rendering_is_deterministic():
    assert render(preset("v10"), "sm_90").digest == render(preset("v10"), "sm_90").digest


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
