"""Compile many kernels at once, with nvcc (a ptxas report each) or NVRTC (a cached cubin each).

Results come back in input order; a source the compiler rejects gives its
:class:`~gemmgen.base.outcome.CompileFailure` in place of a result, so one bad kernel does not lose
the others.

>>> src = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
>>> [r.spills for r in compile_many([(src, "sm_80"), (src, "sm_90")])]   # doctest: +NVCC
[0, 0]
"""
from __future__ import annotations

import os
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Iterable, Sequence, Union

from ..base.outcome import CompileFailure
from . import nvcc, nvrtc

COMPILERS = ("nvcc", "nvrtc")
Result = Union[nvcc.PtxasReport, nvrtc.Binary, CompileFailure]


def compile_many(jobs: Iterable[tuple[nvcc.SourceLike, str]], compiler: str = "nvcc", workers: int | None = None,
                 flags: Sequence[str] = ()) -> list[Result]:
    """Compile (source, arch) pairs in parallel, one compile per core by default.

    ``compiler="nvcc"`` runs ``nvcc -cubin`` in threads (each job is a process; Python only waits)
    and returns :class:`~gemmgen.build.resources.PtxasReport` values; ``"nvrtc"`` fills the compile
    cache (:func:`~gemmgen.build.nvrtc.compile_source`) in processes, since NVRTC compiles in the
    calling process, and returns :class:`~gemmgen.build.nvrtc.Binary` values. ``flags`` are extra
    nvcc flags.
    """
    if compiler not in COMPILERS:
        raise ValueError(f"compiler {compiler!r} is not one of {', '.join(COMPILERS)}")
    items = [(src, arch, tuple(flags)) for src, arch in jobs]
    if compiler == "nvcc":
        nvcc.nvcc_path()            # fail once, clearly, before queueing hundreds of jobs
    run = _nvcc_job if compiler == "nvcc" else _nvrtc_job
    workers = min(workers or os.cpu_count() or 1, max(len(items), 1))
    if workers == 1:
        return [run(item) for item in items]
    with _pool(compiler, workers) as pool:
        return list(pool.map(run, items))


def _pool(compiler: str, workers: int) -> Executor:
    return ThreadPoolExecutor(workers) if compiler == "nvcc" else ProcessPoolExecutor(workers)


def _nvcc_job(item: tuple) -> Result:
    source, arch, flags = item
    try:
        return nvcc.compile_cubin(source, arch, flags)
    except CompileFailure as failure:
        return failure


def _nvrtc_job(item: tuple) -> Result:
    source, arch, _ = item
    try:
        return nvrtc.compile_source(source, arch)
    except CompileFailure as failure:
        return failure
