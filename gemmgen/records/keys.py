"""Keys of the tuned-kernel database: shape, layout and accuracy class.

fp32-accurate kernels (simt and 3xTF32 alike) share the plain ``<M>x<N>x<K>/<layout>`` key, so they
compete for it; other accuracy classes (``KernelConfig.precision``: tf32, and f16/bf16 for half
inputs) are keyed ``<M>x<N>x<K>/<layout>/<precision>``.

>>> parse_key(entry_key("4096x4096x4096/TN", "tf32"))
(Shape(M=4096, N=4096, K=4096, layout='TN'), 'tf32')
"""
from __future__ import annotations

from ..base.shape import Shape

FP32 = "fp32"   # the accuracy class of the plain keys: what matmul promises by default


def entry_key(shape: str | Shape, precision: str = FP32) -> str:
    """The results key of a shape (default layout NN) and accuracy class.

    >>> entry_key("4096x4096x4096", "fp32"), entry_key("4096x4096x4096/TN", "tf32")
    ('4096x4096x4096/NN', '4096x4096x4096/TN/tf32')
    """
    key = shape.key if isinstance(shape, Shape) else Shape.parse(shape).key
    return key if precision == FP32 else f"{key}/{precision}"


def parse_key(key: str) -> tuple[Shape, str]:
    """The shape and accuracy class of a results key; a bad key raises ValueError naming it.

    >>> parse_key("1024x1024x1024/NT/tf32")
    (Shape(M=1024, N=1024, K=1024, layout='NT'), 'tf32')
    >>> parse_key("1024x1024x1024")[1]
    'fp32'
    """
    parts = key.split("/")
    if len(parts) > 3 or (len(parts) == 3 and not parts[2]):
        raise ValueError(f"results key {key!r} is not MxNxK[/LAYOUT[/PRECISION]], e.g. 4096x4096x4096/NN/tf32")
    precision = parts[2] if len(parts) == 3 else FP32
    if precision == FP32 and len(parts) == 3:
        raise ValueError(f"results key {key!r}: fp32 entries are keyed without a precision, "
                         f"as {'/'.join(parts[:2])!r}")
    return Shape.parse("/".join(parts[:2])), precision


def shape_order(key: str) -> tuple:
    """Sort key for results keys: numerically by M, N, K, then layout, fp32 before other precisions."""
    s, precision = parse_key(key)
    return (s.M, s.N, s.K, s.layout, precision != FP32, precision)
