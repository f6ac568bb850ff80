"""Which stored kernels a code change touched, and the files that re-time them: every config of a results
file rendered by the tree at ``--since REV`` and by this tree, compared source by source.

    python -m benchmarks.changed_kernels results/nvidia-h100-80gb-hbm3.json --since ffc01d8^
    python -m benchmarks.changed_kernels results/nvidia-h200.json --since ffc01d8^ --ragged --max-k 512 \\
        --controls 16 --out retime/          # retime/nvidia-h200.json (candidates), controls.txt, grid.json
    gemmgen search --grid retime/grid.json --family tf32x3 --timings-only --winners-from retime/nvidia-h200.json \\
        --only-timed --results fresh
    gemmgen results merge results/nvidia-h200.json fresh/nvidia-h200.json --replace \\
        --controls retime/controls.txt

The old tree is checked out with ``git worktree`` into a temporary folder and renders in a subprocess of its
own (its gemmgen on the path); templates, facts and rules of REV all count. ``--out`` writes a candidates file
named as the results file (search's ``--winners-from`` takes only that name: the changed kernels' timings, only
the pairs to re-time: with ``--ragged`` those of K not a multiple of the kernel's BK, with ``--max-k`` those of
K at most that, with ``--max-ms`` those stored at most that many ms, with ``--one-launch`` those where an
atomic split runs without its scale kernel), ``--controls N`` unchanged kernels of the same families
timed on those shapes (a drift control for ``gemmgen results merge``), and a grid of the shapes (a change to
the ragged last stage touched 466 of the 1811 kernels of the H100's file; their 6637 pairs re-timed in 270 s). A
config the old tree cannot render counts as changed; one this tree cannot render stops the run.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run inside a tree (its gemmgen first on the path): {name: sha256 of the rendered source} of the configs on stdin.
_RENDER = """
import hashlib, json, sys
from gemmgen.kernel.config import KernelConfig
from gemmgen.codegen.render import render_validated
out = {}
for name, cfg in json.load(sys.stdin).items():
    try:
        out[name] = hashlib.sha256(render_validated(KernelConfig.from_dict(cfg), sys.argv[1]).code.encode()).hexdigest()
    except Exception as err:   # a config a tree cannot render: changed (the old tree) or a stop (this one)
        out[name] = "error: " + type(err).__name__ + ": " + (str(err).splitlines() or [""])[0][:120]
json.dump(out, sys.stdout)
"""


def configs(results: dict) -> dict[str, dict]:
    """Name -> config dict of every kernel a results file stores (timings and entries)."""
    out = {e["name"]: e["config"] for e in results.get("entries", {}).values()}
    out.update({n: k["config"] for n, k in results.get("timings", {}).get("kernels", {}).items()})
    return out


class RenderFailed(Exception):
    """A tree's gemmgen could not run the renderer at all (too old a revision, a broken import)."""


def digests(tree: Path, cfgs: dict[str, dict], arch: str = "sm_90") -> dict[str, str]:
    """{name: source digest, or "error: ..." where the config does not render} as the gemmgen of ``tree``
    renders each config for ``arch``; RenderFailed naming the tree's last error line if it cannot render."""
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _RENDER, arch], input=json.dumps(cfgs), capture_output=True,
                          text=True, env=env, cwd=tree)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RenderFailed(f"the tree at {tree} cannot render: {last}")
    return json.loads(done.stdout)


@contextlib.contextmanager
def checkout(rev: str):
    """The tree of ``rev`` in a temporary git worktree (removed after)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(path), rev], cwd=ROOT, check=True,
                       capture_output=True, text=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)


def changed(old: dict[str, str], new: dict[str, str]) -> set[str]:
    """The names whose source differs, or that either side fails to render."""
    return {n for n in new if old.get(n) != new[n] or new[n].startswith("error") or old[n].startswith("error")}


def to_time(k: dict, ragged: bool, max_k: int | None, max_ms: float | None = None,
            one_launch_sms: int | None = None) -> dict[str, float]:
    """The pairs of one stored kernel to re-time: its shapes, ragged K only, K <= max_k, stored time <=
    max_ms, and (``one_launch_sms``: the GPU's SMs) only where an atomic split runs in one launch, as asked."""
    from gemmgen.base.shape import Shape
    from gemmgen.kernel.config import KernelConfig

    bk = k["config"]["BK"]
    config = KernelConfig.from_dict(k["config"]) if one_launch_sms else None

    def keep(key: str, ms: float) -> bool:
        s = Shape.parse(key)
        return ((not ragged or s.K % bk != 0) and (max_k is None or s.K <= max_k)
                and (max_ms is None or ms <= max_ms)
                and (config is None or config.split_one_launch(s.M, s.N, one_launch_sms)))
    return {s: ms for s, ms in k["ms"].items() if keep(s, ms)}


def retime_files(results: dict, names: set[str], ragged: bool, max_k: int | None, controls: int,
                 seed: int = 41, max_ms: float | None = None,
                 one_launch: bool = False) -> tuple[dict, list[str], list[str]]:
    """(candidates file, control names, grid shapes): the changed kernels with their pairs to re-time, and
    ``controls`` unchanged kernels of the same families on the shapes among those (drawn with ``seed``)."""
    kernels = results["timings"]["kernels"]
    sms = results.get("device", {}).get("sm_count") if one_launch else None
    cand = {}
    for n in sorted(names & set(kernels)):
        ms = to_time(kernels[n], ragged, max_k, max_ms, sms)
        if ms:
            cand[n] = dict(kernels[n], ms=ms)
    shapes = {s for k in cand.values() for s in k["ms"]}
    families = {k["config"]["family"] for k in cand.values()}
    pool = sorted(n for n, k in kernels.items() if n not in names and k["config"]["family"] in families
                  and any(s in shapes for s in k["ms"]))
    random.Random(seed).shuffle(pool)
    chosen = pool[:controls]
    for n in chosen:
        cand[n] = dict(kernels[n], ms={s: ms for s, ms in kernels[n]["ms"].items() if s in shapes})
    return dict(results, entries={}, timings=dict(results["timings"], kernels=cand)), chosen, sorted(shapes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="a results file (results/<gpu>.json)")
    ap.add_argument("--since", required=True, metavar="REV", help="the revision before the change (e.g. ffc01d8^)")
    ap.add_argument("--out", type=Path, metavar="DIR",
                    help="write the candidates (named as the results file), controls.txt and grid.json here")
    ap.add_argument("--ragged", action="store_true", help="--out: only the pairs of K not a multiple of BK")
    ap.add_argument("--max-k", type=int, metavar="K", help="--out: only the pairs of K at most this")
    ap.add_argument("--max-ms", type=float, metavar="MS", help="--out: only the pairs stored at most this many ms")
    ap.add_argument("--one-launch", action="store_true",
                    help="--out: only the pairs where an atomic split runs without its scale kernel")
    ap.add_argument("--controls", type=int, default=16, metavar="N", help="--out: unchanged kernels (default 16)")
    args = ap.parse_args(argv)
    if args.controls < 0 or (args.max_k is not None and args.max_k < 1):
        ap.error(f"--controls {args.controls} / --max-k {args.max_k}: give a count of 0 or more and a K of 1 or more")
    if args.max_ms is not None and not args.max_ms > 0:
        ap.error(f"--max-ms {args.max_ms}: give a time in ms above 0 (e.g. 0.03)")
    try:
        results = json.loads(args.results.read_text())
        cfgs = configs(results)
    except (OSError, ValueError, KeyError, AttributeError) as err:
        ap.error(f"{args.results}: not a results file ({err})")
    if subprocess.run(["git", "rev-parse", "--verify", "-q", args.since + "^{commit}"], cwd=ROOT,
                      capture_output=True).returncode:
        ap.error(f"--since {args.since!r}: no such revision in {ROOT} (give a commit, e.g. HEAD~3 or ffc01d8^)")
    arch = "sm_" + str(results.get("device", {}).get("cc", "9.0")).replace(".", "")   # what its kernels run on
    try:
        new = digests(ROOT, cfgs, arch)
        broken = sorted(n for n, d in new.items() if d.startswith("error"))
        if broken:
            ap.error(f"{len(broken)} stored configs do not render in this tree, e.g. {broken[0]}: {new[broken[0]]}")
        with checkout(args.since) as tree:
            old = digests(tree, cfgs, arch)
    except (RenderFailed, subprocess.CalledProcessError) as err:
        ap.error(f"--since {args.since}: {str(err).splitlines()[0]}")
    from gemmgen.kernel.config import KernelConfig
    names = changed(old, new)
    by: dict[str, int] = {}
    for n in names:
        c = cfgs[n]
        kind = f"{c['family']} {c.get('mainloop') or KernelConfig.from_dict(c).mainloop}"
        by[kind] = by.get(kind, 0) + 1
    print(f"{len(names)} of {len(cfgs)} kernels render differently since {args.since}"
          + "".join(f"\n  {k}: {v}" for k, v in sorted(by.items())))
    if args.out:
        cand, chosen, shapes = retime_files(results, names, args.ragged, args.max_k, args.controls,
                                            max_ms=args.max_ms, one_launch=args.one_launch)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / args.results.name).write_text(json.dumps(cand))
        (args.out / "controls.txt").write_text("".join(n + "\n" for n in chosen))
        (args.out / "grid.json").write_text(json.dumps({"description": [f"pairs to re-time: kernels changed since "
                                                                         f"{args.since}"], "gpus": [], "shapes": shapes}, indent=1))
        pairs = sum(len(k["ms"]) for k in cand["timings"]["kernels"].values())
        print(f"{args.out}: {len(cand['timings']['kernels']) - len(chosen)} changed kernels and {len(chosen)} controls, "
              f"{pairs} pairs on {len(shapes)} shapes; then\n"
              f"  gemmgen search --grid {args.out / 'grid.json'} --family all --timings-only "
              f"--winners-from {args.out / args.results.name} --only-timed --results fresh\n"
              f"  gemmgen results merge {args.results} fresh/{args.results.name} --replace "
              f"--controls {args.out / 'controls.txt'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
