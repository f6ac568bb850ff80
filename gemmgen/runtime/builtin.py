"""The built-in kernels: what ``matmul`` runs on a GPU with no stored timings (out of the box), each
predicted by the analytic model (:mod:`.analytic`) on that GPU, the least predicted time winning.

They are a portfolio of fp32 kernels, ``search/builtin.json``: tile shapes, split-K variants and
small tiles that together serve every regime (large, skinny, shallow and deep K, few tiles). The
portfolio is chosen from tuned GPUs' recorded times by :func:`choose_portfolio` (greedy: each next
kernel the one that brings the most shapes nearest their best measured time), once per family group,
so a request that names a family (``family="simt"``) or a GPU where only some families run (no wgmma
before Hopper, no TF32 on Turing) still has a portfolio of its own. The analytic model's coefficients
are stored beside it. A kernel of the portfolio that a GPU cannot run (:func:`gemmgen.kernel.rules.explain`:
too much shared memory, an instruction the architecture lacks) is left out there.

>>> from gemmgen.base.devices import known
>>> fits = builtin_fits(known("rtx3090"), "fp32")
>>> sorted({f.config.family for f in fits})    # no wgmma before Hopper; TF32 mma.sync from sm_80
['simt', 'tf32x3']
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..base.devices import DeviceSpec
from ..base.files import write_atomic
from ..base.paths import data_dir
from ..kernel.config import KernelConfig
from ..kernel.rules import explain
from ..records.timings import Timings
from .analytic import Analytic, fit_coefficients, fma_rate, kind
from .policy import DEFAULT, Policy

FILE = "builtin.json"
# Portfolio groups: (name, families drawn from, kernels); each group is chosen on its own and the union
# kept, so family="simt" and GPUs without wgmma (sm_80..sm_89, Blackwell) keep kernels of their own.
GROUPS = (("any", ("simt", "tf32x3"), 48), ("simt", ("simt",), 16), ("mma.sync", ("tf32x3/sync",), 12))
MISSING = math.log(3.0)   # a shape none of the chosen kernels was timed on counts as 3x its best time


def load(path: Path | None = None) -> dict:
    """The portfolio file: {"coefficients": {kind: [5 floats]}, "kernels": [config dicts], ...}."""
    return json.loads((path or data_dir("search") / FILE).read_text())


@lru_cache(maxsize=None)
def _portfolio() -> tuple[tuple[KernelConfig, ...], dict]:
    data = load()
    return tuple(KernelConfig.from_dict(k) for k in data["kernels"]), data["coefficients"]


def builtin_fits(spec: DeviceSpec, precision: str, coefficients: Mapping | None = None,
                 timed: Iterable[KernelConfig] = (), margin: float = 1.0, policy: Policy = DEFAULT) -> list[Analytic]:
    """The analytic models, on ``spec``, of the built-in kernels of a precision class that it can run
    (fp32 only: the other classes keep their one preset, :mod:`.precision`; no kernel for a unit the GPU
    lacks, such as TF32 tensor cores), less the tiles of ``timed`` (kernels the GPU's results time, in
    any layout: their measurements serve the others), each predicted ``margin`` times slower than its model."""
    if precision != "fp32":
        return []
    kernels, coef = _portfolio()
    coef = coefficients or coef
    tiles = {c.replace(layout="NN").name for c in timed}   # a config's name in NN: its tile in any layout
    return [Analytic.make(c, spec, coef, margin, policy) for c in kernels
            if c.precision == precision and c.replace(layout="NN").name not in tiles and fma_rate(c, spec) > 0
            and not explain(c, spec)]


def choose_portfolio(tables: Sequence[Mapping[str, Mapping[str, float]]], size: int,
                     allowed: Iterable[str] | None = None, start: Sequence[str] = ()) -> list[str]:
    """Kernel names, greedily: each next the one that most lowers the sum over shapes of log(least time
    among the chosen / least time of all), a shape none of the chosen ran at :data:`MISSING`. ``tables``:
    one per GPU, {shape key: {kernel name: ms}}; ``allowed`` limits the names that may be chosen,
    ``start`` are chosen already.

    >>> t = {"s1": {"a": 1.0, "b": 2.0, "c": 1.1}, "s2": {"a": 3.0, "b": 1.0, "c": 1.2}}
    >>> choose_portfolio([t], 2)
    ['c', 'b']
    """
    names = sorted({n for t in tables for row in t.values() for n in row})
    allowed = None if allowed is None else set(allowed)
    pool = [n for n in names if allowed is None or n in allowed]
    index = {n: i for i, n in enumerate(names)}
    rows = [row for t in tables for row in t.values() if row]
    loss = np.full((len(names), len(rows)), np.inf)
    for j, row in enumerate(rows):
        least = min(row.values())
        for n, ms in row.items():
            loss[index[n], j] = math.log(ms / least)
    current = np.full(len(rows), MISSING)
    chosen = list(start)
    for n in chosen:
        current = np.minimum(current, loss[index[n]])
    candidates = np.array([index[n] for n in pool if n not in chosen], dtype=int)
    while len(chosen) < size and len(candidates):
        gains = np.maximum(current[None, :] - loss[candidates], 0.0).sum(axis=1)
        best = int(np.argmax(gains))
        if gains[best] <= 0:
            break
        pick = candidates[best]
        chosen.append(names[pick])
        current = np.minimum(current, loss[pick])
        candidates = np.delete(candidates, best)
    return chosen


def write(path: Path, kernels: Sequence[KernelConfig], coefficients: Mapping[str, Sequence[float]],
          derived_from: Sequence[str], groups: Mapping[str, int]) -> None:
    """Store a portfolio (atomically): its kernels, the model's coefficients, and where they came from."""
    _portfolio.cache_clear()   # a later builtin_fits in this process reads what was written
    write_atomic(path, {
        "about": "gemmgen's built-in fp32 kernels and the analytic model's coefficients: what matmul runs on a "
                 "GPU with no stored timings. Made by `gemmgen results builtin`.",
        "derived_from": list(derived_from),
        "groups": dict(groups),
        "coefficients": {k: list(v) for k, v in coefficients.items()},
        "kernels": [c.to_dict() for c in kernels],
    })


def group_of(c: KernelConfig) -> str:
    """The family name a portfolio group draws on: the family, with tf32x3's mma.sync kernels apart."""
    return f"{c.family}/sync" if c.family == "tf32x3" and c.mainloop == "mma_sync" else c.family


def derive(tuned: Sequence[tuple[DeviceSpec, Timings]], groups=GROUPS) -> tuple[list[KernelConfig], dict, dict]:
    """(kernels, coefficients, kernels per group) from tuned GPUs' fp32 timings: each group's
    :func:`choose_portfolio` over every GPU's shapes (the union, in order), and the analytic model's
    coefficients fitted on the first GPU's timings (:func:`.analytic.fit_coefficients`)."""
    configs: dict[str, KernelConfig] = {}
    tables = []
    for spec, timings in tuned:
        table: dict[str, dict[str, float]] = {}
        for k in timings.of_precision("fp32"):
            configs[k.config.name] = k.config
            for shape, ms in k.ms.items():
                if ms > 0:
                    table.setdefault(shape, {})[k.config.name] = ms
        tables.append({s: row for s, row in table.items() if len(row) >= 5})   # shapes many kernels ran
    chosen: list[str] = []
    sizes = {}
    for name, families, size in groups:
        allowed = [n for n, c in configs.items() if group_of(c) in families or c.family in families]
        picked = choose_portfolio(tables, size, allowed)
        sizes[name] = len(picked)
        chosen += [n for n in picked if n not in chosen]
    spec, timings = tuned[0]
    coef = fit_coefficients(((k.config, k.resident, k.shapes()) for k in timings.of_precision("fp32")), spec)
    modelled = [configs[n] for n in chosen if kind(configs[n]) in coef]   # a kind the first GPU never ran has no model
    return modelled, coef, sizes
