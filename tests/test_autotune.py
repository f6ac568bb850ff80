"""First-call tuning (gemmgen.runtime.autotune) without a GPU: the switch and its one-line errors, the kept
picks' file, and which plans a first call times and keeps, with the timing and the kernels as test
doubles; the alternatives the shipped H100 results offer."""
from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import pytest

from gemmgen.kernel.presets import preset
from gemmgen.runtime import autotune, picks
from gemmgen.runtime.policy import DEFAULT

REQUEST = (300, 200, 100, "NN", 100, 200, 200, "fp32", None, True)


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """Each test: the switch unread, no picks in memory, the kernel cache in a folder of its own."""
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setattr(picks, "_kept", {})
    monkeypatch.setattr(autotune, "_resolved", autotune.weakref.WeakKeyDictionary())
    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(autotune.ENV, raising=False)
    return tmp_path


@pytest.mark.parametrize("value, want", [(0, 0), (3, 3), ("4", 4), (" 2 ", 2), (16, 16)])
def test_the_switch_takes_a_count_of_kernels(value, want, monkeypatch):
    autotune.tune_first_calls(value)
    assert autotune.candidates_per_request() == want


@pytest.mark.parametrize("value", ["abc", -1, 17, 2.5, 3.0, True, "3.0", "", None])
def test_a_bad_count_is_one_line_naming_it_and_changes_nothing(value):
    autotune.tune_first_calls(2)
    with pytest.raises(ValueError) as exc:
        autotune.tune_first_calls(value)
    assert repr(value) in str(exc.value) and "0 (off) to 16" in str(exc.value) and "\n" not in str(exc.value)
    assert autotune.candidates_per_request() == 2


def test_the_environment_turns_it_on_and_a_bad_value_names_the_variable(monkeypatch):
    assert autotune.candidates_per_request() == 0          # off by default
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setenv(autotune.ENV, "5")
    assert autotune.candidates_per_request() == 5
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setenv(autotune.ENV, "many")
    with pytest.raises(ValueError, match="GEMMGEN_TUNE='many'"):
        autotune.candidates_per_request()
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setenv(autotune.ENV, " ")
    assert autotune.candidates_per_request() == 0            # set but empty: off


def test_picks_are_kept_in_a_file_per_gpu_that_a_new_process_reads_and_merges(fresh, monkeypatch):
    picks.remember("NVIDIA H100 80GB HBM3", "k1", {"kernel": "gg_a"})
    path = picks.kept_path("NVIDIA H100 80GB HBM3")
    assert path == fresh / "cache" / "tuned" / "nvidia-h100-80gb-hbm3.json"
    assert json.loads(path.read_text())["picks"] == {"k1": {"kernel": "gg_a"}}
    # another process adds a pick; this one's next pick keeps it
    data = json.loads(path.read_text())
    data["picks"]["k0"] = {"kernel": "gg_z"}
    path.write_text(json.dumps(data))
    picks.remember("NVIDIA H100 80GB HBM3", "k2", {"kernel": "gg_b"})
    assert set(json.loads(path.read_text())["picks"]) == {"k0", "k1", "k2"}
    monkeypatch.setattr(picks, "_kept", {})               # a new process
    assert picks.kept("NVIDIA H100 80GB HBM3")["k0"] == {"kernel": "gg_z"}
    assert picks.kept("NVIDIA H200") == {}                # other GPUs have files of their own
    assert not list(path.parent.glob("*.tmp"))
    assert picks.request_key(*REQUEST) == "300x200x100/NN lda=100 ldb=200 ldc=200 fp32 any aligned"


def test_an_unreadable_file_counts_as_empty_with_one_warning(fresh):
    path = picks.kept_path("GPU X")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.warns(UserWarning, match="ignoring the tuned picks"):
        assert picks.kept("GPU X") == {}


def test_a_file_that_cannot_be_written_leaves_the_pick_in_memory(fresh, monkeypatch):
    blocked = fresh / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("GEMMGEN_CACHE", str(blocked))
    with pytest.warns(UserWarning, match="not saved"):
        picks.remember("GPU X", "k", {"kernel": "gg_a"})
    assert picks.kept("GPU X")["k"] == {"kernel": "gg_a"}


class FakeLibrary:
    """alternatives() hands out configs (its arguments recorded); kernel() loads them (or refuses one);
    timed_config() knows the configs of one layout."""

    def __init__(self, alternatives, timed=None, refuse=(), layout="NN"):
        self.spec, self.device_id = SimpleNamespace(name="GPU X", l2_bytes=50 << 20), 0
        self._alternatives, self._timed, self._refuse = alternatives, timed, set(refuse)
        self._layout, self.loaded, self.asked, self.events = layout, [], [], []
        self.policy = DEFAULT

    def alternatives(self, *args):
        self.asked.append(args)
        top = args[-2]
        return list(self._alternatives[top] if isinstance(self._alternatives, dict) else self._alternatives)

    def kernel(self, config):
        if config.name in self._refuse:
            raise RuntimeError("compile failed\nwith details")
        self.loaded.append(config.name)
        self.events.append(("compile", config.name))
        return SimpleNamespace(config=config)

    def timed_config(self, name, precision, layout, family=None):
        timed = self._timed if self._timed is not None else self._alternatives
        return next((c for c in timed if c.name == name), None) if layout == self._layout else None


def _configs(n):
    base = preset("v6")
    return [base.replace(BK=8 * (i + 1) if i < 2 else 8, stages=2 + i, label="") for i in range(n)]


def _tune(lib, plan, ms, monkeypatch, capturing=False):
    """tuned_plan with time_runs answering ``ms`` by kernel name; returns (pick, settled, names timed, runs made)."""
    timed, made = [], []

    def time_runs(runs, stream, l2_bytes, device):
        assert (l2_bytes, device) == (lib.spec.l2_bytes, lib.device_id)
        timed.append([r.name for r in runs])
        return [ms[r.name] for r in runs]

    monkeypatch.setattr(autotune, "time_runs", time_runs)

    def make_run(kernel, copy_a, copy_b):
        made.append((kernel.config.name, copy_a, copy_b))
        run = lambda: lib.events.append(("run", kernel.config.name))
        run.name = kernel.config.name + ("+copies" if copy_a or copy_b else "")
        return run

    stream = SimpleNamespace(is_capturing=lambda: capturing)
    (pick, settled) = autotune.tuned_plan(lib, REQUEST, plan, make_run, stream)
    return pick, settled, timed, made


def _signed(record, plan, offered):
    """A hand-written record with the signature a pick chosen from ``plan`` and ``offered`` carries."""
    return {**record, "plan": [plan[0].config.name, plan[1], plan[2]], "offered": sorted(c.name for c in offered)}


def _new_process(monkeypatch):
    monkeypatch.setattr(picks, "_kept", {})
    monkeypatch.setattr(autotune, "_resolved", autotune.weakref.WeakKeyDictionary())


def test_off_runs_the_plan_and_asks_nothing(monkeypatch):
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary(c[1:])
    pick, settled, timed, made = _tune(lib, plan, {}, monkeypatch)
    assert pick is plan and settled and not timed and not made and not lib.loaded and not lib.asked


def test_the_fastest_of_the_plan_and_its_alternatives_is_kept_and_reused(monkeypatch):
    autotune.tune_first_calls(3)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[0], c[1], c[2]])                  # the plan's kernel among them: timed once
    ms = {c[0].name: 0.020, c[1].name: 0.012, c[2].name: 0.015}
    (kernel, copy_a, copy_b), settled, timed, made = _tune(lib, plan, ms, monkeypatch)
    assert kernel.config.name == c[1].name and (copy_a, copy_b) == (False, False) and settled
    assert timed == [[c[0].name, c[1].name, c[2].name]] and len(made) == 3
    assert lib.asked == [REQUEST + (3, DEFAULT.tune_per_family)]   # the request as it is, the counts asked for
    record = picks.kept("GPU X")[picks.request_key(*REQUEST)]
    assert record["kernel"] == c[1].name and record["us"][c[1].name] == 12.0
    assert record["offered"] == sorted(x.name for x in c)
    # the same process again: nothing asked, nothing timed
    pick, _, timed, made = _tune(lib, plan, ms, monkeypatch)
    assert pick[0].config.name == c[1].name and not timed and not made and len(lib.asked) == 1
    # another process: from the file, nothing timed
    _new_process(monkeypatch)
    (kernel, _, _), _, timed, made = _tune(lib, plan, ms, monkeypatch)
    assert kernel.config.name == c[1].name and not timed and not made


def test_a_capturing_stream_runs_the_kept_pick_or_the_plan_and_times_nothing(monkeypatch):
    autotune.tune_first_calls(3)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[1], c[2]])
    pick, settled, timed, made = _tune(lib, plan, {}, monkeypatch, capturing=True)
    assert pick is plan and not settled and not timed and not made     # not settled: not to be kept prepared
    _tune(lib, plan, {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01}, monkeypatch)   # an eager call tunes
    _new_process(monkeypatch)
    (kernel, _, _), settled, timed, _ = _tune(lib, plan, {}, monkeypatch, capturing=True)
    assert kernel.config.name == c[2].name and settled and not timed


def test_the_plan_with_copies_and_its_kernel_without_them_are_two_candidates(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(2)
    plan = (SimpleNamespace(config=c[0]), True, False)
    lib = FakeLibrary([c[0], c[1]])
    ms = {c[0].name + "+copies": 0.010, c[0].name: 0.014, c[1].name: 0.016}
    (kernel, copy_a, copy_b), _, timed, _ = _tune(lib, plan, ms, monkeypatch)
    assert kernel is plan[0] and (copy_a, copy_b) == (True, False) and len(timed[0]) == 3
    _new_process(monkeypatch)
    (kernel, copy_a, _), _, timed, _ = _tune(lib, plan, ms, monkeypatch)
    assert kernel is plan[0] and copy_a and not timed


def test_a_kept_pick_in_another_layout_is_found_in_that_layout(monkeypatch):
    """A plan that copies into another layout keeps that layout: the pick is looked up there."""
    autotune.tune_first_calls(2)
    c = _configs(2)
    nt = c[1].replace(layout="NT")
    lib = FakeLibrary([c[0], c[1]], timed=[nt], layout="NT")
    key = picks.request_key(*REQUEST)
    plan = (SimpleNamespace(config=c[0]), False, False)
    picks.remember("GPU X", key, _signed({"kernel": nt.name, "layout": "NT", "copy_b": True}, plan, c))
    (kernel, copy_a, copy_b), _, timed, _ = _tune(lib, plan, {}, monkeypatch)
    assert kernel.config is nt and (copy_a, copy_b) == (False, True) and not timed


@pytest.mark.parametrize("record", [{"kernel": "gg_gone", "layout": "NN"}, {"kernel": 5}, "not a record",
                                    {"layout": "NN"}])
def test_a_kept_pick_that_is_gone_stale_or_malformed_is_timed_anew(record, monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    if isinstance(record, dict):
        record = _signed(record, plan, c[1:])
    picks.remember("GPU X", picks.request_key(*REQUEST), record)
    lib = FakeLibrary([c[1], c[2]])
    (kernel, _, _), _, timed, _ = _tune(lib, plan, {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01}, monkeypatch)
    assert kernel.config.name == c[2].name and len(timed) == 1


def test_new_candidates_make_a_kept_pick_stale(monkeypatch):
    """Results that offer other kernels (a new search) time the kind again."""
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    ms = {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01}
    _tune(FakeLibrary([c[1]]), plan, ms, monkeypatch)
    _new_process(monkeypatch)
    (kernel, _, _), _, timed, _ = _tune(FakeLibrary([c[1], c[2]]), plan, ms, monkeypatch)
    assert kernel.config.name == c[2].name and len(timed) == 1


def test_a_kept_kernel_that_no_longer_builds_is_timed_anew(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    ms = {c[0].name: 0.03, c[1].name: 0.01, c[2].name: 0.02}
    _tune(FakeLibrary([c[1], c[2]]), plan, ms, monkeypatch)
    _new_process(monkeypatch)
    with pytest.warns(UserWarning, match="left out"):
        (kernel, _, _), _, timed, _ = _tune(FakeLibrary([c[1], c[2]], refuse=[c[1].name]), plan, ms, monkeypatch)
    assert kernel.config.name == c[2].name and len(timed) == 1


def test_a_candidate_that_does_not_build_is_left_out_with_one_warning(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[1], c[2]], refuse=[c[1].name])
    with pytest.warns(UserWarning, match=f"left out {c[1].name} \\(RuntimeError: compile failed\\)"):
        (kernel, _, _), _, timed, _ = _tune(lib, plan, {c[0].name: 0.03, c[2].name: 0.01}, monkeypatch)
    assert kernel.config.name == c[2].name and timed == [[c[0].name, c[2].name]]


@pytest.mark.parametrize("offered", [[0], [1]])
def test_nothing_to_compare_runs_the_plan_untimed_and_keeps_nothing(offered, monkeypatch):
    """Only the plan's kernel offered, or every other one failing to build: the plan, untimed, not kept."""
    autotune.tune_first_calls(3)
    c = _configs(2)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[i] for i in offered], refuse=[c[1].name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pick, settled, timed, _ = _tune(lib, plan, {}, monkeypatch)
    assert pick is plan and settled and not timed and not picks.kept("GPU X")


def test_one_thread_times_a_kind_while_the_others_wait_for_its_pick(monkeypatch):
    import threading
    import time

    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[1], c[2]])
    inside, gate, calls = threading.Event(), threading.Event(), []

    def time_runs(runs, stream, l2_bytes, device):
        calls.append(1)
        inside.set()
        gate.wait(5)
        return [0.03, 0.01, 0.02]

    monkeypatch.setattr(autotune, "time_runs", time_runs)
    stream = SimpleNamespace(is_capturing=lambda: False)
    got = []
    run = lambda: got.append(autotune.tuned_plan(lib, REQUEST, plan, lambda *p: (lambda: None), stream)[0])
    first = threading.Thread(target=run)
    first.start()
    assert inside.wait(5)                     # the first thread is timing the kind ...
    others = [threading.Thread(target=run) for _ in range(3)]
    for t in others:
        t.start()
    time.sleep(0.2)
    assert not got                            # ... and the others wait for its pick
    gate.set()
    for t in [first, *others]:
        t.join(10)
    assert len(calls) == 1 and len(got) == 4 and all(p[0].config.name == c[1].name for p in got)


def test_the_plan_runs_before_any_candidate_compiles(monkeypatch):
    autotune.tune_first_calls(3)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[1], c[2]])
    _tune(lib, plan, {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01}, monkeypatch)
    assert lib.events[0] == ("run", c[0].name) and ("compile", c[1].name) in lib.events[1:]


def test_a_candidate_within_the_margin_of_the_plan_leaves_the_plan(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(2)
    plan = (SimpleNamespace(config=c[0]), False, False)
    faster = 0.020 * (1.0 - DEFAULT.tune_margin / 2)
    pick, _, timed, _ = _tune(FakeLibrary([c[1]]), plan, {c[0].name: 0.020, c[1].name: faster}, monkeypatch)
    assert pick is plan and timed
    assert picks.kept("GPU X")[picks.request_key(*REQUEST)]["kernel"] == c[0].name   # kept: it was compared


def test_a_timing_that_fails_runs_the_plan_with_one_warning_and_keeps_nothing(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(2)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[1]])
    tries = []

    def time_runs(runs, stream, l2_bytes, device):
        tries.append(1)
        raise MemoryError("out of memory allocating 104857600 bytes")

    monkeypatch.setattr(autotune, "time_runs", time_runs)
    stream = SimpleNamespace(is_capturing=lambda: False)
    with pytest.warns(UserWarning, match="could not time .*MemoryError: out of memory"):
        pick, settled = autotune.tuned_plan(lib, REQUEST, plan, lambda *p: (lambda: None), stream)
    assert pick is plan and settled and not picks.kept("GPU X")
    assert autotune.tuned_plan(lib, REQUEST, plan, lambda *p: (lambda: None), stream)[0] is plan and len(tries) == 1


def test_a_new_plan_makes_a_kept_pick_stale(monkeypatch):
    """Results whose dispatch plans the kind otherwise (another kernel, or copies) time it again, though the
    kernels offered beside the plan are the same."""
    autotune.tune_first_calls(2)
    c = _configs(3)
    ms = {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01, c[0].name + "+copies": 0.005}
    _tune(FakeLibrary([c[1], c[2]]), (SimpleNamespace(config=c[0]), False, False), ms, monkeypatch)
    _new_process(monkeypatch)
    (kernel, copy_a, _), _, timed, _ = _tune(FakeLibrary([c[1], c[2]]), (SimpleNamespace(config=c[0]), True, False),
                                             ms, monkeypatch)
    assert kernel.config.name == c[0].name and copy_a and len(timed) == 1


def test_setting_n_again_picks_the_kinds_again(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    ms = {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01}
    lib = FakeLibrary({2: [c[1]], 3: [c[1], c[2]]}, timed=c)
    (kernel, _, _), _, timed, _ = _tune(lib, plan, ms, monkeypatch)
    assert kernel.config.name == c[1].name and len(timed) == 1
    autotune.tune_first_calls(3)                 # the same library, in the same process
    (kernel, _, _), _, timed, _ = _tune(lib, plan, ms, monkeypatch)
    assert kernel.config.name == c[2].name and len(timed) == 1


@pytest.fixture(scope="module")
def h100():
    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.library import KernelLibrary

    found = load_device("h100", None, missing_ok=False)
    return KernelLibrary(known(found.name), found.entries, timings=found.timings)


@pytest.mark.parametrize("shape", [(149, 3024, 148, "NN"), (98, 2374, 26, "TN"), (4096, 4096, 4096, "NT"),
                                   (30, 48, 66, "TT")])
def test_the_alternatives_start_with_the_dispatch_pick_and_hold_each_family(shape, h100):
    from gemmgen.runtime.dispatch import choose, ranked

    lib = h100
    M, N, K, layout = shape
    lda = M if layout[0] == "T" else K
    ldb = K if layout[1] == "T" else N
    got = lib.alternatives(M, N, K, layout, lda, ldb, N, "fp32", None, True, top=3, per_family=2)
    fits = lib.candidates("fp32", layout)
    assert got[0].name == choose(fits, M, N, K, layout, lda, ldb, N).config.name
    order = [f.config.name for _, f in ranked(fits, M, N, K, layout, lda, ldb, N)]
    assert [c.name for c in got] == sorted((c.name for c in got), key=order.index)   # least predicted first
    assert len(got) == len({c.name for c in got}) <= 3 + 2 * 2
    accepted = [f.config for f in fits if f.config.accepts(M, N, K, lda, ldb, N, True) is None]
    for fam in {c.family for c in accepted}:
        assert sum(c.family == fam for c in got) >= min(2, sum(c.family == fam for c in accepted))
    assert all(c.accepts(M, N, K, lda, ldb, N, True) is None and c.layout == layout for c in got)
    assert lib.timed_config(got[-1].name, "fp32", layout) == got[-1]
    assert lib.timed_config("gg_no_such_kernel", "fp32", layout) is None
