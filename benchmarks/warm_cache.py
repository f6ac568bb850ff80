"""Fill the kernel cache in parallel before a timed run, so no kernel compiles inside it.

By default every preset in every layout it is valid in; with --names, the named kernels of the given
results files (a benchmark's plans on a fresh machine: `ab_plans.py` and `matmul_vs_cublas.py` compile
each kernel in the timing process, one at a time, at 1-8 s a wgmma kernel).

    python -m benchmarks.warm_cache                                  # presets, for this GPU
    python -m benchmarks.warm_cache --arch sm_90 --names plans.txt results/nvidia-h200.json old/nvidia-h200.json

plans.txt holds kernel names, any whitespace between them (`plans_diff.py ... | grep -o 'gg_[a-z0-9_]*'`).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def named_configs(names: set[str], results: list[Path]) -> dict:
    """{name: KernelConfig} of the named kernels, from the first results file that stores each
    (changed_kernels.configs: entries and timings); a name none holds is a ValueError that names it."""
    from benchmarks.changed_kernels import configs
    from gemmgen.kernel.config import KernelConfig

    found: dict = {}
    for path in results:
        for name, config in configs(json.loads(path.read_text())).items():
            if name in names and name not in found:
                found[name] = KernelConfig.from_dict(config)
    missing = sorted(names - set(found))
    if missing:
        raise ValueError(f"{len(missing)} named kernel(s) in none of the results files, e.g. {missing[0]}")
    return found


def preset_configs(arch: str) -> list:
    """Every preset in every layout it is valid in for ``arch`` (wgmma presets read NN only)."""
    from gemmgen.kernel.presets import all_presets
    from gemmgen.kernel.rules import explain

    configs = [p.replace(layout=lay) for p in all_presets(arch) for lay in ("NN", "NT", "TN", "TT")]
    return [c for c in configs if not explain(c, arch)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", help="sm_80, sm_86, sm_89, sm_90 or a GPU name (default: GPU 0's)")
    ap.add_argument("--names", type=Path, help="a file of kernel names: compile those, from RESULTS")
    ap.add_argument("results", nargs="*", type=Path, help="results files that hold the named kernels")
    args = ap.parse_args(argv)
    if bool(args.names) != bool(args.results):
        ap.error("--names and results files go together: --names FILE RESULTS [RESULTS ...]")
    for path in ([args.names] if args.names else []) + args.results:
        if not path.is_file():
            ap.error(f"no such file: {path}")

    from gemmgen.base.devices import UnknownDevice, detect
    from gemmgen.build.parallel import compile_many
    from gemmgen.codegen.render import render
    from gemmgen.kernel.rules.registry import as_device

    try:
        arch = as_device(args.arch).arch if args.arch else detect(0).arch
    except UnknownDevice as exc:
        ap.error(str(exc))
    if args.names:
        try:
            configs = list(named_configs(set(args.names.read_text().split()), args.results).values())
        except (ValueError, KeyError) as exc:
            ap.error(f"{exc} (results files: {', '.join(map(str, args.results))})")
    else:
        configs = preset_configs(arch)
    t = time.time()
    out = compile_many([(render(c, arch), arch) for c in configs], compiler="nvrtc")
    bad = [o for o in out if not hasattr(o, "cubin")]
    print(f"compiled {len(out)} kernels for {arch} in {time.time() - t:.1f} s; failures: {len(bad)}")
    for b in bad:
        print(b.reason, (b.detail or "")[:2000])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
