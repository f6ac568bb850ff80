"""Drop-in modules: :class:`Linear` (an ``nn.Linear`` computed by gemmgen) and :func:`swap_linear`, which
puts it in place of the ``nn.Linear`` layers of a model, keeping their parameters.

>>> import torch
>>> model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
>>> w = model[0].weight
>>> swap_linear(model, precision="tf32") is model, type(model[0]).__name__, model[0].weight is w
(True, 'Linear', True)
>>> model[2]
Linear(in_features=4, out_features=2, bias=True, precision='tf32')
"""
from __future__ import annotations

from typing import Optional

import torch

from .ops import linear


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` whose forward is :func:`gemmgen.torch.linear`: same parameters, same
    state_dict, same initialisation; float32 output. ``precision``/``family`` as in
    :func:`gemmgen.torch.matmul` (None: the inputs' own class, fp32-accurate for float32).

    >>> layer = Linear(4096, 4096, device="cuda")                           # doctest: +GPU
    >>> y = layer(torch.rand(8, 1024, 4096, device="cuda"))                 # doctest: +GPU
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None, *,
                 precision: Optional[str] = None, family: Optional[str] = None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.precision, self.family = precision, family

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias, precision=self.precision, family=self.family)

    def extra_repr(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("precision", self.precision), ("family", self.family)) if v)
        return super().extra_repr() + extra

    @classmethod
    def from_linear(cls, layer: torch.nn.Linear, *, precision: Optional[str] = None,
                    family: Optional[str] = None) -> "Linear":
        """A gemmgen Linear over ``layer``'s own parameters (the same Parameter objects: an optimizer
        that holds them goes on working), built without allocating or initialising new ones."""
        new = cls(layer.in_features, layer.out_features, layer.bias is not None, device="meta",
                  precision=precision, family=family)
        new.weight, new.bias = layer.weight, layer.bias
        new.train(layer.training)
        return new


def swap_linear(model: torch.nn.Module, precision: Optional[str] = None,
                family: Optional[str] = None) -> torch.nn.Module:
    """Replace, in place, every ``torch.nn.Linear`` of ``model`` (exactly that class: subclasses may
    compute something else) by a gemmgen :class:`Linear` over the same parameters; returns
    ``model``, or the replacement when ``model`` itself is an ``nn.Linear``.

    >>> model = swap_linear(torch.nn.Linear(3, 2))
    >>> type(model).__module__
    'gemmgen.torch.nn'
    """
    if type(model) is torch.nn.Linear:
        return Linear.from_linear(model, precision=precision, family=family)
    for name, child in model.named_children():
        swapped = swap_linear(child, precision, family)
        if swapped is not child:
            setattr(model, name, swapped)
    return model
