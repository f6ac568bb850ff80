"""`gemmgen results tuned`: the picks first-call tuning kept, listed per GPU as text or JSON, and cleared."""
from __future__ import annotations

import json

import pytest

from gemmgen.cli import main
from gemmgen.runtime import picks

KEY = picks.request_key(100, 200, 300, "NN", 300, 200, 200, "fp32", None, True)


@pytest.fixture
def kept(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMMGEN_CACHE", str(tmp_path))
    monkeypatch.setattr(picks, "_kept", {})
    picks.remember("NVIDIA H100 80GB HBM3", KEY, {"kernel": "gg_b", "layout": "NN", "copy_b": True,
                                                  "plan": ["gg_a", False, False], "offered": ["gg_b"],
                                                  "us": {"gg_a": 12.0, "gg_b (copies B)": 10.0}})
    picks.remember("NVIDIA H200", KEY, {"kernel": "gg_a", "plan": ["gg_a", False, False], "us": {"gg_a": 9.0}})
    (tmp_path / "tuned" / "broken.json").write_text("{no")
    return tmp_path


def test_the_picks_of_each_gpu_as_text_and_json(kept, capsys):
    assert main(["results", "tuned"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H100 80GB HBM3  " + KEY in out and "gg_b (copies B)  10.0 us, 1.20x the plan, 2 timed" in out
    assert "NVIDIA H200" in out and "9.0 us, the plan, 1 timed" in out
    assert main(["results", "tuned", "h100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["gpu"] for r in data["picks"]] == ["NVIDIA H100 80GB HBM3"] and data["deleted"] == []
    assert data["picks"][0] | {"request": KEY} == {"gpu": "NVIDIA H100 80GB HBM3", "request": KEY, "kernel": "gg_b",
                                                   "copies": "B", "us": 10.0, "plan": "gg_a", "plan_us": 12.0, "timed": 2}


def test_clear_deletes_one_gpus_picks_only(kept, capsys):
    assert main(["results", "tuned", "h200", "--clear"]) == 0
    assert "deleted" in capsys.readouterr().out
    assert sorted(p.name for p in (kept / "tuned").iterdir()) == ["broken.json", "nvidia-h100-80gb-hbm3.json"]
    assert main(["results", "tuned", "h200"]) == 0
    assert "no kept picks of h200" in capsys.readouterr().out
