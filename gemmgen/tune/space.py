"""The search space as data: load ``search/<family>.json`` and draw KernelConfigs through a trial.

A space lists parameters in drawing order. Each is a set of cases (``when`` an expression over
earlier parameters holds) of one kind: ``choices``, ``range``, ``pow2``, ``value`` or ``derive``.
Drawing is define-by-run: the trial (an Optuna trial, or anything with ``suggest_categorical`` and
``suggest_int``) is asked only for the parameters the earlier ones make meaningful, and structural
parameters are derived (WMITER fills the warp) so most draws pass the rules. Expressions may also
name the target GPU's shared memory (DEVICE_NAMES), so a space draws only what fits.

>>> space = load_space("simt", "sm_90")
>>> configs = sample_valid(3, "sm_90", seed=1)
>>> len({c.name for c in configs}), all(c.family == "simt" for c in configs)
(3, True)
>>> space.params_of(configs[0]) is not None
True
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..base.devices import DeviceSpec, UnknownDevice, for_arch
from ..base.paths import data_dir
from ..base.shape import Shape
from ..kernel.config import FAMILIES, KernelConfig
from ..kernel.rules import explain
from .space_parts import FIELDS as _FIELDS, KINDS as _KINDS, SAMPLED as _SAMPLED
from .space_parts import Case, Expr, Param, SpaceError, Trial

_DEFAULTS = KernelConfig().to_dict()

SCHEMA = 1
# Limits of the target GPU in bytes (the given device, else the architecture's representative one),
# so a space can keep its draws inside shared memory instead of sampling configs the rules reject.
DEVICE_NAMES = ("smem_per_block", "smem_per_sm")
_CONTEXT = ("layout", "family", *DEVICE_NAMES)   # names every expression may use besides earlier parameters


@dataclass(frozen=True)
class Space:
    """The parameters of one template family for one architecture, in drawing order."""

    family: str
    arch: str
    params: tuple[Param, ...]
    source: str = ""
    limits: tuple[tuple[str, int], ...] = ()   # DEVICE_NAMES with their values, where the file uses them

    def _context(self, layout: str) -> dict[str, Any]:
        return {"layout": layout, "family": self.family, **dict(self.limits)}

    def sample(self, trial: Trial, layout: str = "NN") -> KernelConfig:
        """Draw one config through the trial (define-by-run: conditional parameters only when used)."""
        values = self._context(layout)
        for p in self.params:
            case = p.case_for(values)
            if case is not None:
                values[p.name] = case.draw(trial, p.name, values)
            elif p.name in _DEFAULTS:   # later expressions see the default the config keeps
                values[p.name] = _DEFAULTS[p.name]
        return KernelConfig.from_dict({k: v for k, v in values.items() if k in _FIELDS})

    def params_of(self, config: KernelConfig) -> dict[str, Any] | None:
        """The trial parameters that draw exactly this config, or None where the space cannot reach it.

        Used to enqueue presets as ordinary trials, so the sampler learns from them.
        """
        if config.family != self.family:
            return None
        values = self._context(config.layout)
        fixed: dict[str, Any] = {}
        for p in self.params:
            case = p.case_for(values)
            if case is None:
                if p.name in _DEFAULTS:
                    values[p.name] = _DEFAULTS[p.name]
                continue
            values[p.name] = p.value_in(config)
            if case.kind in _SAMPLED:
                fixed[case.trial_name(p.name)] = case.internal(values[p.name])
        if None in fixed.values():
            return None
        return fixed if self.sample(_FixedTrial(fixed), config.layout) == config else None

    def grid(self) -> dict[str, list]:
        """Every sampled trial parameter with all its values (for Optuna's GridSampler)."""
        out: dict[str, list] = {}
        for p in self.params:
            for case in p.cases:
                if case.kind in _SAMPLED:
                    out[case.trial_name(p.name)] = case.grid_values()
        return out

    def grid_size(self) -> int:
        return math.prod(len(v) for v in self.grid().values())


class _FixedTrial:
    """Replays given trial parameters (a lighter optuna.trial.FixedTrial without its warnings)."""

    def __init__(self, params: Mapping[str, Any]):
        self.params = params

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return self.params[name]

    def suggest_int(self, name: str, low: int, high: int) -> int:
        return self.params[name]


class _RandomTrial:
    """Uniform draws from a seeded generator: sampling without an Optuna study."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return choices[self.rng.randrange(len(choices))]

    def suggest_int(self, name: str, low: int, high: int) -> int:
        return self.rng.randint(low, high)


# ---- loading --------------------------------------------------------------------------------
def space_file(family: str = "simt") -> Path:
    """The shipped space file of a template family."""
    return data_dir("search") / f"{family}.json"


def families() -> list[str]:
    """Template families with a shipped search space, in KernelConfig.FAMILIES order.

    >>> families()[:3]
    ['simt', 'tf32', 'tf32x3']
    """
    return [f for f in FAMILIES if space_file(f).is_file()]


ON_REQUEST = ("skinny",)   # fp32 families matmul runs only when a call names them: not tuned unless --family says


def default_families(device: DeviceSpec) -> list[str]:
    """The families a search tunes where ``--family`` is not given: each fp32-accurate family with a shipped
    space (but :data:`ON_REQUEST`) of which some preset runs on ``device`` (:func:`gemmgen.kernel.rules.explain`).

    >>> from gemmgen.base.devices import known
    >>> default_families(known("h100")), default_families(known("rtx3090"))
    (['simt', 'tf32x3'], ['simt', 'tf32x3'])
    """
    from ..kernel.families import PRECISION
    from ..kernel.presets import all_presets

    runs = {p.family for p in all_presets() if not explain(p, device)}   # every preset, judged by the rules alone
    return [f for f in families() if PRECISION.get(f) == "fp32" and f not in ON_REQUEST and f in runs]


def load_space(family: str | None = None, arch: str = "sm_90", path: str | Path | None = None,
               device: DeviceSpec | None = None) -> Space:
    """Load a family's space (the shipped file unless ``path`` is given) with ``arch``'s overrides.

    ``family`` defaults to the file's own (simt for the shipped files); a file of another family
    is refused. ``device`` supplies the limits expressions may name (DEVICE_NAMES); without it
    they are those of ``devices.for_arch(arch)``.

    >>> load_space("tf32x3", "sm_80").family
    'tf32x3'
    >>> load_space("wmma")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    gemmgen.tune.space_parts.SpaceError: no search space for family 'wmma'; valid: simt, tf32, tf32x3...
    """
    if path is None and family is not None and family not in families():
        raise SpaceError(f"no search space for family {family!r}; valid: {', '.join(families())}")
    file = Path(path) if path else space_file(family or "simt")
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise SpaceError(f"no search space file {file}") from None
    except json.JSONDecodeError as e:
        raise SpaceError(f"{file} is not valid JSON: {e}") from None
    space = _parse_space(data, arch, str(file), device)
    if family is not None and space.family != family:
        raise SpaceError(f"{file} is the space of family {space.family!r}, not {family!r}")
    return space


def _parse_space(data: Any, arch: str, where: str, device: DeviceSpec | None = None) -> Space:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SpaceError(f"{where}: expected an object with \"schema\": {SCHEMA}")
    family = str(data.get("family", "simt"))
    if family not in FAMILIES:
        raise SpaceError(f"{where}: family {family!r} is not one of {', '.join(FAMILIES)}")
    specs = dict(data.get("params") or {})
    for name, spec in (data.get("arch") or {}).get(arch, {}).items():
        if name not in specs:
            raise SpaceError(f"{where}: arch {arch} overrides unknown parameter {name!r}")
        specs[name] = spec
    params: list[Param] = []
    for name, spec in specs.items():
        params.append(_parse_param(name, spec, [*_CONTEXT, *(p.name for p in params)], f"{where}: {name}"))
    if not params:
        raise SpaceError(f"{where}: no parameters")
    return Space(family, arch, tuple(params), where, _limits(params, arch, device, where))


def _limits(params: list[Param], arch: str, device: DeviceSpec | None, where: str) -> tuple:
    """The device limits the space's expressions name, as (name, bytes) pairs."""
    used = {n for p in params for c in p.cases for e in (c.when, c.arg) if isinstance(e, Expr) for n in e.names}
    if not used & set(DEVICE_NAMES):
        return ()
    if device is None:
        try:
            device = for_arch(arch)
        except UnknownDevice as e:
            raise SpaceError(f"{where}: names device limits ({', '.join(DEVICE_NAMES)}), but {e}") from None
    return (("smem_per_block", device.smem_per_block_optin), ("smem_per_sm", device.smem_per_sm))


def _parse_param(name: str, spec: Any, known: list[str], where: str) -> Param:
    raw = spec if isinstance(spec, list) else [spec]
    cases = tuple(_parse_case(c, known, f"{where}[{i}]" if isinstance(spec, list) else where)
                  for i, c in enumerate(raw))
    if sum(c.kind in _SAMPLED for c in cases) > 1:
        raise SpaceError(f"{where}: at most one sampled case per parameter (a trial name has one distribution)")
    base = raw[0] if raw and isinstance(raw[0], dict) else {}
    helper = base.get("from_config")
    return Param(name, cases, Expr.parse(helper, f"{where}.from_config") if helper else None)


def _parse_case(case: Any, known: list[str], where: str) -> Case:
    if not isinstance(case, dict):
        raise SpaceError(f"{where}: a case is an object, got {case!r}")
    unknown = set(case) - {*_KINDS, "when", "doc", "from_config"}
    kinds = [k for k in _KINDS if k in case]
    if unknown or len(kinds) != 1:
        raise SpaceError(f"{where}: needs exactly one of {', '.join(_KINDS)} (plus when/doc/from_config), "
                         f"got keys {', '.join(sorted(case))}")
    kind, arg = kinds[0], case[kinds[0]]
    when = Expr.parse(case["when"], f"{where}.when") if "when" in case else None
    if kind == "derive":
        arg = Expr.parse(arg, f"{where}.derive")
    _check_arg(kind, arg, where)
    for expr in (when, arg if kind == "derive" else None):
        missing = sorted(expr.names - set(known) - {"true", "false"}) if expr else []
        if missing:
            raise SpaceError(f"{where}: {expr.text!r} names {', '.join(missing)}, not an earlier parameter")
    return Case(kind, tuple(arg) if kind == "choices" else arg, when)


def _check_arg(kind: str, arg: Any, where: str) -> None:
    if kind == "choices" and not (isinstance(arg, list) and arg):
        raise SpaceError(f"{where}: choices must be a non-empty list")
    if kind in ("range", "pow2"):
        ok = (isinstance(arg, list) and len(arg) == 2 and all(isinstance(x, int) and x >= 0 for x in arg)
              and arg[0] <= arg[1])
        if not ok or (kind == "pow2" and any(x < 1 or x & (x - 1) for x in arg)):
            what = "powers of two" if kind == "pow2" else "integers"
            raise SpaceError(f"{where}: {kind} takes [low, high] {what} with low <= high, got {arg!r}")


# ---- using a space --------------------------------------------------------------------------
def sample_valid(n: int, arch: str = "sm_90", seed: int = 0, layout: str = "NN", family: str = "simt",
                 space: Space | None = None) -> list[KernelConfig]:
    """``n`` distinct random configs that break no rule on ``devices.for_arch(arch)``.

    >>> len(sample_valid(5, "sm_86", seed=3))
    5
    """
    space = space or load_space(family, arch)
    rng, found = random.Random(seed), {}
    for _ in range(max(1000, 2000 * n)):   # most draws are valid (draws.invalid_draws); this bound is generous
        config = space.sample(_RandomTrial(rng), layout)
        if config.name not in found and not explain(config, arch):
            found[config.name] = config
            if len(found) == n:
                return list(found.values())
    raise SpaceError(f"found only {len(found)} of {n} valid {family} configs for {arch} in {space.source}")


def default_shapes(path: str | Path | None = None) -> list[Shape]:
    """The shapes a search tunes when none are given (``search/shapes.json``).

    >>> [str(s) for s in default_shapes()]
    ['4096x4096x4096/NN']
    """
    file = Path(path) if path else data_dir("search") / "shapes.json"
    try:
        entries = json.loads(file.read_text())["shapes"]
        return [Shape.parse(s) for s in entries]
    except (OSError, KeyError, TypeError, json.JSONDecodeError, ValueError) as e:
        raise SpaceError(f"{file}: expected {{\"shapes\": [\"MxNxK/NN\", ...]}}: {e}") from None
