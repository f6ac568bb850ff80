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


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="one line per GPU")
    show = sub.add_parser("show", help="the tuned kernels of one GPU")
    show.add_argument("gpu", help="GPU name or alias (h100, 'NVIDIA H100 80GB HBM3') or file stem")
    exp = sub.add_parser("export", help="write the winner's .cu and manifest")
    exp.add_argument("gpu")
    exp.add_argument("shape", help="MxNxK or MxNxK/LAYOUT, as listed by `show`")
    exp.add_argument("--out", default=".", help="output folder (default: current)")
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


def run(args: argparse.Namespace) -> int:
    from ..records import listing, lookup
    from ..records.export import export

    if args.action == "merge":
        return results_merge.run(args)
    if args.action == "tuned":
        from . import results_tuned as tuned

        if args.clear and not args.gpu:
            raise ValueError("--clear deletes one GPU's picks: name the GPU (e.g. gemmgen results tuned h100 --clear)")
        found = tuned.rows(tuned.files(args.gpu))
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
        rows = plan(args.gpu, args.shape, args.results, args.family, args.top)
        print(json.dumps(rows, indent=1) if args.json else text(rows))
        return 0
    if args.action == "export":
        checks.output_folder(args.out, "--out")
        shape = args.shape if "/" in args.shape else f"{args.shape}/NN"
        cu, manifest = export(args.gpu, shape, args.out, args.results)
        print(json.dumps({"source": str(cu), "manifest": str(manifest)}) if args.json else f"wrote {cu}\nwrote {manifest}")
        return 0
    if args.action == "list":
        rows, cols = listing.list_rows(args.results), listing.LIST_COLUMNS
    else:
        if args.json:
            json.dump(lookup.load_device(args.gpu, args.results, missing_ok=False).to_dict(), sys.stdout, indent=1)
            print()
            return 0
        rows, cols = listing.show_rows(args.gpu, args.results), listing.SHOW_COLUMNS
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    elif not rows:
        print("no tuned results yet: run `gemmgen search`", file=sys.stderr)
    else:
        print(_table(cols, rows))
    return 0


def _table(cols, rows) -> str:
    from .presets import table

    return "\n".join(table([tuple(cols), *([_fmt(r.get(c)) for c in cols] for r in rows)]))


def _fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else ("" if v is None else str(v))


COMMAND = Command("results", "list, show, export and merge tuned kernels", configure, run,
                  description=__doc__.splitlines()[0].split(": ", 1)[1], epilog=EPILOG)
