"""The tuned kernels of one GPU: loaded from the results folders, compiled and loaded per plan.

Which kernel runs a request is the planner's (:mod:`.planner`: hand-written routes, timed kernels with
their copies, the nearest stored entry, the class's preset); the library turns its plan into a loaded
kernel (:class:`Kernel`, or a hand-written route's :class:`.handwritten.RouteKernel`): validated once,
against this GPU, when it is loaded; the plan is cached per request. A preset serves with one warning,
or an error with strict=True. Callers read of either only what :class:`Served` names.

>>> import gemmgen
>>> lib = gemmgen.load()                                  # doctest: +GPU
>>> lib.kernel_for(4096, 4096, 4096, "NN").name.startswith("gg_")    # doctest: +GPU
True
"""
from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from typing import Mapping, Optional, Protocol, runtime_checkable

from ..base.devices import DeviceSpec, detect, fingerprint, require_gpu, resolve_alias
from ..build.nvrtc import compile_source
from ..codegen.render import render, render_validated
from ..kernel.accepts import needs_aligned_pointers
from ..kernel.config import KernelConfig
from ..measure.launch import LoadedKernel, Operands
from ..records.entry import Entry
from ..records.lookup import load_device
from ..records.timings import Timings
from . import gemv, small
from .analytic import Analytic
from .planner import Plan, Planner, Request
from .precision import PRECISIONS
from .policy import DEFAULT, Policy, from_text

_LIBRARIES: dict[tuple, "KernelLibrary"] = {}
_LOCK = threading.Lock()


class NoTunedKernels(LookupError):
    """strict=True and no tuned result fits the request."""


@runtime_checkable
class Served(Protocol):
    """What the library hands out for a request and what its callers (matmul, gemmgen.torch, the benchmarks)
    read of it: a compiled GEMM kernel (:class:`Kernel`) or a hand-written route's
    (:class:`.handwritten.RouteKernel`)."""

    name: str               # the kernel's name (what a report prints)
    family: str             # a template family of the KernelConfigs, or a route's ("gemv", "small")
    precision: str          # its precision class
    layout: str             # the layout it reads A and B in: a plan's copies go into it
    aligned_pointers: bool  # reads A and B from 16-byte aligned first elements without checking them

    def prepared(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int):
        """The launch of these sizes and leading dimensions, called as :class:`gemmgen.measure.launch.Launch`."""

    def workspace_floats(self, M: int, N: int) -> int:
        """Floats of workspace a launch on an M x N C needs (0: none)."""

    def __call__(self, ops: Operands, stream=None, workspace: int | None = None) -> None:
        """Launch on ``stream`` (see :meth:`LoadedKernel.launch`)."""


def _config_field(field: str) -> property:
    """A :class:`Served` answer of a GEMM kernel that is its KernelConfig's field of the same name."""
    return property(lambda kernel: getattr(kernel.config, field), doc=f"The KernelConfig's {field}.")


@dataclass
class Kernel:
    """One loaded GEMM kernel (:class:`Served`): call it with Operands; ``measured`` is what the search
    recorded (or None)."""

    config: KernelConfig
    loaded: LoadedKernel
    measured: Optional[dict] = None

    name, family, precision, layout = (_config_field(f) for f in ("name", "family", "precision", "layout"))

    @property
    def aligned_pointers(self) -> bool:
        return needs_aligned_pointers(self.config)

    def prepared(self, M: int, N: int, K: int, lda: int, ldb: int, ldc: int):
        return self.loaded.prepared(M, N, K, lda, ldb, ldc)

    def workspace_floats(self, M: int, N: int) -> int:
        return self.loaded.workspace_floats(M, N)

    @property
    def source(self) -> str:
        return render_validated(self.config, self.loaded.binary.arch).code   # validated for this GPU when loaded

    def __call__(self, ops: Operands, stream=None, workspace: int | None = None) -> None:
        """Launch on ``stream``; ``workspace``: see :meth:`LoadedKernel.launch` (split-K through a workspace)."""
        self.loaded.launch(ops, stream, workspace)


class KernelLibrary:
    """Tuned results for one GPU, its planner, and compiled-kernel caches (memory here, disk in build.nvrtc).

    ``entries`` holds the fp32 class (what matmul serves by default); ``classes`` every class;
    ``timings`` the kernels' measured times the planner predicts from; ``policy`` its thresholds (the
    defaults with the results file's ``"policy"`` overrides, or what a test or A/B tool passes); ``timed``:
    injected time models (:class:`.planner.Planner`).
    """

    def __init__(self, spec: DeviceSpec, entries: Mapping[str, Entry], device_id: int = 0, strict: bool = False,
                 timings: Timings | None = None, policy: Policy = DEFAULT, timed=None):
        self.planner = Planner(spec, entries, timings, policy, timed, builtin=not strict)
        self.stored, self.classes, self.timings = self.planner.stored, self.planner.classes, self.planner.timings
        self.entries = self.classes.get("fp32", {})
        self.spec, self.device_id, self.strict = spec, device_id, strict
        self._kernels: dict[str, Kernel] = {}
        self._choice: dict[tuple, Served] = {}
        self._plans: dict[tuple, tuple] = {}
        self._warned: set[str] = set()

    @property
    def policy(self) -> Policy:
        return self.planner.policy

    def kernel_for(self, M: int, N: int, K: int, layout: str = "NN", lda: int | None = None,
                   ldb: int | None = None, ldc: int | None = None, precision: str = "fp32",
                   family: str | None = None, aligned: bool = True, fixed_order: bool = False) -> Served:
        """The kernel the planner picks for this request without copies (what gemmgen.torch runs; cached per
        argument tuple); ``precision`` is one of PRECISIONS (f16/bf16 kernels read half inputs); ``family``
        restricts the choice to one template family of that class (e.g. simt); ``aligned`` False where A or
        B does not start on 16 bytes (no TMA or fast-path kernel then); ``fixed_order``: no kernel that adds
        K slices atomically (PyTorch's deterministic algorithms)."""
        key = (M, N, K, layout, lda, ldb, ldc, precision, family, aligned, fixed_order)
        kernel = self._choice.get(key)
        if kernel is None:
            req = Request(M, N, K, layout, lda, ldb, ldc, precision, family, aligned, copies=False,
                          fixed_order=fixed_order)
            kernel = self._choice[key] = self._kernel_of(req, self.planner.plan(req))
        return kernel

    def plan_for(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, precision: str = "fp32",
                 family: str | None = None, rows_aligned: bool = True, elem: int = 4) -> tuple[Served, bool, bool]:
        """(kernel, copy A, copy B) for a request, as the planner picks it with copies allowed (what matmul
        runs): copies where the timings predict that they pay, into 16-byte aligned rows where A's or B's
        rows do not start on 16 bytes (odd leading dimension, or ``rows_aligned`` False for a misaligned
        first element), or into the layout of a faster kernel (``kernel.layout``: a copy whose
        layout letter differs from the request's is transposed). Cached per request."""
        key = (M, N, K, layout, lda, ldb, ldc, precision, family, rows_aligned, elem)
        plan = self._plans.get(key)
        if plan is None:
            req = Request(M, N, K, layout, lda, ldb, ldc, precision, family, rows_aligned, elem)
            found = self.planner.plan(req)
            kernel = (self.kernel_for(M, N, K, layout, lda, ldb, ldc, precision, family) if found.source == "route"
                      else self._kernel_of(req, found))   # a route's kernel: one per request, whichever entry point
            plan = self._plans[key] = (kernel, found.copy_a, found.copy_b)
        return plan

    def plan(self, request: Request) -> Plan:
        """The planner's plan for ``request``, nothing compiled or loaded (no GPU needed)."""
        return self.planner.plan(request)

    @property
    def copy_bandwidth(self) -> float:
        """Bytes per ms a copy kernel is predicted to move: the policy's share of this GPU's DRAM bandwidth."""
        return self.planner.bandwidth

    def staged_fit(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, precision: str = "fp32",
                   family: str | None = None, rows_aligned: bool = True, elem: int = 4) -> tuple[bool, bool, object]:
        """(copy A, copy B, time model or None): the planner's plan among the timed kernels alone (its
        ``timed`` source, routes and presets aside), with no GPU: what benchmarks/dispatch_loo.py scores."""
        req = Request(M, N, K, layout, lda, ldb, ldc, precision, family, rows_aligned, elem)
        found = self.planner.plan(req, ("timed",)) if precision in PRECISIONS else None
        return (False, False, None) if found is None else (found.copy_a, found.copy_b, found.fit)

    def candidates(self, precision: str, layout: str, family: str | None = None) -> list:
        """The timed kernels (time models) that compete for requests of a class, layout and family."""
        return self.planner.candidates(precision, layout, family)

    def alternatives(self, M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int,
                     precision: str = "fp32", family: str | None = None, aligned: bool = True, top: int = 3,
                     per_family: int | None = None) -> list[KernelConfig]:
        """Timed kernels that run the request as it is (its layout, no copies), least predicted time
        first: the planner's :meth:`.planner.Planner.alternatives` (first-call tuning, :mod:`.autotune`,
        times them against the plan; none is compiled here)."""
        req = Request(M, N, K, layout, lda, ldb, ldc, precision, family, aligned, copies=False)
        return self.planner.alternatives(req, top, per_family)

    def timed_config(self, name: str, precision: str, layout: str, family: str | None = None) -> KernelConfig | None:
        """The config of a timed kernel that competes for requests of this class, layout and family, by name."""
        return next((f.config for f in self.candidates(precision, layout, family) if f.config.name == name), None)

    def _kernel_of(self, req: Request, plan: Plan) -> Served:
        """The loaded kernel of a plan: a hand-written route's, a timed or stored kernel, or the preset
        (NoTunedKernels with strict=True; else one warning per precision class)."""
        if plan.source == "route":
            return route_kernel(plan.route, req, self.spec.sm_count, self.policy)
        if plan.source == "preset":
            fam = req.family
            what = (f"{req.precision} {fam + ' ' if fam else ''}kernel for {req.M}x{req.N}x{req.K}/{req.layout} "
                    f"on {self.spec.name}")
            if self.strict:
                raise NoTunedKernels(f"no tuned {what} (strict=True); run `gemmgen search` or pass strict=False")
            if req.precision not in self._warned:
                warnings.warn(f"gemmgen: no tuned {what}; using the {plan.detail} preset {plan.config.label} "
                              "(run `gemmgen search` to tune)", stacklevel=5)
                self._warned.add(req.precision)
        if isinstance(plan.fit, Analytic) and plan.fit.margin == 1.0 and (req.precision, "builtin") not in self._warned:
            warnings.warn(f"gemmgen: no tuned results for {self.spec.name}; running built-in kernels chosen by the "
                          "analytic time model (`gemmgen search` tunes this GPU)", stacklevel=5)
            self._warned.add((req.precision, "builtin"))
        return self._load(plan.config, plan.entry.to_dict() if plan.entry is not None else None)

    def kernel(self, config: KernelConfig) -> Kernel:
        """``config`` compiled (NVRTC's disk cache) and loaded for this library's GPU, once per library:
        a kernel the planner did not pick (first-call tuning's alternatives)."""
        return self._load(config, None)

    def _load(self, config: KernelConfig, measured: Optional[dict]) -> Kernel:
        if config.name not in self._kernels:
            binary = compile_source(render(config, self.spec), self.spec.arch)   # validated here, once
            loaded = LoadedKernel(config, binary, after_copies=self.policy.early_after_copies,
                                  after_scale=self.policy.early_after_scale)
            self._kernels[config.name] = Kernel(config, loaded, measured)
        return self._kernels[config.name]


def route_kernel(route: str, req: Request, sm_count: int, policy: Policy = DEFAULT) -> Served:
    """The hand-written kernel of a route plan (``route``: "gemv", or small's "dots" or "outer") for
    ``req`` on a GPU of ``sm_count`` SMs, shaped by ``policy``; nothing is compiled (no GPU needed)."""
    lda, ldb = req.lds
    if route == "gemv":   # one row or column of C: a matrix-vector kernel
        return gemv.GemvKernel(req.M, req.N, req.K, req.layout, lda, ldb, req.ldc or req.N, sm_count, policy)
    return small.SmallKernel(req.M, req.N, req.K, req.layout, sm_count, route, policy)


def load(gpu: str = "auto", results: Optional[str] = None, device_id: Optional[int] = None,
         strict: bool = False) -> KernelLibrary:
    """The tuned kernels for a GPU: the shipped results plus the user's (or ``results``).

    ``gpu="auto"`` uses the current CUDA device; a name ("h100") must match it.

    >>> import gemmgen
    >>> lib = gemmgen.load()                                  # doctest: +GPU
    >>> lib.kernel_for(4096, 4096, 4096, "NN").name.startswith("gg_")    # doctest: +GPU
    True
    """
    require_gpu(device_id or 0)   # CuPy, the driver and a GPU, or one line saying what is missing
    import cupy

    dev = cupy.cuda.Device().id if device_id is None else device_id
    spec = detect(dev)
    if gpu != "auto" and resolve_alias(gpu) != spec.key:
        raise ValueError(f"gpu={gpu!r} does not match this device, {spec.name!r}; use gpu='auto'")
    found = load_device(fingerprint(dev), results)
    return KernelLibrary(spec, found.entries, dev, strict, found.timings, results_policy(found))


PRODUCT = DEFAULT.replace(untimed_builtins=True)   # what matmul plans with: built-ins the timings miss compete too


def results_policy(found, env: Mapping[str, str] = os.environ) -> Policy:
    """The policy of a GPU's results: the defaults with the file's optional ``"policy"`` overrides, then
    those of ``$GEMMGEN_POLICY`` (``name=value,...``: e.g. ``arch=sm_80`` plans as an A100 would; an
    unknown field or a bad value: ValueError in one line naming the file or the variable)."""
    policy = Policy.overridden(found.policy, f"{found.path or found.name}", base=PRODUCT)
    text = env.get("GEMMGEN_POLICY", "")
    return Policy.overridden(from_text(text), "GEMMGEN_POLICY", base=policy) if text.strip() else policy


def library_for(device_id: int, strict: bool) -> KernelLibrary:
    """The process-wide library of a device, loaded on first use (what matmul calls)."""
    key = (device_id, strict)
    lib = _LIBRARIES.get(key)   # lock-free fast path once loaded
    if lib is None:
        with _LOCK:
            lib = _LIBRARIES.get(key) or _LIBRARIES.setdefault(key, load(device_id=device_id, strict=strict))
    return lib
