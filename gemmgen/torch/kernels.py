"""Which kernel serves a GEMM request from PyTorch: the library's dispatch, cached per request, refused
for a new request inside CUDA-graph capture, and without atomic split-K where PyTorch asks for
deterministic algorithms.

Split-K kernels with ``reduce="atomic"`` (names with ``k4a``, ``k12a``: ``config.split_atomic``) add
their K slices' partial sums into C with atomicAdd, in whatever order the blocks finish, so two runs
on the same inputs may differ in the last bits. With ``torch.use_deterministic_algorithms(True)`` the
request is served by the fastest predicted kernel that reduces in a fixed order instead (one slice,
or slices summed through a workspace by a reduce kernel); otherwise the dispatch's pick stands.

>>> import torch
>>> torch.use_deterministic_algorithms(True); deterministic()
True
>>> torch.use_deterministic_algorithms(False); deterministic()
False
"""
from __future__ import annotations

from typing import Optional

import torch

from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from ..runtime.dispatch import choose
from ..runtime.library import Kernel, KernelLibrary, library_for

_KERNELS: dict[tuple, Kernel] = {}   # (device, M, N, K, layout, lda, ldb, class, family, deterministic) -> kernel

deterministic = torch.are_deterministic_algorithms_enabled


def pick(dev: int, M: int, N: int, K: int, layout: str, lda: int, ldb: int, precision: str,
         family: Optional[str], fixed_order: bool = False, aligned: bool = True) -> Kernel:
    """The library's kernel for a request (C row-major, ldc = N), cached here too, so that a repeated
    request costs one lookup and a new one can be refused inside CUDA-graph capture before anything
    is compiled or loaded. ``fixed_order``: no atomic split-K (see the module docstring); ``aligned``
    False where A or B does not start on 16 bytes. Runs with device ``dev`` current (the kernel is
    loaded into its context)."""
    key = (dev, M, N, K, layout, lda, ldb, precision, family, fixed_order, aligned)
    kernel = _KERNELS.get(key)
    if kernel is None:
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"gemmgen.torch: first call for {M}x{N}x{K} layout {layout} ({precision}) inside "
                               "CUDA graph capture; call the op once with these shapes before capturing (warm-up), "
                               "so its kernel is picked and compiled outside the graph")
        lib = library_for(dev, False)
        kernel = lib.kernel_for(M, N, K, layout, lda, ldb, N, precision, family, aligned)
        if fixed_order and kernel.config.split_atomic:
            kernel = lib.kernel(fixed_order_config(lib, kernel.config, M, N, K, lda, ldb, precision, family))
        _KERNELS[key] = kernel
    return kernel


def fixed_order_config(lib: KernelLibrary, atomic: KernelConfig, M: int, N: int, K: int, lda: int, ldb: int,
                       precision: str, family: Optional[str]) -> KernelConfig:
    """The config that serves a request deterministically where the dispatch picked ``atomic`` (an
    atomic split-K kernel): the least predicted time among the timed kernels of the request's class
    and family that do not reduce atomically (the dispatch rule on that subset); where none is timed,
    ``atomic``'s own tile with one K slice."""
    layout = atomic.layout
    fits = [f for f in lib.candidates(precision, layout, family) if not f.config.split_atomic]
    best = choose(fits, M, N, K, layout, lda, ldb, N)
    if best is not None:
        return best.config
    single = atomic.replace(split_k=1)
    if explain(single, lib.spec) or single.accepts(M, N, K, lda, ldb, N) is not None:
        raise RuntimeError(f"gemmgen.torch: no deterministic kernel for {M}x{N}x{K}/{layout} ({precision}): "
                           f"{atomic.name} adds its K slices atomically and one slice of it does not fit here; "
                           "call torch.use_deterministic_algorithms(False) or tune this shape")
    return single

