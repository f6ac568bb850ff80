"""The gemmgen command line: emit, presets, explain, and one-line errors for every kind of bad input."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gemmgen import build
from gemmgen.base.devices import default_notice, for_arch
from gemmgen.cli import COMMANDS, Command, main, register
from gemmgen.kernel.presets import names, preset


def run(capsys, *argv):
    """(exit status, stdout, stderr) of one in-process run of the CLI."""
    try:
        code = main(list(argv))
    except SystemExit as stop:           # argparse's own exits (--help, usage errors)
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


# ---- emit ----------------------------------------------------------------------------------------
def test_emit_preset_to_stdout_records_the_command(capsys):
    code, out, err = run(capsys, "emit", "--preset", "v8")
    assert code == 0 and err in ("", f"gemmgen emit: {default_notice(for_arch('sm_90'))}\n")   # no GPU: said once
    assert preset("v8").name in out and 'extern "C"' in out
    assert "// Produced by: gemmgen emit --preset v8\n" in out
    assert "int main(" not in out


def test_emit_to_file_with_harness(capsys, tmp_path):
    target = tmp_path / "k.cu"
    code, out, err = run(capsys, "emit", "--preset", "v12", "--harness", "-o", str(target))
    assert code == 0 and out == "" and str(target) in err
    text = target.read_text()
    assert "int main(int argc, char** argv)" in text and f"{preset('v12').name}_scale" in text
    assert f"Produced by: gemmgen emit --preset v12 --harness -o {target}" in text


def test_emit_set_overrides_change_the_kernel(capsys):
    code, out, _ = run(capsys, "emit", "--preset", "v10", "--set", "BK=16", "--set", "stages=3",
                       "--set", "async_copy=true", "--arch", "sm_86")
    expected = preset("v10").replace(BK=16, stages=3, async_copy=True)
    assert code == 0 and expected.name in out and "cp.async" in out


def test_emit_config_file_round_trips_presets_json(capsys, tmp_path):
    _, out, _ = run(capsys, "presets", "--json")
    record = next(r for r in json.loads(out) if r["preset"] == "v9")
    path = tmp_path / "v9.json"
    path.write_text(json.dumps(record))                      # a record with the config under "config"
    code, out, _ = run(capsys, "emit", "--config", str(path))
    assert code == 0 and preset("v9").name in out


def test_emit_validates_for_the_arch(capsys):
    args = ["emit", "--preset", "v10", "--set", "BK=32", "--set", "stages=4", "--set", "async_copy=true",
            "--set", "prefetch=false"]
    assert run(capsys, *args, "--arch", "h100")[0] == 0
    code, out, err = run(capsys, *args, "--arch", "rtx3090")
    assert code != 0 and out == "" and "SHARED_MEMORY" in err and "101376" in err


# ---- presets -------------------------------------------------------------------------------------
def test_presets_fit_100_columns_with_the_description_under_each_row(capsys):
    code, out, _ = run(capsys, "presets")
    lines = out.splitlines()
    assert code == 0 and max(map(len, lines)) <= 100
    rows = [ln for ln in lines if ln and not ln.startswith(" ")]
    assert rows[0].startswith("preset") and [ln.split()[0] for ln in rows[1:len(names()) + 1]] == names()
    v8 = lines.index(next(ln for ln in lines if ln.startswith("v8 ")))
    assert "128x128x8" in lines[v8] and "double buffering" in lines[v8 + 1]


def test_presets_wide_is_one_line_each(capsys):
    code, out, _ = run(capsys, "presets", "--wide")
    lines = out.split("\n\n")[0].splitlines()
    assert code == 0 and len(lines) == 1 + len(names()) and [ln.split()[0] for ln in lines[1:]] == names()
    assert "double buffering" in next(ln for ln in lines if ln.startswith("v8 "))


def test_presets_json(capsys):
    code, out, _ = run(capsys, "presets", "--json")
    records = json.loads(out)
    assert code == 0 and [r["preset"] for r in records] == names()
    assert records[8]["kernel"] == preset("v8").name and records[8]["config"]["stages"] == 2


# ---- explain -------------------------------------------------------------------------------------
def test_explain_text(capsys):
    code, out, _ = run(capsys, "explain", "--preset", "v8", "--no-ptxas")
    assert code == 0
    for words in ("double buffering", "threads", "256 per block", "shared memory", "16640 B",
                  "intensity", "32 FLOP/B", "accepts", "any M, N, K", "launch", "rules pass"):
        assert words in out, words


@pytest.mark.parametrize("name, says", [("tf32x3-ws", "cp.async"), ("tf32x3-ws-m", "stores C transposed"),
                                         ("f16-tma", "TMA copies"), ("tf32x3-wgmma", "warpgroups of 4 warps")])
def test_explain_describes_hopper_kernels_as_wgmma(capsys, name, says):
    """The Hopper kernels' description names wgmma and their pipeline, not the mma.sync/WMMA warp tiles of
    the Ampere kernels it once borrowed."""
    code, out, _ = run(capsys, "explain", "--preset", name, "--no-ptxas")
    what = out.split("What it does:")[1].split("Resources:")[0]
    assert code == 0 and "wgmma.m64n" in what and says in what
    assert "mma.sync" not in what and "WMMA tiles" not in what


def test_explain_names_how_the_ws_kernel_stages_a(capsys):
    """The warp-specialized kernel's stages as explain tells them: A as it lies (TN), A unswizzled with its
    unaligned rows shifted (NT where the padding keeps the carveout), else the swizzled K-major tiles."""
    says = {("TN", "3"): "A as it lies", ("NT", "3"): "A unswizzled", ("NT", "4"): "K-major tiles in the 128-byte"}
    for (layout, stages), words in says.items():
        code, out, _ = run(capsys, "explain", "--preset", "tf32x3-ws", "--set", f"layout={layout}", "--set", "BN=160",
                           "--set", "WN=160", "--set", f"stages={stages}", "--no-ptxas")
        assert code == 0 and words in out.split("What it does:")[1], (layout, stages)


def test_explain_json_has_everything(capsys):
    code, out, _ = run(capsys, "explain", "--preset", "v12", "--arch", "a100", "--json", "--no-ptxas")
    r = json.loads(out)
    assert code == 0 and r["valid"] and r["target"]["arch"] == "sm_80"
    assert r["threads"] == 256 and r["smem_bytes"] == preset("v12").smem_bytes
    assert r["arithmetic_intensity"] == 32.0 and r["violations"] == [] and "accepts" in r
    assert r["config"] == preset("v12").to_dict()


def test_explain_naive_intensity(capsys):
    _, out, _ = run(capsys, "explain", "--preset", "v0", "--json", "--no-ptxas")
    assert json.loads(out)["arithmetic_intensity"] == 0.25


@pytest.mark.slow   # a whole search, a worker process or nvcc: seconds
@pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
def test_explain_reports_ptxas_registers_and_spills(capsys):
    code, out, _ = run(capsys, "explain", "--preset", "v12", "--arch", "sm_86", "--json")
    kernels = json.loads(out)["ptxas"]
    assert code == 0 and set(kernels) == {preset("v12").name, f"{preset('v12').name}_scale"}
    main_kernel = kernels[preset("v12").name]
    assert main_kernel["registers"] > 32 and main_kernel["spill_stores"] == 0 and main_kernel["arch"] == "sm_86"
    _, text, _ = run(capsys, "explain", "--preset", "v12", "--arch", "sm_86")
    assert "registers" in text and "spill" in text


def test_explain_invalid_config_lists_every_rule(capsys):
    code, out, err = run(capsys, "explain", "--preset", "v8", "--set", "vec=3", "--set", "stages=3")
    assert code == 1
    for rule in ("VECTOR", "VECTORIZE", "STAGES"):
        assert f"x {rule}:" in out
    assert len(err.strip().splitlines()) == 1 and "STAGES" in err


# ---- bad input: one line, non-zero, names the value and the choices --------------------------
BAD = {
    "unknown preset": (["emit", "--preset", "v99"], ["'v99'", "v0", "v13"]),
    "unknown key": (["emit", "--preset", "v8", "--set", "tile=3"], ["tile", "valid keys", "BM"]),
    "bad integer": (["emit", "--preset", "v8", "--set", "BM=abc"], ["BM", "'abc'", "integer"]),
    "bad boolean": (["emit", "--preset", "v8", "--set", "prefetch=maybe"], ["prefetch", "'maybe'", "true or false"]),
    "not KEY=VALUE": (["emit", "--preset", "v8", "--set", "BM"], ["'BM'", "KEY=VALUE"]),
    "bad choice": (["emit", "--preset", "v8", "--set", "layout=XY"], ["LAYOUT", "'XY'", "NN, NT, TN, TT"]),
    "invalid combination": (["emit", "--preset", "v8", "--set", "BM=96"], ["VECTORIZE", "768"]),
    "several rules": (["emit", "--preset", "v8", "--set", "vec=3", "--set", "stages=3"],
                      ["VECTOR:", "VECTORIZE:", "STAGES:"]),
    "unknown arch": (["emit", "--preset", "v8", "--arch", "sm_70"], ["'sm_70'", "sm_80", "rtx3090"]),
    "unknown gpu": (["explain", "--preset", "v8", "--arch", "gtx1080"], ["'gtx1080'", "h100"]),
    "missing file": (["emit", "--config", "/nonexistent/k.json"], ["/nonexistent/k.json", "No such file"]),
    "no source": (["emit"], ["--preset", "--config", "v8"]),
    "both sources": (["emit", "--preset", "v8", "--config", "x.json"], ["not allowed with"]),
    "unknown option": (["emit", "--preset", "v8", "--fast"], ["--fast"]),
    "unknown command": (["frobnicate"], ["'frobnicate'", "emit", "explain"]),
    "unwritable output": (["emit", "--preset", "v8", "-o", "/nonexistent/dir/k.cu"], ["/nonexistent/dir/k.cu"]),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_gives_one_line(capsys, case):
    argv, words = BAD[case]
    code, out, err = run(capsys, *argv)
    assert code not in (0, None) and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, (word, err)


@pytest.mark.parametrize("content, words", [
    ("{not json", ["not valid JSON"]),
    ("[1, 2]", ["JSON list", "expected an object"]),
    ('{"BM": 64, "wat": 1}', ["wat", "valid keys"]),
    ('{"BM": "big"}', ["BM", "'big'"]),
])
def test_bad_config_files(capsys, tmp_path, content, words):
    path = tmp_path / "c.json"
    path.write_text(content)
    code, out, err = run(capsys, "emit", "--config", str(path))
    assert code != 0 and len(err.strip().splitlines()) == 1 and all(w in err for w in words), err


def test_console_script_errors_have_no_traceback():
    done = subprocess.run([sys.executable, "-m", "gemmgen.cli", "emit", "--preset", "v99"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("gemmgen emit: error: unknown preset 'v99'") and "Traceback" not in done.stderr


# ---- help and registry ---------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["--help"], ["emit", "--help"], ["explain", "--help"], ["presets", "--help"]])
def test_help_teaches_with_examples(capsys, argv):
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "examples:" in out and "gemmgen " in out


def test_no_command_prints_help(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "emit" in err


def test_registry_takes_new_commands(capsys, monkeypatch):
    monkeypatch.setitem(COMMANDS, "hello", None)             # restored after the test
    register(Command("hello", "say hello", lambda p: p.add_argument("--who", default="world"),
                     lambda a: print(f"hello {a.who}") or 0))
    assert run(capsys, "hello", "--who", "gemmgen") == (0, "hello gemmgen\n", "")


# ---- v13: one kernel per target, whichever command names it ------------------------------------------
@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_presets_emit_export_and_plan_mean_the_same_v13(capsys, tmp_path, gpu):
    """On the shipped results: the kernel presets lists as v13 is the one emit writes, the one export
    writes for 4096^3 NN, and the one plan marks v13, first among its NN candidates there."""
    code, out, _ = run(capsys, "presets", "--arch", gpu, "--json")
    v13 = next(r for r in json.loads(out) if r["preset"] == "v13")
    assert code == 0 and "4096x4096x4096/NN" in v13["description"]
    code, out, _ = run(capsys, "emit", "--preset", "v13", "--arch", gpu)
    assert code == 0 and f"gemmgen kernel {v13['kernel']}" in out
    code, out, _ = run(capsys, "results", "export", gpu, "4096x4096x4096", "--out", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["source"].endswith(f"/{v13['kernel']}.cu")
    code, out, _ = run(capsys, "results", "plan", gpu, "4096x4096x4096", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["v13"] == plan["candidates"][0]["kernel"] == v13["kernel"]
    assert f"{v13['kernel']} (v13)" in run(capsys, "results", "plan", gpu, "4096x4096x4096")[1]


def test_help_of_every_results_action_has_a_description_and_examples(capsys):
    for action in ("list", "show", "export", "plan", "tuned"):
        code, out, _ = run(capsys, "results", action, "--help")
        assert code == 0 and "examples:" in out and "gemmgen results " + action in out, action
    assert "gpu            GPU name or alias" in run(capsys, "results", "export", "--help")[1]


def test_list_keys_names_every_key_with_type_and_valid_values(capsys):
    from gemmgen.kernel.config import KernelConfig

    code, out, _ = run(capsys, "emit", "--list-keys")
    keys = {line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")}
    assert code == 0 and set(KernelConfig().to_dict()) - {"label"} <= keys | {"scheduler", "persistent_blocks"}
    assert "layout  str (one of NN, NT, TN, TT), default NN" in out and "stages  int, default 1" in out
    assert max(map(len, out.splitlines())) <= 100


def test_results_list_and_show_fit_100_columns_and_show_small_numbers(capsys):
    code, out, _ = run(capsys, "results", "list")
    assert code == 0 and "['" not in out and max(map(len, out.splitlines())) <= 100
    code, out, _ = run(capsys, "results", "show", "h100")
    lines = out.splitlines()
    assert code == 0 and max(map(len, lines)) <= 100 and "/work" not in "".join(lines[2:])
    tiny = next(ln for ln in lines if ln.startswith("16x16x16/NN")).split()
    assert float(tiny[3]) > 0 and tiny[-2] == "-"          # TFLOP/s not rounded to 0; not searched: '-'
    wide = run(capsys, "results", "show", "h100", "--wide")[1]
    assert "gg_simt_" in wide and ".json" in wide.splitlines()[3]


def test_report_help_says_it_needs_the_plot_extra(capsys):
    from gemmgen.cli import main

    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert 'gemmgen[plot]' in capsys.readouterr().out
