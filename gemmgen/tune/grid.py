"""A shape grid: the shapes ``gemmgen search`` tunes and times on a GPU, and which of them are neighbours.

By default (``--grid auto``) the grid is derived from the GPU (:func:`derived_grid`, see
:mod:`.shapeset`). A grid file ``search/grid-<name>.json`` holds ``shapes`` (``MxNxK/LAYOUT`` as in
``--shape``), the ``gpus`` it was made for, and a ``description``; the shipped Hopper files are the
shapes the shipped H100/H200 results were timed on, kept to re-time those.

>>> from gemmgen.base.devices import known
>>> grid = derived_grid(known("rtx3090"))
>>> grid.name, grid.gpus, len(grid.shapes), grid.ordered, grid.every_layout
('derived', ('rtx3090',), 42, True, True)
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..base.devices import DeviceSpec, UnknownDevice, resolve_alias
from ..base.paths import data_dir
from ..base.shape import Shape
from .shapeset import derived_shapes

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
    ordered: bool = False   # shapes already in value order (a derived grid); a file's are ordered by value
    every_layout: bool = False   # timed in all four layouts, not only the one each is tuned in (a derived grid)


def derived_grid(device: DeviceSpec) -> Grid:
    """The grid ``--grid auto`` (and a search given no shapes) tunes on this GPU: :func:`.shapeset.derived_shapes`."""
    return Grid("derived", tuple(derived_shapes(device)), (device.key,),
                f"derived from the {device.name}'s {device.sm_count} SMs", ordered=True, every_layout=True)


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


def resolve_grid(text: str, device: DeviceSpec) -> Grid:
    """``--grid NAME|FILE``, or ``auto``: the grid derived from the device (:func:`derived_grid`)."""
    return derived_grid(device) if text == "auto" else load_grid(text)


# ---- order and neighbours ---------------------------------------------------------------------
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
