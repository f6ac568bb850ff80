"""Stage 8, gemmgen from PyTorch: the tuned kernels as torch operators, with autograd, torch.compile and
CUDA graphs. Imported only on request (``import gemmgen`` never imports PyTorch).

- ``ops``: :func:`matmul` and :func:`linear`, the custom operators ``gemmgen::matmul`` and
  ``gemmgen::linear`` (fake implementations for torch.compile, backward through gemmgen's kernels);
- ``nn``: :class:`Linear` (a drop-in ``nn.Linear``) and :func:`swap_linear` (in place, on a model);
- ``launch``: one GEMM on tensors, on the current stream, into a tensor from PyTorch's allocator,
  its host work planned once per kind of call; :func:`kernel_for` says which kernel serves a pair of tensors;
- ``kernels``: the library's kernel for a request, cached, refused for a new request inside CUDA-graph
  capture, and without atomic split-K under ``torch.use_deterministic_algorithms(True)``;
- ``tensors``: argument checks and the layout of a tensor read from its strides.

On a GPU (fp32-accurate by default for float32 tensors; 3xTF32 tensor cores where they are faster):

>>> import torch, gemmgen.torch as gt                                           # doctest: +GPU
>>> model = gt.swap_linear(torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU()).cuda())  # doctest: +GPU
>>> loss = model(torch.rand(8192, 4096, device="cuda")).square().mean()        # doctest: +GPU
>>> loss.backward()                                                            # doctest: +GPU
"""
try:
    import torch  # noqa: F401  (the real PyTorch: imports in this package are absolute)
except ImportError as exc:   # pragma: no cover - depends on the environment
    raise ImportError("gemmgen.torch needs PyTorch (pip install torch); the rest of gemmgen works without it") from exc

from .launch import kernel_for
from .nn import Linear, swap_linear
from .ops import linear, matmul

__all__ = ["Linear", "kernel_for", "linear", "matmul", "swap_linear"]
