"""The ``gemmgen`` command line: a registry of subcommands over gemmgen's public API.

Each subcommand module defines a :class:`~.command.Command`; :data:`COMMANDS` maps names to them,
and :func:`register` adds one (bench, search, results, report plug in the same way). Expected user
errors (unknown preset, key or GPU, bad values, invalid configs, unreadable files) end in one line
on stderr and exit status 2; anything else is a bug and keeps its traceback.

>>> main(["presets"])                      # doctest: +ELLIPSIS
preset...block ...
0
"""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import NoReturn, Sequence

from ..base.devices import MissingDependency, NoGpu, UnknownDevice
from ..base.outcome import Failure
from ..kernel.coerce import ConfigError
from ..kernel.presets import UnknownPreset
from ..kernel.rules import InvalidConfig
from .command import COMMANDS, Command, register  # noqa: F401  (Command and register: the registry's API)

PROG = "gemmgen"
USAGE_ERROR = 2

# Errors that mean "the user asked for something wrong" (or for a GPU this machine lacks), not "gemmgen
# is broken". ValueError covers ConfigError, InvalidConfig and UnknownDevice too; they are listed for
# the reader. Option values are checked before any GPU detection (cli.checks).
USER_ERRORS: tuple[type[BaseException], ...] = (ConfigError, InvalidConfig, UnknownPreset, UnknownDevice,
                                                ValueError, Failure, NoGpu, MissingDependency)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the problem and where to read more, no usage dump."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(USAGE_ERROR)


EPILOG = """examples:
  gemmgen demo                                     matmul against cuBLAS on this GPU (without one: emit and build a kernel)
  gemmgen doctor                                   what gemmgen found here (nvcc, CuPy, driver, GPU) and what is missing
  gemmgen presets                                  list the built-in kernels v0..v13
  gemmgen emit --preset v8 > v8.cu                 CUDA source of preset v8 (its "Build:" line builds v8.cu)
  gemmgen emit --preset v8 --harness -o k.cu       ... with a main() that checks it against cuBLAS
  gemmgen explain --preset v12 --arch rtx3090      what a kernel does and whether it fits a GPU

run `gemmgen COMMAND --help` for the options of one command."""


def build_parser() -> Parser:
    """The top-level parser with one sub-parser per registered command."""
    parser = Parser(prog=PROG, description="Generate, check and tune CUDA SGEMM kernels.",
                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for cmd in COMMANDS.values():
        sub = subs.add_parser(cmd.name, help=cmd.help, description=cmd.description or cmd.help,
                              epilog=cmd.epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.configure(sub)
        sub.set_defaults(_command=cmd)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one gemmgen command; returns the exit status (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_command", None):
        parser.print_help(sys.stderr)
        return USAGE_ERROR
    args.command_line = " ".join([PROG, *map(shlex.quote, argv)])   # for the "Produced by" header
    args.notes = []   # lines about the target (devices.target), told after a run that went well: bad input stays one line
    try:
        status = args._command.run(args)
    except USER_ERRORS as err:
        sys.stderr.write(f"{PROG} {args.command}: error: {one_line(err)}\n")
        return USAGE_ERROR
    except BrokenPipeError:         # `gemmgen emit ... | head` closed the pipe: not an error
        return 0
    if status == 0:
        sys.stderr.writelines(f"{PROG} {args.command}: {line}\n" for line in args.notes)
    return status


def one_line(err: BaseException) -> str:
    """An exception as one line; an invalid config lists every violated rule.

    >>> one_line(ValueError("a\\n  b"))
    'a; b'
    """
    if isinstance(err, InvalidConfig):
        rules = "; ".join(str(v) for v in err.violations)
        return f"invalid config {err.config.label or err.config.name}: {rules}"
    text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _register_builtin() -> None:
    from . import bench, demo, doctor, emit, explain, presets, results, search
    for module in (demo, doctor, emit, presets, explain, bench, search, results):
        register(module.COMMAND)
    register(search.REPORT)


_register_builtin()
