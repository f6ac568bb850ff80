"""KernelConfig -> CUDA source, through the Jinja2 templates in ``templates/``.

Templates render with ``StrictUndefined``: a missing variable is an error here, never a broken
``.cu`` that nvcc rejects later. Only validated configs are rendered, and always against a named
target: :func:`render` validates for the target it is given; :func:`render_validated` is for
callers that validated the config against their real target already (a search trial, the runtime),
and still name that target's architecture: the header's ``// Build:`` line is the nvcc command for it.

>>> from gemmgen.kernel.presets import preset
>>> src = emit(preset("v5"), "sm_90")
>>> 'extern "C"' in src and preset("v5").name in src
True
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

import jinja2

from ..base.paths import data_dir
from ..kernel.config import KernelConfig
from ..kernel.rules import DeviceLike, as_device, validate
from .build_line import PLACEHOLDER
from .facts import facts

# One top-level template per mainloop schedule. The warp-specialized Hopper kernels have one per copy kind of
# their producer (TMA, cp.async), sharing the ws_*.cuh.j2 partials; the tensor-core families share one
# template per instruction (tf32x3 adds the small-part products to tf32's).
TEMPLATES = {"ws_tma": "ws_tma.cu.j2",           # warp-specialized, producer copies with TMA (every input type)
             "ws_cpasync": "ws_cpasync.cu.j2",   # warp-specialized, producer copies with cp.async (3xTF32)
             "wgmma": "wgmma.cu.j2",             # the Hopper variant of the TF32 families, cp.async ring
             "naive": "naive.cu.j2", "simt": "simt.cu.j2", "tf32": "tc.cu.j2", "tf32x3": "tc.cu.j2",
             "wmma": "wmma.cu.j2", "skinny": "skinny.cu.j2"}


def schedule(config: KernelConfig) -> str:
    """The config's mainloop schedule, the key of its template in :data:`TEMPLATES`.

    >>> from gemmgen.kernel.presets import preset
    >>> [schedule(preset(n)) for n in ("tf32x3-ws", "v8")]
    ['ws_cpasync', 'simt']
    """
    return config.mainloop if config.uses_wgmma else config.family   # simt and mma.sync: a template per family


@dataclass(frozen=True)
class KernelSource:
    """Rendered CUDA source of one config, with the kernels to launch in order.

    ``unnamed`` is the same source rendered for no particular file (its build line names
    :data:`~.build_line.PLACEHOLDER`), kept where ``code`` names a file; '' where ``code`` is that.
    """

    config: KernelConfig
    code: str
    unnamed: str = field(default="", repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def digest(self) -> str:
        """SHA-256 of the source as rendered for no particular file: part of every cache and results
        key, and the same for a copy whose build line names the file it was written to."""
        return hashlib.sha256((self.unnamed or self.code).encode()).hexdigest()

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """The kernels of one GEMM in launch order (see KernelConfig.kernel_names)."""
        return self.config.kernel_names


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The Jinja2 environment over templates/ (strict, no autoescape: this is C++)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def emit(config: KernelConfig, target: DeviceLike, command: str | None = None, harness: bool = False,
         file: str = PLACEHOLDER) -> str:
    """CUDA source of a config, validated for ``target`` (a DeviceSpec, GPU name or sm_XX).

    ``command`` is written into the header; ``harness`` appends a main() that checks the kernel
    against cuBLAS and times it; ``file`` is where the source will be written: the header's
    ``// Build:`` line is the nvcc command that builds it there.

    >>> from gemmgen.kernel.presets import preset
    >>> "// Build: nvcc -cubin -O3 -std=c++17 -arch=sm_86 v8.cu -o v8.cubin" in emit(preset("v8"), "sm_86", file="v8.cu")
    True
    """
    return render(config, target, command, harness, file).code


def render(config: KernelConfig, target: DeviceLike, command: str | None = None,
           harness: bool = False, file: str = PLACEHOLDER) -> KernelSource:
    """Validate the config for ``target``, then render it (raises InvalidConfig listing every violated rule)."""
    validate(config, target)
    return render_validated(config, as_device(target).arch, command, harness, file)


def render_validated(config: KernelConfig, arch: str, command: str | None = None,
                     harness: bool = False, file: str = PLACEHOLDER) -> KernelSource:
    """Render a config its caller has validated against the target it will run on, a GPU of ``arch``
    (sm_XX; the header's build line names the config's target of it, sm_90a for wgmma, and ``file``).

    >>> from gemmgen.kernel.presets import preset
    >>> render_validated(preset("v12"), "sm_90").kernel_names[0].endswith("_scale")
    True
    >>> render_validated(preset("v8"), "sm_90", file="v8.cu").digest == render_validated(preset("v8"), "sm_90").digest
    True
    """
    command = command or f"gemmgen emit --config <json of {config.name}>"
    code = _code(config, config.target_arch(arch), command, harness, file)
    if file == PLACEHOLDER:
        return KernelSource(config, code)
    return KernelSource(config, code, _code(config, config.target_arch(arch), command, harness, PLACEHOLDER))


def _code(config: KernelConfig, arch: str, command: str, harness: bool, file: str) -> str:
    g = facts(config, command, arch, harness, file)
    env = environment()
    code = env.get_template(TEMPLATES[schedule(config)]).render(c=config, g=g)
    if harness:
        code += env.get_template("harness.cu.j2").render(c=config, g=g)
    return _BLANK_RUNS.sub("\n\n", code)


# Optional parts (split-K helpers, checks) that render empty leave runs of blank lines: one is kept.
_BLANK_RUNS = re.compile(r"\n{3,}")
