"""What the hand-written kernels of templates/ (gemv.cu, small.cu: fixed CUDA, no Jinja, no tuning) share: their
modules compiled once per device, one request's route kernel as the library hands it out, and a reduce
kernel launched behind the main one.

A route module (:mod:`.gemv`, :mod:`.small`) subclasses :class:`RouteKernel` with the launch of one request
(``_launch(lda, ldb, ldc)``); the library hands the kernel out where it would hand out a GEMM kernel, and
callers read of either only what :class:`.library.Served` names (``name``, ``family``, ``precision``,
``layout``, ``aligned_pointers``, ``prepared``, ``workspace_floats``, callable with Operands): a route
kernel has no KernelConfig.
"""
from __future__ import annotations

import threading

from ..base.paths import data_dir
from ..measure import launch as _launch
from ..measure.launch import LoadedKernel, ParamBuffer, per_thread
from ..measure.pdl import Dependent, supported

HANDWRITTEN = ("gemv", "small")   # the route kernels' families: no tuned variants, no opt-in autotuning
THREADS = 256                     # every kernel of gemv.cu and small.cu is a block of 256 threads (__launch_bounds__(256))
_MODULES: dict[tuple[int, str], object] = {}   # (device, template file): compiled once (its functions are cached)
_FUNCTIONS: dict[tuple[int, str, str], int] = {}
_LOCK = threading.Lock()


def source(file: str) -> str:
    """The CUDA text of templates/``file``."""
    return (data_dir("templates") / file).read_text()


def function(file: str, name: str) -> int:
    """The CUfunction of kernel ``name`` of templates/``file`` on the current device (compiled once per device)."""
    import cupy

    device = cupy.cuda.runtime.getDevice()
    key = (device, file, name)
    ptr = _FUNCTIONS.get(key)
    if ptr is None:
        with _LOCK:   # one module per device and file, however many threads make their first call at once
            if (device, file) not in _MODULES:
                _MODULES[device, file] = cupy.RawModule(code=source(file), options=("-std=c++17",))
            ptr = _FUNCTIONS[key] = _MODULES[device, file].get_function(name).kernel.ptr
    return ptr


def pdl() -> bool:
    """Whether the current device launches a reduce as a programmatic dependent (sm_90+, a driver with it;
    CuPy compiles the files for the device's own arch, so griddepcontrol.wait is in the reduce there)."""
    import cupy

    return supported("sm_" + cupy.cuda.Device().compute_capability)   # "90" -> sm_90


class Behind:
    """A kernel launched behind the one ahead of it on the stream: as its programmatic dependent where the
    device has them (placed while the kernel ahead finishes; it waits in the kernel), one after the other
    where not, or once the driver has refused the attribute (a capture it cannot record, say)."""

    __slots__ = ("fn", "grid", "params", "dependent")

    def __init__(self, fn: int, grid: tuple[int, int, int], struct: type):
        self.fn, self.grid, self.params = fn, grid, ParamBuffer(struct)
        self.dependent = Dependent(grid, (THREADS, 1, 1), 0) if pdl() else None

    def __call__(self, stream: int) -> None:
        if self.dependent is None or not self.dependent(self.fn, stream, self.params.argv_ptr):
            _launch.launch_kernel(self.fn, *self.grid, THREADS, 1, 1, 0, stream, self.params.argv_ptr, 0)


class RouteKernel:
    """One request's hand-written kernel, as the library hands it out (:class:`.library.Served`): ``name``
    (the kernel's, ``_k<slices>`` where K is split), ``family`` (the route: "gemv" or "small"), ``precision``
    ("fp32": plain FP32 products and sums), ``layout`` (the request's: a route reads its operands where they
    lie, never copied), ``aligned_pointers`` (False: the kernels read 4-byte aligned operands anywhere),
    ``slices`` and ``source`` (the CUDA text); ``prepared`` and ``workspace_floats`` as a GEMM kernel's, and
    callable with Operands. It serves one request's sizes only. Subclasses set ``family`` and ``source``,
    call ``_named(kernel, slices, workspace)`` and give ``_launch(lda, ldb, ldc)``: the request's prepared launch."""

    family: str
    source: str
    precision = "fp32"
    aligned_pointers = False

    def __init__(self, M: int, N: int, K: int, layout: str, sm_count: int):
        self.shape, self.layout, self.sm_count = (M, N, K, layout), layout, sm_count
        self._local = threading.local()

    def _named(self, kernel: str, slices: int, workspace: int) -> None:
        """The name of the request's kernel split into ``slices`` K slices, reduced through ``workspace`` floats."""
        self.name, self.slices = kernel + (f"_k{slices}" if slices > 1 else ""), slices
        self.workspace = workspace if slices > 1 else 0

    def __repr__(self) -> str:
        M, N, K, layout = self.shape
        return f"<{self.family} route {self.name} for {M}x{N}x{K}/{layout}>"

    __call__ = LoadedKernel.launch   # (ops, stream=None, workspace=None): the workspace from CuPy's pool if none

    @property
    def _workspace(self) -> bool:
        return self.workspace > 0

    def workspace_floats(self, M: int, N: int) -> int:
        return self.workspace

    def prepared(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int):
        """This thread's launch for these leading dimensions (the sizes are the kernel's own)."""
        if (M, N, K) != self.shape[:3]:
            raise ValueError(f"{self.name} serves {self.shape[0]}x{self.shape[1]}x{self.shape[2]}, not {M}x{N}x{K}")
        return per_thread(self._local, (lda, ldb, ldc), self._launch, lda, ldb, ldc)
