"""First-call tuning, opt-in: time a few kernels on the first call of a request kind and keep the fastest.

Off by default: ``gemmgen.matmul`` runs the kernel the dispatch predicts fastest (:mod:`.dispatch`), which
needs no GPU time. With ``gemmgen.tune_first_calls(3)`` (or ``GEMMGEN_TUNE=3`` in the environment) the
first call of a request kind (shape, layout, leading dimensions, alignment, precision, family) on a GPU
times, besides that plan, the kernels that run the request as it is with the least predicted times: the
``candidates`` first of them and the two first of each family (a far SIMT prediction can be 1.4x off:
docs/PERFORMANCE.md, session 41). Each runs once to load (compiling where the kernel cache lacks it), then
ROUNDS times interleaved with the others into a scratch C, timed with CUDA events; the least median wins.
On session 41's launch-sized oracles this recovers most of what the predictions lose against the best
timed kernel (1.216 -> 1.234x cuBLAS on the H100's rows, 1.203 -> 1.215x on the H200's, offline).

The winner is kept for the process and written to ``<kernel cache>/tuned/<gpu>.json`` (the cache folder
is $GEMMGEN_CACHE, else $XDG_CACHE_HOME/gemmgen), which later processes read, so a kind is timed once per
GPU model. A kept kernel that the shipped results no longer time is timed anew. A call on a stream being
captured into a CUDA graph is never timed (it runs the predicted plan). The first call waits for the GPU
(it synchronizes the stream); later calls of the kind are as without tuning.

>>> from gemmgen.runtime import autotune
>>> autotune.request_key(100, 200, 300, "NT", 300, 300, 200, "fp32", None, True)
'100x200x300/NT lda=300 ldb=300 ldc=200 fp32 any aligned'
"""
from __future__ import annotations

import json
import os
import statistics
import threading
import warnings
from pathlib import Path
from typing import Callable, Sequence

from ..base.paths import cache_dir
from ..records.store import slug

ENV = "GEMMGEN_TUNE"
MAX_CANDIDATES = 16
ROUNDS = 5
PER_FAMILY = 2

_state: dict = {"top": None}             # None: read ENV on first use
_kept: dict[str, dict[str, dict]] = {}    # GPU name -> request key -> record
_LOCK = threading.RLock()


def tune_first_calls(candidates: int = 3) -> None:
    """Time ``candidates`` kernels (and the two best predicted of each family) against the predicted plan
    on the first call of each request kind, and keep the fastest; 0 turns it off. ValueError (one line)
    for anything but an integer 0..MAX_CANDIDATES."""
    _state["top"] = _count(candidates, "candidates")


def candidates_per_request() -> int:
    """How many kernels first calls time besides the plan (0: tuning is off); GEMMGEN_TUNE unless set."""
    if _state["top"] is None:
        _state["top"] = _count(os.environ.get(ENV, "0"), ENV)
    return _state["top"]


def _count(value, what: str) -> int:
    try:
        n = int(value)
        ok = str(value).strip().lstrip("+").isdigit() if isinstance(value, str) else n == value
    except (TypeError, ValueError):
        ok = False
    if not ok or not 0 <= n <= MAX_CANDIDATES:
        raise ValueError(f"{what}={value!r}: a number of kernels to time per request kind, 0 (off) to "
                         f"{MAX_CANDIDATES}")
    return n


def request_key(M: int, N: int, K: int, layout: str, lda: int, ldb: int, ldc: int, precision: str,
                family: str | None, aligned: bool) -> str:
    """The text that names a request kind in the kept file (see the module's example)."""
    return (f"{M}x{N}x{K}/{layout} lda={lda} ldb={ldb} ldc={ldc} {precision} {family or 'any'} "
            f"{'aligned' if aligned else 'unaligned'}")


def kept_path(gpu: str) -> Path:
    """The file of one GPU model's kept picks."""
    return cache_dir() / "tuned" / f"{slug(gpu)}.json"


def kept(gpu: str) -> dict[str, dict]:
    """One GPU's kept picks, read from its file once per process (an unreadable file counts as empty,
    with one warning: it is rewritten at the next pick)."""
    with _LOCK:
        if gpu not in _kept:
            _kept[gpu] = _read(kept_path(gpu))
        return _kept[gpu]


def _read(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        picks = data["picks"]
        if not isinstance(picks, dict):
            raise ValueError("picks is not an object")
        return picks
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warnings.warn(f"gemmgen: ignoring the tuned picks in {path} ({type(exc).__name__}: {exc})", stacklevel=4)
        return {}


def remember(gpu: str, key: str, record: dict) -> None:
    """Keep a pick for the process and in the GPU's file (merged with what other processes wrote since,
    replaced atomically; a file that cannot be written leaves the pick in memory, with one warning)."""
    with _LOCK:
        picks = kept(gpu)
        picks[key] = record
        path = kept_path(gpu)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            merged = {**(_read(path) if path.exists() else {}), **picks}
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"gpu": gpu, "picks": merged}, indent=1, sort_keys=True))
            os.replace(tmp, path)
        except OSError as exc:
            warnings.warn(f"gemmgen: tuned pick not saved to {path} ({exc})", stacklevel=4)


def time_runs(runs: Sequence[Callable[[], None]], stream, rounds: int = ROUNDS) -> list[float]:
    """Median ms of each run over ``rounds`` rounds, the runs interleaved on ``stream`` (a CuPy stream);
    waits for the stream."""
    import cupy

    events = [[(cupy.cuda.Event(), cupy.cuda.Event()) for _ in runs] for _ in range(rounds)]
    for row in events:
        for run, (start, end) in zip(runs, row):
            start.record(stream)
            run()
            end.record(stream)
    stream.synchronize()
    return [statistics.median(cupy.cuda.get_elapsed_time(*row[i]) for row in events) for i in range(len(runs))]


def choose(plans: Sequence[tuple], runs: Sequence[Callable[[], None]], stream) -> tuple[int, list[float]]:
    """(index of the fastest plan, median ms of each) where ``runs[i]`` enqueues plan i."""
    ms = time_runs(runs, stream)
    return min(range(len(plans)), key=lambda i: (ms[i], i)), ms


def tuned_plan(lib, request: tuple, plan: tuple, make_run: Callable[[object, bool, bool], Callable[[], None]],
               stream) -> tuple:
    """(kernel, copy A, copy B) to run a request under first-call tuning: ``plan`` (the dispatch's) where
    tuning is off or the stream is capturing; the kept pick of the request's kind; else the fastest of
    the plan and :meth:`KernelLibrary.alternatives`, timed now. ``request``: :func:`request_key`'s
    arguments; ``make_run(kernel, copy_a, copy_b)``: a function that enqueues that plan on ``stream``
    into a scratch C."""
    top = candidates_per_request()
    if not top or stream.is_capturing():
        return plan
    M, N, K, layout, lda, ldb, ldc, precision, family, aligned = request
    gpu, key = lib.spec.name, request_key(*request)
    with _LOCK:
        record = kept(gpu).get(key)
        if record is not None:
            found = _kept_plan(lib, record, plan, precision, family)
            if found is not None:
                return found
        todo = {(plan[0].config.name, plan[1], plan[2]): (plan[0].config, plan[1], plan[2], plan[0])}
        for config in lib.alternatives(M, N, K, layout, lda, ldb, ldc, precision, family, aligned, top, PER_FAMILY):
            todo.setdefault((config.name, False, False), (config, False, False, None))
        if len(todo) == 1:
            return plan
        ready, runs = [], []
        for config, copy_a, copy_b, kernel in todo.values():
            try:
                kernel = kernel or lib.kernel(config)
                run = make_run(kernel, copy_a, copy_b)
                run()   # loads it; a launch the driver refuses is left out here
                runs.append(run)
                ready.append((kernel, copy_a, copy_b))
            except Exception as exc:   # a candidate that does not build or launch here is left out
                warnings.warn(f"gemmgen: first-call tuning left out {config.name} ({type(exc).__name__}: "
                              f"{(str(exc).splitlines() or [''])[0]})", stacklevel=4)
        i, ms = choose(ready, runs, stream)
        kernel, copy_a, copy_b = ready[i]
        remember(gpu, key, {"kernel": kernel.config.name, "layout": kernel.config.layout, "copy_a": copy_a,
                            "copy_b": copy_b, "us": {_label(p): round(t * 1e3, 2) for p, t in zip(ready, ms)}})
        return ready[i]


def _label(plan: tuple) -> str:
    kernel, copy_a, copy_b = plan
    copies = "A" * copy_a + "B" * copy_b
    return kernel.config.name + (f" (copies {copies})" if copies else "")


def _kept_plan(lib, record: dict, plan: tuple, precision: str, family: str | None) -> tuple | None:
    """The kept pick as (kernel, copy A, copy B), or None where the library no longer times its kernel."""
    try:
        name, copies = record["kernel"], (bool(record.get("copy_a")), bool(record.get("copy_b")))
        if name == plan[0].config.name:
            return (plan[0], *copies)
        config = lib.timed_config(name, precision, record.get("layout", plan[0].config.layout), family)
    except (KeyError, TypeError, AttributeError):
        return None
    return None if config is None else (lib.kernel(config), *copies)


def runner(a, b, la: str, lb: str, M: int, N: int, K: int, lda: int, ldb: int, ldc: int, stream):
    """``make_run`` for :func:`tuned_plan`: a plan prepared as matmul prepares it (:class:`.calls.Prepared`),
    run on the request's A and B (only read) into a scratch C of the request's leading dimension."""
    import cupy

    from .arrays import span_offsets
    from .calls import Prepared
    from .transpose import stored_shape

    a_stored, b_stored, spans = stored_shape(a, la), stored_shape(b, lb), (span_offsets(a), span_offsets(b))
    scratch = []   # allocated with the first plan prepared (a kept pick times nothing)

    def make_run(kernel, copy_a: bool, copy_b: bool) -> Callable[[], None]:
        if not scratch:
            with stream:
                scratch.append(cupy.empty((M, ldc), dtype=cupy.float32))
        call = Prepared(kernel, M, N, K, la + lb, lda, ldb, ldc, copy_a, copy_b, a_stored, b_stored, spans, None)
        c = scratch[0].data.ptr
        return lambda: call(a.data.ptr, b.data.ptr, c, 1.0, 0.0, stream)

    return make_run
