"""Every bad call of the public Python API: one exception of a documented type (TypeError, ValueError or
one of their gemmgen subclasses, NoGpu where the GPU is missing) whose message names the bad value and
what would be valid, raised before anything is compiled, spawned or handed to the CUDA driver.
The command-line side of the same rule is tests/test_cli_errors.py."""
from __future__ import annotations

import multiprocessing

import pytest

import gemmgen
from gemmgen.base.devices import NoGpu


class Described:
    """An object that claims to be a CUDA array through the given __cuda_array_interface__."""

    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def iface(**changes):
    return {"shape": (2, 2), "typestr": "<f4", "data": (4096, False), "version": 3, **changes}


CASES = {   # a call, the exception it raises, words its message must contain
    "emit a preset name": (lambda: gemmgen.emit("v8", "sm_90"), TypeError, ["str 'v8'", "gemmgen.preset('v8')"]),
    "emit None": (lambda: gemmgen.emit(None, "sm_90"), TypeError, ["NoneType", "KernelConfig"]),
    "render a dict": (lambda: gemmgen.render({"BM": 64}, "h100"), TypeError, ["dict", "KernelConfig.from_dict"]),
    "explain a name": (lambda: gemmgen.explain("v10", "h100"), TypeError, ["'v10'", "gemmgen.preset('v10')"]),
    "load an unknown GPU": (lambda: gemmgen.load_device("nope"), gemmgen.ResultsError,
                            ["'nope'", "h100", "GPUs with results"]),
    "preset of an unknown arch": (lambda: gemmgen.preset("v8", arch="sm_20"), ValueError, ["'sm_20'", "sm_80", "sm_90"]),
    "preset of a GPU typo": (lambda: gemmgen.preset("v13", arch="h1000"), ValueError, ["'h1000'", "h100"]),
    "preset arch None": (lambda: gemmgen.preset("v8", arch=None), TypeError, ["arch = None", "sm_90"]),
    "preset name": (lambda: gemmgen.preset("v99"), KeyError, ["'v99'", "v13"]),
    "config text int": (lambda: gemmgen.KernelConfig(BM="abc"), gemmgen.ConfigError, ["BM = 'abc'", "integer"]),
    "config float": (lambda: gemmgen.KernelConfig(BK=8.0), gemmgen.ConfigError, ["BK = 8.0", "integer"]),
    "config bool": (lambda: gemmgen.KernelConfig(prefetch=2), gemmgen.ConfigError, ["prefetch = 2", "true or false"]),
    "config two bad": (lambda: gemmgen.KernelConfig(BM="abc", layout=3), gemmgen.ConfigError,
                       ["BM = 'abc'", "layout = 3", "string"]),
    "bench names": (lambda: gemmgen.bench(["v8"]), TypeError, ["str 'v8'", "gemmgen.preset('v8')"]),
    "bench shape": (lambda: gemmgen.bench(shapes=["-1x2x3"]), ValueError, ["'-1x2x3'", "below 1"]),
    "bench rep_ms": (lambda: gemmgen.bench(rep_ms=0), ValueError, ["rep_ms = 0", "above 0"]),
    "matmul interface not a dict": (lambda: gemmgen.matmul(Described("junk"), Described("junk")), TypeError,
                                    ["A's __cuda_array_interface__", "str", "dict"]),
    "matmul interface lacks data": (lambda: gemmgen.matmul(Described({"shape": (2, 2)}), None), ValueError,
                                    ["A's", "lacks typestr, data"]),
    "matmul null pointer": (lambda: gemmgen.matmul(Described(iface(data=(0, False))), None), ValueError,
                            ["null data pointer", "4 elements"]),
    "matmul bad shape": (lambda: gemmgen.matmul(Described(iface(shape=(2, "a"))), None), ValueError,
                         ["shape (2, 'a')", "sizes >= 0"]),
    "matmul bad pointer": (lambda: gemmgen.matmul(Described(iface(data=("0x1", False))), None), ValueError,
                           ["data ('0x1', False)", "integer pointer"]),
    "matmul bad strides": (lambda: gemmgen.matmul(Described(iface(strides=(8,))), None), ValueError,
                           ["strides (8,)", "one integer per dimension"]),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_call_raises_one_named_error(case):
    call, kind, words = CASES[case]
    with pytest.raises(kind) as err:
        call()
    text = str(err.value) if not isinstance(err.value, KeyError) else err.value.args[0]
    assert "\n" not in text and not isinstance(err.value, AttributeError), text
    for word in words:
        assert word in text, (word, text)


def test_bench_without_a_gpu_is_nogpu_before_a_worker_starts(no_driver):
    with pytest.raises(NoGpu, match="no CUDA GPU found"):
        gemmgen.bench([gemmgen.preset("v8")], ["64x64x64"])
    assert multiprocessing.active_children() == []


def test_bench_in_a_worker_importing_an_unguarded_script_explains_the_guard(monkeypatch):
    """A spawned process that imports a script calling bench() at its top level (no __main__ guard) is
    told why in one line, instead of starting a worker of its own and failing in multiprocessing."""
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(RuntimeError, match='if __name__ == "__main__":'):
        gemmgen.bench([gemmgen.preset("v8")])
