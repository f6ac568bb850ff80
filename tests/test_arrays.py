"""Operand layouts and checks, on stand-in arrays (no GPU needed)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from gemmgen.runtime.arrays import check_matrix, element_type, layout_of, overlaps


def fake(shape, strides_elems, dtype="float32", ptr=0):
    import numpy as np

    size = np.dtype(dtype).itemsize
    return SimpleNamespace(shape=shape, strides=tuple(size * s for s in strides_elems), ndim=len(shape),
                           dtype=np.dtype(dtype), itemsize=size, data=SimpleNamespace(ptr=ptr))


@pytest.mark.parametrize("shape,strides,expect", [
    ((300, 200), (200, 1), ("N", 200)),      # C-contiguous
    ((300, 200), (256, 1), ("N", 256)),      # padded rows
    ((300, 200), (1, 300), ("T", 300)),      # Fortran order / transposed view
    ((1, 200), (7, 1), ("N", 200)),          # a single row
    ((300, 1), (1, 1), ("N", 1)),            # a single column
])
def test_layout_from_strides(shape, strides, expect):
    assert layout_of(fake(shape, strides), "A") == expect


@pytest.mark.parametrize("dtype", ["float16", "uint16"])   # bfloat16 is stored as 16-bit integers
def test_layout_of_half_matrices_counts_elements(dtype):
    assert layout_of(fake((300, 200), (256, 1), dtype), "A") == ("N", 256)
    assert layout_of(fake((300, 200), (1, 304), dtype), "B") == ("T", 304)


def test_unreadable_strides_are_refused_with_the_strides():
    with pytest.raises(ValueError, match=r"strides \(24, 8\)"):
        layout_of(fake((4, 3), (6, 2)), "A")


def test_element_types():
    assert [element_type(fake((2, 2), (2, 1), d), "A") for d in ("float32", "float16")] == ["f32", "f16"]
    bf16 = SimpleNamespace(dtype=SimpleNamespace(char="E", name="bfloat16"))   # CuPy with ml_dtypes
    assert element_type(bf16, "A") == "bf16"


@pytest.mark.parametrize("dtype", ["float64", "int8", "uint16"])
def test_other_dtypes_are_named_with_the_valid_ones(dtype):
    with pytest.raises(TypeError, match=f"B has dtype {dtype}; gemmgen's A and B are float32, float16 or bfloat16"):
        element_type(fake((2, 2), (2, 1), dtype), "B")


def test_rank_is_named():
    with pytest.raises(ValueError, match="3 dimensions"):
        check_matrix(fake((2, 2, 2), (4, 2, 1)), "A")


def test_overlap_of_byte_ranges():
    a = fake((4, 4), (4, 1), ptr=1000)
    assert overlaps(a, fake((2, 2), (4, 1), ptr=1000 + 4 * 10))
    assert not overlaps(a, fake((2, 2), (4, 1), ptr=1000 + 4 * 16))
