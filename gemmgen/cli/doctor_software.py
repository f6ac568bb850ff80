"""What ``gemmgen doctor`` reports, and the software it looks for: gemmgen, Python, nvcc, CuPy, NVRTC, cuBLAS.

CuPy's version is read from its package metadata, not by importing it (importing CuPy writes ~/.cupy);
NVRTC is loaded the way CuPy loads it, and cuBLAS the way CuPy 14 finds it (cuda-pathfinder).

>>> cuda_major("cupy-cuda12x"), check_cupy(None)[0].status
(12, 'missing')
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import platform
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..base.devices import INSTALL_CUPY
from ..base.version import __version__

OK, MISSING, INFO = "ok", "missing", "info"
INSTALL_TOOLKIT = ("install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) or set CUDA_HOME "
                   "to it; only building and explaining need it")


@dataclass(frozen=True)
class Finding:
    """One thing gemmgen looked for: what it found (``status`` ok or info), or what is missing and the
    command that fixes it."""

    what: str                       # "nvcc", "CuPy", "GPU 0", ...
    status: str                     # OK, MISSING or INFO
    found: str                      # one line: version and where, or why it is missing
    fix: str = ""                   # the command (or step) that fixes a missing piece
    details: dict = field(default_factory=dict)


def guarded(name: str, probe: Callable[[], list[Finding]]) -> list[Finding]:
    """A probe's findings; a probe that fails in a way nobody foresaw is a finding too, never a traceback."""
    try:
        return probe()
    except Exception as err:   # doctor runs where things are broken: whatever broke is what it reports
        return [Finding(name, MISSING, f"could not check: {type(err).__name__}: {err}".splitlines()[0])]


# ---- gemmgen, Python, nvcc ----------------------------------------------------------------------------
def check_gemmgen() -> list[Finding]:
    """gemmgen's version and where it is imported from, and the Python running it."""
    where = str(Path(__file__).resolve().parent.parent)
    return [Finding("gemmgen", OK, f"{__version__} at {where}", details={"version": __version__, "path": where}),
            Finding("Python", OK, f"{platform.python_version()} ({sys.executable})",
                    details={"version": platform.python_version(), "path": sys.executable})]


def check_nvcc(find: Callable[[], str] | None = None) -> list[Finding]:
    """nvcc's path and release (``find`` locates it; default :func:`gemmgen.build.nvcc.nvcc_path`).

    >>> from gemmgen.build.nvcc import ToolkitMissing
    >>> def nowhere():
    ...     raise ToolkitMissing("nvcc not found")
    >>> check_nvcc(nowhere)[0].status
    'missing'
    """
    from ..build.nvcc import ToolkitMissing, nvcc_path

    try:
        path = (find or nvcc_path)()
    except ToolkitMissing as err:
        return [Finding("nvcc", MISSING, str(err).split(";")[0], INSTALL_TOOLKIT)]
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    release = re.search(r"release (\d+\.\d+), (V[\w.]+)", done.stdout)
    version = release.group(1) if release else "unknown version"
    text = f"{path}, CUDA {version}" + (f" ({release.group(2)})" if release else "")
    return [Finding("nvcc", OK, text, details={"path": path, "version": version})]


# ---- CuPy, NVRTC, cuBLAS --------------------------------------------------------------------------------
def cupy_distribution(lookup: Callable[[], dict] = importlib.metadata.packages_distributions) -> str | None:
    """The installed package that provides ``cupy`` (cupy-cuda13x, cupy-cuda12x, ...), or None.

    >>> cupy_distribution(lambda: {}) is None
    True
    """
    names = lookup().get("cupy") or []
    return sorted(names)[0] if names else None


def cuda_major(distribution: str | None) -> int:
    """The CUDA major version a CuPy package is built for (13 where that cannot be told).

    >>> cuda_major("cupy-cuda12x"), cuda_major(None)
    (12, 13)
    """
    found = re.search(r"cuda(\d+)", distribution or "")
    return int(found.group(1)) if found else 13


def check_cupy(distribution: str | None) -> list[Finding]:
    """CuPy's package and version, read from its metadata (importing CuPy writes ~/.cupy)."""
    if distribution is None:
        return [Finding("CuPy", MISSING, "not installed: matmul, bench, search and demo's table need it",
                        INSTALL_CUPY)]
    version = importlib.metadata.version(distribution)
    return [Finding("CuPy", OK, f"{distribution} {version} (CUDA {cuda_major(distribution)})",
                    details={"package": distribution, "version": version, "cuda": cuda_major(distribution)})]


def loaded_from(fragment: str) -> str:
    """The file of a loaded shared library whose name contains ``fragment`` ('' where unknown)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if fragment in line and "/" in line}
    except OSError:
        return ""
    return sorted(paths)[0] if paths else ""


def reinstall(distribution: str | None, wheel: str) -> str:
    """The command that brings a missing NVIDIA library: the CUDA extra of CuPy's CUDA, which pins it.

    >>> reinstall("cupy-cuda12x", "nvidia-cublas")
    "pip install 'gemmgen[cuda12]'   (it brings nvidia-cublas-cu12)"
    """
    major = cuda_major(distribution)
    return f"pip install 'gemmgen[cuda{major}]'   (it brings {wheel}{'' if major >= 13 else f'-cu{major}'})"


def check_nvrtc(distribution: str | None) -> list[Finding]:
    """The NVRTC CuPy compiles kernels with: its version and the file it was loaded from."""
    if distribution is None:
        return [Finding("NVRTC", MISSING, "not checked: CuPy loads it, and CuPy is not installed", INSTALL_CUPY)]
    try:
        from cupy_backends.cuda.libs import nvrtc

        version = "{}.{}".format(*nvrtc.getVersion())
    except Exception as err:   # ImportError, or CuPy's error that it cannot load libnvrtc
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        return [Finding("NVRTC", MISSING, f"CuPy cannot load it: {why}", reinstall(distribution, "nvidia-cuda-nvrtc"))]
    path = loaded_from("libnvrtc.so")
    return [Finding("NVRTC", OK, f"{version} from {path or 'an unknown file'}", details={"version": version, "path": path})]


def _load_cublas(major: int) -> tuple[ctypes.CDLL, str]:
    """cuBLAS as CuPy 14 finds it (cuda-pathfinder: NVIDIA's wheels, then the system), else from
    NVIDIA's wheel or the dynamic loader's path by soname."""
    try:
        from cuda import pathfinder

        path = pathfinder.load_nvidia_dynamic_lib("cublas").abs_path
        return ctypes.CDLL(path), path
    except Exception:   # no cuda-pathfinder (older CuPy), or it found none: look for ourselves
        pass
    soname = f"libcublas.so.{major}"
    spec = importlib.util.find_spec("nvidia")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for lib in (root / sub / "lib" / soname for root in roots for sub in (f"cu{major}", "cublas")):
        if lib.is_file():
            return ctypes.CDLL(str(lib)), str(lib)
    return ctypes.CDLL(soname), loaded_from(soname) or soname


def check_cublas(distribution: str | None) -> list[Finding]:
    """Whether cuBLAS (every measurement's baseline) can be loaded, its version, and where --harness
    builds find its headers."""
    try:
        lib, path = _load_cublas(cuda_major(distribution))
    except OSError as err:
        return [Finding("cuBLAS", MISSING, f"cannot be loaded: {err}", reinstall(distribution, "nvidia-cublas"))]
    parts = []
    for kind in range(3):   # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int()
        if lib.cublasGetProperty(kind, ctypes.byref(value)) == 0:
            parts.append(str(value.value))
    version = ".".join(parts) or "unknown version"
    found = [Finding("cuBLAS", OK, f"{version} from {path}", details={"version": version, "path": path})]
    return found + _harness_cublas(distribution)


def _harness_cublas(distribution: str | None) -> list[Finding]:
    from ..build.nvcc import ToolkitMissing, cublas_flags, have_nvcc

    if not have_nvcc():
        return [Finding("cuBLAS headers", INFO, "not checked: --harness programs are built with nvcc, which is missing")]
    try:
        flags = cublas_flags()
    except ToolkitMissing as err:
        return [Finding("cuBLAS headers", MISSING, f"for --harness builds: {str(err).split(':')[0]}",
                        reinstall(distribution, "nvidia-cublas") + " or the CUDA toolkit's cuBLAS")]
    where = "the CUDA toolkit" if flags == ["-lcublas"] else flags[0][len("-I"):]
    return [Finding("cuBLAS headers", OK, f"--harness builds link cuBLAS from {where}", details={"flags": flags})]
