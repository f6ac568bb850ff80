"""One GEMM on PyTorch tensors: C = A @ B into a new float32 tensor, on the current CUDA stream.

What ``gemmgen.matmul`` does, without its CuPy views: the pointers, strides and shapes come from the
tensors themselves, the output is allocated by PyTorch's caching allocator (``torch.empty``), and the
kernel is launched on PyTorch's current stream (its raw pointer wrapped once per stream in a CuPy
stream, cached). When shapes repeat, a call allocates nothing but the output and never waits for the
GPU, so it can be captured in a CUDA graph: the kernel of a new request is picked (and compiled, on
first use) only outside capture, and a first call inside capture raises, asking for a warm-up call.

>>> import torch                                                                    # doctest: +SKIP
>>> gemm(torch.rand(64, 32, device="cuda"), torch.rand(32, 16, device="cuda"), "fp32", None).shape  # doctest: +SKIP
torch.Size([64, 16])
"""
from __future__ import annotations

import contextlib
from typing import Any, Optional

import torch

from ..measure.launch import Operands
from ..runtime.library import Kernel, library_for
from .tensors import check_matmul, matrix

_KERNELS: dict[tuple, Kernel] = {}   # (device, M, N, K, layout, lda, ldb, class, family) -> kernel
_STREAMS: dict[tuple, Any] = {}      # (device, raw cudaStream_t) -> CuPy stream over it
# PyTorch's own lookup of the current stream's raw handle (what TorchInductor's generated code calls):
# no Python Stream object per call. Builds without CUDA lack it, and get the public route.
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def gemm(a: torch.Tensor, b: torch.Tensor, precision: str, family: Optional[str],
         shape: Optional[tuple] = None) -> torch.Tensor:
    """a @ b in float32 with gemmgen's kernel for this GPU and precision class, as a new tensor of
    ``shape`` (default (M, N); linear's (*, N) holds the same M rows).

    a and b are CUDA matrices of one dtype with matching inner dimensions (checked by the caller,
    :mod:`.tensors`); any strides (read in place where rows or columns are contiguous).
    """
    M, N = a.shape[0], b.shape[1]
    out = torch.empty(shape or (M, N), dtype=torch.float32, device=a.device)
    if M and N:
        gemm_into(out.view(M, N), a, b, precision, family)
    return out


def gemm_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, precision: str, family: Optional[str]) -> None:
    """out = a @ b; out is a contiguous float32 (M, N) tensor of a's device, M, N >= 1."""
    K = a.shape[1]
    if K == 0:   # an empty sum
        out.zero_()
        return
    dev = a.device.index
    # The common case needs no device switch (a CuPy device context costs microseconds).
    with contextlib.nullcontext() if _current_device() == dev else _device(dev):
        (a, la, lda), (b, lb, ldb) = matrix(a, "a"), matrix(b, "b")
        kernel = _kernel(dev, a.shape[0], out.shape[1], K, la + lb, lda, ldb, precision, family)
        if kernel.config.bounds == "none" and (a.data_ptr() | b.data_ptr()) % 16:
            # a fast-path kernel loads 16 bytes at a time from the base pointers without checking them
            (a, la, lda), (b, lb, ldb) = matrix(a.contiguous(), "a"), matrix(b.contiguous(), "b")
            kernel = _kernel(dev, a.shape[0], out.shape[1], K, la + lb, lda, ldb, precision, family)
        ops = Operands(a.shape[0], out.shape[1], K, a.data_ptr(), lda, b.data_ptr(), ldb, out.data_ptr(),
                       out.shape[1], 1.0, 0.0)
        workspace = _workspace(kernel, out)   # alive until the kernels are enqueued
        kernel(ops, current_stream(dev), None if workspace is None else workspace.data_ptr())


def _workspace(kernel: Kernel, out: torch.Tensor) -> Optional[torch.Tensor]:
    """The partial sums of a split-K kernel that reduces through a workspace, from PyTorch's allocator
    (stream-ordered on the current stream, and part of the graph under capture), or None."""
    floats = kernel.loaded.workspace_floats(*out.shape)
    return torch.empty(floats, dtype=torch.float32, device=out.device) if floats else None


def _kernel(dev: int, M: int, N: int, K: int, layout: str, lda: int, ldb: int, precision: str,
            family: Optional[str]) -> Kernel:
    """The library's kernel for a request, cached here too, so that a repeated request costs one lookup
    and a new one can be refused inside CUDA-graph capture before anything is compiled or loaded."""
    key = (dev, M, N, K, layout, lda, ldb, precision, family)
    kernel = _KERNELS.get(key)
    if kernel is None:
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"gemmgen.torch: first call for {M}x{N}x{K} layout {layout} ({precision}) inside "
                               "CUDA graph capture; call the op once with these shapes before capturing (warm-up), "
                               "so its kernel is picked and compiled outside the graph")
        kernel = _KERNELS[key] = library_for(dev, False).kernel_for(M, N, K, layout, lda, ldb, N, precision, family)
    return kernel


def current_stream(dev: int):
    """PyTorch's current stream on device ``dev`` as a CuPy stream (one wrapper per stream, cached)."""
    ptr = _RAW_STREAM(dev) if _RAW_STREAM is not None else torch.cuda.current_stream(dev).cuda_stream
    stream = _STREAMS.get((dev, ptr))
    if stream is None:
        stream = _STREAMS[(dev, ptr)] = _wrap(ptr, dev)
    return stream


class _RawStream:
    """A raw cudaStream_t in the CUDA stream protocol (what CuPy's Stream.from_external reads)."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.ptr)


def _wrap(ptr: int, dev: int):
    import cupy

    if hasattr(cupy.cuda.Stream, "from_external"):   # CuPy 14; ExternalStream is deprecated there
        return cupy.cuda.Stream.from_external(_RawStream(ptr))
    return cupy.cuda.ExternalStream(ptr, dev)


def _current_device() -> int:
    import cupy

    return cupy.cuda.runtime.getDevice()


def _device(dev: int):
    import cupy

    return cupy.cuda.Device(dev)


def kernel_for(a: torch.Tensor, b: torch.Tensor, precision: Optional[str] = None,
              family: Optional[str] = None) -> Kernel:
    """The kernel ``gemmgen.torch.matmul(a, b, ...)`` launches for these tensors (picked now if new):
    ``.config.label or .config.name`` says which, ``.config.layout`` how a and b were read.

    >>> kernel_for(torch.rand(256, 64, device="cuda"), torch.rand(32, 64, device="cuda").t()).config.layout  # doctest: +SKIP
    'NT'
    """
    cls = check_matmul(a, b, precision, family)
    (a, la, lda), (b, lb, ldb) = matrix(a, "a"), matrix(b, "b")
    dev = a.device.index
    with contextlib.nullcontext() if _current_device() == dev else _device(dev):
        return _kernel(dev, a.shape[0], b.shape[1], a.shape[1], la + lb, lda, ldb, cls, family)
