"""``gemmgen doctor``: every piece reported, each missing one with its fix, exit 0, never a traceback."""
from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gemmgen.build.nvcc import ToolkitMissing
from gemmgen.cli import main
from gemmgen.cli.doctor import text
from gemmgen.cli.doctor_hardware import Driver, check_driver, check_gpus, open_driver
from gemmgen.cli.doctor_software import (MISSING, OK, Finding, check_cupy, check_nvcc, check_nvrtc, cupy_distribution,
                                         guarded, reinstall)

REPO = Path(__file__).resolve().parents[1]
PIECES = ("gemmgen", "Python", "nvcc", "CuPy", "NVRTC", "cuBLAS", "CUDA driver", "GPU", "cache folder",
          "results folder", "shipped results")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_doctor_reports_every_piece_and_a_fix_under_each_missing_one(capsys):
    code, out, err = run(capsys, "doctor")
    assert code == 0 and err == ""
    lines = out.splitlines()
    for piece in PIECES:
        assert any(line.split(maxsplit=1)[1:] and line.split(maxsplit=1)[1].startswith(piece) for line in lines), piece
    for i, line in enumerate(lines):
        if line.lstrip().startswith(MISSING + " "):
            assert lines[i + 1].strip().startswith("fix: "), (line, lines[i + 1])
    assert "Traceback" not in out


def test_doctor_json(capsys):
    code, out, _ = run(capsys, "doctor", "--json")
    report = json.loads(out)
    assert code == 0 and report["gemmgen"]
    whats = [f["what"] for f in report["findings"]]
    assert all(any(w.startswith(p) for w in whats) for p in PIECES), whats
    assert report["missing"] == [f["what"] for f in report["findings"] if f["status"] == MISSING]
    assert all(f["fix"] for f in report["findings"] if f["status"] == MISSING)
    assert {f["status"] for f in report["findings"]} <= {"ok", "missing", "info"}


def test_doctor_says_what_a_machine_without_a_driver_lacks(capsys):
    if open_driver() is not None:
        pytest.skip("this machine has a CUDA driver")
    report = json.loads(run(capsys, "doctor", "--json")[1])
    driver = next(f for f in report["findings"] if f["what"] == "CUDA driver")
    assert driver["status"] == MISSING and "libcuda.so.1" in driver["found"] and "NVIDIA driver" in driver["fix"]
    assert "GPU" in report["missing"]


def test_nvcc_missing_is_a_finding_with_its_fix():
    def nowhere():
        raise ToolkitMissing("nvcc not found (looked in PATH); install the CUDA toolkit or set CUDA_HOME")

    (finding,) = check_nvcc(nowhere)
    assert finding.status == MISSING and "nvcc not found" in finding.found and "CUDA toolkit" in finding.fix


def test_cupy_missing_is_a_finding_with_its_fix():
    assert cupy_distribution(lambda: {}) is None
    assert cupy_distribution(lambda: {"cupy": ["cupy-cuda12x"]}) == "cupy-cuda12x"
    for finding in check_cupy(None) + check_nvrtc(None):
        assert finding.status == MISSING and "pip install 'gemmgen[cuda13]'" in finding.fix
    assert reinstall("cupy-cuda12x", "nvidia-cuda-nvrtc").startswith("pip install 'gemmgen[cuda12]'")


def test_a_probe_that_breaks_is_a_finding():
    def broken():
        raise RuntimeError("libfoo exploded\nsecond line")

    (finding,) = guarded("foo", broken)
    assert finding.status == MISSING and finding.found == "could not check: RuntimeError: libfoo exploded"


def test_doctor_survives_a_cupy_that_cannot_be_imported():
    """CuPy, its backends and cuda-pathfinder unimportable (a broken install): findings, exit 0."""
    block = "import sys; sys.modules.update(dict.fromkeys(['cupy', 'cupy_backends', 'cuda'])); "
    done = subprocess.run([sys.executable, "-c", block + "from gemmgen.cli import main; sys.exit(main(['doctor']))"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr + done.stdout, done.stderr
    assert any(line.split()[:2] == [MISSING, "NVRTC"] for line in done.stdout.splitlines()), done.stdout


class FakeDriver:
    """libcuda's calls as doctor makes them, answering for one GPU (ctypes.byref's target is ``_obj``)."""

    def __init__(self, version: int, name: bytes, cc: tuple[int, int], sms: int):
        self.version, self.name, self.attrs = version, name, {75: cc[0], 76: cc[1], 16: sms}

    def cuDriverGetVersion(self, out):
        out._obj.value = self.version
        return 0

    def cuInit(self, flags):
        return 0

    def cuDeviceGetCount(self, out):
        out._obj.value = 1
        return 0

    def cuDeviceGet(self, out, index):
        out._obj.value = index
        return 0

    def cuDeviceGetName(self, buf, size, handle):
        ctypes.memmove(buf, self.name + b"\0", len(self.name) + 1)
        return 0

    def cuDeviceTotalMem_v2(self, out, handle):
        out._obj.value = 80 * 2**30
        return 0

    def cuDeviceGetAttribute(self, out, attribute, handle):
        out._obj.value = self.attrs[attribute]
        return 0


def test_gpus_are_named_with_their_arch_and_gemmgen_table_entry():
    driver = Driver(FakeDriver(13000, b"NVIDIA H100 80GB HBM3", (9, 0), 132))
    (gpu,), seen = check_gpus(driver, None)
    assert gpu.status == OK and seen[0]["arch"] == "sm_90" and seen[0]["table"] == "h100"
    assert "compute capability 9.0 (sm_90), 132 SMs" in gpu.found and "gemmgen's table: h100" in gpu.found
    (blackwell,), _ = check_gpus(Driver(FakeDriver(13000, b"NVIDIA B200", (10, 0), 148)), None)
    assert "gemmgen's table: b200" in blackwell.found and "targets" not in blackwell.found
    (other,), _ = check_gpus(Driver(FakeDriver(13000, b"Example GPU 9000", (12, 0), 96)), None)
    assert "not in gemmgen's table" in other.found and "targets" not in other.found   # sm_120 is a target
    (volta,), _ = check_gpus(Driver(FakeDriver(13000, b"Tesla V100-SXM2-16GB", (7, 0), 80)), None)
    assert "not in gemmgen's table" in volta.found and "sm_70 is not one of gemmgen's targets" in volta.found


def test_a_driver_too_old_for_cupy_names_the_older_extra():
    (old,) = check_driver(Driver(FakeDriver(12040, b"x", (8, 6), 82)), "cupy-cuda13x")
    assert old.status == MISSING and "CUDA 12.4" in old.found and "gemmgen[cuda12]" in old.fix
    (fine,) = check_driver(Driver(FakeDriver(13000, b"x", (8, 6), 82)), "cupy-cuda13x")
    assert fine.status == OK and "CUDA 13.0" in fine.found


def test_the_report_closes_with_what_is_missing():
    found = [Finding("nvcc", OK, "/usr/bin/nvcc"), Finding("GPU", MISSING, "none", "install the driver")]
    report = text(found)
    assert "  fix: install the driver" in report and "missing: GPU" in report and "gemmgen demo" in report


def test_the_results_file_of_a_gpu_is_named_with_its_folder(tmp_path, monkeypatch):
    from gemmgen.cli.doctor_hardware import check_results
    from gemmgen.records import Entry, record
    from gemmgen.kernel.presets import preset

    monkeypatch.setenv("GEMMGEN_RESULTS", str(tmp_path))
    record({"name": "Example GPU", "cc": "9.0"}, [Entry.new("256x256x256", preset("v6"), 1.0, 2.0, 3, arch="sm_90")],
           tmp_path)
    (have,) = check_results([{"index": 0, "name": "Example GPU", "table": None}])
    assert have.status == OK and have.found == f"user: {tmp_path / 'example-gpu.json'}"
    (lack,) = check_results([{"index": 1, "name": "Other GPU", "table": None}])
    assert lack.status == MISSING and "no tuned kernels for Other GPU" in lack.found
    assert lack.fix == "gemmgen search --gpu 'Other GPU' --trials 200"
