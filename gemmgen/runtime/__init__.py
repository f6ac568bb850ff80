"""Stage 7, GEMMs on the user's arrays with the tuned kernels: ``matmul``, ``load``, ``bench``.

- ``matmul``: :func:`matmul` (CuPy, ``__cuda_array_interface__`` or DLPack arrays, no copies);
- ``arrays``: the user's arrays as matrices (dtype, layout letter, leading dimension, overlaps);
- ``library``: :func:`load`, :class:`KernelLibrary` and :class:`Kernel`, one GPU's tuned kernels;
- ``dispatch``: the rule that picks a stored entry for a shape; ``precision``: precision classes
  and the preset that serves a class when nothing stored fits;
- ``gemv``, ``small``: hand-written kernels for one row or column of C, a tiny C with long K and a short
  K (``handwritten``: what they share);
- ``autotune``: :func:`tune_first_calls`, opt-in first-call tuning; ``picks``: its picks, kept per GPU;
- ``bench``: :func:`bench`, presets or configs timed against cuBLAS in isolated workers.
"""
from .autotune import tune_first_calls
from .bench import bench
from .dispatch import dispatch, log_distance
from .library import Kernel, KernelLibrary, NoTunedKernels, load
from .matmul import matmul
from .precision import FALLBACK, PRECISIONS, fallback_config, resolve_precision

__all__ = ["FALLBACK", "PRECISIONS", "Kernel", "KernelLibrary", "NoTunedKernels", "bench", "dispatch",
           "fallback_config", "load", "log_distance", "matmul", "resolve_precision", "tune_first_calls"]
