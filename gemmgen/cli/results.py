"""``gemmgen results list|show|export``: the tuned-kernel database, shipped and the user's."""
from __future__ import annotations

import argparse
import json
import sys

from . import checks, results_merge
from .command import Command

EPILOG = """examples:
  gemmgen results list                                  GPUs with tuned kernels
  gemmgen results show h100                             best kernel per shape on the H100
  gemmgen results export h100 4096x4096x4096 --out k/   the winner's .cu and a JSON manifest
  gemmgen results plan h100 128x4096x4096/TN            the kernel matmul runs there, and why (no GPU needed)
  gemmgen results tuned h100 --json                     what first-call tuning kept on this machine
  gemmgen results merge results/nvidia-h200.json fresh/nvidia-h200.json --replace   re-timed kernels join"""


GPU_HELP = "GPU name or alias (h100, 'NVIDIA H100 80GB HBM3') or results file stem; `gemmgen results list` names them"
RAW = argparse.RawDescriptionHelpFormatter


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="one line per GPU with tuned results", formatter_class=RAW,
                         description="The GPUs with tuned results (shipped with gemmgen, and the user's), one line\n"
                         "each: compute capability, SMs, tuned shapes, the best TFLOP/s and ratio to cuBLAS.",
                         epilog="examples:\n  gemmgen results list\n  gemmgen results list --wide     (whole file paths)"
                         "\n  gemmgen results list --json")
    show = sub.add_parser("show", help="the tuned kernels of one GPU", formatter_class=RAW,
                          description="One GPU's search winners, one line per tuned shape: the kernel's family and\n"
                          "block tile (--wide: its full name and file), TFLOP/s, cuBLAS's TFLOP/s in the same run,\n"
                          "their ratio, the search's trials ('-': not searched, timed on the tuning grid) and date.",
                          epilog="examples:\n  gemmgen results show h100\n  gemmgen results show h100 --wide\n"
                          "  gemmgen results show h100 --json     (every field of every entry)")
    show.add_argument("gpu", help=GPU_HELP)
    exp = sub.add_parser("export", help="write the fastest kernel measured at a shape as .cu and manifest",
                         formatter_class=RAW,
                         description="Write the fastest fp32 kernel measured at one shape on one GPU (the search's\n"
                         "stored winner, or a kernel the tuning grid timed there) as NAME.cu, with NAME.json beside\n"
                         "it: config, measured numbers, launch grid and block. At 4096x4096x4096 (NN) it is v13.",
                         epilog="examples:\n  gemmgen results export h100 4096x4096x4096 --out k/\n"
                         "  gemmgen results export h200 1024x1024x1024/NT\n"
                         "  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c k/NAME.cu   (build line in its header)")
    exp.add_argument("gpu", help=GPU_HELP)
    exp.add_argument("shape", help="MxNxK or MxNxK/LAYOUT (default layout NN), as listed by `show`")
    exp.add_argument("--out", default=".", help="output folder, made if its parent exists (default: current)")
    pln = sub.add_parser("plan", help="the kernel gemmgen.matmul runs for a shape, with the runners-up "
                         "and their predicted times",
                         description="The dispatch rule applied to a GPU's stored results, without the GPU:\n"
                         "the kernel gemmgen.matmul runs for a shape (fp32, packed operands), the operands it\n"
                         "copies first, its predicted time, cuBLAS's measured time where the tuning grid has\n"
                         "the shape, and the competing kernels with their time models' terms (docs/API.md).",
                         epilog="examples:\n  gemmgen results plan h100 128x4096x4096/TN\n"
                         "  gemmgen results plan h200 4097x4097x4097 --family simt --json",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    pln.add_argument("gpu", help="GPU name or alias (h100, h200) or file stem")
    pln.add_argument("shape", help="MxNxK or MxNxK/LAYOUT (packed operands, fp32)")
    pln.add_argument("--family", help="only this family (simt or tf32x3), as matmul's family= does")
    pln.add_argument("--top", type=int, default=8, help="candidates to list (default 8)")
    tnd = sub.add_parser("tuned", help="the picks first-call tuning kept here (gemmgen.tune_first_calls)",
                         description="The picks of opt-in first-call tuning kept in the kernel cache: per request\n"
                         "kind, the kernel matmul runs, its time, the dispatch plan's, and how many were timed.",
                         epilog="examples:\n  gemmgen results tuned\n  gemmgen results tuned h100 --clear",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    tnd.add_argument("gpu", nargs="?", help="only this GPU (name, alias or file stem); --clear needs it")
    tnd.add_argument("--clear", action="store_true", help="delete the GPU's picks (timed again on next first calls)")
    tnd.add_argument("--json", action="store_true", help="print JSON")
    results_merge.configure(sub)
    from . import results_builtin
    bld = sub.add_parser("builtin", help="choose the built-in kernels from tuned GPUs' timings",
                         description=results_builtin.DESCRIPTION, epilog=results_builtin.EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    results_builtin.configure(bld)
    for p in (lst, show, exp, pln, bld):
        p.add_argument("--results", metavar="DIR", help="results folder (default: the user folder, "
                       "$GEMMGEN_RESULTS overrides); the shipped results are always read too")
        p.add_argument("--json", action="store_true", help="print JSON")
    for p in (lst, show, pln):
        p.add_argument("--wide", action="store_true", help="every column, whole (default: fits 100 columns)")
    for p in (exp, pln):
        checks.shapes_may_start_with_minus(p)   # '-1x2x3' is a bad shape, not an unknown option


def run(args: argparse.Namespace) -> int:
    from ..records import listing, lookup
    from ..records.export import export

    if args.action == "merge":
        return results_merge.run(args)
    if args.action == "tuned":
        from . import results_tuned as tuned

        if args.clear and not args.gpu:
            raise ValueError("--clear deletes one GPU's picks: name the GPU (e.g. gemmgen results tuned h100 --clear)")
        kept = tuned.files(args.gpu)
        if args.gpu and not kept:
            tuned.check_gpu(args.gpu)
        found = tuned.rows(kept)
        gone = [str(p) for p in tuned.clear(args.gpu)] if args.clear else []
        if args.json:
            from ..runtime.picks import folder

            print(json.dumps({"folder": str(folder()), "picks": found, "deleted": gone}, indent=1))
        else:
            print(tuned.text(found, args.gpu) + "".join(f"\ndeleted {p}" for p in gone))
        return 0
    checks.input_folder(args.results)
    if args.action == "builtin":
        from . import results_builtin

        return results_builtin.run(args)
    if args.action == "plan":
        from .results_plan import plan, text

        if args.top < 1:
            raise ValueError(f"--top {args.top}: give 1 or more candidates to list")
        checks.problem_size(args.shape)
        rows = plan(args.gpu, args.shape, args.results, args.family, args.top)
        print(json.dumps(rows, indent=1) if args.json else text(rows, args.wide))
        return 0
    if args.action == "export":
        checks.output_folder(args.out, "--out")
        shape = args.shape if "/" in args.shape else f"{args.shape}/NN"
        cu, manifest = export(args.gpu, shape, args.out, args.results)
        print(json.dumps({"source": str(cu), "manifest": str(manifest)}) if args.json else f"wrote {cu}\nwrote {manifest}")
        return 0
    if args.action == "list":
        rows = listing.list_rows(args.results)
        if args.json:
            json.dump(rows, sys.stdout, indent=1)
            print()
        elif not rows:
            print("no tuned results yet: run `gemmgen search`", file=sys.stderr)
        else:
            print(list_text(rows, args.wide))
        return 0
    if args.json:
        json.dump(lookup.load_device(args.gpu, args.results, missing_ok=False).to_dict(), sys.stdout, indent=1)
        print()
        return 0
    rows = listing.show_rows(args.gpu, args.results)
    print(show_text(lookup.load_device(args.gpu, args.results, missing_ok=False), rows, args.wide)
          if rows else f"no tuned shapes for {args.gpu}: run `gemmgen search`")
    return 0


def list_text(rows: list[dict], wide: bool = False) -> str:
    """``results list`` as a table; the results files by name (``wide``: whole paths).

    >>> print(list_text([{"device": "X", "cc": "9.0", "sm_count": 132, "shapes": 3, "best_tflops": 80.5,
    ...                   "best_ratio": 1.7, "files": ["/a/x.json", "/b/x.json"]}]))
    GPU  cc   SMs  shapes  best TFLOP/s  best vs cuBLAS  files
    X    9.0  132  3       80.5          1.7             x.json (2 folders)
    """
    from pathlib import Path

    from .presets import table

    def files(paths):
        names = sorted({Path(p).name for p in paths})
        return ", ".join(names) + (f" ({len(paths)} folders)" if len(paths) > len(names) else "")

    head = ("GPU", "cc", "SMs", "shapes", "best TFLOP/s", "best vs cuBLAS", "files")
    return "\n".join(table([head, *[(r["device"], str(r["cc"]), str(r["sm_count"]), str(r["shapes"]),
                                     number(r["best_tflops"]), number(r["best_ratio"]),
                                     ", ".join(r["files"]) if wide else files(r["files"])) for r in rows]]))


def show_text(dev, rows: list[dict], wide: bool = False) -> str:
    """``results show`` as a table under one line naming the GPU and its files; ``wide`` adds each
    kernel's name and file."""
    from .presets import table, wrapped

    origins = sorted({r["origin"] for r in rows})
    head = f"{dev.name}: {len(rows)} tuned shapes, from {', '.join(origins)}"
    cols = ("shape", "kernel", "tile", "TFLOP/s", "cuBLAS", "ratio", "trials", "date") + (("name", "origin") if wide else ())
    lines = [(r["shape"], kind(dev.entries[r["shape"]].kernel_config), tile(dev.entries[r["shape"]].kernel_config),
              number(r["tflops"]), number(r["cublas_tflops"]), number(r["ratio"]), str(r["trials"] or "-"),
              r["date"][:10]) + ((r["name"], r["origin"]) if wide else ()) for r in rows]
    return "\n".join([*wrapped(head, wide), *table([cols, *lines])]) + ("" if wide else "\n(--wide: kernel names and files; --json: everything)")


def kind(c) -> str:
    """A kernel's family and mainloop in a few words: 'simt', 'tf32x3 wgmma ws', 'skinny k4'."""
    words = [c.family, "wgmma" if c.uses_wgmma else "", ("tma" if c.tensor_maps else "ws") if c.warp_specialized else "",
             f"k{c.split_k}" if c.split_k > 1 else "", "swap" if c.swap else ""]
    return " ".join(w for w in words if w)


def tile(c) -> str:
    return f"{c.BM}x{c.BN}x{c.BK}"


def number(v) -> str:
    """Three significant digits, never rounded to 0: 85.0 -> '85', 0.00164 -> '0.00164'; None -> '-'."""
    return "-" if v is None else f"{v:.3g}"


COMMAND = Command("results", "list, show, export and merge tuned kernels", configure, run,
                  description=__doc__.splitlines()[0].split(": ", 1)[1], epilog=EPILOG)
