"""Shape: an M x N x K problem in a layout, the unit every stage after the kernel talks about.

>>> Shape.parse("4096x2048x1024/nt")
Shape(M=4096, N=2048, K=1024, layout='NT')
>>> Shape(64, 64, 64, "TN").a_transposed, Shape(64, 64, 64, "TN").b_transposed
(True, False)
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """An M x N x K problem with a layout (see KernelConfig for the layout letters)."""

    M: int
    N: int
    K: int
    layout: str = "NN"

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K

    @property
    def a_transposed(self) -> bool:
        """A is stored column-major (layout letter T): its leading dimension counts M."""
        return self.layout[0] == "T"

    @property
    def b_transposed(self) -> bool:
        """B is stored column-major (layout letter T): its leading dimension counts K."""
        return self.layout[1] == "T"

    @property
    def lds(self) -> tuple[int, int]:
        """The leading dimensions of packed A and B (a row-major operand's row, a column-major one's column).

        >>> Shape(5, 8, 12, "TN").lds, Shape(5, 8, 12, "NT").lds
        ((5, 8), (12, 12))
        """
        return (self.M if self.a_transposed else self.K), (self.K if self.b_transposed else self.N)

    @property
    def key(self) -> str:
        """Results key of the shape, e.g. '4096x4096x4096/NN'."""
        return f"{self.M}x{self.N}x{self.K}/{self.layout}"

    @classmethod
    def parse(cls, text: str, layout: str = "NN") -> "Shape":
        """'4096x4096x4096' or '4096x4096x4096/NT' -> Shape; a bad string raises ValueError naming it."""
        body, _, lay = text.partition("/")
        lay = (lay or layout).upper()
        parts = body.lower().split("x")
        try:
            m, n, k = (int(p) for p in parts)
        except ValueError:
            raise ValueError(f"shape {text!r} is not MxNxK with three positive integers, e.g. 4096x4096x4096") from None
        if min(m, n, k) < 1:
            raise ValueError(f"shape {text!r} has a dimension below 1")
        if lay not in ("NN", "NT", "TN", "TT"):
            raise ValueError(f"layout {lay!r} in {text!r} is not one of NN, NT, TN, TT")
        return cls(m, n, k, lay)

    def __str__(self) -> str:
        return self.key
