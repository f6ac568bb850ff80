"""One entry of the tuned-kernel database: the best kernel of a shape, layout and accuracy class on a GPU.

>>> from gemmgen.kernel.presets import preset
>>> e = Entry.new("512x512x512/TN", preset("v6").replace(layout="TN"), 9.0, 10.0, 40, arch="sm_90")
>>> e.key, e.ratio, e.kernel_config.layout
('512x512x512/TN', 0.9, 'TN')
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from ..base.shape import Shape
from ..codegen.render import render_validated
from ..kernel.coerce import ConfigError
from ..kernel.config import KernelConfig
from .keys import entry_key, parse_key


class ResultsError(ValueError):
    """A results file that cannot be used (corrupt, other schema, other GPU), or a missing entry."""


@dataclass(frozen=True)
class Entry:
    """The best kernel found for one shape, layout and accuracy class on one GPU."""

    key: str                 # shape and layout, plus the precision where not fp32: '4096x4096x4096/NN'
    config: dict             # KernelConfig.to_dict() of the winner
    name: str                # KernelConfig.name: CUDA symbol and cache key
    source_hash: str         # sha256 of the rendered source that was measured
    tflops: float
    cublas_tflops: float     # cuBLAS in the same run, interleaved with the kernel
    ratio: float             # tflops / cublas_tflops (>1 beats cuBLAS)
    date: str                # ISO 8601, UTC
    trials: int              # trials the search spent on this shape
    env: dict = field(default_factory=dict)              # driver, CUDA and gemmgen of the run
    origin: str = field(default="", compare=False)       # file it was read from ('' if new)
    precision: str = ""      # KernelConfig.precision of the winner ('' = read it off the config)

    def __post_init__(self) -> None:
        if not self.precision:   # entries of old files, and entries built without it
            object.__setattr__(self, "precision", self.kernel_config.precision)

    @classmethod
    def new(cls, key: str, config: KernelConfig, tflops: float, cublas_tflops: float, trials: int,
            source_hash: str | None = None, date: str | None = None, *, arch: str | None = None) -> "Entry":
        """An entry for a fresh winner, keyed by shape and the config's precision; the source hash
        defaults to ``render_validated(config, arch).digest``: the source as rendered for the GPU
        (``arch``, its sm_XX) that measured it, whose header names that target's build line.

        >>> from gemmgen.kernel.presets import preset
        >>> Entry.new("64x64x64", preset("v1"), 1.0, 2.0, 5, arch="sm_86").key
        '64x64x64/NN'
        >>> Entry.new("64x64x64", preset("tf32"), 1.0, 2.0, 5, "h" * 64).key
        '64x64x64/NN/tf32'
        """
        if source_hash is None:   # the winner was validated on its GPU by the search that measured it
            if arch is None:
                raise TypeError("Entry.new needs the source_hash, or the arch it was measured on to render it for")
            source_hash = render_validated(config, arch).digest
        ratio = round(tflops / cublas_tflops, 4) if cublas_tflops else 0.0
        shape, precision = parse_key(key) if key.count("/") == 2 else (Shape.parse(key, config.layout), config.precision)
        if precision != config.precision:
            raise ValueError(f"key {key!r} names precision {precision}, but {config.name} computes {config.precision}")
        return cls(entry_key(shape, precision), config.to_dict(), config.name, source_hash, float(tflops),
                   float(cublas_tflops), ratio, date or now(), int(trials), precision=precision)

    @cached_property
    def kernel_config(self) -> KernelConfig:
        """The stored config as a KernelConfig."""
        return KernelConfig.from_dict(self.config)

    @cached_property
    def shape(self) -> Shape:
        """The shape and layout of the stored key (without its precision)."""
        return parse_key(self.key)[0]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (without key and origin, which the file records around it)."""
        d = asdict(self)
        del d["key"], d["origin"]
        return d


_FIELDS: dict[str, tuple[type, ...]] = {
    "config": (dict,), "name": (str,), "source_hash": (str,), "tflops": (int, float),
    "cublas_tflops": (int, float), "ratio": (int, float), "date": (str,), "trials": (int,)}


def parse_entry(key: str, data: Any, where: str) -> Entry:
    """Validate one stored entry; a problem raises ResultsError naming the file and the key."""
    def bad(what: str) -> ResultsError:
        return ResultsError(f"{where}: entry {key!r} {what}")
    if not isinstance(data, dict):
        raise bad(f"is a {type(data).__name__}, not an object")
    for name, kinds in _FIELDS.items():
        if name not in data:
            raise bad(f"lacks the field {name!r}")
        if not isinstance(data[name], kinds) or isinstance(data[name], bool):
            raise bad(f"field {name!r} = {data[name]!r} is not a {kinds[0].__name__}")
    try:
        (shape, precision), config = parse_key(key), KernelConfig.from_dict(data["config"])
    except (ValueError, ConfigError) as exc:
        raise bad(f"is unreadable: {exc}") from None
    if shape.layout != config.layout:
        raise bad(f"holds a {config.layout} kernel under a {shape.layout} key")
    # an old file has no precision field: the config says it
    for what, value in (("key", precision), ("field 'precision'", data.get("precision", precision))):
        if value != config.precision:
            raise bad(f"holds a {config.precision} kernel ({config.family}) under the {what} {value}; "
                      f"its key is {entry_key(shape, config.precision)!r}")
    fields_ = {k: data[k] for k in _FIELDS}
    return Entry(key=entry_key(shape, precision), env=dict(data.get("env") or {}), origin=where,
                 precision=precision, **fields_)


def now() -> str:
    """The current UTC time in ISO 8601, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
