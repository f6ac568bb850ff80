"""Policy.arch: planning on one GPU as an older architecture would (an A100's kernels on an H100), and
policy overrides from ``$GEMMGEN_POLICY``, on the shipped H100 results, on a CPU."""
from __future__ import annotations

import json

import pytest

from gemmgen.base.devices import for_arch, known
from gemmgen.cli import main
from gemmgen.kernel.rules import explain
from gemmgen.records.lookup import load_device
from gemmgen.runtime.library import PRODUCT, results_policy
from gemmgen.runtime.planner import Planner, Request
from gemmgen.runtime.policy import Policy, from_text

SHAPES = [(4096, 4096, 4096, "NN"), (128, 4096, 4096, "TN"), (3000, 5000, 700, "NT"), (4097, 4097, 4097, "NN"),
          (64, 64, 20000, "NN"), (777, 1234, 99, "TT")]


@pytest.fixture(scope="module")
def h100():
    return load_device("h100")


def plans(found, policy, family=None):
    planner = Planner(known("h100"), found.entries, found.timings, policy)
    return [planner.plan(Request(M, N, K, lay, family=family)) for M, N, K, lay in SHAPES]


def test_an_sm_80_proxy_plans_only_kernels_an_a100_runs(h100):
    own = [p.config for p in plans(h100, PRODUCT) if p.config is not None]
    assert any(explain(c, for_arch("sm_80")) for c in own)   # the H100's own plans use wgmma or TMA somewhere
    proxy = plans(h100, PRODUCT.replace(arch="sm_80"))
    assert all(p is not None for p in proxy)
    for p in proxy:
        if p.config is not None:
            assert not explain(p.config, for_arch("sm_80")) and not explain(p.config, known("h100")), p.config.name
    assert {p.config.name for p in proxy if p.config} != {c.name for c in own}


def test_the_proxy_keeps_to_the_family_asked_for(h100):
    for p in plans(h100, PRODUCT.replace(arch="sm_80"), family="simt"):
        assert p.config is None or p.config.family == "simt"


def test_policy_overrides_from_the_environment_follow_the_results_file(h100):
    assert results_policy(h100, env={}).arch == ""
    policy = results_policy(h100, env={"GEMMGEN_POLICY": "arch=sm_80, margin=0.1"})
    assert (policy.arch, policy.margin, policy.untimed_builtins) == ("sm_80", 0.1, True)
    with pytest.raises(ValueError, match="GEMMGEN_POLICY: policy field 'archh' is unknown .*arch"):
        results_policy(h100, env={"GEMMGEN_POLICY": "archh=sm_80"})


@pytest.mark.parametrize("text, named", [("arch=sm_99", "'sm_99': one of sm_75"), ("arch", "'arch' is not name=value"),
                                         ("margin=wide", "margin='wide' is not a number")])
def test_a_bad_override_is_one_line_naming_it(text, named):
    with pytest.raises(ValueError, match=named) as err:
        Policy.overridden(from_text(text), "GEMMGEN_POLICY")
    assert "\n" not in str(err.value)


def test_results_plan_reads_the_variable(capsys, monkeypatch):
    monkeypatch.setenv("GEMMGEN_POLICY", "arch=sm_80")
    assert main(["results", "plan", "h100", "4096x4096x4096", "--json"]) == 0
    name = json.loads(capsys.readouterr().out)["plan"]["kernel"]
    assert not explain(load_device("h100").timings.kernels[name].config, for_arch("sm_80"))


@pytest.mark.parametrize("text, named", [("gemv_waves=1e999", "gemv_waves=inf is not a finite number"),
                                         ("gemv_max_slices=70000", "GEMMGEN_POLICY: policy gemv_max_slices=70000: at most 65535"),
                                         ("arch=sm_99", "GEMMGEN_POLICY: policy arch='sm_99'")])
def test_out_of_range_values_name_where_they_came_from(text, named):
    with pytest.raises(ValueError, match=named):
        Policy.overridden(from_text(text), "GEMMGEN_POLICY")


def test_a_class_the_proxy_architecture_lacks_is_refused_in_one_line(h100):
    planner = Planner(known("h100"), {}, None, PRODUCT.replace(arch="sm_75"))
    with pytest.raises(ValueError, match="policy arch=sm_75: no tf32 kernel runs on sm_75") as err:
        planner.plan(Request(4096, 4096, 4096, "NN", precision="tf32"))
    assert "\n" not in str(err.value)
    plan = planner.plan(Request(4096, 4096, 4096, "NN"))   # fp32: SIMT runs on sm_75
    assert plan.config.family == "simt" and not explain(plan.config, for_arch("sm_75"))


def test_results_plan_says_the_proxy_and_names_no_v13_it_cannot_run(capsys, monkeypatch):
    monkeypatch.setenv("GEMMGEN_POLICY", "arch=sm_80")
    assert main(["results", "plan", "h100", "4096x4096x4096"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NVIDIA H100 80GB HBM3 as sm_80, 4096x4096x4096/NN") and "_wg" not in out
