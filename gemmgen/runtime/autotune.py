"""First-call tuning, opt-in: time a few kernels on the first call of a request kind and keep the fastest.

Off by default: ``gemmgen.matmul`` runs the kernel the dispatch predicts fastest (:mod:`.dispatch`), which
needs no GPU time. With ``gemmgen.tune_first_calls(3)`` (or ``GEMMGEN_TUNE=3`` in the environment) the
first call of a request kind (shape, layout, leading dimensions, alignment, precision, family) on a GPU
times the dispatch's plan and the kernels that run the request as it is with the least predicted times
(the planner's :meth:`.planner.Planner.alternatives`: the first ``candidates`` of them, the plan's kernel
usually among them, and the first ``Policy.tune_per_family`` of each family: a far SIMT prediction can be
1.4x off, docs/PERFORMANCE.md). The plan runs first (a failure is the call's own); the others compile (a candidate that does
not build is left out, with one warning), then run into a scratch C, timed as the stored timings were
(:func:`gemmgen.measure.timing.bench_interleaved`: interleaved, the L2 flushed before each run, CUDA
events; three estimate rounds, one or more warm-up rounds and at least five timed ones: a millisecond or
two for launch-sized kinds, seconds for the largest). The least median wins if it beats the plan by ``Policy.tune_margin``.
One kind's candidates run at a time on a GPU (other threads' own work still shares it); a timing that
fails (out of memory for the scratch C or the flush buffer) leaves the plan, with one warning.

The pick is kept for the process and in the GPU's file (:mod:`.picks`), which later processes read, so a
kind is timed once per GPU model; it is timed anew where the plan or the kernels offered beside it changed
(new results, another N) or its kernel no longer builds. A call on a stream being captured into a CUDA
graph times nothing: it runs the kept pick, else the dispatch's plan, and its prepared request is not
kept, so the next eager call of the kind tunes (another thread capturing in global mode while a kind is
timed here would see the timing's synchronization: tune before capturing). The first call of a kind
synchronizes its stream and may compile a few kernels (1-8 s each where the kernel cache lacks them);
later calls are as without tuning. :func:`tune_first_calls` changes the kinds not yet prepared on a
thread (:func:`.calls.forget` drops the prepared ones).
"""
from __future__ import annotations

import os
import threading
import warnings
import weakref
from typing import Callable

from .picks import kept, label, remember, request_key

ENV = "GEMMGEN_TUNE"
MAX_CANDIDATES = 16
WARMUP_MS, REP_MS = 2.0, 10.0   # bench_interleaved's budget for one kind's candidates (at least 5 rounds)

_state: dict = {"top": None}                                   # None: read ENV on first use
_resolved: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # library -> request key -> plan
_key_locks: dict[tuple, threading.Lock] = {}    # (GPU, request key): one thread times a kind
_gpu_locks: dict[int, threading.Lock] = {}      # device: one kind's candidates run at a time
_flushers: dict[int, object] = {}               # device: the L2 flush buffer, allocated once
_LOCK = threading.Lock()


def tune_first_calls(candidates: int = 3) -> None:
    """Time the ``candidates`` kernels of least predicted time (and each family's first two) on the first
    call of each request kind, and keep the fastest; 0 turns it off. ValueError (one line) for anything
    but an integer 0..MAX_CANDIDATES."""
    _state["top"] = _count(candidates, "candidates")
    _resolved.clear()   # the kinds resolved under another N are picked again (kept picks name their offered set)


def candidates_per_request() -> int:
    """The ``candidates`` first calls time (0: tuning is off): as set, else GEMMGEN_TUNE (unset or empty: 0)."""
    if _state["top"] is None:
        _state["top"] = _count(os.environ.get(ENV, "").strip() or "0", ENV)
    return _state["top"]


def _count(value, what: str) -> int:
    if isinstance(value, str):
        text = value.strip()
        n = int(text) if text.isdigit() else -1
    else:
        n = value if isinstance(value, int) and not isinstance(value, bool) else -1
    if not 0 <= n <= MAX_CANDIDATES:
        raise ValueError(f"{what}={value!r}: a number of kernels to time per request kind, 0 (off) to "
                         f"{MAX_CANDIDATES}")
    return n


def time_runs(runs: list[Callable[[], None]], stream, l2_bytes: int, device: int = 0) -> list[float]:
    """Median ms of each run, timed as the stored timings are: interleaved on ``stream`` (a CuPy stream),
    the L2 flushed before each run (the flushes also keep the GPU ahead of the host's launches)."""
    from ..measure.timing import L2Flusher, bench_interleaved

    with stream:   # bench_interleaved times on the current stream
        flush = _flushers.get(device) or _flushers.setdefault(device, L2Flusher(l2_bytes))
        return [t.median for t in bench_interleaved(runs, flush, WARMUP_MS, REP_MS)]


def tuned_plan(lib, request: tuple, plan: tuple, make_run: Callable[[object, bool, bool], Callable[[], None]],
               stream) -> tuple[tuple, bool]:
    """((kernel, copy A, copy B), settled) for a request: the dispatch's ``plan`` where tuning is off; the
    pick of its kind (kept in this process or the GPU's file); else the fastest of the plan and the
    alternatives, timed now. ``settled`` is False only where a capturing stream kept the call from timing
    (the caller should not keep the request prepared). ``request``: :func:`.picks.request_key`'s
    arguments; ``make_run(kernel, copy_a, copy_b)``: a function enqueuing that plan on ``stream`` into a
    scratch C."""
    top = candidates_per_request()
    if not top:
        return plan, True
    key = request_key(*request)
    done = _resolved.setdefault(lib, {})
    if key in done:
        return done[key], True
    with _lock_of(_key_locks, (lib.spec.name, key)):   # one thread times a kind; the others wait for its pick
        if key in done:
            return done[key], True
        found, offered = _from_file(lib, request, key, plan, top)
        if found is None and stream.is_capturing():
            return plan, False
        done[key] = found if found is not None else _timed(lib, key, plan, offered, make_run, stream)
        return done[key], True


def _lock_of(locks: dict, key) -> threading.Lock:
    with _LOCK:
        return locks.setdefault(key, threading.Lock())


def _signature(plan: tuple, offered: list) -> dict:
    """What a pick was chosen from: the plan (kernel, copies) and the kernels offered beside it."""
    return {"plan": [plan[0].config.name, bool(plan[1]), bool(plan[2])], "offered": sorted(c.name for c in offered)}


def _from_file(lib, request: tuple, key: str, plan: tuple, top: int) -> tuple[tuple | None, list]:
    """(the kept pick as a plan, or None where there is none or it is stale; the alternatives offered now)."""
    M, N, K, layout, lda, ldb, ldc, precision, family, aligned = request
    offered = lib.alternatives(M, N, K, layout, lda, ldb, ldc, precision, family, aligned, top,
                               lib.policy.tune_per_family)
    record = kept(lib.spec.name).get(key)
    signature = _signature(plan, offered)
    if not isinstance(record, dict) or any(record.get(k) != v for k, v in signature.items()):
        return None, offered   # none, or chosen from other kernels (new results): time the kind anew
    try:
        name, copies = record["kernel"], (bool(record.get("copy_a")), bool(record.get("copy_b")))
        if name == plan[0].config.name:
            return (plan[0], *copies), offered
        config = lib.timed_config(name, precision, record.get("layout", layout), family)
        return (None if config is None else (lib.kernel(config), *copies)), offered
    except Exception:   # a malformed record, or a kept kernel that no longer builds: time the kind anew
        return None, offered


def _timed(lib, key: str, plan: tuple, offered: list, make_run, stream) -> tuple:
    """The fastest of the plan and the offered kernels (run as the request is), kept where it beats the plan
    by the policy's ``tune_margin`` or is the plan; the plan, not kept, where nothing else builds or the timing fails (say, out of
    memory for the scratch C or the flush buffer: the call goes on as untuned, with one warning)."""
    run_plan = make_run(*plan)
    run_plan()   # the plan must run (a failure here is the call's own), before any candidate compiles
    ready, runs = [plan], [run_plan]
    seen = {(plan[0].config.name, plan[1], plan[2])}
    built = []
    for config in offered:
        if (config.name, False, False) not in seen:
            seen.add((config.name, False, False))
            try:
                built.append((lib.kernel(config), config))   # compiling needs no lock of the GPU's
            except Exception as exc:
                _left_out(config, exc)
    with _lock_of(_gpu_locks, lib.device_id):   # one kind's candidates at a time on a GPU
        for kernel, config in built:
            try:
                run = make_run(kernel, False, False)
                run()   # loads it: a launch the driver refuses is left out here
            except Exception as exc:
                _left_out(config, exc)
                continue
            ready.append((kernel, False, False))
            runs.append(run)
        if len(ready) < 2:
            return plan
        try:
            ms = time_runs(runs, stream, lib.spec.l2_bytes, lib.device_id)
        except Exception as exc:
            warnings.warn(f"gemmgen: first-call tuning could not time {key} ({type(exc).__name__}: "
                          f"{(str(exc).splitlines() or [''])[0]}); running the predicted plan", stacklevel=5)
            return plan
    i = min(range(len(ready)), key=lambda j: (ms[j], j))
    if ms[i] > ms[0] * (1.0 - lib.policy.tune_margin):
        i = 0   # within the noise of the plan: keep the plan
    kernel, copy_a, copy_b = ready[i]
    remember(lib.spec.name, key, {"kernel": kernel.config.name, "layout": kernel.config.layout, "copy_a": copy_a,
                                  "copy_b": copy_b, **_signature(plan, offered),
                                  "us": {label(k.config.name, a, b): round(t * 1e3, 2) for (k, a, b), t in zip(ready, ms)}})
    return ready[i]


def _left_out(config, exc: Exception) -> None:
    warnings.warn(f"gemmgen: first-call tuning left out {config.name} ({type(exc).__name__}: "
                  f"{(str(exc).splitlines() or [''])[0]})", stacklevel=6)


def runner(a, b, la: str, lb: str, M: int, N: int, K: int, lda: int, ldb: int, ldc: int, stream):
    """``make_run`` for :func:`tuned_plan`: a plan prepared as matmul prepares it (:class:`.calls.Prepared`),
    run on the request's A and B (only read) into a scratch C of the request's leading dimension (made, with
    the operands' stored shapes and spans, when the first plan is prepared: a kept pick makes nothing)."""
    import cupy

    from .arrays import span_offsets
    from .calls import Prepared
    from .transpose import stored_shape

    first = []   # scratch C and the operands' facts, made with the first plan prepared

    def make_run(kernel, copy_a: bool, copy_b: bool) -> Callable[[], None]:
        if not first:
            with stream:
                scratch = cupy.empty((M - 1) * ldc + N, dtype=cupy.float32)
            first.append((scratch, stored_shape(a, la), stored_shape(b, lb), (span_offsets(a), span_offsets(b))))
        scratch, a_stored, b_stored, spans = first[0]
        call = Prepared(kernel, M, N, K, la + lb, lda, ldb, ldc, copy_a, copy_b, a_stored, b_stored, spans, None)
        c = scratch.data.ptr
        return lambda: call(a.data.ptr, b.data.ptr, c, 1.0, 0.0, stream)

    return make_run
