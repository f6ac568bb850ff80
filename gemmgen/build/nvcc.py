"""Compile rendered kernels with nvcc, without a GPU: cubins with ptxas's resource report, and
whole programs (the ``--harness`` main()) linked against cuBLAS.

>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.codegen.render import render
>>> report = compile_cubin(render(preset("v5"), "sm_90"), "sm_90")      # doctest: +NVCC
>>> report[preset("v5").name].spills                                    # doctest: +NVCC
0
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence, Union

from ..base.outcome import CompileFailure
from ..codegen.build_line import NVCC_FLAGS, arch_flags
from ..codegen.render import KernelSource
from .logs import first_error, numbered
from .resources import PtxasReport, parse

FLAGS = (*NVCC_FLAGS, "-Xptxas", "-v")


class ToolkitMissing(FileNotFoundError):
    """nvcc is not installed where gemmgen looks for it (an environment problem, not a bad kernel)."""


def nvcc_path() -> str:
    """The nvcc executable: $CUDA_HOME/bin (or $CUDA_PATH), then PATH, then /usr/local/cuda/bin.

    >>> nvcc_path().endswith("nvcc")                            # doctest: +NVCC
    True
    """
    homes = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    for home in filter(None, homes):
        candidate = Path(home) / "bin" / "nvcc"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("nvcc") or shutil.which("nvcc", path="/usr/local/cuda/bin")
    if not found:
        raise ToolkitMissing("nvcc not found (looked in $CUDA_HOME/bin, $CUDA_PATH/bin, PATH and "
                             "/usr/local/cuda/bin); install the CUDA toolkit or set CUDA_HOME")
    return found


def have_nvcc() -> bool:
    """True where nvcc can be found.

    >>> isinstance(have_nvcc(), bool)
    True
    """
    try:
        nvcc_path()
    except ToolkitMissing:
        return False
    return True


# ---- compiling ----------------------------------------------------------------------------------
SourceLike = Union[KernelSource, str]


def compile_cubin(source: SourceLike, arch: str = "sm_90", flags: Sequence[str] = (),
                  timeout: float = 300.0) -> PtxasReport:
    """Compile one source to a cubin for ``arch`` and return ptxas's report.

    Raises :class:`~gemmgen.base.outcome.CompileFailure` (with the log as ``detail``) when nvcc rejects
    the source, and :class:`ToolkitMissing` when there is no nvcc.

    >>> compile_cubin('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }')["k"].spills  # doctest: +NVCC
    0
    """
    code = source.code if isinstance(source, KernelSource) else source
    if isinstance(source, KernelSource):
        arch = source.config.target_arch(arch)   # sm_90 -> sm_90a for wgmma
    with tempfile.TemporaryDirectory(prefix="gemmgen-ptxas-") as tmp:
        cu, cubin = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        cu.write_text(code)
        cmd = [nvcc_path(), "-cubin", f"-arch={arch}", *FLAGS, *flags, str(cu), "-o", str(cubin)]
        log, seconds = _run(cmd, timeout, code)
    return PtxasReport(arch=arch, kernels=parse(log, arch), log=log, seconds=seconds)


def _run(cmd: list[str], timeout: float, code: str) -> tuple[str, float]:
    """Run nvcc; return (log, seconds), or raise CompileFailure naming the first error."""
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CompileFailure(f"nvcc did not finish within {timeout:g} s", " ".join(cmd)) from None
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise CompileFailure(f"nvcc failed: {first_error(log)}", log + "\n" + numbered(code))
    return log, time.perf_counter() - start


# ---- whole programs (the --harness main()) ---------------------------------------------------------
def cublas_flags() -> list[str]:
    """nvcc flags that find cuBLAS: none when the toolkit has it, else the pip wheel nvidia-cublas.

    >>> "-lcublas" in cublas_flags() or any(f.startswith("-l:libcublas") for f in cublas_flags())  # doctest: +CUBLAS
    True
    """
    toolkit = Path(nvcc_path()).resolve().parent.parent
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), str(toolkit), "/usr/local/cuda"]
    if any(h and (Path(h) / "include" / "cublas_v2.h").is_file() for h in homes):
        return ["-lcublas"]
    for root in _wheel_roots():
        for sub in ("cu13", "cu12", "cublas"):        # nvidia-cublas (CUDA 13), nvidia-cublas-cu12
            inc, lib = root / sub / "include", root / sub / "lib"
            libs = sorted(lib.glob("libcublas.so*")) if lib.is_dir() else []
            if (inc / "cublas_v2.h").is_file() and libs:
                # The wheel ships only libcublas.so.NN, so name the file; rpath lets the program run.
                return [f"-I{inc}", f"-L{lib}", f"-l:{libs[-1].name}", f"-Xlinker=-rpath,{lib}"]
    raise ToolkitMissing("cuBLAS not found: neither the CUDA toolkit nor the nvidia-cublas wheel has "
                         "cublas_v2.h and libcublas; install the toolkit's cuBLAS or `pip install nvidia-cublas`")


def _wheel_roots() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def build_program(source: SourceLike, output: str | Path, arch: str = "sm_90",
                  timeout: float = 600.0) -> str:
    """Build a whole program (a --harness source) with cuBLAS: ``nvcc -O3 -arch=ARCH k.cu -lcublas -o OUT``.

    Returns nvcc's log; raises CompileFailure when the build fails.

    >>> from gemmgen.kernel.presets import preset
    >>> from gemmgen.codegen.render import render
    >>> log = build_program(render(preset("v8"), "sm_90", harness=True), tempfile.mkdtemp() + "/k")  # doctest: +CUBLAS
    """
    code = source.code if isinstance(source, KernelSource) else source
    with tempfile.TemporaryDirectory(prefix="gemmgen-build-") as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(code)
        cmd = [nvcc_path(), *NVCC_FLAGS, *arch_flags(arch), str(cu), *cublas_flags(), "-o", str(output)]
        return _run(cmd, timeout, code)[0]
