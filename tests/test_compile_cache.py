"""The compile cache: keys cover everything that changes machine code; memory and disk hits skip NVRTC."""
from __future__ import annotations

import pytest

from gemmgen.build import nvrtc, parallel
from gemmgen.base import CompileFailure
from gemmgen.kernel.presets import preset
from gemmgen.codegen.render import render


def test_key_changes_with_source_options_arch_and_version():
    base = nvrtc.cache_key("code", ("-O3",), "sm_90", (13, 0))
    variants = [nvrtc.cache_key("code2", ("-O3",), "sm_90", (13, 0)), nvrtc.cache_key("code", ("-O2",), "sm_90", (13, 0)),
                nvrtc.cache_key("code", ("-O3",), "sm_86", (13, 0)), nvrtc.cache_key("code", ("-O3",), "sm_90", (13, 1))]
    assert len({base, *variants}) == 5


@pytest.fixture
def fake_nvrtc(monkeypatch, tmp_path):
    calls = []

    def fake(code, name, options):
        calls.append(name)
        if "BROKEN" in code:
            raise CompileFailure(f"NVRTC rejected {name}: error: BROKEN", detail="log")
        return b"CUBIN:" + name.encode(), ""

    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path))
    monkeypatch.setattr(nvrtc, "_nvrtc_cubin", fake)
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(nvrtc, "_MEMORY", {})
    return calls


def test_memory_and_disk_hits_skip_the_compiler(fake_nvrtc, monkeypatch, tmp_path):
    src = render(preset("v5"), "sm_90")
    first = nvrtc.compile_source(src, "sm_90")
    assert nvrtc.compile_source(src, "sm_90") is first and fake_nvrtc == [src.name]
    monkeypatch.setattr(nvrtc, "_MEMORY", {})          # a new process: only the disk cache is left
    again = nvrtc.compile_source(src, "sm_90")
    assert again.cubin == first.cubin and fake_nvrtc == [src.name]
    assert (tmp_path / "kernels" / f"{first.key}.cubin").read_bytes() == first.cubin
    nvrtc.compile_source(src, "sm_86")
    assert len(fake_nvrtc) == 2


def test_compile_many_keeps_failures_in_place(fake_nvrtc):
    good = render(preset("v6"), "sm_90")
    bad = type(good)(good.config, good.code + "\n// BROKEN")
    out = parallel.compile_many([(good, "sm_90"), (bad, "sm_90"), (good, "sm_90")], compiler="nvrtc", workers=1)
    assert [type(o).__name__ for o in out] == ["Binary", "CompileFailure", "Binary"]
    assert "BROKEN" in out[1].reason
