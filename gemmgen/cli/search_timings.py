"""Stage 2 of ``gemmgen search --grid``: time the kernels worth dispatching on every grid shape, and store
the times (``Timings``) and each shape's fastest kernel (as its entry) in this GPU's results file.

The kernels are every distinct winner of the grid's studies and the presets their families' spaces
hold, and on each shape the built-in kernels the analytic model predicts fastest there
(:mod:`.search_builtin`); or, with ``--winners-from FILE``, the kernels another GPU's results file
times or stores. Each shape's built-ins and its own winners are timed first, round-robin over the
shapes by value, then the rest: a budget that ends the stage early has timed the most valuable pairs.
Each batch (one shape's kernels, see :mod:`gemmgen.tune.grid_timings`) is recorded as it comes back,
so a stopped stage keeps what it timed, and a rerun skips the pairs the file already has.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
from pathlib import Path
from typing import Any

from . import grid_output as out

REP_MS = 20.0


def results_path(args: argparse.Namespace, fp: dict) -> Path:
    """This GPU's results file (it may not exist yet)."""
    from ..records.store import slug, writable_dir

    return writable_dir(args.results) / f"{slug(fp['name'])}.json"


def current(args: argparse.Namespace, fp: dict) -> Any:
    """This GPU's results as stored now (empty where there is no file yet)."""
    from ..records.store import DeviceResults, load_file

    path = results_path(args, fp)
    return load_file(path) if path.exists() else DeviceResults(dict(fp), {}, path)


def tuned_winners(job: Any) -> dict[str, list]:
    """Shape key -> the winners the job's studies recorded on that shape (one per family)."""
    from ..kernel.config import KernelConfig

    out: dict[str, list] = {}
    for task, state in job.winners().items():
        out.setdefault(task.shape.key, []).append(KernelConfig.from_dict(state["config"]))
    return out


def kernels(args: argparse.Namespace, job: Any, foreign: Any, winners: dict[str, list] | None = None) -> list:
    """The configs to time: the winners (``winners``, shape key -> configs; else the studies') and their
    families' presets, or another GPU's kernels."""
    from ..tune.warm import space_presets
    from ..tune.space import load_space

    if foreign is not None:
        configs = [k.config for k in foreign.timings.kernels.values()]
        configs += [e.kernel_config for e in foreign.entries.values()]
    else:
        configs = [c for cs in (tuned_winners(job) if winners is None else winners).values() for c in cs]
        for family in job.families:
            space = load_space(family, job.device.arch, job.space, device=job.device)
            configs += space_presets(space, job.device.arch)
    return [c for c in configs if c.family in job.families]


@dataclasses.dataclass(frozen=True)
class Work:
    """The timings stage's work: the kernels timed on every shape, each shape's pairs timed first (its
    predicted-fastest built-ins and its own winners; none with ``--winners-from``), the pairs ``--top``
    or ``--only-timed`` keep (None: all), the pairs timed before, and the batches in the order they run."""

    configs: list
    first: dict
    only: dict | None
    timed: set
    batches: list

    def kernel_count(self) -> int:
        return len({c.name for c in self.configs} | {c.name for cs in self.first.values() for c in cs})


def timing_work(args: argparse.Namespace, job: Any, foreign: Any, have: Any,
                winners: dict[str, list] | None = None) -> Work:
    """What the timings stage times on this GPU (``have``: its results as stored now), in value order."""
    from ..tune.grid_timings import timing_batches
    from .search_builtin import FAMILY_TOP, TIME_TOP, first_pairs, predicted_builtins

    timed = {(name, key) for name, k in have.timings.kernels.items() for key in k.ms}
    configs = kernels(args, job, foreign, winners)
    only = pairs_to_time(args, have, foreign, configs, job)
    shapes = job.timing_shapes()
    first = {}
    if foreign is None:
        own = tuned_winners(job) if winners is None else winners
        first = first_pairs(predicted_builtins(job.device, shapes, job.families, TIME_TOP, per_family=FAMILY_TOP), own)
    batches = timing_batches(configs, shapes, job.device, skip=timed, only=only, first=first)
    return Work(configs, first, only, timed, batches)


def predicted_top(results: Any, configs: list, shapes: list, device: Any, k: int) -> dict[str, set[str]]:
    """Shape key -> the names (in the shape's layout) of the ``k`` kernels of each accuracy class among
    ``configs`` that the dispatch, fitted to ``results``' timings, predicts fastest there, plus every
    kernel it has no time model for (untimed, or timed only where its split-K slices go empty): nothing
    to predict from. Timing only these spends the GPU where a pick can change."""
    from ..runtime.dispatch import candidates, fit_all, layout_factors
    from ..runtime.counts import aligned_for
    from ..runtime.predict import launch_base
    from ..tune.warm import in_layout

    families = {c.family for c in configs}
    timed = {p: results.timings.of_precision(p) for p in sorted({c.precision for c in configs})}
    classes = [fit_all([t for t in kernels if t.config.family in families], device, launch_base(kernels))
               for kernels in timed.values()]   # the class's launch base, as the dispatch's
    fitted = {f.config.name for fits in classes for f in fits}
    unranked = [c for c in configs if c.name not in fitted]
    layouts = {s.layout for s in shapes}
    mine = {lay: {c.name for c in in_layout(configs, lay, device)} for lay in layouts}   # what timing_batches keeps
    always = {lay: {c.name for c in in_layout(unranked, lay, device)} for lay in layouts}
    factors = [layout_factors(fits) for fits in classes]
    competing = {lay: [candidates(fits, lay, device, factors=f) for fits, f in zip(classes, factors)]
                 for lay in layouts}
    out: dict[str, set[str]] = {}
    for s in shapes:
        keep = set(always[s.layout])
        for fits in competing[s.layout]:
            ranked = sorted((f.predict(s, aligned_for(f.config, s)), f.config.name)
                            for f in fits if f.config.accepts(s.M, s.N, s.K) is None)
            keep |= set([n for _, n in ranked if n in mine[s.layout]][:k])
        out[s.key] = keep
    return out


def pairs_to_time(args: argparse.Namespace, have: Any, foreign: Any, configs: list, job: Any) -> dict | None:
    """Shape key -> the kernel names to time there (None: every kernel): with ``--only-timed`` the pairs
    ``--winners-from`` times or stores (an entry is its kernel timed on its shape), with ``--top K`` each
    shape's K predicted fastest."""
    if args.only_timed:
        only: dict[str, set[str]] = {s.key: set() for s in job.grid.shapes}   # a shape FILE never timed: none
        pairs = [(name, key) for name, k in foreign.timings.kernels.items() for key in k.ms]
        for name, key in pairs + [(e.name, e.shape.key) for e in foreign.entries.values()]:
            only.setdefault(key, set()).add(name)
        return only
    return predicted_top(foreign or have, configs, job.timing_shapes(), job.device, args.top) if args.top else None


def time_grid(args: argparse.Namespace, job: Any, foreign: Any, ctx: dict, winners: dict[str, list] | None = None) -> None:
    """Time every (kernel, shape) pair not timed before, one batch per free GPU, recording as they come.
    ``winners`` (shape key -> configs tuned there) stand for the studies' winners (a ``--shape`` search's)."""
    from ..tune import gpu
    from ..tune.ahead import AHEAD, CompileAhead, cores
    from ..tune.grid_timings import TimeShape
    from ..tune.pool import run_on_devices
    from .search_builtin import FAMILY_TOP, TIME_TOP

    if args.only_timed and Path(args.winners_from).resolve() == results_path(args, ctx["fp"]).resolve():
        raise ValueError(f"--only-timed re-times the pairs {args.winners_from} holds, and they count as timed "
                         "in the file the run writes: give --results a folder of its own")
    have = current(args, ctx["fp"])
    work = timing_work(args, job, foreign, have, winners)
    batches, timed, only = work.batches, work.timed, work.only
    rep = args.rep_ms or REP_MS
    source = f"the kernels of {args.winners_from}" if foreign is not None else \
        (f"the winners and presets, and per shape the {TIME_TOP} built-ins predicted fastest and each family's "
         f"{FAMILY_TOP} fastest, first with its own winners")
    source += f"; per shape the {args.top} predicted fastest" if args.top else ""
    if args.only_timed:
        held = sum((name, key) in timed for key, names in only.items() for name in names)
        source += f"; each on the shapes that file times it on, {held} of those pairs in the output file already"
    shapes = len(job.timing_shapes())
    out.say(f"grid {job.grid.name} timings: {work.kernel_count()} kernels ({source}) on "
            f"{shapes} shapes{' (each tuned shape in every layout)' if shapes > len(job.grid.shapes) else ''}: "
            f"{sum(len(b.configs) for b in batches)} to time in {len(batches)} "
            f"batches, --rep-ms {rep:g}")
    deadline = ctx.get("end")   # the budget's end: what is not timed by then, a rerun times
    prepare = gpu.NvrtcPrepare(job.device.arch)
    timer = TimeShape(functools.partial(gpu.GpuRetime, rep_ms=rep), prepare, job.options.get("jobs", 2), deadline)
    state = {"entries": dict(have.entries), "measured": 0, "failed": 0,
             "progress": out.Progress(len(batches), end=deadline)}
    with CompileAhead(prepare, [c for b in batches for c in b.configs], threads=min(AHEAD, cores())):
        run_on_devices(batches, timer, ctx["devices"], mode=ctx["mode"],
                       on_done=lambda done: _batch(args, done, state, ctx))
    ctx["report"]["timings"] = {"kernels": work.kernel_count(), "batches": len(batches),
                                "measured": state["measured"], "failed": state["failed"],
                                "skipped": len(timed), "file": str(results_path(args, ctx["fp"]))}


def fp_arch(fp: dict) -> str:
    """The sm_XX of a device fingerprint (what its winners' sources are rendered for).

    >>> fp_arch({"name": "NVIDIA H100 80GB HBM3", "cc": "9.0"})
    'sm_90'
    """
    return "sm_" + str(fp["cc"]).replace(".", "")


def _batch(args: argparse.Namespace, done: Any, state: dict, ctx: dict) -> None:
    """Record one batch's times, and its fastest kernel per accuracy class as the shape's entry."""
    from ..base.outcome import Measurement
    from ..records.store import record
    from ..records.timings import Timings

    shape = done.item.shape
    if done.error:
        ctx["failed"] += 1
        out.say(state["progress"].line(done.device, f"timings {shape.key}: FAILED: {done.error}", done.seconds))
        return
    timings, best, rows = Timings.empty(), {}, []
    for config, m in done.result:
        if isinstance(m, Measurement):
            timings = timings.add(config, shape, m.ms, m.cublas_ms, m.resident)
            rows.append({"tflops": m.tflops, "ratio": m.ratio})
            if m.tflops > best.get(config.precision, (None, 0.0))[1]:
                best[config.precision] = (config, m.tflops, m)
        else:
            rows.append({"failure": str(m)})
    state["measured"] += sum("tflops" in r for r in rows)
    state["failed"] += sum("failure" in r for r in rows)
    if rows:
        saved = record(ctx["fp"], _entries(shape, best, state["entries"], fp_arch(ctx["fp"])), args.results, timings=timings)
        state["entries"] = dict(saved.entries)
    what = out.batch_summary(shape.key, rows) if rows else f"timings {shape.key}: not started (the budget ended)"
    out.say(state["progress"].line(done.device, what, done.seconds))


def _entries(shape: Any, best: dict, entries: dict, arch: str) -> list:
    """Entries for the fastest timed kernel of each accuracy class, unless it already holds the key."""
    from ..records.entry import Entry
    from ..records.keys import entry_key

    new = []
    for precision, (config, tflops, m) in best.items():
        held = entries.get(entry_key(shape, precision))
        if held is None or held.name != config.name:
            new.append(Entry.new(shape.key, config, tflops, m.cublas_tflops, 0, arch=arch))   # 0 trials: timed, not searched
    return new
