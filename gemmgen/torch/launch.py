"""One GEMM on PyTorch tensors: C = A @ B into a new float32 tensor, on the current CUDA stream.

What ``gemmgen.matmul`` does, without its CuPy views: the pointers, strides and shapes come from the
tensors themselves, the output is allocated by PyTorch's caching allocator (``torch.empty``), and the
kernel is launched on PyTorch's current stream (its raw handle, through the kernel's prepared launch,
:class:`gemmgen.measure.launch.Launch`). When shapes repeat, a call allocates nothing but the output
(and the workspace of a split-K kernel that reduces through one) and never waits for the GPU, so it can be captured in a CUDA
graph: the kernel of a new request is picked (and compiled, on first use) only outside capture, and a
first call inside capture raises, asking for a warm-up call.

The host work of a call is one dictionary lookup: everything that depends only on the tensors'
shapes, strides, dtypes and devices and on the options (the argument checks, the layouts, the
kernel) is worked out on the first call of a kind and kept as a :class:`Plan`; a call then reads
the three pointers, allocates C and launches.

>>> import torch                                                                    # doctest: +GPU
>>> gemm(torch.rand(64, 32, device="cuda"), torch.rand(32, 16, device="cuda"), None, None).shape  # doctest: +GPU
torch.Size([64, 16])
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from ..runtime.library import Served
from .kernels import deterministic, pick as _kernel
from .tensors import check_matmul, matrix

_PLANS: dict[tuple, "Plan"] = {}     # facts of a request (see _key) -> its plan
MAX_PLANS = 4096                     # then the plans start again (shapes that never repeat)
# PyTorch's own lookup of the current stream's raw handle (what TorchInductor's generated code calls):
# no Python Stream object per call. Builds without CUDA lack it, and get the public route.
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_GET_DEVICE: list = []               # CuPy's cudaGetDevice, looked up once


class Plan(NamedTuple):
    """What every call of one kind needs: C is M x N, row-major; the kernel reads A and B in place
    with leading dimensions lda and ldb, unless ``copy`` (strides no kernel reads: contiguous copies
    first, as torch.mm makes for cuBLAS); ``kernel`` None for an empty product."""

    dev: int
    M: int
    N: int
    K: int
    precision: str           # the precision class, checked
    family: Optional[str]
    lda: int
    ldb: int
    copy: bool
    kernel: Optional[Served]
    aligned: bool            # TMA or fast-path kernel: its base pointers must be 16-byte aligned
    workspace: int           # floats of split-K workspace per call (0: none)


def gemm(a: torch.Tensor, b: torch.Tensor, precision: Optional[str], family: Optional[str],
         shape: Optional[tuple] = None) -> torch.Tensor:
    """a @ b in float32 with gemmgen's kernel for this GPU and precision (None: the inputs' class), as
    a new tensor of ``shape`` (default (M, N); linear's (*, N) holds the same M rows). The arguments
    are checked on the first call of a kind (one-line errors, :mod:`.tensors`)."""
    plan = _PLANS.get(_key(a, b, precision, family)) or plan_for(a, b, precision, family)
    out = torch.empty(shape or (plan.M, plan.N), dtype=torch.float32, device=a.device)
    if plan.kernel is not None:
        _launch(plan, a, b, out)
    elif plan.M and plan.N:   # K == 0: an empty sum
        out.zero_()
    return out


def _key(a: torch.Tensor, b: torch.Tensor, precision: Optional[str], family: Optional[str]) -> tuple:
    return (a.shape, b.shape, a.stride(), b.stride(), a.dtype, b.dtype, a.device, b.device, precision, family,
            deterministic())


def plan_for(a: torch.Tensor, b: torch.Tensor, precision: Optional[str], family: Optional[str]) -> Plan:
    """The plan of a request (checked, then cached), picking its kernel if it is new."""
    key = _key(a, b, precision, family)
    cls = check_matmul(a, b, precision, family)
    dev, (M, K), N = a.device.index, a.shape, b.shape[1]
    if M and N and K:
        (a2, la, lda), (b2, lb, ldb) = matrix(a, "a"), matrix(b, "b")
        with _on(dev):
            kernel = _kernel(dev, M, N, K, la + lb, lda, ldb, cls, family, key[-1])
        plan = Plan(dev, M, N, K, cls, family, lda, ldb, a2 is not a or b2 is not b, kernel,
                    kernel.aligned_pointers, kernel.workspace_floats(M, N))
    else:
        plan = Plan(dev, M, N, K, cls, family, 1, 1, False, None, False, 0)
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _launch(plan: Plan, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """out = a @ b by the plan's kernel, on the current stream of the plan's device."""
    if _current_device() != plan.dev:   # the kernels are loaded into their device's context
        with _on(plan.dev):
            return _launch(plan, a, b, out)
    A, B = a.data_ptr(), b.data_ptr()
    kernel, lda, ldb = plan.kernel, plan.lda, plan.ldb
    if plan.copy or (plan.aligned and (A | B) % 16):
        # Strides no kernel reads (copies), or a kernel that reads A and B from 16-byte aligned base
        # pointers without checking them (TMA, the fast path) on operands that start elsewhere: the
        # kernel the library picks for them as they are.
        (a, la, lda), (b, lb, ldb) = matrix(a, "a"), matrix(b, "b")
        A, B = a.data_ptr(), b.data_ptr()
        kernel = _kernel(plan.dev, plan.M, plan.N, plan.K, la + lb, lda, ldb, plan.precision, plan.family,
                         deterministic(), (A | B) % 16 == 0)
    floats = plan.workspace if kernel is plan.kernel else kernel.workspace_floats(plan.M, plan.N)
    # The split-K workspace from PyTorch's allocator: stream-ordered on the current stream, part of
    # the graph under capture, and alive until the kernels are enqueued.
    workspace = torch.empty(floats, dtype=torch.float32, device=out.device) if floats else None
    kernel.prepared(plan.M, plan.N, plan.K, lda, ldb, plan.N)(
        A, B, out.data_ptr(), 1.0, 0.0, raw_stream(plan.dev), 0 if workspace is None else workspace.data_ptr())


def raw_stream(dev: int) -> int:
    """PyTorch's current stream on device ``dev``: its raw cudaStream_t."""
    return _RAW_STREAM(dev) if _RAW_STREAM is not None else torch.cuda.current_stream(dev).cuda_stream


def _current_device() -> int:
    """The CUDA runtime's current device (CuPy's cudaGetDevice: no Python layers per call)."""
    if not _GET_DEVICE:
        import cupy

        _GET_DEVICE.append(cupy.cuda.runtime.getDevice)
    return _GET_DEVICE[0]()


class _on:
    """Device ``dev`` current inside (a CuPy device context, entered only where it is not)."""

    def __init__(self, dev: int):
        self.dev, self.ctx = dev, None

    def __enter__(self):
        if _current_device() != self.dev:
            import cupy

            self.ctx = cupy.cuda.Device(self.dev)
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


def kernel_for(a: torch.Tensor, b: torch.Tensor, precision: Optional[str] = None,
              family: Optional[str] = None) -> Served:
    """The kernel ``gemmgen.torch.matmul(a, b, ...)`` launches for these tensors (picked now if new),
    under the current deterministic-algorithms setting (:class:`gemmgen.runtime.library.Served`): ``.name``
    says which, ``.family`` its family (a route's: "gemv", "small"), ``.layout`` how a and b were read
    (operands whose strides no kernel reads: their copies); a GEMM kernel's ``.config`` is its KernelConfig.

    >>> kernel_for(torch.rand(256, 64, device="cuda"), torch.rand(32, 64, device="cuda").t()).layout  # doctest: +GPU
    'NT'
    """
    plan = _PLANS.get(_key(a, b, precision, family)) or plan_for(a, b, precision, family)
    if plan.kernel is None:
        raise ValueError(f"a is {plan.M}x{plan.K} and b {plan.K}x{plan.N}: an empty product launches no kernel")
    return plan.kernel
