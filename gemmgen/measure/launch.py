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
from .pdl import Dependent, supported
from .splitflags import flags_for, words
from .tensormap import TmaMap, encode

_SMEM_DEFAULT_LIMIT = 48 * 1024
MAX_PREPARED = 4096   # prepared launches kept per kernel and thread; then they start again


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
# The TMA kernels (mainloop = ws_tma) take the tensor maps of A and B after the common parameters.
_MAIN_TMA = type("_MainTma", (ctypes.Structure,), {"_fields_": _MAIN._fields_ + [("tmA", TmaMap), ("tmB", TmaMap)]})


class ParamBuffer:
    """A parameter struct and the void* array cuLaunchKernel reads (one pointer per parameter)."""

    def __init__(self, struct: type):
        self.params = struct()
        base = ctypes.addressof(self.params)
        self.argv = (ctypes.c_void_p * len(struct._fields_))(
            *(base + getattr(struct, name).offset for name, _ in struct._fields_))
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
    """A compiled config loaded into the current CUDA context.

    Hopper GEMM kernels (the wgmma mainloops) begin with griddepcontrol.wait, so they may be launched as the
    programmatic dependent (.pdl) of the kernel ahead of them: their blocks are placed and set up while it
    finishes instead of after. ``after_copies``: so behind matmul's operand copies (runtime.calls.Prepared);
    ``after_scale``: behind an atomic split's scale kernel (the library passes its Policy's
    ``early_after_copies`` and ``early_after_scale``; an A/B passes either off)."""

    def __init__(self, config: KernelConfig, binary: Binary, planted: bool = False, after_copies: bool = True,
                 after_scale: bool = True):
        import cupy

        self.config = config
        self.binary = binary
        self.module = cupy.cuda.function.Module()
        self.module.load(binary.cubin)
        self.functions = {n: self.module.get_function(n) for n in binary.kernel_names}
        self.main = self.functions[config.name]
        self._workspace = config.split_workspace
        self._main = self.main.ptr
        self._scale = self.functions[f"{config.name}_scale"].ptr if config.split_atomic else 0
        # an atomic split of the warp-specialized kernels given split flags runs alone, slice 0 clearing C
        # (.splitflags); a planted source (``planted``) may not
        self.fused = config.split_flags and not planted
        self.device = cupy.cuda.runtime.getDevice()
        # SMs, for the one-wave rule (cudaDevAttrMultiProcessorCount = 16): one query, and only where it counts
        self.sm_count = cupy.cuda.runtime.deviceGetAttribute(16, self.device) if self.fused else 0
        self._reduce = self.functions[f"{config.name}_reduce"].ptr if config.split_workspace else 0
        self._maps = {}
        self._local = threading.local()
        # the workspace reduce as the main kernel's programmatic dependent (Hopper, see .pdl)
        self.dependent = config.split_workspace and supported(binary.arch)
        # the main kernel waits for the grid ahead of it (templates/common.cuh.j2 wait_for_inputs); a
        # planted source (``planted``: not the template's) may not, so it never starts early
        self.waits = not planted and config.uses_wgmma and supported(binary.arch)
        self.after_copies, self.after_scale = after_copies, after_scale
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

        The launches are :meth:`prepared` once per sizes and thread (a :class:`Launch`): CuPy's generic
        argument packing costs ~20 us per launch, a prepared launch a few.
        """
        import cupy

        stream = stream or cupy.cuda.get_current_stream()
        owned = None
        if self._workspace and workspace is None:
            with stream:   # from the pool of the stream that uses it, so it is reused only after this work
                owned = cupy.empty(self.workspace_floats(ops.M, ops.N), dtype=cupy.float32)
            workspace = owned.data.ptr
        self.prepared(ops.M, ops.N, ops.K, ops.lda, ops.ldb, ops.ldc)(
            ops.A, ops.B, ops.C, ops.alpha, ops.beta, stream.ptr, workspace or 0)
        del owned   # back to the pool: later work on this stream is queued after these kernels

    def prepared(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int) -> "Launch":
        """This thread's :class:`Launch` of these sizes (made on first use; per thread, because a launch
        owns its parameter buffers)."""
        key = (M, N, K, lda, ldb, ldc)
        return per_thread(self._local, key, Launch, self, *key)

    def tensor_maps(self, A: int, lda: int, B: int, ldb: int, M: int, N: int, K: int) -> tuple[TmaMap, TmaMap]:
        """The TMA descriptors of A and B for these operands (cached: encoding costs a driver call).
        Each names the operand as stored, rows of k (K-major tiles, boxes of BK x BM or BK x BN)."""
        c = self.config
        key = (A, lda, B, ldb, M, N, K)
        maps = self._maps.get(key)
        if maps is None:
            if len(self._maps) > 64:
                self._maps.clear()
            maps = self._maps[key] = (encode(A, c.tma_type, K, M, lda, c.BK, c.BM),
                                      encode(B, c.tma_type, K, N, ldb, c.BK, c.BN))
        return maps

    def workspace_floats(self, M: int, N: int) -> int:
        """Floats of workspace a launch on an M x N C needs: one partial C per split-K slice, or 0."""
        return self.config.split_k * M * N if self.config.split_workspace else 0


class Launch:
    """One GEMM's kernel sequence on fixed sizes (M, N, K, leading dimensions), prepared once: its
    parameter buffers hold everything but the pointers and the scalars, and a call fills those and
    enqueues each kernel with one cuLaunchKernel. The driver copies the parameters at launch, so a
    buffer is refilled right after; a Launch is used by one thread (:meth:`LoadedKernel.prepared`).

    The sequence follows KernelConfig.kernel_names: an atomic split-K kernel is preceded by the scale
    kernel (C = beta * C, the slices then add alpha * A@B), unless it clears C itself in one wave of
    blocks and its stream has split flags to give (``flag_words``, :mod:`.splitflags`); a workspace one is
    followed by the reduce kernel (C = alpha * sum of the slices + beta * C). TMA kernels take the tensor
    maps of A and B, encoded again only when the pointers change (and cached by address in the kernel).
    """

    __slots__ = ("kernel", "M", "N", "K", "lda", "ldb", "main", "scale", "reduce", "grid", "block", "smem",
                 "egrid", "fn", "fn_scale", "fn_reduce", "tensor_maps", "_last", "reduce_after", "main_after", "flag_words",
                 "after_copies", "after_scale")

    def __init__(self, kernel: LoadedKernel, M: int, N: int, K: int, lda: int, ldb: int, ldc: int):
        c = kernel.config
        self.kernel, self.M, self.N, self.K, self.lda, self.ldb = kernel, M, N, K, lda, ldb
        self.tensor_maps = c.tensor_maps
        self.main = ParamBuffer(_MAIN_TMA if c.tensor_maps else _MAIN)
        p = self.main.params
        p.M, p.N, p.K, p.lda, p.ldb, p.ldc = M, N, K, lda, ldb, ldc
        self.grid, self.block, self.smem = c.grid(M, N, K), c.block(), c.smem_bytes
        self.egrid = ((M * N + 255) // 256, 1, 1)   # the scale and reduce kernels: one thread an element
        self.fn, self.fn_scale, self.fn_reduce = kernel._main, kernel._scale, kernel._reduce
        self.scale = self.reduce = None
        self.flag_words = words(self.grid[0]) if kernel.fused and c.split_one_launch(M, N, kernel.sm_count) else 0
        if c.split_atomic:
            self.scale = ParamBuffer(_SCALE)
            q = self.scale.params
            q.M, q.N, q.ldc = M, N, ldc
        if c.split_workspace:
            self.reduce = ParamBuffer(_REDUCE)
            q = self.reduce.params
            q.M, q.N, q.ldc = M, N, ldc
        self._last = None   # the (A, B) whose tensor maps the main buffer holds
        # the reduce kernel starts early, waiting in the kernel for the slices' partials (.pdl)
        self.reduce_after = Dependent(self.egrid, (256, 1, 1), 0) if kernel.dependent and self.reduce is not None else None
        # the main kernel starts early behind the copies or the scale, waiting in the kernel for them
        self.main_after = Dependent(self.grid, self.block, self.smem) if kernel.waits else None
        self.after_copies, self.after_scale = kernel.after_copies, kernel.after_scale

    def __call__(self, A: int, B: int, C: int, alpha: float, beta: float, stream: int, workspace: int = 0,
                 behind: bool = False) -> None:
        """Enqueue C = alpha * A@B + beta * C on the raw stream ``stream``; ``workspace``: a pointer to
        the split-K workspace (:meth:`LoadedKernel.workspace_floats`) where the kernel reduces through one;
        ``behind``: the kernel just enqueued on the stream wrote A or B (matmul's copies), so a kernel that
        waits for it in the kernel may start early."""
        launch = launch_kernel
        p = self.main.params
        scaled = False
        if self.scale is not None:   # atomic split-K: one launch with split flags, else the scale kernel first
            p.W = flags_for(self.kernel.device, stream, self.flag_words) if self.flag_words else 0
            if not p.W:
                q = self.scale.params
                q.beta, q.C = beta, C
                launch(self.fn_scale, *self.egrid, 256, 1, 1, 0, stream, self.scale.argv_ptr, 0)
                scaled = True
        if self.tensor_maps and self._last != (A, B):
            p.tmA, p.tmB = self.kernel.tensor_maps(A, self.lda, B, self.ldb, self.M, self.N, self.K)
            self._last = (A, B)
        p.A, p.B, p.C, p.alpha, p.beta = A, B, C, alpha, beta
        if self.reduce is not None:   # the slices' partials go to the workspace
            p.W = workspace
        early = (self.main_after is not None and ((behind and self.after_copies) or (scaled and self.after_scale))
                 and self.main_after(self.fn, stream, self.main.argv_ptr))   # False where the driver refused
        if not early:
            launch(self.fn, *self.grid, *self.block, self.smem, stream, self.main.argv_ptr, 0)
        if self.reduce is not None:
            q = self.reduce.params
            q.alpha, q.beta, q.C, q.W = alpha, beta, C, workspace
            if self.reduce_after is None or not self.reduce_after(self.fn_reduce, stream, self.reduce.argv_ptr):
                launch(self.fn_reduce, *self.egrid, 256, 1, 1, 0, stream, self.reduce.argv_ptr, 0)


def per_thread(local, key, make, *args):
    """``make(*args)`` kept for ``key`` in this thread's dict on ``local`` (a threading.local), made on first
    use; the dict is emptied once it holds MAX_PREPARED. A launch owns its parameter buffers, so each thread
    prepares its own (:meth:`LoadedKernel.prepared`, the hand-written routes' kernels)."""
    launches = getattr(local, "launches", None)
    if launches is None:
        launches = local.launches = {}
    found = launches.get(key)
    if found is None:
        if len(launches) >= MAX_PREPARED:
            launches.clear()
        found = launches[key] = make(*args)
    return found


def launch_kernel(*args) -> None:
    """cuLaunchKernel through CuPy's driver module (bound on first use: CuPy is imported lazily)."""
    global launch_kernel
    from cupy.cuda import driver

    launch_kernel = driver.launchKernel
    driver.launchKernel(*args)
