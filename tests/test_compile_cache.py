"""The compile cache: keys cover everything that changes machine code; memory and disk hits skip NVRTC."""
from __future__ import annotations

import pytest

from gemmgen import compile as comp
from gemmgen.outcome import CompileFailure
from gemmgen.presets import preset
from gemmgen.render import render


def test_key_changes_with_source_options_arch_and_version():
    base = comp.cache_key("code", ("-O3",), "sm_90", (13, 0))
    variants = [comp.cache_key("code2", ("-O3",), "sm_90", (13, 0)), comp.cache_key("code", ("-O2",), "sm_90", (13, 0)),
                comp.cache_key("code", ("-O3",), "sm_86", (13, 0)), comp.cache_key("code", ("-O3",), "sm_90", (13, 1))]
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
    monkeypatch.setattr(comp, "_nvrtc_cubin", fake)
    monkeypatch.setattr(comp, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(comp, "_MEMORY", {})
    return calls


def test_memory_and_disk_hits_skip_the_compiler(fake_nvrtc, monkeypatch, tmp_path):
    src = render(preset("v5"))
    first = comp.compile_source(src, "sm_90")
    assert comp.compile_source(src, "sm_90") is first and fake_nvrtc == [src.name]
    monkeypatch.setattr(comp, "_MEMORY", {})          # a new process: only the disk cache is left
    again = comp.compile_source(src, "sm_90")
    assert again.cubin == first.cubin and fake_nvrtc == [src.name]
    assert (tmp_path / "kernels" / f"{first.key}.cubin").read_bytes() == first.cubin
    comp.compile_source(src, "sm_86")
    assert len(fake_nvrtc) == 2


def test_compile_many_keeps_failures_in_place(fake_nvrtc):
    good = render(preset("v6"))
    bad = type(good)(good.config, good.code + "\n// BROKEN")
    out = comp.compile_many([good, bad, good], "sm_90", jobs=1)
    assert [type(o).__name__ for o in out] == ["Binary", "CompileFailure", "Binary"]
    assert "BROKEN" in out[1].reason


def test_numbered_source():
    assert comp.numbered("a\nb").splitlines()[1].strip() == "2  b"
