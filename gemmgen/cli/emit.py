"""``gemmgen emit``: write the CUDA source of one config (optionally with a cuBLAS-checking main()).

>>> from gemmgen.cli import main
>>> main(["emit", "--preset", "v5", "-o", "/tmp/gemmgen-doctest-v5.cu"])
0
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..codegen.build_line import build_line
from ..codegen.render import emit
from .command import Command
from .options import add_config_options, config_from_args

EPILOG = """examples:
  gemmgen emit --preset v8 > k.cu
  gemmgen emit --preset v10 --set BK=16 --set stages=3 --set async_copy=true --arch sm_86
  gemmgen emit --config best.json -o k.cu
  gemmgen emit --preset v8 --harness -o k.cu
  nvcc -O3 -std=c++17 -arch=sm_90 k.cu -lcublas -o k && ./k 4096 4096 4096   (checks against cuBLAS)

The header of every emitted source gives its exact nvcc build line ("Build:"); wgmma presets build
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
    config, device = config_from_args(args)
    code = emit(config, device, command=args.command_line, harness=args.harness)
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


COMMAND = Command(
    name="emit",
    help="write the CUDA source of a preset or config",
    description="Render one kernel config to readable CUDA source. The config is checked first for the "
                "--arch target; an invalid one is never rendered.",
    configure=configure,
    run=run,
    epilog=EPILOG,
)
