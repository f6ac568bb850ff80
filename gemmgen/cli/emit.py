"""``gemmgen emit``: write the CUDA source of one config (optionally with a cuBLAS-checking main()).

The header's ``// Build:`` line names the file the source goes to: ``-o FILE``, else the regular file
standard output is redirected to (``> foo.cu``, found through /proc/self/fd on Linux), else the
placeholder ``KERNEL.cu`` (a pipe, a terminal, or a system that does not say).

>>> from gemmgen.cli import main
>>> main(["emit", "--preset", "v5", "-o", "/tmp/gemmgen-doctest-v5.cu"])
0
"""
from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path
from typing import IO

from ..codegen.build_line import PLACEHOLDER, build_line
from ..codegen.render import emit
from .command import Command
from .options import add_config_options, config_from_args

EPILOG = """examples:
  gemmgen emit --preset v8 > v8.cu                 (its header's "Build:" line builds v8.cu)
  gemmgen emit --preset v10 --set BK=16 --set stages=3 --set async_copy=true --arch sm_86
  gemmgen emit --config best.json -o k.cu
  gemmgen emit --preset v8 --harness -o k.cu
  nvcc -O3 -std=c++17 -arch=sm_90 k.cu -lcublas -o k && ./k 4096 4096 4096   (checks against cuBLAS)

The header of every emitted source gives its exact nvcc build line ("Build:"), naming the file written
(-o FILE, or the file standard output is redirected to; KERNEL.cu where neither is known); wgmma presets build
with -gencode=arch=compute_90a,code=sm_90a. Where the CUDA toolkit has no cuBLAS, the harness header
says how to link NVIDIA's cuBLAS wheel (installed by gemmgen[cuda13]) instead.

Parameters for --set are the fields of a config (`gemmgen explain --preset v8 --json` shows them);
an invalid combination is refused with every rule it breaks, e.g. SHARED_MEMORY for a tile that does
not fit the --arch target."""


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.add_argument("--harness", action="store_true",
                        help="append a main() that checks the kernel against cuBLAS and times both "
                             "(the header gives its exact nvcc build line; run: ./k M N K [alpha beta])")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")


def run(args: argparse.Namespace) -> int:
    if args.output is not None and not args.output.strip():
        raise ValueError("-o '': give a file name to write (e.g. -o k.cu), or leave -o out for standard output")
    config, device = config_from_args(args)
    file = args.output or stdout_file(sys.stdout) or PLACEHOLDER
    code = emit(config, device, command=args.command_line, harness=args.harness, file=file)
    if args.output:
        try:
            Path(args.output).write_text(code)
        except OSError as err:
            raise ValueError(f"cannot write {args.output!r}: {err.strerror or err}") from None
        arch = config.target_arch(device.arch)
        print(f"wrote {args.output}: {config.name} for {device.key} ({arch}); build: "
              f"{build_line(arch, args.harness, args.output)}", file=sys.stderr)
    else:
        sys.stdout.write(code)
    return 0


def stdout_file(stream: IO) -> str | None:
    """The name of the regular file ``stream`` writes to (``gemmgen emit ... > foo.cu``), relative to
    the working directory where it lies below it; None for a pipe, a terminal, a stream without a
    file descriptor, or a system without /proc/self/fd.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".cu") as f:
    ...     stdout_file(f) == f.name
    True
    >>> stdout_file(None) is None
    True
    """
    try:
        fd = stream.fileno()
        held = os.fstat(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        named = os.stat(path)
    except (AttributeError, ValueError, OSError):   # no descriptor (io.StringIO), no /proc, a deleted file
        return None
    if not stat.S_ISREG(held.st_mode) or (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
        return None
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


COMMAND = Command(
    name="emit",
    help="write the CUDA source of a preset or config",
    description="Render one kernel config to readable CUDA source. The config is checked first for the "
                "--arch target; an invalid one is never rendered.",
    configure=configure,
    run=run,
    epilog=EPILOG,
)
