"""Validation of a KernelConfig before anything is rendered: named rules with reasons and numbers.

Each rule is a small function returning None (satisfied) or a sentence with the numbers involved.
:func:`explain` runs them all and returns every violation; :func:`validate` raises
:class:`InvalidConfig` carrying the list.

>>> from gemmgen.config import KernelConfig
>>> [v.rule for v in explain(KernelConfig(BM=96, WM=64), "h100")]   # every rule it breaks
['WARP_TILE', 'VECTORIZE']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from .config import BOUNDS, DTYPES, FAMILIES, FRAGMENT_LOADS, HALF, LAYOUTS, REDUCTIONS, TENSOR_CORE, KernelConfig
from .devices import DeviceSpec, for_arch

DeviceLike = Union[DeviceSpec, str]


@dataclass(frozen=True)
class Violation:
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.reason}"


class InvalidConfig(ValueError):
    """A config breaks one or more rules; ``violations`` lists them all."""

    def __init__(self, config: KernelConfig, violations: list[Violation]):
        self.config = config
        self.violations = violations
        lines = "\n  ".join(str(v) for v in violations)
        super().__init__(f"invalid kernel config {config.label or config.name}:\n  {lines}")


Rule = Callable[[KernelConfig, DeviceSpec], Union[str, None]]
_RULES: list[tuple[str, Rule, tuple[str, ...]]] = []


def rule(name: str, *families: str):
    """Register a rule for the given families (all families when none are named)."""
    def deco(fn: Rule) -> Rule:
        _RULES.append((name, fn, families or FAMILIES))
        return fn
    return deco


def _choice(value, valid) -> str | None:
    return None if value in valid else f"{value!r} is not one of {', '.join(map(str, valid))}"


# ---- every family -------------------------------------------------------------------------
@rule("FAMILY")
def _family(c, d):
    return _choice(c.family, FAMILIES)


@rule("LAYOUT")
def _layout(c, d):
    return _choice(c.layout, LAYOUTS)


@rule("POSITIVE")
def _positive(c, d):
    bad = [f"{k} = {getattr(c, k)}" for k in ("BM", "BN", "BK", "WM", "WN", "WMITER", "WNITER", "TM", "TN",
                                              "vec", "stages", "split_k", "raster", "min_blocks")
           if getattr(c, k) < 1]
    return f"{', '.join(bad)} must be at least 1" if bad else None


@rule("DTYPE")
def _dtype(c, d):
    bad = _choice(c.dtype, DTYPES)
    if bad:
        return bad
    if c.family in HALF and c.dtype == "f32":
        return f"the {c.family} family multiplies fp16 or bf16 inputs; set dtype to f16 or bf16"
    if c.family not in HALF and c.dtype != "f32":
        return (f"the {c.family} family reads fp32 A and B; dtype = {c.dtype!r} needs the half family "
                f"({', '.join(HALF)})")
    return None


@rule("PARTIALS")
def _partials(c, d):
    if c.family not in HALF and not c.partials:
        return (f"partials = false applies to the half family ({', '.join(HALF)}) only; the {c.family} family "
                "has no such choice, leave it true")
    return None


@rule("THREADS")
def _threads(c, d):
    t = c.threads if min(c.BM, c.BN, c.WM, c.WN) > 0 else 0
    if not 32 <= t <= d.max_threads_per_block or t % 32:
        return f"{t} threads per block; the {d.key} takes a multiple of 32 from 32 to {d.max_threads_per_block}"
    return None


# ---- naive family ---------------------------------------------------------------------------
@rule("NAIVE_DEFAULTS", "naive")
def _naive_defaults(c, d):
    ref = KernelConfig(family="naive", layout=c.layout, BM=c.BM, BN=c.BN, coalesced=c.coalesced, label=c.label)
    diff = [f.name for f in c.__dataclass_fields__.values() if getattr(c, f.name) != getattr(ref, f.name)]
    return f"the naive family has no parameter {', '.join(diff)}; leave it at its default" if diff else None


# ---- simt family (rules named by _tiled also hold for the tensor-core families, _staged for the
# half family too: its element sizes differ, so it has its own VECTOR and PADDING rules) -------
def _simt(*names):
    return rule(names[0], "simt")


def _tiled(name):
    return rule(name, "simt", *TENSOR_CORE)


def _staged(name):
    return rule(name, "simt", *TENSOR_CORE, *HALF)


@_staged("WARP_TILE")
def _warp_tile(c, d):
    if c.BM % c.WM or c.BN % c.WN:
        return f"block tile {c.BM}x{c.BN} is not a whole number of {c.WM}x{c.WN} warp tiles"
    return None


@_simt("WARP_ITER")
def _warp_iter(c, d):
    if c.WM % c.WMITER or c.WN % c.WNITER:
        return f"warp tile {c.WM}x{c.WN} does not split into {c.WMITER}x{c.WNITER} sub-tiles"
    return None


@_simt("THREAD_TILE")
def _thread_tile(c, d):
    sm, sn = c.WM // c.WMITER, c.WN // c.WNITER
    if sm % c.TM or sn % c.TN:
        return f"warp sub-tile {sm}x{sn} is not a whole number of {c.TM}x{c.TN} thread tiles"
    if (sm // c.TM) * (sn // c.TN) != 32:
        return (f"warp sub-tile {sm}x{sn} / thread tile {c.TM}x{c.TN} gives "
                f"{(sm // c.TM) * (sn // c.TN)} threads, a warp has 32")
    return None


@_tiled("VECTOR")
def _vector(c, d):
    return _choice(c.vec, (1, 2, 4))


@_staged("VECTORIZE")
def _vectorize(c, d):
    if c.threads < 32:   # THREADS names it; a warp tile larger than the block gives 0 threads
        return None
    out = []
    for op, rows, cols in (("A", *_global_tile(c, "A")), ("B", *_global_tile(c, "B"))):
        if cols % c.vec:
            out.append(f"{op}'s contiguous tile side {cols} is not a multiple of vec={c.vec}")
        elif (rows * cols) % (c.vec * c.threads):
            out.append(f"{op} tile {rows}*{cols} = {rows * cols} is not a multiple of "
                       f"{c.vec}*threads = {c.vec * c.threads}")
    return "; ".join(out) or None


def _global_tile(c: KernelConfig, op: str) -> tuple[int, int]:
    """(rows, contiguous columns) of one K step's tile of A or B as it lies in global memory."""
    if op == "A":
        return (c.BM, c.BK) if c.layout[0] == "N" else (c.BK, c.BM)
    return (c.BK, c.BN) if c.layout[1] == "N" else (c.BN, c.BK)


@_tiled("PADDING")
def _padding(c, d):
    if c.pad_a < 0 or c.pad_b < 0 or c.pad_a > 32 or c.pad_b > 32:
        return f"pad_a = {c.pad_a}, pad_b = {c.pad_b}; padding runs from 0 to 32 floats"
    return None


@_simt("SWIZZLE")
def _swizzle(c, d):
    out = []
    for op, swz, pad, (_, row) in (("A", c.swz_a, c.pad_a, c.a_tile_shape), ("B", c.swz_b, c.pad_b, c.b_tile_shape)):
        if swz == 1:
            continue
        if swz not in (2, 4, 8, 16, 32):
            out.append(f"swz_{op.lower()} = {swz}; valid: 1 (off), 2, 4, 8, 16, 32")
        elif pad:
            out.append(f"{op} has both padding ({pad}) and swizzle ({swz}); choose one")
        elif row % (4 * swz):
            out.append(f"{op}'s shared row of {row} floats holds {row // 4} 16-byte chunks, "
                       f"not a multiple of swz_{op.lower()} = {swz}")
    if c.swz_a > 1 and not c.a_kmajor:
        out.append("swz_a needs a_kmajor (the swizzle permutes 16-byte chunks of M)")
    return "; ".join(out) or None


@_simt("STAGES")
def _stages(c, d):
    if c.stages > 8:
        return f"stages = {c.stages}; at most 8"
    if c.stages > 2 and not c.async_copy:
        return f"stages = {c.stages} needs async_copy (register staging double-buffers at most)"
    if c.async_copy and c.stages < 2:
        return "async_copy needs stages >= 2 (a copy must have a buffer to land in while another is read)"
    return None


@_simt("ASYNC_ARCH")
def _async_arch(c, d):
    if c.async_copy and d.cc < (8, 0):
        return f"cp.async needs sm_80 or newer; the {d.key} is {d.arch}"
    return None


@_staged("SHARED_MEMORY")
def _smem(c, d):
    if c.smem_bytes > d.smem_per_block_optin:
        return (f"{c.smem_bytes} bytes of shared memory ({c.stages} stages x {c.smem_per_stage}); "
                f"the {d.key} allows {d.smem_per_block_optin} per block. Fewer stages or a smaller tile fit")
    return None


def register_estimate(c: KernelConfig) -> int:
    """Rough registers per thread: accumulators, fragments (twice with prefetch), addressing."""
    frags = (c.WMITER * c.TM + c.WNITER * c.TN) * (2 if c.prefetch else 1)
    staging = 0 if c.async_copy else (c.BM * c.BK + c.BN * c.BK) // max(c.threads, 1)
    return c.accumulators + frags + staging + 28


@_simt("REGISTERS")
def _registers(c, d):
    est = register_estimate(c)
    if est > 255:
        return f"about {est} registers per thread ({c.accumulators} accumulators); a thread has at most 255"
    if est * c.threads > d.regs_per_block:
        return f"about {est} registers x {c.threads} threads = {est * c.threads}; a block has {d.regs_per_block}"
    return None


@_simt("FRAGMENTS")
def _fragments(c, d):
    bad = _choice(c.frag, FRAGMENT_LOADS)
    if bad:
        return bad
    sm, sn = c.WM // max(c.WMITER, 1), c.WN // max(c.WNITER, 1)
    if c.frag == "shfl" and (sm > 32 or sn > 32):
        return f"shfl fragments need warp sub-tiles of at most 32x32 (one value per lane), got {sm}x{sn}"
    return None


@_staged("SPLIT_K")
def _split_k(c, d):
    if c.split_k > 64:
        return f"split_k = {c.split_k}; at most 64"
    return _choice(c.reduce, REDUCTIONS)


@_simt("SIMT_DEFAULTS")
def _simt_defaults(c, d):
    # coalesced only changes the naive kernels; a simt config that set it would share its name
    return None if c.coalesced else "coalesced = false applies to the naive family only; leave it true"


@_staged("BOUNDS")
def _bounds(c, d):
    return _choice(c.bounds, BOUNDS)


@_staged("OCCUPANCY")
def _occupancy(c, d):
    if c.min_blocks > 1 and c.min_blocks * c.smem_bytes > d.smem_per_sm:
        return (f"min_blocks = {c.min_blocks} blocks x {c.smem_bytes} bytes of shared memory exceed the "
                f"{d.smem_per_sm} bytes of an SM")
    if c.min_blocks * c.threads > d.max_threads_per_sm:
        return f"min_blocks = {c.min_blocks} x {c.threads} threads exceed {d.max_threads_per_sm} per SM"
    return None


# ---- entry points ---------------------------------------------------------------------------
def as_device(device: DeviceLike | None) -> DeviceSpec:
    """A DeviceSpec from a spec, a GPU or arch name, or None (the h100 as the default target)."""
    if device is None:
        return for_arch("sm_90")
    return device if isinstance(device, DeviceSpec) else for_arch(device)


_STRUCTURAL = {"FAMILY", "LAYOUT", "POSITIVE"}


def explain(config: KernelConfig, device: DeviceLike | None = None) -> list[Violation]:
    """Every rule the config breaks on the device (a DeviceSpec, GPU name or sm_XX); [] if valid."""
    dev = as_device(device)
    if config.family not in FAMILIES:   # no rule of any family applies to it
        return [Violation("FAMILY", _family(config, dev))]
    out: list[Violation] = []
    for name, fn, families in _RULES:
        if config.family not in families:
            continue
        reason = fn(config, dev)
        if reason:
            out.append(Violation(name, reason))
            if name in _STRUCTURAL:  # later rules divide by these values
                return out
    return out


def validate(config: KernelConfig, device: DeviceLike | None = None) -> KernelConfig:
    """Return the config unchanged, or raise InvalidConfig listing every violated rule."""
    violations = explain(config, device)
    if violations:
        raise InvalidConfig(config, violations)
    return config


def rule_names() -> list[str]:
    """Names of all rules, in the order they are checked."""
    return [name for name, _, _ in _RULES]


from . import rules_tc  # noqa: E402,F401  (registers the tensor-core families' rules)
from . import rules_wmma  # noqa: E402,F401  (registers the half family's rules)
from . import rules_wgmma  # noqa: E402,F401  (registers the Hopper wgmma variant's rules)
