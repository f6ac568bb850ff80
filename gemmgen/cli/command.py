"""The registry of subcommands: a :class:`Command` per module, :data:`COMMANDS` in ``--help`` order.

>>> "emit" in COMMANDS or not COMMANDS    # filled by gemmgen.cli when it is imported
True
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Command:
    """One subcommand: how to set up its parser and how to run it (returns the exit status)."""

    name: str
    help: str                                               # one line in `gemmgen --help`
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""                                   # paragraph at the top of `--help`
    epilog: str = ""                                        # examples at the bottom of `--help`


COMMANDS: dict[str, Command] = {}


def register(command: Command) -> Command:
    """Add a subcommand to the registry (the order of registration is the order in --help)."""
    COMMANDS[command.name] = command
    return command
