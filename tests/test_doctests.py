"""Every docstring example of every gemmgen module runs here.

Examples that need something a CPU machine may lack say so with a doctest option, registered below:

    >>> compile_cubin(src, "sm_90")          # doctest: +NVCC      (CUDA's nvcc)
    >>> cublas_flags()                       # doctest: +CUBLAS    (nvcc and cuBLAS headers)
    >>> gemmgen.matmul(A, B)                 # doctest: +GPU       (CuPy and a CUDA GPU)

Where the requirement is missing, that example and the later ones of the same docstring are left
out (they may build on it), and the test says so in its skip reason; where it is present they run.
The GPU examples run in a `gpu`-marked test, so they run on a GPU machine and are reported as
skipped elsewhere, never silently ignored. ``+SKIP`` is refused: an example either runs somewhere
or is not an example.
"""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import gemmgen
from gemmgen.build import nvcc

GPU = doctest.register_optionflag("GPU")
NVCC = doctest.register_optionflag("NVCC")
CUBLAS = doctest.register_optionflag("CUBLAS")
FLAG_NAMES = {GPU: "GPU", NVCC: "NVCC", CUBLAS: "CUBLAS"}

MODULES = sorted(["gemmgen", *(m.name for m in pkgutil.walk_packages(gemmgen.__path__, "gemmgen.")
                               if not m.name.endswith("__main__"))])   # running __main__ would run the CLI


def _missing_tools() -> dict[int, str]:
    """The requirement flags this machine cannot meet, with the reason."""
    missing = {}
    if not nvcc.have_nvcc():
        missing[NVCC] = missing[CUBLAS] = "nvcc (CUDA toolkit) is not installed"
    else:
        try:
            nvcc.cublas_flags()
        except nvcc.ToolkitMissing as err:
            missing[CUBLAS] = str(err)
    return missing


def gpu_missing() -> str | None:
    """Why the GPU examples cannot run here, or None (checked without importing CuPy first)."""
    from gemmgen.base.devices import NoGpu, require_gpu

    try:
        require_gpu(0)
    except NoGpu as err:
        return str(err)
    return None


def needs_missing_package(module: str) -> str | None:
    """Why ``module`` cannot be imported here (gemmgen.torch without PyTorch), or None."""
    if module == "gemmgen.torch" or module.startswith("gemmgen.torch."):
        if importlib.util.find_spec("torch") is None:
            return "gemmgen.torch needs PyTorch (not installed)"
    return None


def docstrings(module: str) -> list[doctest.DocTest]:
    if needs_missing_package(module):
        return []
    tests = doctest.DocTestFinder().find(importlib.import_module(module))
    return [t for t in tests if t.examples]


def flags_of(module: str) -> set[int]:
    return {flag for t in docstrings(module) for ex in t.examples for flag in ex.options if ex.options[flag]}


def run_examples(module: str, cut: set[int]) -> tuple[doctest.TestResults, list[str]]:
    """Run the module's examples, each docstring up to its first example flagged with one of ``cut``."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    left_out = []
    for test in docstrings(module):
        first = next((i for i, ex in enumerate(test.examples) if cut & {f for f, on in ex.options.items() if on}),
                     None)
        if first is not None:
            needs = ", +".join(FLAG_NAMES[f] for f in sorted(FLAG_NAMES.keys() & cut)
                               if test.examples[first].options.get(f))
            left_out.append(f"{test.name}: {len(test.examples) - first} from line {test.examples[first].lineno} (+{needs})")
            test.examples = test.examples[:first]
        runner.run(test)
    return runner.summarize(verbose=False), left_out


@pytest.fixture
def quiet_home(tmp_path, monkeypatch):
    """Examples that write (results, studies, caches) write into a temporary folder."""
    for var, sub in (("HOME", "home"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"),
                     ("GEMMGEN_RESULTS", "results"), ("GEMMGEN_CACHE", "kernels")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.chdir(tmp_path)


def _cpu_param(module: str):
    slow = {NVCC, CUBLAS} & flags_of(module)   # these examples run nvcc: slow like the compile tests
    return pytest.param(module, marks=[pytest.mark.slow] if slow else [], id=module)


@pytest.mark.parametrize("module", [_cpu_param(m) for m in MODULES])
def test_docstring_examples_run(module, quiet_home, capsys):
    if needs_missing_package(module):
        pytest.skip(needs_missing_package(module))
    missing = _missing_tools()
    result, left_out = run_examples(module, {GPU, *missing})
    report = capsys.readouterr().out
    assert result.failed == 0, report
    if left_out:   # +GPU ones run in test_gpu_docstring_examples_run
        why = "; ".join(sorted(set(missing.values()))) or "GPU examples run in the gpu-marked test"
        pytest.skip(f"ran {result.attempted} examples; left out ({why}): {'; '.join(left_out)}")


GPU_MODULES = [m for m in MODULES if GPU in flags_of(m)]


@pytest.mark.gpu
@pytest.mark.parametrize("module", GPU_MODULES)
def test_gpu_docstring_examples_run(module, quiet_home, capsys):
    reason = gpu_missing()
    if reason:
        pytest.skip(reason)
    result, _ = run_examples(module, set(_missing_tools()))
    assert result.failed == 0, capsys.readouterr().out


def test_gpu_examples_are_found():
    assert {"gemmgen.runtime.matmul", "gemmgen.runtime.library", "gemmgen.runtime.bench", "gemmgen.measure.worker",
            "gemmgen.measure.problem"} <= set(GPU_MODULES)


def test_no_example_is_skipped_for_good():
    skipped = [f"{t.name} line {ex.lineno}" for m in MODULES for t in docstrings(m) for ex in t.examples
               if ex.options.get(doctest.SKIP)]
    assert not skipped, "mark examples +GPU, +NVCC or +CUBLAS instead of +SKIP: " + ", ".join(skipped)


def test_a_wrong_example_fails():
    """The runner reports a wrong expected output (this file's checks can fail)."""
    import types

    module = types.ModuleType("fake_module", '>>> 1 + 1\n3\n')
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(module, "fake_module"):
        runner.run(test, out=lambda text: None)
    assert runner.summarize(verbose=False).failed == 1
