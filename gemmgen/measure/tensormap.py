"""TMA descriptors (CUtensorMap) for the warp-specialized wgmma kernels, from the CUDA driver.

``cuTensorMapEncodeTiled`` is called through ctypes on libcuda, the driver every CUDA process has
loaded already (CuPy's driver module does not wrap it). A descriptor names a 2-D row-major matrix in
global memory (``outer`` rows of ``inner`` elements, ``ld`` elements apart) and the box one TMA copy
moves into shared memory, here with the 128-byte swizzle wgmma reads. Elements outside the matrix
read as zero, so edge tiles need no checks in the kernel.

>>> encode_args(0x1000, "f16", inner=100, outer=30, ld=104, box_inner=64, box_outer=128)[1:5]
(2, 4096, [100, 30], [208])
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

# CU_TENSOR_MAP_DATA_TYPE_FLOAT16 / FLOAT32 / BFLOAT16 / TFLOAT32 (fp32 in memory, rounded to TF32 by
# the copy engine on its way into shared memory)
DATA_TYPES = {"f16": 6, "f32": 7, "bf16": 9, "tf32": 11}
ELEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "tf32": 4}
SWIZZLE_128B = 3
L2_PROMOTION_256B = 3
TMA_MAP_BYTES = 128


class TmaMap(ctypes.Structure):
    """cuda.h's CUtensorMap: 128 opaque bytes, 64-byte aligned, passed to the kernel by value."""

    _fields_ = [("bits", ctypes.c_uint64 * 16)]


def encode_args(ptr: int, dtype: str, inner: int, outer: int, ld: int, box_inner: int, box_outer: int):
    """The arguments of cuTensorMapEncodeTiled after the output map, as plain values (tested on CPU):
    data type, rank, address, dims (inner first), the outer stride in bytes; raises ValueError for a
    matrix TMA cannot address (16-byte aligned address and rows)."""
    eb = ELEM_BYTES[dtype]
    if ptr % 16:
        raise ValueError(f"TMA needs a 16-byte aligned matrix; this one starts at address {ptr:#x}")
    if (ld * eb) % 16:
        raise ValueError(f"TMA needs rows 16 bytes apart: leading dimension {ld} x {eb} bytes is not a multiple of 16")
    return (DATA_TYPES[dtype], 2, ptr, [inner, outer], [ld * eb], [box_inner, box_outer])


@lru_cache(maxsize=1)
def _encode_fn():
    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(TmaMap), ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                   ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return fn


def encode(ptr: int, dtype: str, inner: int, outer: int, ld: int, box_inner: int, box_outer: int) -> TmaMap:
    """A CUtensorMap of the row-major matrix at ``ptr`` (``outer`` rows of ``inner`` elements of
    ``dtype``, rows ``ld`` elements apart), boxes of ``box_outer`` x ``box_inner``, 128-byte swizzle."""
    kind, rank, address, dims, strides, box = encode_args(ptr, dtype, inner, outer, ld, box_inner, box_outer)
    out = TmaMap()
    err = _encode_fn()(ctypes.byref(out), kind, rank, address, (ctypes.c_uint64 * 2)(*dims),
                       (ctypes.c_uint64 * 1)(*strides), (ctypes.c_uint32 * 2)(*box), (ctypes.c_uint32 * 2)(1, 1),
                       0, SWIZZLE_128B, L2_PROMOTION_256B, 0)
    if err:
        raise ValueError(f"cuTensorMapEncodeTiled failed with CUresult {err} for a {outer}x{inner} {dtype} "
                         f"matrix (ld {ld}) and a {box_outer}x{box_inner} box")
    return out
