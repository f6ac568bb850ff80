"""A/B of a template change: each kernel rendered from an older copy of templates/ and from the current
one, both gated and timed interleaved with cuBLAS on the same shape (L2 flushed before each run).

    git archive HEAD templates | tar -x -C /tmp/old            # the templates before the change
    python -m benchmarks.template_ab --old /tmp/old/templates KERNEL@MxNxK [KERNEL@MxNxK ...] [--json FILE]

KERNEL is a kernel of the shipped results (any GPU's file); the layout is the kernel's. Each item is timed
in ``--rounds`` rounds, the two sources' order swapped every round, and the medians over the rounds are
kept. Prints per item both times, new/old (under 1: the change is faster), both ratios to cuBLAS and both
errors against float64; the geometric mean of new/old closes the table. A pair the shape refuses, the gate
fails or the compiler rejects is named in one line and the rest go on (exit status 1). Only templates/ differ
between the sides (the facts, the rules and the names are the current code's).
"""
from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
from pathlib import Path

from benchmarks.matmul_vs_cublas import geomean

ROOT = Path(__file__).resolve().parent.parent


def configs() -> dict:
    """Kernel name -> config (dict) over the shipped results files."""
    out: dict = {}
    for f in sorted((ROOT / "results").glob("*.json")):
        for n, k in json.loads(f.read_text())["timings"]["kernels"].items():
            out.setdefault(n, k["config"])
    return out


def parse_item(text: str, known: dict) -> tuple[str, str]:
    """KERNEL@MxNxK -> (kernel, MxNxK); ValueError naming what is wrong: a kernel none of ``known`` (the
    shipped results') holds, or sizes that are not three positive numbers."""
    name, _, mnk = text.partition("@")
    if name not in known:
        raise ValueError(f"unknown kernel {name!r}: name one of the shipped results' kernels (gemmgen results plan ...)")
    dims = mnk.split("x")
    if len(dims) != 3 or not all(d.isdecimal() and int(d) > 0 for d in dims):
        raise ValueError(f"bad shape {mnk!r} in {text!r}: want KERNEL@MxNxK with positive sizes")
    return name, mnk


def sources(config, arch: str, old_dir: Path) -> tuple[str, str]:
    """The config's source from the templates in ``old_dir`` and from the current templates/."""
    render = importlib.import_module("gemmgen.codegen.render")   # the module (gemmgen.codegen.render is a function)
    import jinja2

    current = render.environment
    old_env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(old_dir)), **{
        k: getattr(current(), k) for k in ("undefined", "trim_blocks", "lstrip_blocks", "keep_trailing_newline",
                                            "autoescape")})
    render.environment = lambda: old_env
    try:
        old = render.render_validated(config, arch).code
    finally:
        render.environment = current
    return old, render.render_validated(config, arch).code


def old_template(config: dict, old_dir: Path) -> str:
    """The name of the config's top-level template where ``old_dir`` lacks it, else ''."""
    from gemmgen.codegen.render import TEMPLATES, schedule
    from gemmgen.kernel.config import KernelConfig

    name = TEMPLATES[schedule(KernelConfig.from_dict(config))]
    return "" if (old_dir / name).is_file() else name


def measure(session, config, shape, codes: tuple[str, str], rounds: int, rep_ms: float) -> dict:
    """Both sources timed ``rounds`` times, their order swapped each round: medians of old, new, cuBLAS."""
    old_ms, new_ms, cub, err = [], [], [], {}
    for r in range(rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        got = session.retime([config, config], shape, rep_ms=rep_ms, codes=[codes[i] for i in order], validated=True)
        for i, m in zip(order, got):
            (old_ms if i == 0 else new_ms).append(m.ms)
            err["old" if i == 0 else "new"] = m.rel_error
        cub.append(got[0].cublas_ms)
    o, n, c = (statistics.median(v) for v in (old_ms, new_ms, cub))
    return {"kernel": config.name, "shape": str(shape), "old_us": o * 1e3, "new_us": n * 1e3, "cublas_us": c * 1e3,
            "new_over_old": n / o, "old_ratio": c / o, "new_ratio": c / n, "err_old": err["old"], "err_new": err["new"],
            "same_source": codes[0] == codes[1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("items", nargs="+", metavar="KERNEL@MxNxK")
    ap.add_argument("--old", type=Path, required=True, metavar="DIR", help="the older templates (a folder of .j2 files)")
    ap.add_argument("--rounds", type=int, default=2, help="timings of each pair, order swapped each round (default 2)")
    ap.add_argument("--rep-ms", type=float, default=40.0)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    known = configs()
    try:
        if not (args.old / "common.cuh.j2").is_file():
            raise ValueError(f"--old {str(args.old)!r} holds no templates (want a folder like templates/, e.g. "
                             "from git archive REV templates | tar -x -C DIR)")
        if args.rounds < 1:
            raise ValueError(f"--rounds {args.rounds}: give 1 or more")
        if args.json and not Path(args.json).resolve().parent.is_dir():
            raise ValueError(f"--json {args.json!r}: its folder does not exist")
        items = [parse_item(i, known) for i in args.items]
        for name, _ in items:
            missing = old_template(known[name], args.old)
            if missing:
                raise ValueError(f"--old {str(args.old)!r} has no {missing}, the template of {name} (older templates "
                                 "named the schedules' templates otherwise: compare with a REV that has it)")
    except ValueError as err:
        print(f"template_ab: {err}", file=sys.stderr)
        return 2

    from gemmgen.base.outcome import Failure
    from gemmgen.base.shape import Shape
    from gemmgen.kernel.config import KernelConfig
    from gemmgen.measure.session import Session

    session, rows, failed = Session(0), [], []
    print(f"{'kernel @ shape':100s} {'old us':>8} {'new us':>8} {'new/old':>8} {'cuBLAS':>8} {'old x':>6} {'new x':>6}")
    for name, mnk in items:
        config = KernelConfig.from_dict(known[name])
        shape = Shape.parse(f"{mnk}/{config.layout}")
        try:
            row = measure(session, config, shape, sources(config, session.spec.arch, args.old), args.rounds,
                          args.rep_ms)
        except Failure as err:   # refused by the shape, failed the gate, did not compile: named, and the rest go on
            failed.append({"kernel": name, "shape": mnk, "why": str(err).splitlines()[0]})
            print(f"template_ab: {name}@{mnk}: {failed[-1]['why']}", file=sys.stderr, flush=True)
            continue
        rows.append(row)
        print(f"{name + ' @ ' + mnk:100s} {row['old_us']:8.1f} {row['new_us']:8.1f} {row['new_over_old']:8.3f} "
              f"{row['cublas_us']:8.1f} {row['old_ratio']:6.2f} {row['new_ratio']:6.2f}"
              f"{'  (same source)' if row['same_source'] else ''}", flush=True)
        if args.json:   # after each row: a later failure or a timeout keeps what was measured
            Path(args.json).write_text(json.dumps({"device": session.spec.name, "rows": rows, "failed": failed},
                                                  indent=1))
    if rows:
        print(f"geomean new/old over {len(rows)}: {geomean([r['new_over_old'] for r in rows]):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": session.spec.name, "rows": rows, "failed": failed}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
