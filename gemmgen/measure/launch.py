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

from ..build.nvrtc import Binary
from ..kernel.config import KernelConfig
from .tensormap import TmaMap, encode

_SMEM_DEFAULT_LIMIT = 48 * 1024


def param_struct(name: str, fields: str) -> type:
    """A ctypes struct of kernel parameters "M:i N:i alpha:f A:p lda:q ..." (int, float, pointer, long long)."""
    kinds = {"i": ctypes.c_int, "f": ctypes.c_float, "p": ctypes.c_void_p, "q": ctypes.c_longlong}
    return type(name, (ctypes.Structure,), {"_fields_": [(f.split(":")[0], kinds[f.split(":")[1]])
                                                         for f in fields.split()]})


# The signatures of templates/common.cuh.j2: the GEMM kernel, and the scale (atomic split-K) and
# reduce (workspace split-K) kernels around it.
_MAIN = param_struct("_Main", "M:i N:i K:i alpha:f A:p lda:i B:p ldb:i beta:f C:p ldc:i W:p")
_SCALE = param_struct("_Scale", "M:i N:i beta:f C:p ldc:i")
_REDUCE = param_struct("_Reduce", "M:i N:i alpha:f beta:f C:p ldc:i W:p")
# The TMA kernels (tma = true) take the tensor maps of A and B after the common parameters.
_MAIN_TMA = type("_MainTma", (ctypes.Structure,), {"_fields_": _MAIN._fields_ + [("tmA", TmaMap), ("tmB", TmaMap)]})


class ParamBuffer:
    """A parameter struct and the void* array cuLaunchKernel reads (one pointer per parameter)."""

    def __init__(self, struct: type):
        self.params = struct()
        base = ctypes.addressof(self.params)
        self.argv = (ctypes.c_void_p * len(struct._fields_))(
            *(base + getattr(struct, name).offset for name, _ in struct._fields_))
        self.argv_ptr = ctypes.addressof(self.argv)


def thread_buffer(local: threading.local, which: str, struct: type) -> ParamBuffer:
    """This thread's parameter buffer ``which`` of ``struct``, kept in ``local`` (made on first use). The
    driver copies the parameters at launch, so a buffer is refilled right after; per thread, concurrent
    callers do not share one."""
    bufs = getattr(local, "bufs", None)
    if bufs is None:
        bufs = local.bufs = {}
    buf = bufs.get(which)
    if buf is None:
        buf = bufs[which] = ParamBuffer(struct)
    return buf


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
        self._atomic, self._workspace = config.split_atomic, config.split_workspace
        self._main = self.main.ptr
        self._scale = self.functions[f"{config.name}_scale"].ptr if config.split_atomic else 0
        self._reduce = self.functions[f"{config.name}_reduce"].ptr if config.split_workspace else 0
        self._block, self._smem, self._grids = config.block(), config.smem_bytes, {}
        self._tma, self._maps = config.tma, {}
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

    def resident_blocks(self) -> int:
        """Blocks of the main kernel an SM holds at once, from the driver's occupancy calculator."""
        from cupy.cuda import driver

        return int(driver.occupancyMaxActiveBlocksPerMultiprocessor(
            self.main.ptr, self.config.threads, self.config.smem_bytes))

    def occupancy(self, max_threads_per_sm: int) -> float:
        """Resident warps per SM over the maximum, from the driver's occupancy calculator."""
        return self.resident_blocks() * self.config.threads / max_threads_per_sm

    def launch(self, ops: Operands, stream=None, workspace: int | None = None) -> None:
        """Enqueue the kernel sequence for one GEMM on ``stream`` (default: the current stream).

        ``workspace``: a device pointer to :meth:`workspace_floats` floats for split-K kernels that
        reduce through a workspace, owned by the caller (PyTorch's allocator, which CUDA graphs
        capture); None allocates it from CuPy's pool.

        Every kernel goes through cuLaunchKernel with a reused parameter buffer: CuPy's generic
        argument packing costs ~20 us per launch, this a few. The driver copies the parameters at
        launch, so a buffer can be refilled right after; buffers are per thread, so concurrent callers
        do not share them.
        """
        import cupy

        stream = stream or cupy.cuda.get_current_stream()
        owned = None
        if self._atomic:   # C = beta * C first; the split-K slices then add alpha * A@B atomically
            p = self._params("scale", _SCALE)
            p.M, p.N, p.beta, p.C, p.ldc = ops.M, ops.N, ops.beta, ops.C, ops.ldc
            self._run(self._scale, self._elementwise_grid(ops.M * ops.N), (256, 1, 1), 0, stream, "scale")
        elif self._workspace and workspace is None:
            with stream:   # from the pool of the stream that uses it, so it is reused only after this work
                owned = cupy.empty(self.workspace_floats(ops.M, ops.N), dtype=cupy.float32)
            workspace = owned.data.ptr
        p = self._params("main", _MAIN_TMA if self._tma else _MAIN)
        if self._tma:
            p.tmA, p.tmB = self._tensor_maps(ops)
        p.M, p.N, p.K, p.alpha, p.A, p.lda = ops.M, ops.N, ops.K, ops.alpha, ops.A, ops.lda
        p.B, p.ldb, p.beta, p.C, p.ldc = ops.B, ops.ldb, ops.beta, ops.C, ops.ldc
        p.W = workspace if self._workspace else 0
        self._run(self._main, self._grid(ops.M, ops.N, ops.K), self._block, self._smem, stream, "main")
        if self._workspace:   # C = alpha * (sum of the slices' partial C) + beta * C
            p = self._params("reduce", _REDUCE)
            p.M, p.N, p.alpha, p.beta, p.C, p.ldc, p.W = ops.M, ops.N, ops.alpha, ops.beta, ops.C, ops.ldc, workspace
            self._run(self._reduce, self._elementwise_grid(ops.M * ops.N), (256, 1, 1), 0, stream, "reduce")
        del owned   # back to the pool: later work on this stream is queued after these kernels

    def _tensor_maps(self, ops: Operands) -> tuple[TmaMap, TmaMap]:
        """The TMA descriptors of A and B for these operands (cached: encoding costs a driver call).
        Each names the operand as stored, rows of k (K-major tiles, boxes of BK x BM or BK x BN)."""
        c = self.config
        key = (ops.A, ops.lda, ops.B, ops.ldb, ops.M, ops.N, ops.K)
        maps = self._maps.get(key)
        if maps is None:
            if len(self._maps) > 64:
                self._maps.clear()
            maps = self._maps[key] = (encode(ops.A, c.tma_type, ops.K, ops.M, ops.lda, c.BK, c.BM),
                                      encode(ops.B, c.tma_type, ops.K, ops.N, ops.ldb, c.BK, c.BN))
        return maps

    def workspace_floats(self, M: int, N: int) -> int:
        """Floats of workspace a launch on an M x N C needs: one partial C per split-K slice, or 0."""
        return self.config.split_k * M * N if self.config.split_workspace else 0

    def _params(self, which: str, struct: type):
        return thread_buffer(self._local, which, struct).params

    def _run(self, function: int, grid: tuple, block: tuple, smem: int, stream, which: str) -> None:
        from cupy.cuda import driver

        driver.launchKernel(function, *grid, *block, smem, stream.ptr, self._local.bufs[which].argv_ptr, 0)

    def _grid(self, M: int, N: int, K: int) -> tuple:
        key = (M, N, K)
        grid = self._grids.get(key)
        if grid is None:
            grid = self._grids[key] = self.config.grid(M, N, K)
        return grid

    @staticmethod
    def _elementwise_grid(count: int) -> tuple:
        return ((count + 255) // 256, 1, 1)
