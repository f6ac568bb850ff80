"""Which kernel serves a GEMM request from PyTorch: the library's planner (no copies: a request whose strides
no kernel reads is copied contiguous by :mod:`.launch`), cached per request, refused for a new request
inside CUDA-graph capture, and without atomic split-K where PyTorch asks for deterministic algorithms.

Split-K kernels with ``reduce="atomic"`` (names with ``k4a``, ``k12a``: ``config.split_atomic``) add
their K slices' partial sums into C with atomicAdd, in whatever order the blocks finish, so two runs
on the same inputs may differ in the last bits. With ``torch.use_deterministic_algorithms(True)`` the
request asks the planner for a fixed order (``fixed_order``): the fastest predicted kernel that reduces
in a fixed order (one slice, or slices summed through a workspace by a reduce kernel), or where only
atomic ones are timed for it, the tile of the fastest with one slice.

>>> import torch
>>> torch.use_deterministic_algorithms(True); deterministic()
True
>>> torch.use_deterministic_algorithms(False); deterministic()
False
"""
from __future__ import annotations

from typing import Optional

import torch

from ..runtime.library import Served, library_for
from ..runtime.planner import NoFixedOrder

_KERNELS: dict[tuple, Served] = {}   # (device, M, N, K, layout, lda, ldb, class, family, deterministic) -> kernel

deterministic = torch.are_deterministic_algorithms_enabled


def pick(dev: int, M: int, N: int, K: int, layout: str, lda: int, ldb: int, precision: str,
         family: Optional[str], fixed_order: bool = False, aligned: bool = True) -> Served:
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
        try:
            kernel = library_for(dev, False).kernel_for(M, N, K, layout, lda, ldb, N, precision, family, aligned,
                                                        fixed_order)
        except NoFixedOrder as err:
            raise RuntimeError(f"gemmgen.torch: {err}; call torch.use_deterministic_algorithms(False) or tune this "
                               "shape") from None
        _KERNELS[key] = kernel
    return kernel

