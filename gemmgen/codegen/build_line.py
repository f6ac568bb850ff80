"""The nvcc command that builds an emitted source, as its header prints it (``// Build:``).

The header is written here, at render time, so the line lives in this stage; :mod:`gemmgen.build.nvcc`
builds with the same flags (:data:`NVCC_FLAGS`, :func:`arch_flags`), so the printed line and what
gemmgen itself runs cannot drift apart.

>>> build_line("sm_90a", harness=True)
'nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a k.cu -lcublas -o k'
>>> build_line("sm_86", source="v8.cu")
'nvcc -cubin -O3 -std=c++17 -arch=sm_86 v8.cu -o v8.cubin'
"""
from __future__ import annotations

import shlex

NVCC_FLAGS = ("-O3", "-std=c++17")   # every nvcc build of a kernel or a --harness program


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
    """The nvcc command that builds an emitted source for ``arch`` (the config's target, e.g. sm_90a
    for wgmma): a cubin of the kernel, or with ``harness`` the cuBLAS-checking program (what
    :func:`gemmgen.build.nvcc.build_program` runs, with the toolkit's cuBLAS)."""
    stem = source[:-3] if source.endswith(".cu") else f"{source}.out"
    if harness:
        return " ".join(["nvcc", *NVCC_FLAGS, *arch_flags(arch), shlex.quote(source), "-lcublas -o",
                         shlex.quote(stem)])
    return " ".join(["nvcc -cubin", *NVCC_FLAGS, *arch_flags(arch), shlex.quote(source), "-o",
                     shlex.quote(f"{stem}.cubin")])
