"""NVRTC (the compiler gemmgen uses on a GPU machine) builds a cubin of each kind of kernel for every
architecture CUDA 13 builds for, sm_75 to sm_121, where the rules say the kind runs: one preset per
(family, mainloop) and architecture (presets.representatives), no GPU needed.

The compiles are queued at once through build.compile_many (one NVRTC process per core) into an empty
compile cache, so every cubin is built here; 63 of them took 83 s on one busy core of the CI machine,
so each kind is compiled once per architecture, not every preset (tests/test_compile_nvcc.py compiles
every preset with nvcc for sm_80, sm_86 and sm_90).
"""
from __future__ import annotations

import pytest

from gemmgen import build
from gemmgen.base import CompileFailure
from gemmgen.base.devices import ARCHS
from gemmgen.codegen.render import render
from gemmgen.kernel.presets import preset, representatives

pytestmark = pytest.mark.slow
PAIRS = [(arch, name) for arch in ARCHS for name in representatives(arch).values()]


def _nvrtc_or_skip() -> None:
    pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="CuPy is not installed: pip install 'gemmgen[cuda13]'")
    try:
        build.nvrtc.nvrtc_version()
    except Exception as err:   # cuda.pathfinder's DynamicLibNotFoundError, or CuPy's own on older versions
        if "nvrtc" not in str(err).lower():
            raise
        pytest.skip(f"the NVRTC library is not installed ({str(err).splitlines()[0]}): pip install 'gemmgen[cuda13]'")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{(arch, preset): Binary | CompileFailure}, compiled into an empty cache (no earlier run's cubin)."""
    _nvrtc_or_skip()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GEMMGEN_CACHE", str(tmp_path_factory.mktemp("nvrtc-cache")))
        results = build.compile_many([(render(preset(n, a), a), a) for a, n in PAIRS], compiler="nvrtc")
    return dict(zip(PAIRS, results))


@pytest.mark.parametrize("arch,name", PAIRS, ids=[f"{n}-{a}" for a, n in PAIRS])
def test_nvrtc_builds_a_cubin(compiled, arch, name):
    result = compiled[(arch, name)]
    assert not isinstance(result, CompileFailure), f"{result.reason}\n{result.detail[:2000]}"
    assert result.arch == preset(name, arch).target_arch(arch)       # sm_90a only for wgmma
    assert result.cubin[:4] == b"\x7fELF" and result.kernel_names
