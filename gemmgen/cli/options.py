"""Options shared by subcommands that take one kernel config: --preset, --config, --set, --arch.

A config comes from a preset or a JSON file, then ``--set KEY=VALUE`` overrides are applied in
one step (so the unknown-key and type errors name every bad key at once), then it is checked for
the ``--arch`` target.

>>> import argparse
>>> p = argparse.ArgumentParser(); add_config_options(p)
>>> cfg, dev = config_from_args(p.parse_args(["--preset", "v8", "--set", "BK=16", "--arch", "h100"]))
>>> cfg.BK, dev.arch
(16, 'sm_90')
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..base.devices import ARCHS, DEFAULT_ARCH, KNOWN, DeviceSpec, target
from ..kernel.config import KernelConfig
from ..kernel.keys import CHOICES, key_docs
from ..kernel.presets import names
from ..records.best import resolve_preset


def add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add --preset/--config, --set and --arch to a subcommand's parser."""
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--preset", metavar="NAME", help=f"start from a preset ({', '.join(names())})")
    src.add_argument("--config", metavar="FILE.json",
                     help="start from a config saved as JSON ('-' reads standard input)")
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], dest="overrides",
                        help="override one parameter, e.g. --set BK=16 --set stages=3 (repeatable, each key "
                             "once; --list-keys lists them)")
    parser.add_argument("--list-keys", action=ListKeys, help="list the --set keys with their types, defaults, "
                        "valid values and meaning, and exit")
    parser.add_argument("--arch", metavar="TARGET",
                        help=f"validate for this target: {', '.join(ARCHS)} or a GPU name "
                             f"({', '.join(KNOWN)}); default: the GPU present, else {DEFAULT_ARCH}")


class ListKeys(argparse.Action):
    """``--list-keys``: print :func:`keys_text` and exit, like ``--help`` (no --preset needed)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            print(keys_text())
        except BrokenPipeError:   # `--list-keys | head`
            pass
        parser.exit()


def keys_text(width: int = 100) -> str:
    """The config keys ``--set`` takes, one paragraph each, from KernelConfig's fields.

    >>> print(next(line for line in keys_text().splitlines() if line.startswith("BK ")))
    BK  int, default 8: depth of one K step staged in shared memory
    """
    import textwrap

    out = []
    for key, kind, default, doc in key_docs():
        if key == "label":
            continue
        valid = f" (one of {', '.join(CHOICES[key])})" if key in CHOICES else ""
        value = str(default).lower() if kind == "bool" else default if default != "" else '""'
        out += textwrap.wrap(f"{key}  {kind}{valid}, default {value}: {doc}", width, subsequent_indent="    ")
    return "\n".join(out + ["", *textwrap.wrap("Booleans take true or false, integers whole numbers; every "
                                                "combination is checked by rules, and `gemmgen explain` names each "
                                                "one a config breaks.", width)])


def config_from_args(args: argparse.Namespace) -> tuple[KernelConfig, DeviceSpec]:
    """The config the options describe and the device to check it against (not yet validated)."""
    device = target(args.arch, say=getattr(args, "notes", []).append)   # no --arch: the GPU present, else the H100, noted
    if args.preset:
        base = resolve_preset(args.preset, device)
    elif args.config:
        base = load_config(args.config)
    else:
        raise ValueError(f"give --preset NAME ({', '.join(names())}) or --config FILE.json")
    return apply_overrides(base, args.overrides), device


def load_config(path: str) -> KernelConfig:
    """A KernelConfig from a JSON file: the config's dictionary, or a record holding it under 'config'.

    >>> load_config("/nonexistent.json")
    Traceback (most recent call last):
    ...
    ValueError: cannot read config file '/nonexistent.json': No such file or directory
    """
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as err:
        raise ValueError(f"cannot read config file {path!r}: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"config file {path!r} is not text (byte {err.object[err.start]:#04x} at offset "
                         f"{err.start} is not UTF-8); give a JSON file such as `gemmgen explain --json` writes") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"config file {path!r} is not valid JSON: {err}") from None
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]       # a results record or an `explain --json` report
    if not isinstance(data, dict):
        raise ValueError(f"config file {path!r} holds a JSON {type(data).__name__}; "
                         "expected an object of parameters, e.g. {\"BM\": 128, \"BN\": 128}")
    return KernelConfig.from_dict(data)


def apply_overrides(base: KernelConfig, overrides: list[str]) -> KernelConfig:
    """Apply KEY=VALUE strings; the label records that the config left its preset.

    >>> from gemmgen.kernel.presets import preset
    >>> apply_overrides(preset("v5"), ["BK=16"]).label
    'v5 with BK=16'
    """
    if not overrides:
        return base
    changes = parse_overrides(overrides)
    label = f"{base.label} with {', '.join(overrides)}" if base.label else ""
    return base.replace(**{"label": label, **changes})   # an explicit --set label=... wins


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """'KEY=VALUE' strings -> dict of raw string values (KernelConfig.from_dict converts them).

    >>> parse_overrides(["BM=64", "layout=nt"])
    {'BM': '64', 'layout': 'nt'}
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {item!r} is not KEY=VALUE, e.g. --set BK=16")
        if key.strip() in out:
            raise ValueError(f"--set {key.strip()} is given twice ({key.strip()}={out[key.strip()]}, {item.strip()}); "
                             "give each key once")
        out[key.strip()] = value.strip()
    return out
