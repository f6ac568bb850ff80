"""A real search on the GPU survives planted broken candidates, stores a correct winner at least as
fast as the best preset, and resumes its study when run again."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import pytest

from gemmgen.tune.gpu import GpuRetime, NvrtcPrepare, worker_for
from gemmgen.base import Shape
from gemmgen.codegen.render import emit
from gemmgen.tune.plan import make_plan
from gemmgen.tune.driver import run_search

pytestmark = pytest.mark.gpu

SHAPE = Shape(1024, 1024, 1024)
PLANTS = {  # one candidate in 12 (by name hash) per bug: a crash, a hang, a wrong result
    0: ("const int tid = threadIdx.x;", "const int tid = threadIdx.x; if (tid == 0) C[-(1LL << 40)] = 1.0f;"),
    1: ("const int tid = threadIdx.x;", "const int tid = threadIdx.x; for (;;) { __nanosleep(1000); }"),
    2: ("    const bool read_c = beta != 0.0f;", "    acc[0][0] += 1.0f;\n    const bool read_c = beta != 0.0f;"),
}


@dataclass(frozen=True)
class PlantingMeasure:
    """Measures through the real isolated worker, planting bugs into some candidates."""

    def __call__(self, device_id):
        worker = worker_for(device_id)

        def measure(config, shape):
            slot = zlib.crc32(config.name.encode()) % 12
            code = None
            if slot in PLANTS and config.label == "":
                old, new = PLANTS[slot]
                code = emit(config, "sm_90").replace(old, new, 1)
            return worker.call("measure", config, shape, rep_ms=30, code=code, timeout=8 if slot == 1 else None)
        return measure


def test_search_with_planted_failures_then_resume(tmp_path):
    db = f"sqlite:///{tmp_path}/studies.db"
    spec = worker_for(0).call("ping") and worker_for(0).spec
    plan = make_plan(SHAPE, spec, trials=50, storage=db, sampler="tpe", seed=1)
    result = run_search(plan, PlantingMeasure(), prepare=NvrtcPrepare(spec.arch), retime=GpuRetime(0, rep_ms=50))
    kinds = result.counts.failed
    assert result.counts.measured >= 50 and sum(kinds.values()) >= 3, kinds
    assert {"runtime", "timeout", "wrong"} & set(kinds), kinds
    assert result.measurement.rel_error <= 1e-5
    import optuna
    study = optuna.load_study(study_name=plan.study, storage=db)
    presets = [t.value for t in study.trials if t.user_attrs.get("preset") and t.value is not None]
    assert presets and result.measurement.tflops >= 0.95 * max(presets), (result.measurement.tflops, max(presets))
    before = len(study.trials)   # Study.trials reads the storage on every access
    again = run_search(make_plan(SHAPE, spec, trials=60, storage=db, seed=1), PlantingMeasure(),
                       retime=GpuRetime(0, rep_ms=50))
    assert again.counts.measured >= 60 and again.study == result.study
    assert before < len(study.trials)   # the same study went on


def test_tf32x3_search_stores_a_winner_that_passes_the_gate(tmp_path, capsys):
    """`gemmgen search --family tf32x3`, 6 trials on 1024^3: the winner is stored under the plain fp32
    key with its family and precision, and passes the fp32 gate again on fresh inputs."""
    import json

    from gemmgen.cli import main
    from gemmgen.measure.gate import gate_bound
    from gemmgen.records.store import load_file

    results = tmp_path / "results"
    code = main(["search", "--family", "tf32x3", "--shape", "1024x1024x1024", "--trials", "6",
                 "--results", str(results), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (w,) = json.loads(out)
    assert (w["family"], w["precision"], w["key"]) == ("tf32x3", "fp32", "1024x1024x1024/NN"), w
    assert "-tf32x3-1024x1024x1024-NN" in w["study"] and w["counts"]["measured"] >= 6, w
    assert w["tflops"] > 0 and w["entry"]["name"] == w["winner"], w
    (path,) = results.glob("*.json")
    entry = load_file(path).entries["1024x1024x1024/NN"]
    cfg = entry.kernel_config
    assert entry.precision == "fp32" and cfg.family == "tf32x3" and entry.name == w["winner"] == cfg.name
    errors = worker_for(0).call("check", cfg, SHAPE, seed=3)
    assert max(errors.values()) <= gate_bound(cfg) == 1e-5, errors
