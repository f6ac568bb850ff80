"""Binary -> a callable kernel on the GPU: grid, block and shared memory from the config and the shape.

Operands are passed as device pointers with leading dimensions, so row- and column-major
operands and padded rows need no copies. The launch sequence follows KernelConfig.kernel_names
(codegen.facts.launch_lines says it in the header): split-K kernels add a scale (atomic) or reduce
(workspace) kernel.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import numpy as np

from ..build.nvrtc import Binary
from ..kernel.config import KernelConfig

_SMEM_DEFAULT_LIMIT = 48 * 1024


class _Params(ctypes.Structure):
    """The kernel signature's parameters, laid out as the ABI passes them one by one."""

    _fields_ = [("M", ctypes.c_int), ("N", ctypes.c_int), ("K", ctypes.c_int), ("alpha", ctypes.c_float),
                ("A", ctypes.c_void_p), ("lda", ctypes.c_int), ("B", ctypes.c_void_p), ("ldb", ctypes.c_int),
                ("beta", ctypes.c_float), ("C", ctypes.c_void_p), ("ldc", ctypes.c_int), ("W", ctypes.c_void_p)]


class _ParamBuffer:
    """A _Params and the void* array cuLaunchKernel reads (one pointer per parameter)."""

    def __init__(self):
        self.params = _Params()
        base = ctypes.addressof(self.params)
        self.argv = (ctypes.c_void_p * len(_Params._fields_))(
            *(base + getattr(_Params, name).offset for name, _ in _Params._fields_))
        self.argv_ptr = ctypes.addressof(self.argv)


@dataclass(frozen=True)
class Operands:
    """Device pointers and leading dimensions of one GEMM call (C row-major): what a kernel launch
    reads. (Turning user arrays into such pointers is gemmgen.runtime.arrays.)"""

    M: int
    N: int
    K: int
    A: int
    lda: int
    B: int
    ldb: int
    C: int
    ldc: int
    alpha: float = 1.0
    beta: float = 0.0


class LoadedKernel:
    """A compiled config loaded into the current CUDA context."""

    def __init__(self, config: KernelConfig, binary: Binary):
        import cupy

        self.config = config
        self.binary = binary
        self.module = cupy.cuda.function.Module()
        self.module.load(binary.cubin)
        self.functions = {n: self.module.get_function(n) for n in binary.kernel_names}
        self.main = self.functions[config.name]
        self._block, self._smem, self._grids = config.block(), config.smem_bytes, {}
        self._local = threading.local()
        if config.smem_bytes > _SMEM_DEFAULT_LIMIT:
            # Above 48 KB a block must opt in to the larger dynamic shared-memory carve-out
            # (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8).
            from cupy.cuda import driver

            driver.funcSetAttribute(self.main.ptr, 8, config.smem_bytes)

    def _attribute(self, attribute: int) -> int:
        from cupy.cuda import driver

        return int(driver.funcGetAttribute(attribute, self.main.ptr))

    @property
    def registers(self) -> int:
        """Registers per thread (CU_FUNC_ATTRIBUTE_NUM_REGS)."""
        return self._attribute(4)

    @property
    def local_bytes(self) -> int:
        """Local memory per thread: non-zero means spills or a stack array (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)."""
        return self._attribute(3)

    def occupancy(self, max_threads_per_sm: int) -> float:
        """Resident warps per SM over the maximum, from the driver's occupancy calculator."""
        from cupy.cuda import driver

        blocks = driver.occupancyMaxActiveBlocksPerMultiprocessor(
            self.main.ptr, self.config.threads, self.config.smem_bytes)
        return blocks * self.config.threads / max_threads_per_sm

    def launch(self, ops: Operands, stream=None, workspace: int | None = None) -> None:
        """Enqueue the kernel sequence for one GEMM on ``stream`` (default: the current stream).

        ``workspace``: a device pointer to :meth:`workspace_floats` floats for split-K kernels that
        reduce through a workspace, owned by the caller (PyTorch's allocator, which CUDA graphs
        capture); None allocates it from CuPy's pool.
        """
        import cupy

        c = self.config
        stream = stream or cupy.cuda.get_current_stream()
        i32, f32, ptr = np.int32, np.float32, np.uint64
        if c.split_k == 1:   # hot path: one launch, no workspace, parameters packed by ctypes
            self._fast_launch(ops, stream)
            return
        if c.split_atomic:
            self._elementwise(f"{c.name}_scale", ops.M * ops.N, stream,
                              (i32(ops.M), i32(ops.N), f32(ops.beta), ptr(ops.C), i32(ops.ldc)))
        elif c.split_workspace and workspace is None:
            owned = cupy.empty(self.workspace_floats(ops.M, ops.N), dtype=cupy.float32)
            workspace = owned.data.ptr
        args = (i32(ops.M), i32(ops.N), i32(ops.K), f32(ops.alpha), ptr(ops.A), i32(ops.lda), ptr(ops.B),
                i32(ops.ldb), f32(ops.beta), ptr(ops.C), i32(ops.ldc),
                ptr(workspace if c.split_workspace else 0))
        self.main(c.grid(ops.M, ops.N, ops.K), c.block(), args, shared_mem=c.smem_bytes, stream=stream)
        if c.split_workspace:
            self._elementwise(f"{c.name}_reduce", ops.M * ops.N, stream,
                              (i32(ops.M), i32(ops.N), f32(ops.alpha), f32(ops.beta), ptr(ops.C), i32(ops.ldc),
                               ptr(workspace)))

    def workspace_floats(self, M: int, N: int) -> int:
        """Floats of workspace a launch on an M x N C needs: one partial C per split-K slice, or 0."""
        return self.config.split_k * M * N if self.config.split_workspace else 0

    def _fast_launch(self, ops: Operands, stream) -> None:
        """cuLaunchKernel with a reused parameter buffer: CuPy's generic argument packing costs
        ~20 us per call, this a few. The driver copies the parameters at launch, so the buffer
        can be refilled right after; it is per thread, so concurrent callers do not share it."""
        from cupy.cuda import driver

        buf = getattr(self._local, "buf", None)
        if buf is None:
            buf = self._local.buf = _ParamBuffer()
        p = buf.params
        p.M, p.N, p.K, p.alpha, p.A, p.lda = ops.M, ops.N, ops.K, ops.alpha, ops.A, ops.lda
        p.B, p.ldb, p.beta, p.C, p.ldc, p.W = ops.B, ops.ldb, ops.beta, ops.C, ops.ldc, 0
        gx, gy, gz = self._grid(ops.M, ops.N, ops.K)
        bx, by, bz = self._block
        driver.launchKernel(self.main.ptr, gx, gy, gz, bx, by, bz, self._smem, stream.ptr, buf.argv_ptr, 0)

    def _grid(self, M: int, N: int, K: int) -> tuple:
        key = (M, N, K)
        grid = self._grids.get(key)
        if grid is None:
            grid = self._grids[key] = self.config.grid(M, N, K)
        return grid

    def _elementwise(self, name: str, count: int, stream, args) -> None:
        self.functions[name](((count + 255) // 256,), (256,), args, stream=stream)
