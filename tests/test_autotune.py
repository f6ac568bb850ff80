"""First-call tuning (gemmgen.runtime.autotune) without a GPU: the switch and its one-line errors, the kept
picks' file, and which plans a first call times and keeps, with the timing and the kernels as test
doubles; the alternatives the shipped H100 results offer."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from gemmgen.kernel.presets import preset
from gemmgen.runtime import autotune

REQUEST = (300, 200, 100, "NN", 100, 200, 200, "fp32", None, True)


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """Each test: the switch unread, no picks in memory, the kernel cache in a folder of its own."""
    monkeypatch.setitem(autotune._state, "top", None)
    monkeypatch.setattr(autotune, "_kept", {})
    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(autotune.ENV, raising=False)
    return tmp_path


@pytest.mark.parametrize("value, want", [(0, 0), (3, 3), ("4", 4), (" 2 ", 2), (16, 16)])
def test_the_switch_takes_a_count_of_kernels(value, want, monkeypatch):
    autotune.tune_first_calls(value)
    assert autotune.candidates_per_request() == want


@pytest.mark.parametrize("value", ["abc", -1, 17, 2.5, "3.0", "", None])
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


def test_picks_are_kept_in_a_file_per_gpu_that_a_new_process_reads_and_merges(fresh, monkeypatch):
    autotune.remember("NVIDIA H100 80GB HBM3", "k1", {"kernel": "gg_a"})
    path = autotune.kept_path("NVIDIA H100 80GB HBM3")
    assert path == fresh / "cache" / "tuned" / "nvidia-h100-80gb-hbm3.json"
    assert json.loads(path.read_text())["picks"] == {"k1": {"kernel": "gg_a"}}
    # another process adds a pick; this one's next pick keeps it
    data = json.loads(path.read_text())
    data["picks"]["k0"] = {"kernel": "gg_z"}
    path.write_text(json.dumps(data))
    autotune.remember("NVIDIA H100 80GB HBM3", "k2", {"kernel": "gg_b"})
    assert set(json.loads(path.read_text())["picks"]) == {"k0", "k1", "k2"}
    monkeypatch.setattr(autotune, "_kept", {})               # a new process
    assert autotune.kept("NVIDIA H100 80GB HBM3")["k0"] == {"kernel": "gg_z"}
    assert autotune.kept("NVIDIA H200") == {}                # other GPUs have files of their own
    assert not list(path.parent.glob("*.tmp"))


def test_an_unreadable_file_counts_as_empty_with_one_warning(fresh):
    path = autotune.kept_path("GPU X")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.warns(UserWarning, match="ignoring the tuned picks"):
        assert autotune.kept("GPU X") == {}


def test_a_file_that_cannot_be_written_leaves_the_pick_in_memory(fresh, monkeypatch):
    blocked = fresh / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("GEMMGEN_CACHE", str(blocked))
    with pytest.warns(UserWarning, match="not saved"):
        autotune.remember("GPU X", "k", {"kernel": "gg_a"})
    assert autotune.kept("GPU X")["k"] == {"kernel": "gg_a"}


class FakeLibrary:
    """alternatives() hands out configs; kernel() loads them (or refuses one); timed_config() knows some."""

    def __init__(self, alternatives, timed=None, refuse=()):
        self.spec = SimpleNamespace(name="GPU X")
        self._alternatives, self._timed, self._refuse = alternatives, timed, set(refuse)
        self.loaded = []

    def alternatives(self, *args):
        return list(self._alternatives)

    def kernel(self, config):
        if config.name in self._refuse:
            raise RuntimeError("compile failed\nwith details")
        self.loaded.append(config.name)
        return SimpleNamespace(config=config)

    def timed_config(self, name, precision, layout, family=None):
        timed = self._timed if self._timed is not None else self._alternatives
        return next((c for c in timed if c.name == name), None)


def _configs(n):
    base = preset("v6")
    return [base.replace(BK=8 * (i + 1) if i < 2 else 8, stages=2 + i, label="") for i in range(n)]


def _tune(lib, plan, ms, monkeypatch, capturing=False):
    """tuned_plan with time_runs answering ``ms`` by kernel name; returns (pick, names timed, runs made)."""
    timed, made = [], []

    def time_runs(runs, stream):
        timed.append([r.name for r in runs])
        return [ms[r.name] for r in runs]

    monkeypatch.setattr(autotune, "time_runs", time_runs)

    def make_run(kernel, copy_a, copy_b):
        made.append((kernel.config.name, copy_a, copy_b))
        run = lambda: None
        run.name = kernel.config.name + ("+copies" if copy_a or copy_b else "")
        return run

    stream = SimpleNamespace(is_capturing=lambda: capturing)
    return autotune.tuned_plan(lib, REQUEST, plan, make_run, stream), timed, made


def test_off_or_capturing_runs_the_plan_and_times_nothing(monkeypatch):
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary(c[1:])
    pick, timed, made = _tune(lib, plan, {}, monkeypatch)
    assert pick is plan and not timed and not made and not lib.loaded
    autotune.tune_first_calls(3)
    pick, timed, made = _tune(lib, plan, {}, monkeypatch, capturing=True)
    assert pick is plan and not timed and not made


def test_the_fastest_of_the_plan_and_its_alternatives_is_kept_and_reused(monkeypatch):
    autotune.tune_first_calls(3)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[0], c[1], c[2]])                  # the plan's kernel among them: timed once
    ms = {c[0].name: 0.020, c[1].name: 0.012, c[2].name: 0.015}
    (kernel, copy_a, copy_b), timed, made = _tune(lib, plan, ms, monkeypatch)
    assert kernel.config.name == c[1].name and (copy_a, copy_b) == (False, False)
    assert timed == [[c[0].name, c[1].name, c[2].name]] and len(made) == 3
    record = autotune.kept("GPU X")[autotune.request_key(*REQUEST)]
    assert record["kernel"] == c[1].name and record["us"][c[1].name] == 12.0
    # the next first call of the kind (another thread, another process) times nothing
    monkeypatch.setattr(autotune, "_kept", {})
    (kernel, _, _), timed, made = _tune(lib, plan, ms, monkeypatch)
    assert kernel.config.name == c[1].name and not timed and not made


def test_the_plan_with_copies_and_its_kernel_without_them_are_two_candidates(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(2)
    plan = (SimpleNamespace(config=c[0]), True, False)
    lib = FakeLibrary([c[0], c[1]])
    ms = {c[0].name + "+copies": 0.010, c[0].name: 0.014, c[1].name: 0.016}
    (kernel, copy_a, copy_b), timed, _ = _tune(lib, plan, ms, monkeypatch)
    assert kernel is plan[0] and (copy_a, copy_b) == (True, False) and len(timed[0]) == 3
    monkeypatch.setattr(autotune, "_kept", {})
    (kernel, copy_a, _), timed, _ = _tune(lib, plan, ms, monkeypatch)
    assert kernel is plan[0] and copy_a and not timed


def test_a_kept_kernel_the_results_no_longer_time_is_timed_anew(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    autotune.remember("GPU X", autotune.request_key(*REQUEST), {"kernel": "gg_gone", "layout": "NN"})
    lib = FakeLibrary([c[1], c[2]])
    (kernel, _, _), timed, _ = _tune(lib, plan, {c[0].name: 0.03, c[1].name: 0.02, c[2].name: 0.01}, monkeypatch)
    assert kernel.config.name == c[2].name and len(timed) == 1


def test_a_candidate_that_does_not_build_is_left_out_with_one_warning(monkeypatch):
    autotune.tune_first_calls(2)
    c = _configs(3)
    plan = (SimpleNamespace(config=c[0]), False, False)
    lib = FakeLibrary([c[1], c[2]], refuse=[c[1].name])
    with pytest.warns(UserWarning, match=f"left out {c[1].name} \\(RuntimeError: compile failed\\)"):
        (kernel, _, _), timed, _ = _tune(lib, plan, {c[0].name: 0.03, c[2].name: 0.01}, monkeypatch)
    assert kernel.config.name == c[2].name and timed == [[c[0].name, c[2].name]]


def test_nothing_to_compare_keeps_the_plan_untimed(monkeypatch):
    autotune.tune_first_calls(3)
    c = _configs(1)
    plan = (SimpleNamespace(config=c[0]), False, False)
    pick, timed, _ = _tune(FakeLibrary([c[0]]), plan, {}, monkeypatch)
    assert pick is plan and not timed and not autotune.kept("GPU X")


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
