"""Operand layouts and checks, on stand-in arrays (no GPU needed)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from gemmgen.operands import check_matrix, layout_of, overlaps


def fake(shape, strides_elems, dtype="float32", ptr=0):
    import numpy as np

    return SimpleNamespace(shape=shape, strides=tuple(4 * s for s in strides_elems), ndim=len(shape),
                           dtype=np.dtype(dtype), itemsize=4, data=SimpleNamespace(ptr=ptr))


@pytest.mark.parametrize("shape,strides,expect", [
    ((300, 200), (200, 1), ("N", 200)),      # C-contiguous
    ((300, 200), (256, 1), ("N", 256)),      # padded rows
    ((300, 200), (1, 300), ("T", 300)),      # Fortran order / transposed view
    ((1, 200), (7, 1), ("N", 200)),          # a single row
    ((300, 1), (1, 1), ("N", 1)),            # a single column
])
def test_layout_from_strides(shape, strides, expect):
    assert layout_of(fake(shape, strides), "A") == expect


def test_unreadable_strides_are_refused_with_the_strides():
    with pytest.raises(ValueError, match=r"strides \(24, 8\)"):
        layout_of(fake((4, 3), (6, 2)), "A")


def test_dtype_and_rank_are_named():
    with pytest.raises(TypeError, match="float16"):
        check_matrix(fake((2, 2), (2, 1), "float16"), "B")
    with pytest.raises(ValueError, match="3 dimensions"):
        check_matrix(fake((2, 2, 2), (4, 2, 1)), "A")


def test_overlap_of_byte_ranges():
    a = fake((4, 4), (4, 1), ptr=1000)
    assert overlaps(a, fake((2, 2), (4, 1), ptr=1000 + 4 * 10))
    assert not overlaps(a, fake((2, 2), (4, 1), ptr=1000 + 4 * 16))
