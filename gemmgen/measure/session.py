"""In-process measuring on one GPU: validate, load, gate, then time against cuBLAS in the same run.

This runs inside a worker process (see measure/worker.py), which owns the CUDA context: a kernel that
crashes poisons only that context. A config is validated here against the GPU it runs on, unless
the caller says it did that already (a search validates each trial once, before compiling it).
"""
from __future__ import annotations

import os
from typing import Sequence

from ..base.devices import detect
from ..base.outcome import Measurement, Rejected
from ..base.shape import Shape
from ..build.nvrtc import compile_source
from ..codegen.render import KernelSource, render_validated
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from .gate import check, mode_of
from .launch import LoadedKernel
from .nvml import sm_clock_mhz
from .problem import MODE_DTYPE, Problem
from .timing import L2Flusher, Timing, bench_interleaved


class Session:
    """Caches loaded kernels and problems on one device."""

    def __init__(self, device_id: int = 0):
        os.environ.setdefault("CUPY_TF32", "0")   # keep CuPy's own matmul strict fp32 too
        import cupy

        cupy.cuda.Device(device_id).use()
        self.device_id = device_id
        self.spec = detect(device_id)
        self.pci = cupy.cuda.runtime.deviceGetPCIBusId(device_id)
        self.flush = L2Flusher(self.spec.l2_bytes)
        self._kernels: dict[str, LoadedKernel] = {}
        self._problems: dict[tuple, object] = {}

    def ping(self) -> str:
        """Answer 'pong' (a worker's first call starts it and fills ``MeasureWorker.spec``)."""
        return "pong"

    def kernel(self, config: KernelConfig, code: str | None = None, validated: bool = False) -> LoadedKernel:
        """Validate (unless ``validated``: the caller checked it against this GPU), render, compile
        (disk-cached) and load a config; ``code`` replaces the rendered source (tests plant broken
        kernels this way)."""
        key = config.name if code is None else f"{config.name}/{hash(code)}"
        if key not in self._kernels:
            bad = [] if validated else explain(config, self.spec)
            if bad:
                raise Rejected("; ".join(map(str, bad)))
            src = render_validated(config, self.spec.arch) if code is None else KernelSource(config, code)
            self._kernels[key] = LoadedKernel(config, compile_source(src, self.spec.arch), planted=code is not None)
        return self._kernels[key]

    def problem(self, shape: Shape, seed: int = 0, pad: int = 0, dtype: str = "f32"):
        """Inputs for a shape in one element type (cached: one shape at a time, its dtypes side by side)."""
        key = (shape, seed, pad, dtype)
        if key not in self._problems:
            if any(k[:3] != key[:3] for k in self._problems):
                self._problems.clear()   # one shape at a time: 8192^3 inputs are 800 MB
            self._problems[key] = Problem(shape, seed, pad, dtype)
        return self._problems[key]

    def check(self, config: KernelConfig, shape: Shape, seed: int = 0, pad: int = 0) -> dict:
        """The correctness gate alone (fresh inputs for each seed, in the config's dtype)."""
        k = self.kernel(config)
        _accepts(config, shape, pad)
        return check(k, self.problem(shape, seed, pad, config.dtype))

    def measure(self, config: KernelConfig, shape: Shape, warmup_ms: float = 25, rep_ms: float = 100,
                seed: int = 0, code: str | None = None, validated: bool = False) -> Measurement:
        """Gate, then time the kernel interleaved with cuBLAS (see :meth:`retime`)."""
        return self.retime([config], shape, warmup_ms, rep_ms, seed, codes=[code], validated=validated)[0]

    def retime(self, configs: Sequence[KernelConfig], shape: Shape, warmup_ms: float = 25,
               rep_ms: float = 100, seed: int = 0, codes: Sequence[str | None] | None = None,
               validated: bool = False) -> list[Measurement]:
        """Gate each config, then time them all and cuBLAS, interleaved run by run.

        Each kernel is timed against cuBLAS in its precision class's mode (gate.mode_of): strict SGEMM
        for fp32 (simt, tf32x3), TF32 for tf32, gemmEx with f16/bf16 inputs for the half families.
        ``validated``: the caller checked every config against this GPU (see :meth:`kernel`).
        """
        codes = codes or [None] * len(configs)
        kernels = [self.kernel(c, code, validated) for c, code in zip(configs, codes)]
        for c in configs:
            _accepts(c, shape, 0)
        probs = [self.problem(shape, seed, 0, c.dtype) for c in configs]
        errors = [check(k, p) for k, p in zip(kernels, probs)]
        modes = list(dict.fromkeys(mode_of(c) for c in configs))
        fns = [lambda k=k, ops=p.operands(1.0, 0.0): k.launch(ops) for k, p in zip(kernels, probs)]
        fns += [self._cublas_run(shape, seed, m) for m in modes]
        clock0 = sm_clock_mhz(self.pci)
        timings = bench_interleaved(fns, self.flush, warmup_ms, rep_ms)
        clocks = (clock0, sm_clock_mhz(self.pci))
        base = dict(zip(modes, timings[len(kernels):]))
        return [self._record(k, shape, t, base[mode_of(k.config)], e, clocks)
                for k, t, e in zip(kernels, timings, errors)]

    def _cublas_run(self, shape: Shape, seed: int, mode: str):
        """cuBLAS in one mode on the problem of its input type, writing a scratch C (beta = 0)."""
        return self.problem(shape, seed, 0, MODE_DTYPE[mode]).cublas_call(mode=mode)[1]

    def _record(self, k: LoadedKernel, shape: Shape, t: Timing, ref: Timing, errors: dict,
                clocks: tuple[int, int]) -> Measurement:
        return Measurement(
            name=k.config.name, shape=shape, ms=t.median, iqr_ms=t.iqr, cublas_ms=ref.median,
            rel_error=errors["err_fp64"], reps=len(t.times), clock_mhz=clocks,
            registers=k.registers, smem_bytes=k.config.smem_bytes,
            occupancy=k.occupancy(self.spec.max_threads_per_sm), resident=k.resident_blocks(),
            extra={**errors, "baseline": mode_of(k.config), "cublas_iqr_ms": ref.iqr,
                   "local_bytes": k.local_bytes})


def _accepts(config: KernelConfig, shape: Shape, pad: int) -> None:
    """Raise Rejected unless the kernel computes this shape (layout, tile divisibility, alignment)."""
    if config.layout != shape.layout:
        raise Rejected(f"kernel layout {config.layout} differs from the problem's {shape.layout}")
    lda = (shape.M if shape.a_transposed else shape.K) + pad
    ldb = (shape.K if shape.b_transposed else shape.N) + pad
    why = config.accepts(shape.M, shape.N, shape.K, lda, ldb, shape.N + pad)
    if why:
        raise Rejected(why)
