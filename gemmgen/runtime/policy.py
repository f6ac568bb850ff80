"""Every threshold of the planner and the time model, in one frozen value: :class:`Policy`.

The defaults are in code (below, each with its reason); a GPU's results file may override named
fields in an optional ``"policy"`` object (:meth:`Policy.overridden`: an unknown name or a value of
the wrong kind is refused in one line). Tests and A/B tools pass a variant
(``dataclasses.replace(DEFAULT, copy_share=0.4)``) instead of changing module constants.

>>> DEFAULT.margin, DEFAULT.replace(margin=0.1).margin
(0.05, 0.1)
>>> Policy.overridden({"copy_share": 0.4}, "h100.json").copy_share
0.4
>>> Policy.overridden({"copyshare": 0.4}, "h100.json")
Traceback (most recent call last):
...
ValueError: h100.json: policy field 'copyshare' is unknown (close: copy_share, split_copy_share)
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

from ..base.gpus import ARCHS, GRID_Y_LIMIT


@dataclass(frozen=True)
class Policy:
    """The planner's and the time model's thresholds (see the module docstring)."""

    # ---- the time model of a timed kernel (runtime.predict) -------------------------------------------
    launch_ms: float = 0.003        # one more kernel launch in the sequence (split-K's scale or reduce, a copy)
    width: float = 0.6              # width of the Gaussian over log-distance for the correction (e^0.6 = 1.8x apart)
    prior: float = 0.05             # weight of "the fit is right" against the measured neighbours' ratios
    unaligned: float = 1.5          # unaligned rows with no unaligned measurement near: 4-byte copies (4097^3: 1.4-1.6x)
    unaligned_ws: float = 1.2       # ... in a warp-specialized cp.async kernel, whose producer warpgroup issues the
                                    # 4-byte copies beside the consumers' math (1.5 -> 1.2, changed plans of 10 seeds:
                                    # H100 1.166x -> 1.275x, H200 1.167x -> 1.254x)
    unaligned_simt: float = 1.1     # ... in a SIMT kernel, which loads through registers and is bound by its FMAs
                                    # (its unaligned H100 timings ran a median 1.02x its fit on aligned ones)
    extrapolated: float = 0.2       # share added to a prediction with no measurement of its regime near
    sparse: float = 1.0             # share added, beside `extrapolated`, where the kernel has fewer than `sparse_points`
    sparse_points: int = 3          # measurements: one or two shapes fix no per-step cost (a search's winner timed on
                                    # its own shape alone extrapolates its fit to every other)
    reach: float = 0.5              # share added per doubling of K steps beyond the most any measurement of the kernel
                                    # ran, up to `steady` steps: a kernel timed only on shallow K has its per-step cost unseen
    steady: int = 16                # K steps after which a pipeline runs its steady state
    fma_floor: float = 1.35         # the least a block-step of an FMA kernel costs, as a multiple of its FMAs at the SM's
                                    # peak; 0: no floor (no FMA loop issues at the peak: at 1.0 a split SIMT TT tile
                                    # fitted on shallow K won deep TT plans and ran 0.81-0.90x cuBLAS)
    mma_floor: float = 1.0          # ... of a TF32 tensor-core kernel, as a multiple of its MMAs at the datasheet's
                                    # mma.sync or wgmma rate; 0: no floor
    max_resident: int = 8           # the most blocks per SM the fit tries (1: no latency term)
    min_points: int = 4             # fewer measurements to fit: no latency term
    closer: float = 0.98            # a larger `resident` must fit this much better (sum of squares) to be taken
    latency_simt: bool = True       # fit the latency term for the SIMT kernels too, on all their measurements:
                                    # fitted on a few aligned one-wave points, many-wave shallow shapes ran 0.46-0.57x
                                    # their fit (12 launch-sized seeds: H100 1.201x -> 1.247x, H200 1.188x -> 1.219x)
    floor: float = 0.9              # share of the least time any kernel was measured at on the GPU that every launch
                                    # pays (the model's base); 0: launches free
    reduce_bandwidth: float = 0.8   # share of the datasheet DRAM bandwidth split-K's reduce traffic is modelled at
    transfer: float = 1.1           # a kernel serving another layout than it was timed in, where no pair of timings says

    # ---- copies before the kernel (runtime.planner's guards) ------------------------------------------
    copy_bandwidth: float = 0.7     # share of the datasheet DRAM bandwidth a copy kernel is predicted to move
    transpose: float = 1.25         # a tiled transposing copy's time over a straight copy's of the same bytes
    pair_launches: int = 2          # launches counted for copies of both operands: they go out as one launch, but
                                    # counting one lost (H100, 16 of 624 random plans changed, most to copies into
                                    # cp.async kernels: 1.272x -> 1.168x)
    min_pack_ms: float = 0.05       # below this predicted time a request never copies: copies cost launches and host
                                    # time the GPU no longer hides (two copies: 42-66 us of host time on the H100)
    small_pack_ms: float = 0.2      # below this, copies must also pass the small-copy guard:
    small_needs_tma: bool = True    # ... feed a TMA kernel (its fits predict within 1-6%; a cp.async kernel's within 30%),
    copy_share: float = 0.8         # ... cost at most this share of the kernel they feed,
    split_copy_share: float = 0.3   # ... or, into a split-K one, at most this share (its reduce adds a launch: only a
                                    # skinny operand's copy pays; 4096x16x16384 NN 0.94x -> 1.34x),
    min_stage_k: int = 16           # ... and feed at least half a 32-deep K step (4687x9902x35 NN 0.69x -> 0.95x)
    cheap_pack: float = 0.05        # aligning copies this small a share of the product are made on the unaligned guess alone
    margin: float = 0.05            # a layout change must win by this share: a second copy and its host time

    # ---- the small-product route (runtime.small): which requests skip the GEMM kernels -----------------
    dots_max: int = 8               # dots: M and N up to this (at most 8, gg_dots8's 64 sums a thread; 1: no dots)
    dots_min_k: int = 32            # dots: K from this (below, the launch is all: the tuned kernels ran 0.5-1 us quicker)
    outer_k: int = 8                # outer products: K up to this (0: none), and up to 16 where C has
    outer_big: int = 2**23          # this many outputs or more (K = 12..16 won at 128x65536x12, lost at 1000x1000x16)

    # ---- the matrix-vector route (runtime.gemv): block shape and K split of one row or column of C ------
    gemv_waves: int = 2             # blocks an SM a kernel should have before K is split: enough loads in flight
    gemv_col_rounds: int = 4        # the most rounds of eight loads a thread of gg_gemv_cols waits for in turn before K
                                    # is split (a split costs a reduce kernel)
    gemv_row_rounds: int = 32       # ... of four (eight) loads, a lane of gg_gemv_rows (rows8)
    gemv_max_slices: int = 128      # the most K slices: the workspace holds slices x outputs floats
    gemv_min_slice: int = 64        # the fewest k a slice walks (shorter slices: more reduce traffic than loads saved)
    gemv_col_width: int = 64        # the most threads across a block of gg_gemv_cols (4 outputs each; a power of two):
                                    # the rest of the 256 walk k, at least four k-groups
    gemv_row_deep: int = 3          # gg_gemv_rows8 (eight loads in flight a lane) below this many blocks an SM, else
                                    # gg_gemv_rows (four): few blocks need more loads each to fill the memory pipe
    gemv_row_few: int = 2           # rounds of loads a lane of gg_gemv_rows(8) waits for that are not split where blocks
                                    # are a quarter of the SMs or more (the reduce costs more than the rounds)
    gemv_wide: int = 1              # rows of gg_gemv_rows widen across warps (gg_gemv_rows_wide) while blocks are fewer
                                    # than this many an SM, where that saves a K split (0: never; widening below two
                                    # waves without saving a split loses: fewer loads in flight)

    # ---- the small-product route's launches (runtime.small) --------------------------------------------
    dots_slice_bytes: int = 32768   # dots: A's and B's bytes a block reads, about (less: more slices, up to the blocks
                                    # an SM holds): enough loads a block to hide the reduce's cost
    outer_rows: int = 16            # outer: rows of C a thread walks at most (B's values kept in its registers)
    outer_waves: int = 2            # outer: blocks an SM wanted before a thread's rows halve

    # ---- launches of the loaded GEMM kernels (measure.launch.LoadedKernel, given them by the library) -------
    early_after_copies: bool = True  # a kernel that waits in the kernel for the grid ahead (wgmma, sm_90) is placed
                                     # while matmul's copies finish, as their programmatic dependent
    early_after_scale: bool = True   # ... and while an atomic split's scale kernel finishes (neither triggers early:
                                     # the scale kernel triggering at its start lost up to 24% on the H100)

    # ---- built-in kernels (runtime.builtin, runtime.analytic) -------------------------------------------
    untimed_builtins: bool = False  # built-in kernels a GPU's timings miss compete beside the timed ones (load()
                                    # turns it on; a library built from a test's or tool's timings keeps to them)
    builtin_margin: float = 1.25    # ... that much slower than their analytic model says: its median error is
                                    # 11-14%, a fitted kernel's near its measurements a few percent

    # ---- the kernels planned ----------------------------------------------------------------------------
    arch: str = ""                  # plan only kernels valid on this architecture too (sm_75 ... sm_121), say sm_80 on an
                                    # H100 for an A100's families (no wgmma, no TMA, its shared memory); "": this GPU's own

    # ---- first-call tuning (runtime.autotune) ---------------------------------------------------------
    tune_margin: float = 0.02       # a timed candidate replaces the plan only this much faster (a median of 5 runs
                                    # moves ~1% by noise)
    tune_per_family: int = 2        # the first of each family timed besides the top ones (a far SIMT prediction
                                    # can be 1.4x off)

    def __post_init__(self):
        if not 1 <= self.dots_max <= 8:
            raise ValueError(f"policy dots_max={self.dots_max}: 1 (no dots) to 8 (gg_dots8, the largest)")
        if not 0 <= self.outer_k <= 16:
            raise ValueError(f"policy outer_k={self.outer_k}: 0 (none) to 16 (gg_outer16, the deepest)")
        if self.arch and self.arch not in ARCHS:
            raise ValueError(f"policy arch={self.arch!r}: one of {', '.join(ARCHS)}, or '' (this GPU's own)")
        width = self.gemv_col_width
        if not (1 <= width <= 256 and width & (width - 1) == 0):
            raise ValueError(f"policy gemv_col_width={width}: a power of two from 1 to 256 (threads of a 256-thread block)")
        for name in ("gemv_waves", "gemv_col_rounds", "gemv_row_rounds", "gemv_max_slices", "gemv_min_slice",
                     "dots_slice_bytes", "outer_rows", "outer_waves"):
            if getattr(self, name) < 1:
                raise ValueError(f"policy {name}={getattr(self, name)}: 1 or more")
        if self.gemv_max_slices > GRID_Y_LIMIT:   # the slices are gridDim.y
            raise ValueError(f"policy gemv_max_slices={self.gemv_max_slices}: at most {GRID_Y_LIMIT} (gridDim.y's limit)")

    def replace(self, **changes: Any) -> "Policy":
        """This policy with ``changes`` (field names; :func:`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def overridden(cls, overrides: Mapping[str, Any] | None, where: str = "policy",
                   base: "Policy | None" = None) -> "Policy":
        """``base`` (the defaults) with the named fields of ``overrides`` (a results file's ``"policy"``
        object) set; ValueError in one line, naming ``where``, for an unknown field or a value of the
        wrong kind (see the module example)."""
        base = base or cls()
        if not overrides:
            return base
        if not isinstance(overrides, Mapping):
            raise ValueError(f"{where}: 'policy' is a {type(overrides).__name__}, not an object of field: value")
        changes = {name: field_value(name, v, where) for name, v in overrides.items()}
        try:
            return dataclasses.replace(base, **changes)
        except ValueError as err:   # a value out of its field's range (__post_init__): say where it came from
            raise ValueError(f"{where}: {err}") from None


def from_text(text: str, where: str = "GEMMGEN_POLICY") -> dict[str, Any]:
    """Policy overrides written ``name=value,name=value`` (an environment variable's or a command line's):
    numbers as numbers, ``true``/``false`` as 0/1, anything else a string; ValueError in one line for an
    item without ``=``. :meth:`Policy.overridden` then checks names and kinds.

    >>> from_text("arch=sm_80, margin=0.1,latency_simt=false")
    {'arch': 'sm_80', 'margin': 0.1, 'latency_simt': 0}
    """
    out: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, eq, raw = item.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"{where}: {item!r} is not name=value (e.g. arch=sm_80,margin=0.1)")
        out[name.strip()] = _text_value(raw.strip())
    return out


def _text_value(raw: str) -> Any:
    """A whole number, else a number, else true/false as 1/0, else the text itself."""
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return {"true": 1, "false": 0}.get(raw.lower(), raw)


FIELDS = {f.name: f for f in fields(Policy)}
DEFAULT = Policy()


def field_value(name: str, value: Any, where: str = "policy") -> Any:
    """``value`` as the type of Policy field ``name`` (a whole number for int fields, 0/1 or a bool for
    bool fields); ValueError in one line naming the field otherwise.

    >>> field_value("min_stage_k", 32.0), field_value("latency_simt", 0), field_value("margin", 1)
    (32, False, 1.0)
    """
    if name not in FIELDS:
        close = difflib.get_close_matches(name, FIELDS, 3)
        hint = f"close: {', '.join(close)}" if close else f"fields: {', '.join(FIELDS)}"
        raise ValueError(f"{where}: policy field {name!r} is unknown ({hint})")
    kind = type(getattr(DEFAULT, name))
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: policy field {name}={value!r} is not a string (e.g. {name}=sm_80)")
        return value
    if isinstance(value, bool) and kind is not bool or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: policy field {name}={value!r} is not a number ({kind.__name__} wanted)")
    if not math.isfinite(value):
        raise ValueError(f"{where}: policy field {name}={value!r} is not a finite number")
    if kind is bool:
        if value not in (0, 1):
            raise ValueError(f"{where}: policy field {name}={value!r}: give 0 or 1 (false or true)")
        return bool(value)
    if kind is int and value != int(value):
        raise ValueError(f"{where}: policy field {name}={value!r} is not a whole number")
    return kind(value)
