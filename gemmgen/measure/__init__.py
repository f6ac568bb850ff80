"""Stage 4, compiled kernel -> Measurement on a GPU: launch, gate against cuBLAS, time.

- ``launch``: :class:`Operands` (device pointers of one GEMM) and :class:`LoadedKernel`;
- ``problem``: inputs in a layout and dtype, and the cuBLAS and float64 references;
- ``gate``: the correctness gate every kernel passes before it is timed;
- ``timing``: CUDA-event timing with L2 flushes, interleaved (Triton's do_bench); ``nvml``: SM clocks;
- ``session``: :class:`Session`, measuring in the process that owns the CUDA context;
- ``worker``: :class:`MeasureWorker`, a session in an isolated process that crashes alone;
- ``benchmark``: rows, tables, JSON and plots of measured configs against cuBLAS.

Nothing here imports CuPy at module level: a machine without a GPU can import it.
"""
from .benchmark import Row, table, to_json
from .gate import allowed, check, gate_bound, mode_of
from .launch import LoadedKernel, Operands
from .problem import CUBLAS_MODES, Problem
from .session import Session
from .worker import MeasureWorker

__all__ = ["CUBLAS_MODES", "LoadedKernel", "MeasureWorker", "Operands", "Problem", "Row", "Session", "allowed",
           "check", "gate_bound", "mode_of", "table", "to_json"]
