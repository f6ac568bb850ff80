"""``gemmgen explain``: what a kernel does, what it costs, and every rule it breaks on a target.

>>> from gemmgen.kernel.presets import preset
>>> from gemmgen.base.devices import for_arch
>>> report(preset("v8"), for_arch("sm_90"), use_ptxas=False)["threads"]
256
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from ..base.devices import DeviceSpec
from ..base.outcome import CompileFailure
from ..build.nvcc import ToolkitMissing, compile_cubin
from ..codegen.facts import accepts_text, launch_lines
from ..codegen.render import render_validated
from ..kernel.config import HALF, KernelConfig
from ..kernel.presets import describe
from ..kernel.rules import explain, register_estimate, rule_names
from .command import Command
from .describe import dtype_word, features, intensity
from .options import add_config_options, config_from_args

_STRUCTURAL = {"FAMILY", "LAYOUT", "POSITIVE", "THREADS"}   # derived geometry is meaningless past these


def report(config: KernelConfig, device: DeviceSpec, use_ptxas: bool = True) -> dict:
    """Everything `explain` shows, as a JSON-ready dict (``violations`` empty when the config is valid)."""
    violations = explain(config, device)
    out = {"kernel": config.name, "label": config.label, "target": _target(device),
           "valid": not violations, "violations": [asdict(v) for v in violations],
           "config": config.to_dict()}
    if not {v.rule for v in violations} & _STRUCTURAL:
        out.update(_geometry(config, device))
    if use_ptxas and not violations:
        out["ptxas"], out["ptxas_note"] = _ptxas(config, device)
    return out


def _target(d: DeviceSpec) -> dict:
    return {"key": d.key, "name": d.name, "arch": d.arch}


def _geometry(c: KernelConfig, d: DeviceSpec) -> dict:
    ai, formula = intensity(c)
    if c.family in HALF:   # 2-byte elements: twice seed 001's fp32 intensity
        formula = f"BM*BN / (BM+BN) for 2-byte elements = {c.BM}*{c.BN} / ({c.BM}+{c.BN})"
    ridge = d.fp32_tflops * 1e3 / d.mem_gbs if d.mem_gbs else None   # FLOP/B where compute = bandwidth
    if c.family in HALF:   # the device table has no tensor-core peak, and the FP32 one says nothing here
        ridge = None
    return {
        "features": half_features(c) if c.family in HALF and not c.warp_specialized else features(c),   # TMA: describe.py
        "threads": c.threads, "warps": c.threads // 32,
        "smem_per_stage": c.smem_per_stage, "stages": c.stages, "smem_bytes": c.smem_bytes,
        "smem_limit": d.smem_per_block_optin, "accumulators": c.accumulators,
        "register_estimate": register_estimate(c) if c.family == "simt" or c.family in HALF else None,
        "arithmetic_intensity": ai, "intensity_formula": formula,
        "ridge_point": round(ridge, 2) if ridge else None,
        "accepts": accepts_text(c), "launch": launch_lines(c),
    }


def half_features(c: KernelConfig) -> list[str]:
    """What a wmma-family kernel does, one sentence per idea (the simt/tf32 ones are in describe.py).

    >>> from gemmgen.kernel.presets import preset
    >>> half_features(preset("wmma"))[1].startswith("fp16 inputs")
    True
    """
    words = dtype_word(c)
    lines = [
        f"each block computes a {c.BM}x{c.BN} tile of C with {c.threads} threads ({c.threads // 32} warps); each warp "
        f"a {c.WM}x{c.WN} tile of {c.WM // 16}x{c.WN // 16} WMMA tiles of 16x16x16 ({c.accumulators} fp32 accumulators "
        "per thread)",
        (f"{words} inputs, exact products on the tensor cores; each pair of k16 steps is summed into a fresh partial "
         "and added to the fp32 accumulators with round-to-nearest adds (the tensor cores truncate their running sums)"
         if c.partials else
         f"{words} inputs, exact products accumulated straight on the tensor cores, as cuBLAS does (their truncating "
         "fp32 sums err more as K grows)"),
        (f"K advances {c.BK} at a time through a ring of {c.stages} shared-memory stages filled by cp.async, "
         f"{c.stages - 1} tiles in flight" if c.async_copy else
         f"K advances {c.BK} at a time through one shared-memory buffer, loaded and then used between two barriers"),
        f"A is {'row' if c.layout[0] == 'N' else 'column'}-major and B {'row' if c.layout[1] == 'N' else 'column'}-major; "
        f"shared tiles keep that layout, rows padded by {c.pad_a} (A) and {c.pad_b} (B) halves; each global load moves "
        f"{2 * c.vec} bytes; fragments are read with wmma.load (ldmatrix on sm_80+)",
        "the epilogue stages each 16x16 tile in shared memory (wmma.store) and writes rows of C with 16-byte stores",
    ]
    extras = [(c.raster > 1, f"thread-block swizzle: consecutive blocks walk {c.raster} tile rows together"),
              (c.split_k > 1, f"split-K: {c.split_k} blocks share each tile's K range, partial sums meet "
                              + ("by atomicAdd into C" if c.reduce == "atomic" else "in a workspace")),
              (c.bounds == "none", "fast path: no bounds checks, only for shapes the tile divides"),
              (c.min_blocks > 1, f"__launch_bounds__ asks for {c.min_blocks} resident blocks per SM")]
    return lines + [text for flag, text in extras if flag]


def _ptxas(c: KernelConfig, d: DeviceSpec) -> tuple[dict | None, str]:
    """Registers and spills from ptxas, or None and the reason they are missing."""
    try:
        rep = compile_cubin(render_validated(c, d.arch), d.arch)   # report() validated it for d
    except ToolkitMissing as err:
        return None, f"not compiled: {err}"
    except CompileFailure as err:
        return None, f"nvcc rejected the source ({err.reason}); this is a gemmgen bug, please report it"
    note = f"nvcc -cubin -arch={d.arch} -O3 in {rep.seconds:.1f} s"
    return {name: asdict(k) for name, k in rep.kernels.items()}, note


# ---- text -------------------------------------------------------------------------------------
def text(r: dict, preset_name: str | None) -> str:
    """The report as the lines `gemmgen explain` prints."""
    t = r["target"]
    lines = [f"{r['label'] or 'config'}: {r['kernel']}"]
    if preset_name and r["label"] == preset_name:
        lines.append(f"  {describe(preset_name)}")
    lines.append(f"target: {t['key']} ({t['arch']}, {t['name']})")
    if "features" in r:
        lines += ["", "What it does:"] + [f"  - {f}" for f in r["features"]] + ["", "Resources:"] + _resources(r)
    lines += ["", "Rules:"] + _rules(r)
    return "\n".join(lines)


def _resources(r: dict) -> list[str]:
    rows = [("threads", f"{r['threads']} per block ({r['warps']} warps)"),
            ("shared memory", f"{r['smem_per_stage']} B per stage x {r['stages']} = {r['smem_bytes']} B "
                              f"(limit {r['smem_limit']} B per block on this target)"),
            ("accumulators", f"{r['accumulators']} per thread"
             + (f"; about {r['register_estimate']} registers (estimate)" if r["register_estimate"] else ""))]
    rows += _ptxas_rows(r)
    ridge = r["ridge_point"]
    bound = "" if not ridge else (f"; ridge point {ridge:g} FLOP/B: "
                                  + ("compute-bound" if r["arithmetic_intensity"] >= ridge else "memory-bound")
                                  + " if nothing else limits it")
    rows += [("intensity", f"{r['arithmetic_intensity']:g} FLOP/B ({r['intensity_formula']}){bound}"),
             ("accepts", r["accepts"])]
    rows += [("launch" if i == 0 else "", line) for i, line in enumerate(r["launch"])]
    return [f"  {k:<15}{v}" for k, v in rows]


def _ptxas_rows(r: dict) -> list[tuple[str, str]]:
    if "ptxas" not in r:
        return []
    if r["ptxas"] is None:
        return [("ptxas", r["ptxas_note"])]
    rows = [("ptxas" if i == 0 else "",
             f"{_role(r['kernel'], k['name'])}{k['registers']} registers, {k['spill_stores']} B spill stores, "
             f"{k['spill_loads']} B spill loads, {k['stack_bytes']} B stack")
            for i, k in enumerate(r["ptxas"].values())]
    return rows + [("", f"({r['ptxas_note']})")]


def _role(main: str, name: str) -> str:
    """'' for the main kernel, 'scale: ' or 'reduce: ' for a split-K helper (their names end so)."""
    return "" if name == main else f"{name[len(main) + 1:] if name.startswith(main) else name}: "


def _rules(r: dict) -> list[str]:
    if not r["violations"]:
        return [f"  all {len(rule_names())} rules pass for {r['target']['key']}"]
    return [f"  x {v['rule']}: {v['reason']}" for v in r["violations"]]


# ---- command ----------------------------------------------------------------------------------
def configure(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-ptxas", action="store_true",
                        help="skip the nvcc compile that reports registers and spills")


def run(args: argparse.Namespace) -> int:
    config, device = config_from_args(args)
    r = report(config, device, use_ptxas=not args.no_ptxas)
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print(text(r, args.preset))
    if r["violations"]:     # scripts can test the exit status; the report above says why
        rules = "; ".join(f"{v['rule']}: {v['reason']}" for v in r["violations"])
        print(f"gemmgen explain: invalid for {device.key}: {rules}", file=sys.stderr)
        return 1
    return 0


COMMAND = Command(
    name="explain",
    help="what a kernel does, its threads, shared memory, intensity, registers and broken rules",
    description="Explain one kernel config for a target: what each part of the kernel does, its "
                "resources (with registers and spills from ptxas where nvcc is installed), its arithmetic "
                "intensity, the shapes it accepts, and every rule it breaks.",
    configure=configure,
    run=run,
    epilog="""examples:
  gemmgen explain --preset v8
  gemmgen explain --preset v13 --set stages=6 --arch rtx3090      (SHARED_MEMORY: the tile does not fit)
  gemmgen explain --config best.json --json

exit status: 0 valid, 1 the config breaks a rule on the target, 2 bad input.""",
)
