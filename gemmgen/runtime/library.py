"""The tuned kernels of one GPU: loaded from the results folders, picked per shape and precision class.

Within a class (and family, if asked for), the dispatch rule (:mod:`.dispatch`): the timed kernel with
the least predicted time for the shape (:mod:`.predict`); where nothing is timed, the tuned config of
the nearest tuned shape that accepts the request; else the class's preset (:mod:`.precision`), with
one warning, or an error with strict=True. A kernel is validated once, against this GPU, when it is
loaded; the choice is cached per request (shape, layout, leading dimensions, class, family).

>>> import gemmgen
>>> lib = gemmgen.load()                                  # doctest: +GPU
>>> lib.kernel_for(4096, 4096, 4096, "NN").config.name.startswith("gg_")    # doctest: +GPU
True
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Mapping, Optional

from ..base.devices import DeviceSpec, detect, fingerprint, require_gpu, resolve_alias
from ..base.shape import Shape
from ..build.nvrtc import compile_source
from ..codegen.render import render, render_validated
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from ..measure.launch import LoadedKernel, Operands
from ..records.entry import Entry
from ..records.lookup import load_device
from ..records.timings import Timings
from . import gemv, small
from .analytic import Analytic
from .builtin import builtin_fits
from .dispatch import candidates, choose, dispatch, fit_all, layout_factors, ranked, serves
from .staging import copied_ld, stage_plan
from .precision import PRECISIONS, by_precision, check_family, family_fallback, fallback_config

_LIBRARIES: dict[tuple, "KernelLibrary"] = {}
_LOCK = threading.Lock()


class NoTunedKernels(LookupError):
    """strict=True and no tuned result fits the request."""


@dataclass
class Kernel:
    """One loaded kernel: call it with Operands; ``measured`` is what the search recorded (or None)."""

    config: KernelConfig
    loaded: LoadedKernel
    measured: Optional[dict] = None

    @property
    def source(self) -> str:
        return render_validated(self.config, self.loaded.binary.arch).code   # validated for this GPU when loaded

    def __call__(self, ops: Operands, stream=None, workspace: int | None = None) -> None:
        """Launch on ``stream``; ``workspace``: see :meth:`LoadedKernel.launch` (split-K through a workspace)."""
        self.loaded.launch(ops, stream, workspace)


class KernelLibrary:
    """Tuned results for one GPU plus compiled-kernel caches (memory here, disk in build.nvrtc).

    ``entries`` holds the fp32 class (what matmul serves by default); ``classes`` every class;
    ``timings`` the kernels' measured times that dispatch predicts from.
    """

    def __init__(self, spec: DeviceSpec, entries: Mapping[str, Entry], device_id: int = 0, strict: bool = False,
                 timings: Timings | None = None, untimed_builtins: bool = False):
        self.stored = dict(entries)
        self.classes = by_precision(entries)
        self.entries = self.classes.get("fp32", {})
        self.timings = timings or Timings.empty()
        self.spec, self.device_id, self.strict = spec, device_id, strict
        self.untimed_builtins = untimed_builtins   # built-in kernels the timings miss compete too (what load() does)
        self._kernels: dict[str, Kernel] = {}
        self._choice: dict[tuple, Kernel] = {}
        self._plans: dict[tuple, tuple] = {}
        self._fits: dict[tuple, list] = {}
        self._warned: set[str] = set()

    def kernel_for(self, M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
                   ldb: int | None = None, ldc: int | None = None, precision: str = "fp32",
                   family: str | None = None, aligned: bool = True) -> Kernel:
        """The kernel the dispatch rule picks for this problem and precision class (cached per
        argument tuple); ``precision`` is one of PRECISIONS (f16/bf16 kernels read half inputs);
        ``family`` restricts the choice to one template family of that class (e.g. simt); ``aligned``
        False where A or B does not start on 16 bytes (no TMA or fast-path kernel then)."""
        key = (M, N, K, layout, lda, ldb, ldc, precision, family, aligned)
        kernel = self._choice.get(key)
        if kernel is None:
            if precision not in PRECISIONS:
                raise ValueError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
            check_family(family, precision)
            if gemv.serves(M, N, K, precision, family):   # one row or column of C: a matrix-vector kernel
                packed = Shape(M, N, K, layout).lds
                kernel = gemv.GemvKernel(M, N, K, layout, lda or packed[0], ldb or packed[1], ldc or N, self.spec.sm_count)
            elif small.serves(M, N, K, precision, family):   # a tiny C or a short K: small.cu's kernels
                kernel = small.SmallKernel(M, N, K, layout, self.spec.sm_count)
            else:
                kernel = self._pick(*key)
            self._choice[key] = kernel
        return kernel

    def plan_for(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, precision: str = "fp32",
                 family: str | None = None, rows_aligned: bool = True, elem: int = 4) -> tuple[Kernel, bool, bool]:
        """(kernel, copy A, copy B) for a request: copies where the timings predict that they pay
        (:mod:`.staging`): into 16-byte aligned rows where A's or B's rows do not start on 16 bytes (odd
        leading dimension, or ``rows_aligned`` False for a misaligned first element), or into the
        layout of a faster kernel (``kernel.config.layout``: a copy whose layout letter differs from the
        request's is transposed). The kernel is the one for the copied operands (leading dimensions
        rounded up to 16 bytes). Cached per request."""
        key = (M, N, K, layout, lda, ldb, ldc, precision, family, rows_aligned)
        plan = self._plans.get(key)
        if plan is None and (gemv.serves(M, N, K, precision, family, elem)   # no copies: the inputs are read once
                             or small.serves(M, N, K, precision, family, elem)):
            plan = self._plans[key] = (self.kernel_for(M, N, K, layout, lda, ldb, ldc, precision, family), False, False)
        if plan is None:
            align = 16 // elem
            pack_a, pack_b, fit = self.staged_fit(M, N, K, layout, lda, ldb, ldc, precision, family, rows_aligned, elem)
            run = fit.config.layout if fit is not None else layout   # the layout the kernel reads (copies make it)
            lda2 = copied_ld("A", run[0], M, N, K, align) if pack_a else lda
            ldb2 = copied_ld("B", run[1], M, N, K, align) if pack_b else ldb
            if fit is not None:   # the kernel whose prediction made the plan (not a re-pick among all of its layout's)
                kernel = self._load(fit.config, None)
            else:
                kernel = self.kernel_for(M, N, K, run, lda2, ldb2, ldc, precision, family,
                                         rows_aligned or (pack_a and pack_b))   # copies start aligned
            plan = self._plans[key] = (kernel, pack_a, pack_b)
        return plan

    @property
    def copy_bandwidth(self) -> float:
        """Bytes per ms a copy kernel is predicted to move: its share of this GPU's DRAM bandwidth."""
        return max(self.spec.mem_gbs, 100.0) * 1e6 * 0.7

    def staged_fit(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, precision: str = "fp32",
                   family: str | None = None, rows_aligned: bool = True, elem: int = 4) -> tuple[bool, bool, object]:
        """(copy A, copy B, time model or None): :meth:`plan_for`'s choice before any kernel is compiled
        or loaded, so it needs no GPU (what `gemmgen results plan` and benchmarks/dispatch_loo.py show)."""
        fits_for = (lambda lay: self.candidates(precision, lay, family)) if precision in PRECISIONS else (lambda lay: [])
        return stage_plan(fits_for, M, N, K, layout, lda, ldb, ldc, self.copy_bandwidth, 16 // elem, elem, rows_aligned)

    def candidates(self, precision: str, layout: str, family: str | None = None) -> list:
        """The timed kernels (time models) that compete for requests of a class, layout and family."""
        key = (precision, layout, family)
        if key not in self._fits:
            fits = self._fits.get(precision)
            if fits is None:   # nothing of the class stored for this GPU: the built-in kernels' analytic models
                timed = self.timings.of_precision(precision)
                if timed:   # the built-in kernels it did not time compete too, behind a margin
                    fits = fit_all(timed, self.spec) + ([] if self.strict or not self.untimed_builtins else
                                                        builtin_fits(self.spec, precision, timed=(k.config.name for k in timed)))
                else:
                    fits = [] if self.classes.get(precision) or self.strict else builtin_fits(self.spec, precision)
                self._fits[precision] = fits
            self._fits[key] = candidates(fits, layout, self.spec, family, layout_factors(fits))
        return self._fits[key]

    def alternatives(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int,
                     precision: str = "fp32", family: str | None = None, aligned: bool = True, top: int = 3,
                     per_family: int = 2) -> list[KernelConfig]:
        """Timed kernels that run the request as it is (its layout, no copies), least predicted time
        first: the ``top`` overall and the ``per_family`` first of each family (first-call tuning,
        :mod:`.autotune`, times them against the plan; none is compiled here)."""
        keep, seen = [], {}
        for _, fit in ranked(self.candidates(precision, layout, family), M, N, K, layout, lda, ldb, ldc,
                             None if aligned else False):
            fam = fit.config.family
            if len(keep) < top or seen.get(fam, 0) < per_family:
                keep.append(fit.config)
            seen[fam] = seen.get(fam, 0) + 1
        return keep

    def timed_config(self, name: str, precision: str, layout: str, family: str | None = None) -> KernelConfig | None:
        """The config of a timed kernel that competes for requests of this class, layout and family, by name."""
        return next((f.config for f in self.candidates(precision, layout, family) if f.config.name == name), None)

    def _pick(self, M, N, K, layout, lda, ldb, ldc, precision, family, aligned) -> Kernel:
        best = choose(self.candidates(precision, layout, family), M, N, K, layout, lda, ldb, ldc, aligned)
        if best is not None:
            if isinstance(best, Analytic) and precision not in self._warned:
                warnings.warn(f"gemmgen: no tuned results for {self.spec.name}; running built-in kernels chosen by the "
                              "analytic time model (`gemmgen search` tunes this GPU)", stacklevel=4)
                self._warned.add(precision)
            return self._load(best.config, None)
        stored = {k: e for k, e in self.classes.get(precision, {}).items()
                  if serves(family, e.kernel_config.family)}
        entry = dispatch(stored, M, N, K, layout, lda, ldb, ldc, aligned)
        if entry is not None:
            return self._load(entry.kernel_config, entry.to_dict())
        what = f"{precision} {family + ' ' if family else ''}kernel for {M}x{N}x{K}/{layout} on {self.spec.name}"
        if self.strict:
            raise NoTunedKernels(f"no tuned {what} (strict=True); run `gemmgen search` or pass strict=False")
        config, kind = self._fallback(precision, layout, family, (M, N, K, lda, ldb, ldc, aligned))
        if precision not in self._warned:
            warnings.warn(f"gemmgen: no tuned {what}; using the {kind} preset {config.label} "
                          "(run `gemmgen search` to tune)", stacklevel=4)
            self._warned.add(precision)
        return self._load(config, None)

    def _fallback(self, precision: str, layout: str, family: str | None, request: tuple) -> tuple[KernelConfig, str]:
        """The class's (or family's) preset as every entry point resolves it (v13: this GPU's stored
        winner) where that is valid here and accepts the request, else the built-in one, which accepts
        any shape."""
        if family is not None:
            return family_fallback(family, precision, self.spec, layout), "built-in"
        builtin = fallback_config(precision, self.spec, layout)
        resolved = fallback_config(precision, self.spec, layout, self.stored)
        if resolved != builtin and resolved.accepts(*request) is None and not explain(resolved, self.spec):
            return resolved, "stored"
        return builtin, "built-in"

    def kernel(self, config: KernelConfig) -> Kernel:
        """``config`` compiled (NVRTC's disk cache) and loaded for this library's GPU, once per library:
        a kernel the dispatch did not pick, e.g. gemmgen.torch's deterministic substitute."""
        return self._load(config, None)

    def _load(self, config: KernelConfig, measured: Optional[dict]) -> Kernel:
        if config.name not in self._kernels:
            binary = compile_source(render(config, self.spec), self.spec.arch)   # validated here, once
            self._kernels[config.name] = Kernel(config, LoadedKernel(config, binary), measured)
        return self._kernels[config.name]


def load(gpu: str = "auto", results: Optional[str] = None, device_id: Optional[int] = None,
         strict: bool = False) -> KernelLibrary:
    """The tuned kernels for a GPU: the shipped results plus the user's (or ``results``).

    ``gpu="auto"`` uses the current CUDA device; a name ("h100") must match it.

    >>> import gemmgen
    >>> lib = gemmgen.load()                                  # doctest: +GPU
    >>> lib.kernel_for(4096, 4096, 4096, "NN").config.name.startswith("gg_")    # doctest: +GPU
    True
    """
    require_gpu(device_id or 0)   # CuPy, the driver and a GPU, or one line saying what is missing
    import cupy

    dev = cupy.cuda.Device().id if device_id is None else device_id
    spec = detect(dev)
    if gpu != "auto" and resolve_alias(gpu) != spec.key:
        raise ValueError(f"gpu={gpu!r} does not match this device, {spec.name!r}; use gpu='auto'")
    found = load_device(fingerprint(dev), results)
    return KernelLibrary(spec, found.entries, dev, strict, found.timings, untimed_builtins=True)


def library_for(device_id: int, strict: bool) -> KernelLibrary:
    """The process-wide library of a device, loaded on first use (what matmul calls)."""
    key = (device_id, strict)
    lib = _LIBRARIES.get(key)   # lock-free fast path once loaded
    if lib is None:
        with _LOCK:
            lib = _LIBRARIES.get(key) or _LIBRARIES.setdefault(key, load(device_id=device_id, strict=strict))
    return lib
