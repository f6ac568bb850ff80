"""Warm starts of a grid shape's study: built-ins, presets, its neighbours' winners and split-K variants,
enqueued once.

Before the sampler runs, a shape's study measures the built-in kernels of its family that the analytic
model predicts fastest on the shape (chosen by the caller, which knows the model: the runtime stage
comes after this one), the presets its family's space can draw (the
kernels worth dispatching: simt v10..v13, not the teaching steps v2..v9 that a plain search also
measures), the winners of the nearest finished shapes of the same family, moved to this shape's
layout where they stay valid, and for each of those a variant whose ``split_k`` brings tiles x
slices closest to the GPU's SM count: a skinny shape such as 16x4096x16384 has 32 tiles of 128x128
and idles three SMs in four without slices.

>>> from gemmgen.base.devices import known
>>> from gemmgen.kernel.presets import preset
>>> fill_split_k(preset("tf32x3-wgmma"), Shape(16, 4096, 16384), known("h100")).split_k   # 32 tiles x 4
4
>>> fill_split_k(preset("tf32x3-wgmma"), Shape(4096, 4096, 4096), known("h100")) is None  # 1024 tiles
True
"""
from __future__ import annotations

import math
from typing import Sequence

import optuna

from ..base.devices import DeviceSpec
from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..kernel.presets import all_presets
from ..kernel.rules import explain
from .plan import SearchPlan
from .space import Space

SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)   # when the space does not draw split_k
MIN_STEPS = 2                          # K steps (of BK) each slice must keep


def fits(config: KernelConfig, shape: Shape, device: DeviceSpec) -> bool:
    """Whether the config runs this shape on this device: its rules, its layout, and its bounds."""
    return (config.layout == shape.layout and not explain(config, device)
            and config.accepts(shape.M, shape.N, shape.K) is None)


def transfer(config: KernelConfig, shape: Shape, device: DeviceSpec) -> KernelConfig | None:
    """The config in the shape's layout (label dropped), or None where it does not run the shape there.

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> transfer(preset("tf32x3-wgmma"), Shape(4096, 4096, 4096, "TT"), known("h100")).layout
    'TT'
    >>> transfer(preset("tf32x3-wgmma").replace(bounds="none"), Shape(1000, 1000, 1000), known("h100")) is None
    True
    """
    moved = config.in_layout(shape.layout, label="")
    return moved if fits(moved, shape, device) else None


def in_layout(configs: Sequence[KernelConfig], layout: str, device: DeviceSpec) -> list[KernelConfig]:
    """The configs moved to ``layout`` (label dropped) that the rules accept on ``device``: what
    :func:`transfer` checks before a shape's bounds, done once per layout where many shapes share one
    (``replace`` and the rules cost ~1 ms a config)."""
    moved = (c.in_layout(layout, label="") for c in configs)
    return [c for c in moved if not explain(c, device)]


def interleaved(config: KernelConfig, shape: Shape, device: DeviceSpec) -> KernelConfig | None:
    """The SIMT config with the interleaved loop, where it has the loop's other choices (two stages through
    registers, prefetched shared-memory fragments) and the twin runs the shape (rows 16 bytes apart);
    else None. The built-ins come from tuned GPUs' times, where the interleaved kernels ran only the
    aligned shapes and so seldom won a place, yet on aligned NN shapes they are the fastest SIMT loop.

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> interleaved(preset("v10"), Shape(1024, 1024, 1024), known("h100")).name.endswith("_fldspi_k1_chk")
    True
    >>> interleaved(preset("v10"), Shape(1023, 1023, 1023), known("h100")) is None   # rows not 16 bytes apart
    True
    """
    if (config.family != "simt" or config.interleave or config.stages != 2 or config.async_copy
            or not config.prefetch or config.frag != "lds"):
        return None
    twin = config.replace(interleave=True, label="")
    return twin if fits(twin, shape, device) else None


def persistent(config: KernelConfig, shape: Shape, device: DeviceSpec) -> KernelConfig | None:
    """The warp-specialized config walking the tiles of C in a persistent grid of one block an SM, where
    the shape has two waves of its tiles or more (each block then overlaps one tile's epilogue with the
    next tile's loads) and a variant with as many stages as the config or fewer runs it (its C staging tile
    takes shared memory); else None. The search space does not draw the persistent scheduler, and it is
    the fastest 3xTF32 schedule of large shallow products, whose time is mostly epilogues.

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.kernel.presets import preset
    >>> persistent(preset("tf32x3-ws"), Shape(4096, 4096, 32), known("h100")).name.split("_")[-3]
    'p132'
    >>> persistent(preset("tf32x3-ws"), Shape(1000, 1000, 32), known("h100")) is None   # 64 tiles: under a wave
    True
    """
    if not config.warp_specialized or config.scheduler != "plain" or config.split_k > 1:
        return None
    if math.prod(config.tiles(shape.M, shape.N)) < 2 * device.sm_count:
        return None
    for stages in range(config.stages, 1, -1):
        variant = config.replace(scheduler="persistent", persistent_blocks=device.sm_count, stages=stages, label="")
        if fits(variant, shape, device):
            return variant
    return None


def split_choices(space: Space | None) -> tuple[int, ...]:
    """The split_k values the space draws (SPLITS where it draws none).

    >>> from gemmgen.tune.space import load_space
    >>> split_choices(load_space("simt", "sm_90"))[-1]
    32
    """
    for p in space.params if space else ():
        if p.name == "split_k":
            case = next((c for c in p.cases if c.kind in ("choices", "range", "pow2")), None)
            if case is not None:
                values = case.grid_values()
                return tuple(2 ** v for v in values) if case.kind == "pow2" else tuple(values)
    return SPLITS


def fill_split_k(config: KernelConfig, shape: Shape, device: DeviceSpec,
                 choices: Sequence[int] = SPLITS) -> KernelConfig | None:
    """A variant whose tiles x slices comes closest (in ratio) to the SM count, or None where that is the
    config's own split_k or no other valid one exists. Each slice keeps at least MIN_STEPS K steps."""
    tiles = math.prod(config.tiles(shape.M, shape.N))
    steps = -(-shape.K // config.BK)
    options = []
    for s in sorted(set(choices) | {1}):
        if s > 1 and steps < MIN_STEPS * s:
            continue
        variant = config.replace(split_k=s, label="")
        if fits(variant, shape, device):
            options.append((abs(math.log(tiles * s / device.sm_count)), s, variant))
    if not options:
        return None
    _, s, best = min(options, key=lambda o: (o[0], o[1]))
    return None if s == config.split_k else best


def space_presets(space: Space, arch: str) -> list[KernelConfig]:
    """The presets of the space's family that it can draw: the kernels worth dispatching (simt: v10..v13;
    the tensor-core families: their mma.sync and, on sm_90, wgmma presets), not the teaching steps.

    >>> from gemmgen.tune.space import load_space
    >>> [c.label for c in space_presets(load_space("tf32x3", "sm_90"), "sm_90")]
    ['tf32x3', 'tf32x3-wgmma', 'tf32x3-tma', 'tf32x3-ws']
    """
    return [p for p in all_presets(arch) if space.params_of(p) is not None]


def warm_configs(plan: SearchPlan, neighbours: Sequence[tuple[Shape, KernelConfig]],
                 builtins: Sequence[KernelConfig] = ()) -> list[tuple[KernelConfig, dict]]:
    """What a shape's study enqueues, in order, as (config, user attrs): ``builtins`` (the built-in
    kernels predicted fastest on the shape: ``warm``), each followed by its twin (:func:`builtin_starts`), the
    space's presets (``preset``: its label), the neighbours' winners and the split-K variants (``warm``:
    why), each once where it runs the shape.

    ``neighbours`` are (shape, winner) of the nearest finished studies of the family, nearest first.
    """
    shape, device = plan.shape, plan.device
    out: list[tuple[KernelConfig, dict]] = []
    seen: set[str] = set()

    def add(config: KernelConfig | None, attrs: dict) -> None:
        if config is not None and config.name not in seen:
            seen.add(config.name)
            out.append((config, attrs))

    for config, attrs in builtin_starts(plan, builtins):
        add(config, attrs)
    for p in space_presets(plan.space, device.arch):
        add(transfer(p, shape, device), {"preset": p.label})
    for where, winner in neighbours:
        add(transfer(winner, shape, device), {"warm": f"winner of {where.key}"})
    choices = split_choices(plan.space)
    for config, _ in list(out):
        variant = fill_split_k(config, shape, device, choices)
        add(variant, {"warm": f"split_k={variant and variant.split_k} of {config.name}"})
    return out


def enqueue_warm(study: optuna.Study, plan: SearchPlan, neighbours: Sequence[tuple[Shape, KernelConfig]],
                 builtins: Sequence[KernelConfig] = ()) -> list[str]:
    """Enqueue :func:`warm_configs` once per study (user attr ``warm``: their names); a resumed study
    gets nothing new."""
    return enqueue_once(study, plan, warm_configs(plan, neighbours, builtins), "warm")


def builtin_starts(plan: SearchPlan, builtins: Sequence[KernelConfig]) -> list[tuple[KernelConfig, dict]]:
    """The built-ins of the plan's family that run its shape, moved to its layout, each followed by its
    :func:`interleaved` twin (SIMT) or its :func:`persistent` one (warp-specialized): (config, user attrs)."""
    out: dict[str, tuple[KernelConfig, dict]] = {}
    for config in builtins:
        moved = transfer(config, plan.shape, plan.device) if config.family == plan.space.family else None
        if moved is not None:
            out.setdefault(moved.name, (moved, {"warm": "built-in predicted fastest"}))
            for kind, make in (("interleaved", interleaved), ("persistent", persistent)):
                twin = make(moved, plan.shape, plan.device)
                if twin is not None:
                    out.setdefault(twin.name, (twin, {"warm": f"{kind} {moved.name}"}))
    return list(out.values())


def enqueue_builtins(study: optuna.Study, plan: SearchPlan, builtins: Sequence[KernelConfig]) -> list[str]:
    """Enqueue :func:`builtin_starts` once (user attr ``builtins``), after the presets a plain search
    enqueues (:func:`.driver.setup_study`): a ``--shape`` study's warm starts."""
    return enqueue_once(study, plan, builtin_starts(plan, builtins), "builtins")


def enqueue_once(study: optuna.Study, plan: SearchPlan, items: Sequence[tuple[KernelConfig, dict]],
                 attr: str) -> list[str]:
    """Enqueue (config, user attrs) unless the study's user attr ``attr`` says it did (then: those names).
    Configs the space can express are enqueued as its parameters (the sampler learns from them), others
    as whole configs."""
    if attr in study.user_attrs:
        return list(study.user_attrs[attr])
    names = []
    for config, attrs in items:
        params = plan.space.params_of(config)
        study.enqueue_trial(params or {}, user_attrs=attrs if params else {**attrs, "config": config.to_dict()})
        names.append(config.name)
    study.set_user_attr(attr, names)
    return names
