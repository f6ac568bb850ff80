"""Stage 3, CUDA source -> machine code, without a GPU.

- ``nvrtc``: :func:`compile_source` through NVRTC (CuPy), cached in memory and on disk by source
  hash, options, architecture and NVRTC version; the path to a loaded kernel.
- ``nvcc``: :func:`compile_cubin` (a cubin and ptxas's report) and :func:`build_program` (a
  ``--harness`` program linked against cuBLAS) through nvcc.
- ``resources``: what ptxas reports per kernel (registers, spills); ``logs``: reading compiler output.
- ``parallel``: :func:`compile_many`, one compile per core with either compiler.
"""
from .logs import first_error, numbered
from .nvcc import ToolkitMissing, build_program, compile_cubin, have_nvcc, nvcc_path
from .nvrtc import Binary, compile_source
from .parallel import compile_many
from .resources import KernelResources, PtxasReport

__all__ = ["Binary", "KernelResources", "PtxasReport", "ToolkitMissing", "build_program", "compile_cubin",
           "compile_many", "compile_source", "first_error", "have_nvcc", "numbered", "nvcc_path"]
