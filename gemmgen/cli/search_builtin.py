"""The built-in kernels a search adds on each of its shapes: those of gemmgen's portfolio
(:func:`gemmgen.runtime.builtin.builtin_fits`) that the analytic model predicts fastest there, ranked
as matmul ranks them on a GPU with no timings (moved to the shape's layout where the rules allow it,
:func:`gemmgen.runtime.dispatch.candidates`). The timings stage times them first on each shape, so the
dispatch fitted to those timings can pick them; each tuning study is warm-started with its family's.

>>> from gemmgen.base.devices import known
>>> from gemmgen.base.shape import Shape
>>> picks = predicted_builtins(known("rtx3090"), [Shape(4096, 4096, 4096, "TN")], ["simt", "tf32x3"], 6)
>>> [(len(c), {k.layout for k in c}) for c in picks.values()]
[(6, {'TN'})]
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

TIME_TOP = 6   # built-ins timed on each shape: the picks of matmul's first ranks, at ~0.15 s a pair
FAMILY_TOP = 2  # ... and each family's own first ranks: matmul(family="simt") plans from timings too
WARM_TOP = 3   # built-ins each study measures before it samples (its family's, on its shape)


def predicted_builtins(spec: Any, shapes: Sequence[Any], families: Sequence[str], k: int,
                       family: str | None = None, per_family: int = 0) -> dict[str, list[Any]]:
    """Shape key -> the ``k`` built-in kernels of ``families`` (or of ``family`` alone) the analytic model
    predicts fastest on that shape of ``spec``, fastest first, then the ``per_family`` fastest of each
    family not among them yet; each in the shape's layout (label dropped), valid on ``spec`` and
    computing the shape.

    >>> from gemmgen.base.devices import known
    >>> from gemmgen.base.shape import Shape
    >>> picks = predicted_builtins(known("h100"), [Shape(4096, 4096, 4096)], ["simt", "tf32x3"], 2, per_family=2)
    >>> [c.family for c in picks["4096x4096x4096/NN"]]
    ['tf32x3', 'tf32x3', 'simt', 'simt']
    """
    from ..runtime.builtin import builtin_fits
    from ..runtime.dispatch import candidates, ranked

    fits = [f for f in builtin_fits(spec, "fp32") if f.config.family in families]
    by_layout = {lay: candidates(fits, lay, spec, family) for lay in {s.layout for s in shapes}}
    out: dict[str, list[Any]] = {}
    for s in shapes:
        order = [f for _, f in ranked(by_layout[s.layout], s.M, s.N, s.K, s.layout)]
        best = order[:k]
        for fam in dict.fromkeys(f.config.family for f in order) if per_family else ():
            missing = per_family - sum(f.config.family == fam for f in best)
            best += [f for f in order[k:] if f.config.family == fam][:max(0, missing)]
        out[s.key] = [f.config.in_layout(s.layout, label="") for f in best]
    return out


def warm_builtins(spec: Any, tasks: Sequence[Any], k: int = WARM_TOP) -> dict[Any, tuple]:
    """Task (family, shape) -> the ``k`` built-ins of its family predicted fastest on its shape: the first
    warm starts of its study (:func:`gemmgen.tune.warm.warm_configs`)."""
    out: dict[Any, tuple] = {}
    for family in dict.fromkeys(t.family for t in tasks):
        mine = [t for t in tasks if t.family == family]
        picks = predicted_builtins(spec, [t.shape for t in mine], [family], k, family)
        out.update({t: tuple(picks[t.shape.key]) for t in mine})
    return out


def first_pairs(builtins: Mapping[str, Sequence[Any]], winners: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """Shape key -> what the timings stage times first there: its predicted-fastest built-ins and the
    winners tuned on it (the pairs the dispatch needs most on the shape)."""
    keys = list(dict.fromkeys([*builtins, *winners]))
    return {key: [*builtins.get(key, ()), *winners.get(key, ())] for key in keys}
