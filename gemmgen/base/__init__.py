"""Stage 0, what every stage shares: the values that travel between stages and the machine around them.

- ``shape``: :class:`Shape`, an M x N x K problem in a layout.
- ``outcome``: :class:`Measurement` and the typed failures (:class:`Failure`, :class:`Rejected`,
  :class:`CompileFailure`, :class:`RuntimeFailure`, :class:`Timeout`, :class:`WrongResult`).
- ``gpus``: :class:`DeviceSpec` and the table of known GPUs and architectures (sm_75 to sm_121).
- ``devices``: looking a target up in it, the present GPU (detection, fingerprints), the default target.
- ``paths``: where templates, search spaces, results and caches live.
- ``files``: crash-safe writes (lock, temp file, rename).
- ``version``: ``__version__``.

Nothing here imports another stage.
"""
from .devices import DeviceSpec, UnknownDevice, detect, fingerprint, for_arch, known, resolve_alias
from .outcome import CompileFailure, Failure, Measurement, Rejected, RuntimeFailure, Timeout, WrongResult
from .shape import Shape
from .version import __version__

__all__ = ["CompileFailure", "DeviceSpec", "Failure", "Measurement", "Rejected", "RuntimeFailure", "Shape",
           "Timeout", "UnknownDevice", "WrongResult", "__version__", "detect", "fingerprint", "for_arch",
           "known", "resolve_alias"]
