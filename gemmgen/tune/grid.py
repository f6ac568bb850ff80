"""A shape grid as data: the shapes ``gemmgen search --grid`` tunes on a kind of GPU, their order, and
which of them are neighbours.

A grid file ``search/grid-<name>.json`` holds ``shapes`` (``MxNxK/LAYOUT`` as in ``--shape``), the
``gpus`` it serves (aliases such as h100, h200: ``--grid auto`` picks the shipped grid naming the
detected GPU), and a ``description``.

>>> grid = load_grid("hopper")
>>> grid.name, grid.gpus, len(grid.shapes) > 50
('hopper', ('h100', 'h200'), True)
>>> [s.key for s in order_shapes([Shape(64, 64, 64, "NT"), Shape(4096, 16, 4096), Shape(256, 256, 256)])]
['256x256x256/NN', '4096x16x4096/NN', '64x64x64/NT']
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..base.devices import UnknownDevice, resolve_alias
from ..base.paths import data_dir
from ..base.shape import Shape

LAYOUT_ORDER = ("NN", "NT", "TN", "TT")
LAYOUT_STEP = 1.0   # distance between layouts of one shape: as far as doubling one dimension


class GridError(ValueError):
    """A grid name or file that cannot be used; the one-line message says what is wrong and what is valid."""


@dataclass(frozen=True)
class Grid:
    """The shapes of one grid, in file order, and the GPUs (table keys) it serves."""

    name: str
    shapes: tuple[Shape, ...]
    gpus: tuple[str, ...] = ()
    source: str = ""


def shipped_grids() -> list[str]:
    """Names of the grids shipped in ``search/`` (``grid-<name>.json``).

    >>> "hopper" in shipped_grids()
    True
    """
    return sorted(p.stem[len("grid-"):] for p in data_dir("search").glob("grid-*.json"))


def load_grid(text: str) -> Grid:
    """The grid a ``--grid`` value names: a shipped name (``search/grid-<name>.json``) or a file.

    >>> load_grid("nosuch")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tune.grid.GridError: --grid 'nosuch': no such grid or file; shipped grids: hopper..., or auto
    """
    path = Path(text)
    if not (text.endswith(".json") or "/" in text or path.is_file()):
        path = data_dir("search") / f"grid-{text}.json"
        if not path.is_file():
            raise GridError(f"--grid {text!r}: no such grid or file; shipped grids: "
                            f"{', '.join(shipped_grids()) or 'none'}, or auto")
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise GridError(f"--grid {text!r}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise GridError(f"--grid {text!r}: cannot be read ({e})") from None
    except json.JSONDecodeError as e:
        raise GridError(f"--grid {text!r}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    name = path.stem[len("grid-"):] if path.stem.startswith("grid-") else path.stem
    return Grid(name, _shapes(data, text), _gpus(data, text), str(path))


def _shapes(data: object, where: str) -> tuple[Shape, ...]:
    example = '{"shapes": ["4096x4096x4096/NN", ...], "gpus": ["h100"]}'
    if not isinstance(data, dict) or not isinstance(data.get("shapes"), list) or not data["shapes"]:
        raise GridError(f"--grid {where!r}: expected a non-empty list of shapes, as in {example}")
    shapes = []
    for i, text in enumerate(data["shapes"]):
        try:
            shapes.append(Shape.parse(text))
        except (ValueError, AttributeError) as e:
            raise GridError(f"--grid {where!r}: shapes[{i}] = {text!r}: {e}") from None
    seen: set[Shape] = set()
    twice = [s.key for s in shapes if s in seen or seen.add(s)]
    if twice:
        raise GridError(f"--grid {where!r}: shape {twice[0]} is listed twice")
    return tuple(shapes)


def _gpus(data: dict, where: str) -> tuple[str, ...]:
    gpus = data.get("gpus", [])
    if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
        raise GridError(f"--grid {where!r}: 'gpus' is a list of GPU names, e.g. [\"h100\", \"h200\"]")
    try:
        return tuple(resolve_alias(g) for g in gpus)
    except UnknownDevice as e:
        raise GridError(f"--grid {where!r}: gpus: {e}") from None


def grid_for_gpu(gpu: str) -> Grid:
    """The shipped grid whose ``gpus`` name this GPU (``--grid auto``); any alias or driver name works.

    >>> grid_for_gpu("NVIDIA H200").name
    'hopper'
    >>> grid_for_gpu("rtx3090")   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tune.grid.GridError: --grid auto: no shipped grid serves the rtx3090; shipped: hopper (h100, h200)...
    """
    try:
        key = resolve_alias(gpu)
    except UnknownDevice:
        key = gpu
    grids = [load_grid(n) for n in shipped_grids()]
    for grid in grids:
        if key in grid.gpus:
            return grid
    have = "; ".join(f"{g.name} ({', '.join(g.gpus)})" for g in grids) or "none"
    raise GridError(f"--grid auto: no shipped grid serves the {key}; shipped: {have}; give --grid NAME or FILE")


def resolve_grid(text: str, gpu: str | None) -> Grid:
    """``--grid NAME|FILE``, or ``auto`` for the detected (or ``--gpu``) GPU's shipped grid."""
    if text == "auto":
        if gpu is None:
            raise GridError("--grid auto needs the GPU: give --gpu NAME, or run on the GPU")
        return grid_for_gpu(gpu)
    return load_grid(text)


# ---- order and neighbours ---------------------------------------------------------------------
def order_shapes(shapes: Iterable[Shape]) -> list[Shape]:
    """NN first, then NT, TN, TT; by size (FLOPs) within a layout, so a shape's smaller neighbours
    tend to finish before it and can warm-start it."""
    return sorted(shapes, key=lambda s: (LAYOUT_ORDER.index(s.layout), s.flops, s.M, s.N, s.K))


def distance(a: Shape, b: Shape) -> float:
    """Euclidean distance of log2 M, N, K, plus LAYOUT_STEP across layouts.

    >>> distance(Shape(1024, 1024, 1024), Shape(2048, 1024, 512, "NT"))
    2.414213562373095
    """
    logs = [math.log2(x) - math.log2(y) for x, y in zip((a.M, a.N, a.K), (b.M, b.N, b.K))]
    return math.hypot(*logs) + (LAYOUT_STEP if a.layout != b.layout else 0.0)


def nearest(shape: Shape, candidates: Sequence[Shape], k: int) -> list[Shape]:
    """The ``k`` candidates nearest to ``shape`` (never itself), nearest first.

    >>> [s.key for s in nearest(Shape(1000, 1000, 1000), [Shape(4096, 4096, 4096), Shape(1024, 1024, 1024)], 1)]
    ['1024x1024x1024/NN']
    """
    others = [c for c in candidates if c != shape]
    return sorted(others, key=lambda c: (distance(shape, c), c.flops))[:k]
