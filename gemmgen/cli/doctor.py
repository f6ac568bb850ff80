"""``gemmgen doctor``: what gemmgen found on this machine, and the command that fixes each missing piece.

It looks for nvcc, CuPy, NVRTC, cuBLAS (:mod:`.doctor_software`), the CUDA driver and the GPUs
(:mod:`.doctor_hardware`) without needing any of them. A missing piece is a finding, not an error:
the command exits 0 whenever it could report, and no probe's failure becomes a traceback.

>>> from gemmgen.cli import main
>>> main(["doctor"])                                    # doctest: +ELLIPSIS
gemmgen doctor: ...
0
"""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ..base.version import __version__
from .command import Command
from .doctor_hardware import check_driver, check_folders, check_gpus, check_results, open_driver
from .doctor_software import (MISSING, Finding, check_cublas, check_cupy, check_gemmgen, check_nvcc, check_nvrtc,
                              cupy_distribution, guarded)


def findings() -> list[Finding]:
    """Everything doctor reports, in order; no probe raises."""
    try:
        distribution = cupy_distribution()
    except Exception:   # broken package metadata: CuPy's own check below says what it finds
        distribution = None
    driver = open_driver()
    gpus: list[dict] = []

    def gpu_probe() -> list[Finding]:
        found, seen = check_gpus(driver, distribution)
        gpus.extend(seen)
        return found

    probes = [("gemmgen", check_gemmgen), ("nvcc", check_nvcc), ("CuPy", lambda: check_cupy(distribution)),
              ("NVRTC", lambda: check_nvrtc(distribution)), ("cuBLAS", lambda: check_cublas(distribution)),
              ("CUDA driver", lambda: check_driver(driver, distribution)), ("GPU", gpu_probe),
              ("results", lambda: check_results(gpus)), ("folders", check_folders)]
    return [finding for name, probe in probes for finding in guarded(name, probe)]


def text(found: list[Finding]) -> str:
    """The report: one line per finding, its fix under a missing one, and a closing line."""
    width = max(len(f.what) for f in found)
    lines = ["gemmgen doctor: what gemmgen found on this machine", ""]
    for f in found:
        lines.append(f"  {f.status:<8} {f.what:<{width}}  {f.found}")
        if f.fix:
            lines.append(f"  {'':<8} {'':<{width}}  fix: {f.fix}")
    missing = [f.what for f in found if f.status == MISSING]
    lines.append("")
    lines.append(f"missing: {', '.join(missing)}" if missing else "nothing missing")
    if any(f.what == "GPU" and f.status == MISSING for f in found):
        lines.append("without a GPU, gemmgen emits, explains and builds kernels (`gemmgen demo` shows it); "
                     "matmul, bench and search need one")
    return "\n".join(lines)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")


def run(args: argparse.Namespace) -> int:
    found = findings()
    if args.json:
        print(json.dumps({"gemmgen": __version__, "findings": [asdict(f) for f in found],
                          "missing": [f.what for f in found if f.status == MISSING]}, indent=1))
    else:
        print(text(found))
    return 0


COMMAND = Command(
    name="doctor",
    help="what gemmgen found here (nvcc, CuPy, NVRTC, cuBLAS, driver, GPUs, results) and how to fix what is missing",
    description="Report what gemmgen found on this machine: its version, Python, nvcc, CuPy, NVRTC, cuBLAS, "
                "the CUDA driver, each GPU (compute capability, arch, SMs, whether gemmgen's table knows it), "
                "the results file that serves it, and the cache and results folders. Each missing piece comes "
                "with the command that fixes it. Exits 0 whenever it could report: a missing piece is a finding.",
    configure=configure,
    run=run,
    epilog="examples:\n  gemmgen doctor\n  gemmgen doctor --json",
)
