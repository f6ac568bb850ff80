"""gemmgen's Python entry points: ``matmul`` and ``load``.

>>> import cupy, gemmgen                                     # doctest: +GPU
>>> A = cupy.random.rand(1000, 700, dtype=cupy.float32)
>>> B = cupy.random.rand(700, 300, dtype=cupy.float32)
>>> C = gemmgen.matmul(A, B)                                 # C = A @ B with the tuned kernel
>>> C = gemmgen.matmul(A, B.T.copy().T, out=C, alpha=2.0, beta=1.0)   # C = 2 A@B + C, B column-major
>>> C = gemmgen.matmul(A, B, precision="tf32")              # TF32 tensor cores, ~3e-4 relative error
>>> C = gemmgen.matmul(A.astype(cupy.float16), B.astype(cupy.float16))   # half inputs, float32 C
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Optional

from .launch import Operands
from .library import DTYPE_NAMES, KernelLibrary, resolve_precision
from .operands import as_output, check_matrix, layout_of, operand, overlaps

_LIBRARIES: dict[tuple, KernelLibrary] = {}
_LOCK = threading.Lock()


def load(gpu: str = "auto", results: Optional[str] = None, device_id: Optional[int] = None,
         strict: bool = False) -> KernelLibrary:
    """The tuned kernels for a GPU: the shipped results plus the user's (or ``results``).

    ``gpu="auto"`` uses the current CUDA device; a name ("h100") must match it.

    >>> import gemmgen
    >>> lib = gemmgen.load()                                  # doctest: +GPU
    >>> lib.kernel_for(4096, 4096, 4096, "NN").config.name.startswith("gg_")    # doctest: +GPU
    True
    """
    from .devices import detect, fingerprint, require_gpu, resolve_alias
    from .lookup import load_device

    require_gpu(device_id or 0)   # CuPy, the driver and a GPU, or one line saying what is missing
    import cupy

    dev = cupy.cuda.Device().id if device_id is None else device_id
    spec = detect(dev)
    if gpu != "auto" and resolve_alias(gpu) != spec.key:
        raise ValueError(f"gpu={gpu!r} does not match this device, {spec.name!r}; use gpu='auto'")
    entries = load_device(fingerprint(dev), results).entries
    return KernelLibrary(spec, entries, dev, strict)


def _library(device_id: int, strict: bool) -> KernelLibrary:
    key = (device_id, strict)
    lib = _LIBRARIES.get(key)   # lock-free fast path once loaded
    if lib is None:
        with _LOCK:
            lib = _LIBRARIES.get(key) or _LIBRARIES.setdefault(key, load(device_id=device_id, strict=strict))
    return lib


def matmul(A: Any, B: Any, out: Any = None, *, precision: Optional[str] = None, alpha: float = 1.0,
           beta: float = 0.0, stream: Any = None, strict: bool = False) -> Any:
    """C = alpha * A @ B + beta * C for CUDA matrices, with the kernel tuned for this GPU.

    A and B are both float32, both float16 or both bfloat16; C is float32. ``precision`` picks the
    accuracy class: for float32 inputs "fp32" (default: the fastest fp32-accurate kernel, SIMT or
    3xTF32 tensor cores) or "tf32" (TF32 tensor cores, ~1e-3 relative error); float16/bfloat16
    inputs take "f16"/"bf16" (default: their own), exact products with fp32 accumulation. A
    precision that is not one of these, or does not fit the inputs, raises ValueError.

    A and B may be C-contiguous, Fortran-contiguous or transposed views (mapped to the NN/NT/TN/TT
    kernels without copies); ``out`` must have contiguous rows. Inputs may be CuPy arrays or anything
    with ``__cuda_array_interface__`` or DLPack (PyTorch CUDA tensors); when ``out`` is None a new
    CuPy array is returned (``out`` itself otherwise, written in place). Nothing is copied; strides
    that no kernel can read raise ValueError. ``stream``: a CuPy stream (default: the current one).

    >>> import cupy, gemmgen                                                 # doctest: +GPU
    >>> C = gemmgen.matmul(cupy.ones((64, 32), cupy.float32), cupy.ones((32, 16), cupy.float32))  # doctest: +GPU
    >>> float(C[0, 0]), C.shape                                              # doctest: +GPU
    (32.0, (64, 16))
    """
    try:
        import cupy
    except ImportError:
        from .devices import require_gpu
        require_gpu()   # raises NoGpu: what to install
        raise

    (a, ta), (b, tb) = operand(A, "A"), operand(B, "B")
    check_matrix(a, "A")
    check_matrix(b, "B")
    if ta != tb:
        raise ValueError(f"A is {DTYPE_NAMES[ta]} and B is {DTYPE_NAMES[tb]}; A and B must have one dtype "
                         "(convert one, e.g. B.astype(A.dtype))")
    cls = resolve_precision(precision, ta)
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    if a.device.id != b.device.id:
        raise ValueError(f"A is on GPU {a.device.id} and B on GPU {b.device.id}; put them on one device")
    c = _output(out, a, b, M, N, beta)
    if M == 0 or N == 0:
        return out if out is not None else c
    if K == 0:
        c *= beta
        return out if out is not None else c
    (la, lda), (lb, ldb) = layout_of(a, "A"), layout_of(b, "B")
    dev, ldc = a.device.id, c.strides[0] // 4
    ops = Operands(M, N, K, a.data.ptr, lda, b.data.ptr, ldb, c.data.ptr, ldc, float(alpha), float(beta))
    # the common case needs no device switch, which would cost a few microseconds per call
    with contextlib.nullcontext() if cupy.cuda.runtime.getDevice() == dev else cupy.cuda.Device(dev):
        _library(dev, strict).kernel_for(M, N, K, la + lb, lda, ldb, ldc, cls)(ops, stream)
    return out if out is not None else c


def _output(out, a, b, M: int, N: int, beta: float):
    import cupy

    if out is None:
        if beta != 0:
            raise ValueError(f"beta={beta} reads C, but out is None; pass out= holding C")
        return cupy.empty((M, N), dtype=cupy.float32)
    c = as_output(out)
    if tuple(c.shape) != (M, N):
        raise ValueError(f"out has shape {tuple(c.shape)}; A @ B is {M}x{N}")
    if c.strides[1] != 4 or c.strides[0] < 4 * N:
        raise ValueError(f"out has strides {tuple(c.strides)} bytes; its rows must be contiguous (row-major)")
    if c.device.id != a.device.id:
        raise ValueError(f"out is on GPU {c.device.id}, A on GPU {a.device.id}")
    for name, x in (("A", a), ("B", b)):
        if overlaps(c, x):
            raise ValueError(f"out overlaps {name} in memory; the kernel would read what it writes")
    return c


def bench(configs=None, shapes=("4096x4096x4096",), layout: str = "NN", device_id: int = 0,
          progress=None, rep_ms: float = 100.0):
    """Time configs (default: presets v0..v13) against cuBLAS on this GPU, each in an isolated worker.

    Returns benchmark rows (see gemmgen.benchmark): print ``gemmgen.benchmark.table(rows)``.

    >>> import gemmgen
    >>> rows = gemmgen.bench([gemmgen.preset("v10")], ["2048x2048x2048"])   # doctest: +GPU
    >>> len(rows), rows[0].measurement is not None                          # doctest: +GPU
    (1, True)
    """
    from .benchmark import run
    from .outcome import Shape
    from .presets import all_presets
    from .worker import Worker

    shapes = [s if isinstance(s, Shape) else Shape.parse(s, layout) for s in shapes]
    with Worker(device_id) as worker:
        worker.call("ping")
        configs = configs if configs is not None else all_presets(worker.spec.arch)
        measure = lambda cfg, shape: worker.call("measure", cfg, shape, rep_ms=rep_ms)
        return run(configs, shapes, measure, progress)
