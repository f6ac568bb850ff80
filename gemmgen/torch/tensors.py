"""PyTorch tensors as gemmgen matrices: the argument checks (one-line errors naming the argument and its
value) and the layout letter and leading dimension of a 2-D tensor, read from its strides.

The rules are gemmgen.matmul's (:func:`gemmgen.runtime.arrays.layout_of`): rows contiguous is layout
'N', columns contiguous (a transposed view such as ``w.t()``) is layout 'T', read where they lie.
Strides that no kernel reads (the stride-0 gradient of ``y.sum()``, every other column) are made
contiguous, as ``torch.mm`` does before it calls cuBLAS.

>>> import torch
>>> matrix(torch.zeros(3, 5), "a")[1:], matrix(torch.zeros(5, 3).t(), "b")[1:]
(('N', 5), ('T', 3))
>>> matrix(torch.zeros(1, 4).expand(3, 4), "grad")[1:]          # stride 0: copied, then read as 'N'
('N', 4)
>>> check_matmul(torch.zeros(3, 4), torch.zeros(4, 2), None, None)
Traceback (most recent call last):
...
TypeError: a is a cpu tensor of shape (3, 4); gemmgen runs on CUDA tensors (move it: a.cuda())
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch

from ..runtime.arrays import layout_of
from ..runtime.precision import check_family, resolve_precision

# torch dtype -> gemmgen's element type of A and B (C is always float32)
ELEMENT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
RUN_ON = ("cuda",)
TRACE_ON = ("cuda", "meta")   # fake implementations also see meta tensors (shape-only models)


class _Strides(NamedTuple):
    """What layout_of reads of an array: shape, strides in bytes, item size."""

    shape: tuple
    strides: tuple
    itemsize: int


def matrix(t: torch.Tensor, what: str) -> tuple[torch.Tensor, str, int]:
    """(t, layout letter, leading dimension) for a 2-D tensor; t is copied only where neither its rows
    nor its columns are contiguous."""
    size = t.element_size()
    try:
        letter, ld = layout_of(_Strides(tuple(t.shape), tuple(s * size for s in t.stride()), size), what)
    except ValueError:   # no kernel reads these strides: one copy, as torch.mm makes for cuBLAS
        t = t.contiguous()
        letter, ld = "N", max(t.shape[1], 1)
    return t, letter, ld


def check_types(required: dict, optional: Optional[dict] = None) -> None:
    """TypeError naming the first argument (name -> value) that is not a tensor; ``optional`` ones may be None."""
    for what, t in [*required.items(), *((k, v) for k, v in (optional or {}).items() if v is not None)]:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what} must be a torch.Tensor, got {type(t).__name__}")


def check_tensor(t, what: str, devices: tuple = RUN_ON) -> str:
    """gemmgen's element type ("f32", "f16", "bf16") of a tensor argument, or TypeError naming it."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in devices:
        raise TypeError(f"{what} is a {t.device.type} tensor of shape {tuple(t.shape)}; gemmgen runs on CUDA "
                        f"tensors (move it: {what}.cuda())")
    kind = ELEMENT.get(t.dtype)
    if kind is None:
        raise TypeError(f"{what} has dtype {t.dtype}; gemmgen takes float32, float16 or bfloat16 (convert it, "
                        f"e.g. {what}.float())")
    return kind


def _check_pair(a, b, names: tuple[str, str], devices: tuple) -> str:
    """The element type both tensors share; TypeError/ValueError naming the one that differs."""
    kinds = [check_tensor(t, name, devices) for t, name in zip((a, b), names)]
    if a.dtype != b.dtype:
        raise ValueError(f"{names[0]} is {a.dtype} and {names[1]} is {b.dtype}; they must have one dtype "
                         f"(convert one, e.g. {names[1]}.to({names[0]}.dtype))")
    if a.device != b.device:
        raise ValueError(f"{names[0]} is on {a.device} and {names[1]} on {b.device}; put them on one device")
    return kinds[0]


def check_matmul(a, b, precision: Optional[str], family: Optional[str], devices: tuple = RUN_ON) -> str:
    """The precision class of ``matmul(a, b)``, or a one-line error naming the bad argument."""
    kind = _check_pair(a, b, ("a", "b"), devices)
    for t, name in ((a, "a"), (b, "b")):
        if t.dim() != 2:
            raise ValueError(f"{name} has {t.dim()} dimensions {tuple(t.shape)}; gemmgen.torch.matmul multiplies "
                             "matrices (2-D; gemmgen.torch.linear takes batched inputs)")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {a.shape[0]}x{a.shape[1]}, b is {b.shape[0]}x{b.shape[1]}")
    return _precision(precision, family, kind)


def check_linear(x, weight, bias, precision: Optional[str], family: Optional[str],
                 devices: tuple = RUN_ON) -> str:
    """The precision class of ``linear(x, weight, bias)``, or a one-line error naming the bad argument."""
    kind = _check_pair(x, weight, ("x", "weight"), devices)
    if weight.dim() != 2:
        raise ValueError(f"weight has {weight.dim()} dimensions {tuple(weight.shape)}; it must be "
                         "out_features x in_features")
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"x has shape {tuple(x.shape)}, but weight ({weight.shape[0]}x{weight.shape[1]}, out x in) "
                         f"takes {weight.shape[1]} features in the last dimension")
    if bias is not None:
        check_tensor(bias, "bias", devices)
        if tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"bias has shape {tuple(bias.shape)}; weight has {weight.shape[0]} output features, "
                             f"so bias must have shape ({weight.shape[0]},)")
        if bias.device != x.device:
            raise ValueError(f"bias is on {bias.device} and x on {x.device}; put them on one device")
    return _precision(precision, family, kind)


_LINEAR_CHECKED: dict[tuple, str] = {}   # facts of a linear call that passed its checks -> its class


def linear_class(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], precision: Optional[str],
                 family: Optional[str]) -> str:
    """:func:`check_linear` on CUDA tensors, run once per kind of call (what the checks read: shapes,
    dtypes, devices, options) and remembered: a repeated call costs one lookup."""
    key = (x.shape, weight.shape, x.dtype, weight.dtype, x.device, weight.device, precision, family,
           None if bias is None else (bias.shape, bias.dtype, bias.device))
    cls = _LINEAR_CHECKED.get(key)
    if cls is None:
        cls = check_linear(x, weight, bias, precision, family)
        if len(_LINEAR_CHECKED) >= 4096:   # shapes that never repeat: start again
            _LINEAR_CHECKED.clear()
        _LINEAR_CHECKED[key] = cls
    return cls


def _precision(precision: Optional[str], family: Optional[str], kind: str) -> str:
    cls = resolve_precision(precision, kind)
    check_family(family, cls)
    return cls


def rows(x: torch.Tensor) -> int:
    """The number of rows of x flattened to (rows, features): the product of its leading dimensions."""
    return math.prod(x.shape[:-1])
