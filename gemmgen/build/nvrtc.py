"""KernelSource -> machine code for one GPU architecture, through NVRTC (CuPy's bindings).

Compiled cubins are cached in memory and on disk, keyed by source hash, options, architecture and
NVRTC version, so a second process pays no compile for a kernel built before. Compiling needs no
GPU (NVRTC only); loading the cubin into a module does.

>>> key = cache_key("extern \\"C\\" __global__ void k() {}", ("-O3",), "sm_90", (13, 0))
>>> len(key)
64
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from ..base.files import write_bytes_atomic
from ..base.outcome import CompileFailure
from ..base.paths import cache_dir
from ..codegen.render import KernelSource

OPTIONS = ("-std=c++17", "--restrict", "-default-device")


@dataclass(frozen=True)
class Binary:
    """A compiled cubin and what produced it."""

    name: str
    arch: str
    cubin: bytes
    key: str
    kernel_names: tuple[str, ...]
    log: str = ""


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library CuPy uses."""
    from cupy_backends.cuda.libs import nvrtc

    return tuple(nvrtc.getVersion())


def cache_key(code: str, options: Sequence[str], arch: str, version: tuple[int, int]) -> str:
    """SHA-256 over everything that changes the machine code."""
    h = hashlib.sha256()
    for part in (code, "\0".join(options), arch, f"{version[0]}.{version[1]}"):
        h.update(part.encode())
        h.update(b"\x1f")
    return h.hexdigest()


def _nvrtc_cubin(code: str, name: str, options: Sequence[str]) -> tuple[bytes, str]:
    """Compile with NVRTC straight to a cubin; raise CompileFailure with the log."""
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(code, f"{name}.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            first = next((line for line in log.splitlines() if "error" in line), log.strip()[:200])
            raise CompileFailure(f"NVRTC rejected {name}: {first}", detail=log) from None
        return bytes(nvrtc.getCUBIN(prog)), nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


_MEMORY: dict[str, Binary] = {}


def compile_source(src: KernelSource, arch: str, options: Sequence[str] = OPTIONS) -> Binary:
    """Compile (or fetch from the memory and disk caches) one kernel source for ``arch`` (sm_XX;
    the config may ask for the arch-specific sm_90a, see KernelConfig.target_arch)."""
    arch = src.config.target_arch(arch)
    opts = (*options, f"-arch={arch}")
    key = cache_key(src.code, opts, arch, nvrtc_version())
    if key in _MEMORY:
        return _MEMORY[key]
    path = cache_dir() / "kernels" / f"{key}.cubin"
    if path.is_file():
        cubin = path.read_bytes()
        log = ""
    else:
        cubin, log = _nvrtc_cubin(src.code, src.name, opts)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, cubin)   # a concurrent reader never loads half a cubin
    binary = Binary(src.name, arch, cubin, key, src.kernel_names, log)
    _MEMORY[key] = binary
    return binary
