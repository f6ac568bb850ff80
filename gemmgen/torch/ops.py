"""gemmgen's GEMMs as PyTorch operators: ``gemmgen::matmul`` and ``gemmgen::linear``.

Each is a ``torch.library.custom_op`` with a fake implementation (shapes and dtypes only, so
``torch.compile(fullgraph=True)`` traces through it and TorchInductor calls the kernel as an extern
op) and an autograd formula whose backward calls ``gemmgen::matmul`` again, on transposed views:

- C = A @ B: dA = dC @ B^T, dB = A^T @ dC. A transposed view is layout T, which the kernels read
  where it lies, so no operand is copied (the layouts of a forward NN are NT and TN backwards).
- y = x @ W^T + b: x's leading dimensions are flattened into rows as a view; dx = dy @ W (NN),
  dW = dy^T @ x (TN), db = dy summed over the rows.

The output C is float32 whatever the inputs (gemmgen's contract): float16/bfloat16 inputs give
float32 results, and their gradients are computed from dC rounded to the input type, then returned
in it. ``precision``/``family`` are those of :func:`gemmgen.matmul`; backward uses the forward's.

>>> import torch, gemmgen.torch as gt                                               # doctest: +GPU
>>> a = torch.rand(512, 256, device="cuda", requires_grad=True)                    # doctest: +GPU
>>> b = torch.rand(128, 256, device="cuda").t()         # a transposed view: layout T   # doctest: +GPU
>>> gt.matmul(a, b).sum().backward()                     # dA = dC @ B^T by gemmgen     # doctest: +GPU
"""
from __future__ import annotations

from typing import Optional

import torch

from .launch import gemm
from .tensors import TRACE_ON, check_linear, check_matmul, check_types, linear_class, matrix, rows

Tensor = torch.Tensor


# ---- gemmgen::matmul ------------------------------------------------------------------------------
# No defaults in the schemas: the dispatcher drops arguments equal to their defaults before autograd
# sees them, which would shorten ctx.needs_input_grad (the public functions pass every argument).
def _matmul_impl(a: Tensor, b: Tensor, precision: Optional[str], family: Optional[str]) -> Tensor:
    return gemm(a, b, precision, family)   # checked there, once per kind of call


_matmul = torch.library.custom_op("gemmgen::matmul", _matmul_impl, mutates_args=())
_MATMUL = torch.ops.gemmgen.matmul.default   # the operator itself: no Python layer in front of the dispatcher


@_matmul.register_fake
def _matmul_fake(a, b, precision, family):
    check_matmul(a, b, precision, family, TRACE_ON)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch.float32)


def _matmul_setup(ctx, inputs, output) -> None:
    a, b, ctx.precision, ctx.family = inputs
    ctx.save_for_backward(a, b)


def _matmul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad[:2]
    grad = matrix(grad, "grad")[0]   # one copy here if no kernel reads its strides, not one per GEMM
    grad_a = _mm(grad, b.t(), a.dtype, ctx) if need_a else None   # dA = dC @ B^T
    grad_b = _mm(a.t(), grad, b.dtype, ctx) if need_b else None   # dB = A^T @ dC
    return grad_a, grad_b, None, None


_matmul.register_autograd(_matmul_backward, setup_context=_matmul_setup)


# ---- gemmgen::linear ------------------------------------------------------------------------------
def _linear_impl(x: Tensor, weight: Tensor, bias: Optional[Tensor], precision: Optional[str],
                 family: Optional[str]) -> Tensor:
    cls = linear_class(x, weight, bias, precision, family)   # checked once per kind of call
    x2 = x.reshape(rows(x), x.shape[-1])   # a view where x's strides allow
    y = gemm(x2, weight.t(), cls, family, (*x.shape[:-1], weight.shape[0]))
    if bias is not None:
        y.add_(bias)   # y is our own fresh tensor: the bias costs one pass over it, no allocation
    return y


_linear = torch.library.custom_op("gemmgen::linear", _linear_impl, mutates_args=())
_LINEAR = torch.ops.gemmgen.linear.default


@_linear.register_fake
def _linear_fake(x, weight, bias, precision, family):
    check_linear(x, weight, bias, precision, family, TRACE_ON)
    return x.new_empty((*x.shape[:-1], weight.shape[0]), dtype=torch.float32)


def _linear_setup(ctx, inputs, output) -> None:
    x, weight, bias, ctx.precision, ctx.family = inputs
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.save_for_backward(x, weight)


def _linear_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    need_x, need_w, need_b = ctx.needs_input_grad[:3]
    g = matrix(grad.reshape(rows(grad), grad.shape[-1]), "grad")[0]   # (rows, out): a view of a contiguous dy
    grad_x = _mm(g, weight, x.dtype, ctx).view(x.shape) if need_x else None              # dx = dy @ W
    grad_w = _mm(g.t(), x.reshape(rows(x), x.shape[-1]), weight.dtype, ctx) if need_w else None  # dW = dy^T @ x
    grad_b = g.sum(0).to(ctx.bias_dtype) if need_b else None
    return grad_x, grad_w, grad_b, None, None


_linear.register_autograd(_linear_backward, setup_context=_linear_setup)


def _mm(p: Tensor, q: Tensor, dtype: torch.dtype, ctx) -> Tensor:
    """p @ q by gemmgen::matmul for a gradient of type ``dtype``: half inputs take dC rounded to their
    type (both operands of a kernel have one dtype) and get the float32 result back in it."""
    if p.dtype != dtype or q.dtype != dtype:   # float32 passes through without a call
        p, q = p.to(dtype), q.to(dtype)
    out = _MATMUL(p, q, ctx.precision, ctx.family)
    return out if dtype == torch.float32 else out.to(dtype)


# ---- the public functions -------------------------------------------------------------------------
def matmul(a: Tensor, b: Tensor, *, precision: Optional[str] = None, family: Optional[str] = None) -> Tensor:
    """a @ b for CUDA matrices by gemmgen's kernel for this GPU, as a new float32 tensor, with autograd.

    a and b are both float32 (``precision`` None or "fp32": fp32-accurate, SIMT or 3xTF32 tensor
    cores; "tf32": TF32 tensor cores, ~3e-4 relative error), both float16 or both bfloat16 (exact
    products, fp32 sums). Transposed views are read without copies. ``family`` restricts the
    kernels to one template family ("simt", "tf32x3", "tf32", "wmma"), as in :func:`gemmgen.matmul`.
    Runs on the current CUDA stream; capturable in CUDA graphs after one call with the same shapes.

    >>> c = matmul(torch.rand(64, 32, device="cuda"), torch.rand(16, 32, device="cuda").t())  # doctest: +GPU
    """
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):   # the dispatcher's own error is many lines long
        check_types({"a": a, "b": b})
    return _MATMUL(a, b, precision, family)


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, *, precision: Optional[str] = None,
           family: Optional[str] = None) -> Tensor:
    """torch.nn.functional.linear by gemmgen: x @ weight^T + bias, over any leading dimensions of x.

    x is (*, in_features), weight (out_features, in_features), bias (out_features,) or None; the
    result is float32 of shape (*, out_features). ``precision``/``family`` as in :func:`matmul`.

    >>> y = linear(torch.rand(8, 128, 256, device="cuda"), torch.rand(512, 256, device="cuda"))  # doctest: +GPU
    """
    check_types({"x": x, "weight": weight}, {"bias": bias})
    return _LINEAR(x, weight, bias, precision, family)
