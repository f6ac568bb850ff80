"""KernelConfig -> CUDA source, through the Jinja2 templates in ``templates/``.

Templates render with ``StrictUndefined``: a missing variable is an error here, never a broken
``.cu`` that nvcc rejects later. Only validated configs are rendered.

>>> from gemmgen.presets import preset
>>> src = emit(preset("v5"))
>>> 'extern "C"' in src and preset("v5").name in src
True
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace

import jinja2

from . import smem
from .config import EPILOGUE_LD, HALF, KernelConfig
from .paths import data_dir
from .rules import DeviceLike, as_device, validate

# The tensor-core families share one template: tf32x3 adds the small-part products to tf32's.
WGMMA_TEMPLATE = "wgmma.cu.j2"   # the Hopper variant of the TF32 families (mma = "wgmma")
TEMPLATES = {"naive": "naive.cu.j2", "simt": "simt.cu.j2", "tf32": "tc.cu.j2", "tf32x3": "tc.cu.j2",
             "wmma": "wmma.cu.j2"}


@dataclass(frozen=True)
class KernelSource:
    """Rendered CUDA source of one config, with the kernels to launch in order."""

    config: KernelConfig
    code: str

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def digest(self) -> str:
        """SHA-256 of the source: part of every cache and results key."""
        return hashlib.sha256(self.code.encode()).hexdigest()

    @property
    def kernel_names(self) -> tuple[str, ...]:
        c = self.config
        if c.split_k > 1 and c.family != "naive":
            return (f"{c.name}_scale", c.name) if c.reduce == "atomic" else (c.name, f"{c.name}_reduce")
        return (c.name,)


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


def emit(config: KernelConfig, device: DeviceLike | None = None, command: str | None = None,
         harness: bool = False) -> str:
    """CUDA source of a config (validated for ``device``; default target sm_90).

    ``command`` is written into the header; ``harness`` appends a main() that checks the kernel
    against cuBLAS and times it (build with ``nvcc -O3 -arch=sm_90 k.cu -lcublas``).
    """
    return render(config, device, command, harness).code


def render(config: KernelConfig, device: DeviceLike | None = None, command: str | None = None,
           harness: bool = False) -> KernelSource:
    """Validated config -> KernelSource (raises InvalidConfig listing every violated rule)."""
    from .ptxas import build_line   # ptxas imports this module

    validate(config, device)
    facts = _facts(config, command or f"gemmgen emit --config <json of {config.name}>")
    facts.build = build_line(config.target_arch(as_device(device).arch), harness)
    env = environment()
    template = WGMMA_TEMPLATE if config.mma == "wgmma" else TEMPLATES[config.family]
    code = env.get_template(template).render(c=config, g=facts)
    if harness:
        code += env.get_template("harness.cu.j2").render(c=config, g=facts)
    return KernelSource(config, code)


# ---- render-time facts ----------------------------------------------------------------------------
def _facts(c: KernelConfig, command: str) -> SimpleNamespace:
    facts = SimpleNamespace(
        command=command,
        accepts=accepts_text(c),
        launch_lines=launch_lines(c),
        config_lines=config_lines(c),
        a_index=lambda m, k: f"(long long)({m}) * lda + ({k})" if c.layout[0] == "N" else f"(long long)({k}) * lda + ({m})",
        b_index=lambda k, n: f"(long long)({k}) * ldb + ({n})" if c.layout[1] == "N" else f"(long long)({n}) * ldb + ({k})",
    )
    if c.family == "simt":
        facts.a, facts.b = operand(c, "A"), operand(c, "B")
        facts.a_frag_vec = c.frag == "lds" and c.a_kmajor and c.TM % 4 == 0 and c.a_tile_shape[1] % 4 == 0
        facts.b_frag_vec = c.frag == "lds" and c.TN % 4 == 0 and c.b_tile_shape[1] % 4 == 0
        facts.c_vec = c.TN % 4 == 0 and not (c.split_k > 1 and c.reduce == "atomic")
    elif c.tensor_core:
        facts.a, facts.b = operand(c, "A"), operand(c, "B")
        facts.a_off, facts.b_off = smem.offset(c, "A"), smem.offset(c, "B")
        facts.a_ldmatrix, facts.b_ldmatrix = smem.uses_ldmatrix(c, "A"), smem.uses_ldmatrix(c, "B")
        facts.c_vec = not (c.split_k > 1 and c.reduce == "atomic")   # float2 stores of C
    elif c.family in HALF:
        _half_facts(c, facts)
    return facts


def config_lines(c: KernelConfig, width: int = 96) -> list[str]:
    """The config's JSON wrapped between its key-value pairs, never inside one: the lines, with
    the comment marks taken off, are the JSON that ``gemmgen emit --config`` reads back.

    >>> lines = config_lines(KernelConfig(label="v5 with BK=16, stages=3"))
    >>> json.loads("\\n".join(lines)) == KernelConfig(label="v5 with BK=16, stages=3").to_dict()
    True
    >>> max(map(len, lines)) <= 96, lines[0][:12]
    (True, '{"BK": 8, "B')
    """
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(c.to_dict().items())]
    lines = ["{" + items[0]]
    for item in items[1:]:
        if len(lines[-1]) + len(item) + 3 > width:   # ", " before it, "," or "}" after
            lines[-1] += ","
            lines.append(" " + item)   # continuation lines line up under the first key
        else:
            lines[-1] += f", {item}"
    lines[-1] += "}"
    return lines


_VEC_TYPES = {1: "unsigned short", 2: "unsigned", 4: "uint2", 8: "uint4"}   # VEC halves in one load


def _half_facts(c: KernelConfig, facts: SimpleNamespace) -> None:
    """What the wmma template needs beyond the shared facts: element and vector types, fragment
    layouts (row: the contiguous side is k for A, n for B) and the PTX type suffix of the product."""
    facts.a, facts.b = operand(c, "A"), operand(c, "B")
    facts.a_off, facts.b_off = smem.offset(c, "A"), smem.offset(c, "B")
    facts.elem = f"{c.dtype}_bits"
    facts.dtype_words = {"f16": "fp16 (IEEE binary16)", "bf16": "bf16 (bfloat16)"}.get(c.dtype, c.dtype)
    facts.vec_type = _VEC_TYPES.get(c.vec, "uint4")
    facts.a_lay = "col" if c.a_smem_kmajor else "row"
    facts.b_lay = "row" if c.b_smem_kmajor else "col"
    facts.frag_regs = 8 if c.dtype == "f16" else 4        # PTX's fragment of 16x16 f16 (sm_70 layout) / bf16
    facts.mma_types = "f32.f32" if c.dtype == "f16" else f"f32.{c.dtype}.{c.dtype}.f32"
    facts.epi_ld = EPILOGUE_LD
    facts.c_vec = not (c.split_k > 1 and c.reduce == "atomic")   # float4 stores of C


def operand(c: KernelConfig, op: str) -> SimpleNamespace:
    """How one K step's tile of A or B is read from global memory and placed in shared memory.

    The global tile has ``rows`` x ``cols`` with ``cols`` contiguous; each thread moves ``loads``
    vectors of ``vec`` floats. ``smem_vec`` says whether the vector lands contiguously in shared
    memory (else it is transposed element by element).
    """
    if op == "A" and c.layout[0] == "N":    # A[m][k]: rows are m, k contiguous
        d = dict(rows=c.BM, cols=c.BK, gptr="A + (long long)(bm0 + r) * lda + (k0 + cc)",
                 row_ok="bm0 + r < M", col_base="k0 + cc", col_limit="kEnd", soff="a_off(cc + e, r)",
                 contiguous_match=not c.a_smem_kmajor, ld=c.a_tile_shape[1])
    elif op == "A":                          # A stored k-major: rows are k, m contiguous
        d = dict(rows=c.BK, cols=c.BM, gptr="A + (long long)(k0 + r) * lda + (bm0 + cc)",
                 row_ok="k0 + r < kEnd", col_base="bm0 + cc", col_limit="M", soff="a_off(r, cc + e)",
                 contiguous_match=c.a_smem_kmajor, ld=c.a_tile_shape[1])
    elif c.layout[1] == "N":                 # B[k][n]: rows are k, n contiguous
        d = dict(rows=c.BK, cols=c.BN, gptr="B + (long long)(k0 + r) * ldb + (bn0 + cc)",
                 row_ok="k0 + r < kEnd", col_base="bn0 + cc", col_limit="N", soff="b_off(r, cc + e)",
                 contiguous_match=c.b_smem_kmajor, ld=c.b_tile_shape[1])
    else:                                    # B stored n-major: rows are n, k contiguous
        d = dict(rows=c.BN, cols=c.BK, gptr="B + (long long)(bn0 + r) * ldb + (k0 + cc)",
                 row_ok="bn0 + r < N", col_base="k0 + cc", col_limit="kEnd", soff="b_off(cc + e, r)",
                 contiguous_match=not c.b_smem_kmajor, ld=c.b_tile_shape[1])
    loads = d["rows"] * d["cols"] // (c.vec * c.threads)
    smem_vec = d.pop("contiguous_match") and d.pop("ld") % c.vec == 0
    d.pop("ld", None)
    return SimpleNamespace(op=op, loads=loads, smem_vec=smem_vec, vec=c.vec, **d)


def launch_lines(c: KernelConfig) -> list[str]:
    """Human-readable launch geometry for the header comment."""
    if c.family == "naive":
        g = "grid  = (ceil(N/{0}), ceil(M/{1}), 1)" if c.coalesced else "grid  = (ceil(M/{1}), ceil(N/{0}), 1)"
        return [g.format(c.BN, c.BM), f"block = {c.block()}", "dynamic shared memory = 0 bytes"]
    lines = [f"grid  = (ceil(M/{c.BM}) * ceil(N/{c.BN}), 1, {c.split_k})",
             f"block = ({c.threads}, 1, 1)",
             f"dynamic shared memory = {c.smem_bytes} bytes"
             + (" (needs cudaFuncAttributeMaxDynamicSharedMemorySize)" if c.smem_bytes > 48 * 1024 else "")]
    if c.split_k > 1 and c.reduce == "atomic":
        lines.insert(0, f"first {c.name}_scale<<<ceil(M*N/256), 256>>>(M, N, beta, C, ldc)")
    elif c.split_k > 1:
        lines.append(f"W: workspace of {c.split_k}*M*N floats; then "
                     f"{c.name}_reduce<<<ceil(M*N/256), 256>>>(M, N, alpha, beta, C, ldc, W)")
    return lines


def accepts_text(c: KernelConfig) -> str:
    """The shapes a config computes correctly, in words (the header and `gemmgen explain` show it).

    >>> from gemmgen.presets import preset
    >>> accepts_text(preset("v8")).startswith("any M, N, K")
    True
    """
    if c.family == "naive" or c.bounds == "checked":
        return "any M, N, K >= 1 and any leading dimensions (edges and misaligned rows are checked)"
    return (f"M % {c.BM} == 0, N % {c.BN} == 0, K % {c.BK * c.split_k} == 0, leading dimensions and "
            f"pointers aligned to 16 bytes (fast path: no bounds checks)")
