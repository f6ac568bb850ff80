"""Compile rendered kernels with nvcc, without a GPU, and read ptxas's resource report.

``nvcc -cubin -O3 -Xptxas -v`` prints, per kernel, the registers, the static shared memory, the
stack frame and the bytes spilled to local memory. Spills matter: a spilled accumulator turns each
FMA into a local-memory round trip, so a tile that spills is slower than a smaller one that fits.

>>> from gemmgen.presets import preset
>>> from gemmgen.render import render
>>> report = compile_cubin(render(preset("v5")), "sm_90")      # doctest: +NVCC
>>> report[preset("v5").name].spills                            # doctest: +NVCC
0
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence, Union

from .outcome import CompileFailure
from .render import KernelSource

ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")
FLAGS = ("-O3", "-std=c++17", "-Xptxas", "-v")


class ToolkitMissing(FileNotFoundError):
    """nvcc is not installed where gemmgen looks for it (an environment problem, not a bad kernel)."""


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel on one architecture."""

    name: str
    arch: str
    registers: int = 0
    smem_bytes: int = 0        # static shared memory (gemmgen's kernels use dynamic shared memory)
    stack_bytes: int = 0
    spill_stores: int = 0      # bytes
    spill_loads: int = 0       # bytes
    barriers: int = 0

    @property
    def spills(self) -> int:
        """Bytes spilled to local memory, stores plus loads (0 for a kernel that fits in registers)."""
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True)
class PtxasReport:
    """Resources of every kernel in one compiled source, with the compiler's log."""

    arch: str
    kernels: dict[str, KernelResources] = field(default_factory=dict)
    log: str = ""
    seconds: float = 0.0

    def __getitem__(self, name: str) -> KernelResources:
        try:
            return self.kernels[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r} in the ptxas report; kernels: {', '.join(self.kernels)}") from None

    @property
    def spills(self) -> int:
        """Spilled bytes summed over all kernels."""
        return sum(k.spills for k in self.kernels.values())


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


# ---- parsing ptxas -v ---------------------------------------------------------------------------
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse(log: str, arch: str = "") -> dict[str, KernelResources]:
    """Per-kernel resources from the text ``-Xptxas -v`` prints.

    >>> log = '''ptxas info    : Compiling entry function 'k' for 'sm_90'
    ... ptxas info    : Function properties for k
    ...     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
    ... ptxas info    : Used 255 registers, used 1 barriers, 16 bytes smem'''
    >>> parse(log)["k"].spills, parse(log)["k"].registers
    (8, 255)
    """
    found: dict[str, dict] = {}
    entry = props = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            entry, arch = m.group(1), m.group(2)
            found[entry] = {"name": entry, "arch": arch}
        elif m := _PROPS.search(line):
            props = m.group(1)      # a frame line follows; it may belong to a non-inlined helper
        elif (m := _FRAME.search(line)) and props in found:
            found[props].update(stack_bytes=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif (m := _USED.search(line)) and entry in found:
            found[entry]["registers"] = int(m[1])
            found[entry]["smem_bytes"] = int(s[1]) if (s := _SMEM.search(line)) else 0
            found[entry]["barriers"] = int(b[1]) if (b := _BARRIERS.search(line)) else 0
    return {name: KernelResources(**{"arch": arch, **d}) for name, d in found.items()}


# ---- compiling ----------------------------------------------------------------------------------
SourceLike = Union[KernelSource, str]


def compile_cubin(source: SourceLike, arch: str = "sm_90", flags: Sequence[str] = (),
                  timeout: float = 300.0) -> PtxasReport:
    """Compile one source to a cubin for ``arch`` and return ptxas's report.

    Raises :class:`~gemmgen.outcome.CompileFailure` (with the log as ``detail``) when nvcc rejects
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


def first_error(log: str) -> str:
    """The first line of a compiler log that says 'error', else its first line.

    >>> first_error('k.cu(3): warning: x\\nk.cu(7): error: identifier "BM" is undefined')
    'k.cu(7): error: identifier "BM" is undefined'
    """
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "no output")


def numbered(code: str) -> str:
    """The source with line numbers, so a log's 'kernel.cu(123)' can be found (like CuPy's dump).

    >>> numbered("a\\nb")
    '   1  a\\n   2  b'
    """
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(code.splitlines(), 1))


def compile_many(jobs: Iterable[tuple[SourceLike, str]], workers: int | None = None,
                 flags: Sequence[str] = ()) -> list[Union[PtxasReport, CompileFailure]]:
    """Compile many (source, arch) pairs in parallel, one nvcc per core; results in input order.

    A source nvcc rejects gives its CompileFailure in place of a report, so one bad kernel does not
    lose the others. Threads suffice: each job is an nvcc process, the Python side only waits.

    >>> src = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
    >>> [r.spills for r in compile_many([(src, "sm_80"), (src, "sm_90")])]  # doctest: +NVCC
    [0, 0]
    """
    nvcc_path()                     # fail once, clearly, before queueing hundreds of jobs
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = [pool.submit(_compile_or_failure, src, arch, flags) for src, arch in jobs]
        return [f.result() for f in futures]


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


def arch_flags(arch: str) -> list[str]:
    """nvcc flags of a whole-program build for ``arch``. An arch-specific target (sm_90a: wgmma) is
    named with -gencode: a plain -arch=sm_90a program build also runs ptxas on compute_90 PTX, which
    has no wgmma.

    >>> arch_flags("sm_90a"), arch_flags("sm_86")
    (['-gencode=arch=compute_90a,code=sm_90a'], ['-arch=sm_86'])
    """
    if arch.endswith("a"):
        return [f"-gencode=arch=compute_{arch[3:]},code={arch}"]
    return [f"-arch={arch}"]


def build_line(arch: str, harness: bool = False, source: str = "k.cu") -> str:
    """The nvcc command that builds an emitted source: a cubin of the kernel, or with ``harness``
    the cuBLAS-checking program (what :func:`build_program` runs, with the toolkit's cuBLAS).

    >>> build_line("sm_90a", harness=True)
    'nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a k.cu -lcublas -o k'
    >>> build_line("sm_86", source="v8.cu")
    'nvcc -cubin -O3 -std=c++17 -arch=sm_86 v8.cu -o v8.cubin'
    """
    stem = source[:-3] if source.endswith(".cu") else f"{source}.out"
    if harness:
        return " ".join(["nvcc -O3 -std=c++17", *arch_flags(arch), shlex.quote(source), "-lcublas -o",
                         shlex.quote(stem)])
    return " ".join(["nvcc -cubin -O3 -std=c++17", *arch_flags(arch), shlex.quote(source), "-o",
                     shlex.quote(f"{stem}.cubin")])


def build_program(source: SourceLike, output: str | Path, arch: str = "sm_90",
                  timeout: float = 600.0) -> str:
    """Build a whole program (a --harness source) with cuBLAS: ``nvcc -O3 -arch=ARCH k.cu -lcublas -o OUT``.

    Returns nvcc's log; raises CompileFailure when the build fails.

    >>> from gemmgen.presets import preset
    >>> from gemmgen.render import render
    >>> log = build_program(render(preset("v8"), harness=True), tempfile.mkdtemp() + "/k")  # doctest: +CUBLAS
    """
    code = source.code if isinstance(source, KernelSource) else source
    with tempfile.TemporaryDirectory(prefix="gemmgen-build-") as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(code)
        cmd = [nvcc_path(), "-O3", "-std=c++17", *arch_flags(arch), str(cu), *cublas_flags(), "-o", str(output)]
        return _run(cmd, timeout, code)[0]


def _compile_or_failure(source: SourceLike, arch: str, flags: Sequence[str]):
    try:
        return compile_cubin(source, arch, flags)
    except CompileFailure as failure:
        return failure
