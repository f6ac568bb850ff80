"""``gemmgen results tuned [GPU] [--clear]``: the picks first-call tuning kept (gemmgen.runtime.picks).

Each kept pick names a request kind, the kernel it runs (and the copies first), and the times of the
kernels timed for it; the dispatch's plan among them. ``--clear`` deletes a GPU's file, so its kinds are
timed again on their next first call.

>>> rows([])
[]
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _same_gpu(asked: str, name: str, path: Path) -> bool:
    from ..base.devices import UnknownDevice, resolve_alias
    from ..records.store import slug

    if slug(asked) in (slug(name), path.stem):
        return True
    try:
        return resolve_alias(asked) == resolve_alias(name)
    except UnknownDevice:
        return False


def files(gpu: str | None = None) -> list[tuple[Path, str, dict]]:
    """(file, GPU name, picks) of each readable picks file, of one GPU where ``gpu`` names it."""
    from ..runtime.picks import folder

    out = []
    for path in sorted(folder().glob("*.json")) if folder().is_dir() else []:
        try:
            data = json.loads(path.read_text())
            name, picks = str(data.get("gpu", path.stem)), data["picks"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if isinstance(picks, dict) and (gpu is None or _same_gpu(gpu, name, path)):
            out.append((path, name, picks))
    return out


def check_gpu(gpu: str) -> None:
    """ValueError unless ``gpu`` is a GPU gemmgen knows or one with kept picks (a name without picks is
    answered 'no kept picks'; a typo is not)."""
    from ..base.devices import KNOWN, UnknownDevice, resolve_alias

    try:
        resolve_alias(gpu)
    except UnknownDevice:
        have = sorted({name for _, name, _ in files()})
        raise ValueError(f"unknown GPU {gpu!r}: not in gemmgen's table ({', '.join(KNOWN)}) and no kept picks "
                         f"under that name (GPUs with kept picks: {', '.join(have) or 'none'})") from None


def rows(found: list[tuple[Path, str, dict]]) -> list[dict[str, Any]]:
    """One row a kept pick: GPU, request kind, pick, its us, the plan's us, and the candidates timed."""
    from ..runtime.picks import label

    out = []
    for _, gpu, picks in found:
        for key, rec in sorted(picks.items()):
            if not isinstance(rec, dict) or "kernel" not in rec:
                continue
            us = rec.get("us") or {}
            copy_a, copy_b = bool(rec.get("copy_a")), bool(rec.get("copy_b"))
            plan = rec.get("plan") or [None, False, False]
            out.append({"gpu": gpu, "request": key, "kernel": rec["kernel"], "copies": "A" * copy_a + "B" * copy_b,
                        "us": us.get(label(rec["kernel"], copy_a, copy_b)), "plan": plan[0],
                        "plan_us": us.get(label(*plan)), "timed": len(us)})
    return out


def clear(gpu: str) -> list[Path]:
    """Delete the picks file(s) of ``gpu``; the paths deleted."""
    gone = []
    for path, _, _ in files(gpu):
        path.unlink()
        gone.append(path)
    return gone


def text(found: list[dict[str, Any]], gpu: str | None = None) -> str:
    if not found:
        from ..runtime.picks import folder

        return (f"no kept picks{' of ' + gpu if gpu else ''} in {folder()}: first-call tuning is off by default "
                "(gemmgen.tune_first_calls(3) or GEMMGEN_TUNE=3 turns it on)")
    out = []
    for r in found:
        gain = f"{r['plan_us'] / r['us']:.2f}x the plan" if r["us"] and r["plan_us"] else "the plan"
        same = r["kernel"] == r["plan"]
        out.append(f"{r['gpu']}  {r['request']}\n    {r['kernel']}{' (copies ' + r['copies'] + ')' if r['copies'] else ''}"
                   f"  {r['us'] or float('nan'):.1f} us, {'the plan' if same else gain}, {r['timed']} timed")
    return "\n".join(out)
