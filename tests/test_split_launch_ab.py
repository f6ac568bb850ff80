"""benchmarks/split_launch_ab.py without a GPU: the split plans it picks from the shipped H100 results,
and its input checks (one line naming the value, exit 2, nothing timed)."""
from __future__ import annotations

import pytest

from tests.scripts import load, refused


def _library():
    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.library import KernelLibrary

    found = load_device("h100", None, missing_ok=False)
    return KernelLibrary(known(found.name), found.entries, timings=found.timings)


def test_the_plans_are_the_split_ones_of_the_draw_in_the_layout_their_kernel_runs():
    mod = load("split_launch_ab")
    lib = _library()
    plans = mod.split_plans(lib, [301], (15, 27))
    drawn = mod.random_shapes(24, 301, set(), (15, 27))
    assert 0 < len(plans) < len(drawn)                       # some of the draw split K, not all
    for key, config in plans:
        M, N, K = map(int, key.split("/")[0].split("x"))
        assert config.split_k > 1 and key.endswith("/" + config.layout)
        assert 2 ** 15 <= M * N * K <= 2 ** 27
        assert any((M, N, K) == d[:3] for d in drawn)
    assert any(c.split_flags for _, c in plans)              # one-launch candidates among them


@pytest.mark.parametrize("argv, named", [(["--macs", "9:99"], "--macs '9:99'"), (["--limit", "-1"], "--limit -1"),
                                         (["--rep-ms", "0"], "--rep-ms 0.0"), (["--seed", "x"], "'x'")])
def test_bad_input_is_one_line_naming_it(argv, named, capsys):
    assert named in refused(load("split_launch_ab").main, argv, capsys)
