"""The nvcc command that builds an emitted source, as its header prints it (``// Build:``).

The header is written here, at render time, so the line lives in this stage; :mod:`gemmgen.build.nvcc`
builds with the same flags (:data:`NVCC_FLAGS`, :func:`arch_flags`), so the printed line and what
gemmgen itself runs cannot drift apart. The line names the file the source is written to; a source
rendered for no particular file (a search trial, matmul, standard output that is not a file) names
:data:`PLACEHOLDER`, which reads as one.

>>> build_line("sm_90a", harness=True, source="v8.cu")
'nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a v8.cu -lcublas -o v8'
>>> build_line("sm_86")
'nvcc -cubin -O3 -std=c++17 -arch=sm_86 KERNEL.cu -o KERNEL.cubin'
"""
from __future__ import annotations

import shlex

NVCC_FLAGS = ("-O3", "-std=c++17")   # every nvcc build of a kernel or a --harness program
PLACEHOLDER = "KERNEL.cu"            # the file a source written to no named file tells nvcc to build


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


def program(source: str) -> str:
    """What nvcc writes for ``source``: the program of a --harness build, and with ``.cubin`` the
    cubin of a kernel (the source's name without ``.cu``; other names get ``.out`` appended).

    >>> program("out/v8.cu"), program("kernel.txt")
    ('out/v8', 'kernel.txt.out')
    """
    return source[:-3] if source.endswith(".cu") else f"{source}.out"


def run_command(source: str) -> str:
    """How a shell runs the --harness program built from ``source`` (a bare name needs ``./``).

    >>> run_command("v8.cu"), run_command("/tmp/v8.cu")
    ('./v8', '/tmp/v8')
    """
    out = program(source)
    return shlex.quote(out if "/" in out else f"./{out}")


def build_line(arch: str, harness: bool = False, source: str = PLACEHOLDER) -> str:
    """The nvcc command that builds ``source``, an emitted source for ``arch`` (the config's target,
    e.g. sm_90a for wgmma): a cubin of the kernel, or with ``harness`` the cuBLAS-checking program
    (what :func:`gemmgen.build.nvcc.build_program` runs, with the toolkit's cuBLAS). nvcc picks a
    file's language by its suffix, so a source not named ``.cu`` is announced with ``-x cu``.

    >>> build_line("sm_90", source="my kernel.txt")
    "nvcc -cubin -O3 -std=c++17 -arch=sm_90 -x cu 'my kernel.txt' -o 'my kernel.txt.out.cubin'"
    """
    language = [] if source.endswith(".cu") else ["-x cu"]
    out = program(source)
    if harness:
        return " ".join(["nvcc", *NVCC_FLAGS, *arch_flags(arch), *language, shlex.quote(source), "-lcublas -o",
                         shlex.quote(out)])
    return " ".join(["nvcc -cubin", *NVCC_FLAGS, *arch_flags(arch), *language, shlex.quote(source), "-o",
                     shlex.quote(f"{out}.cubin")])
