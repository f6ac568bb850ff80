"""matmul's operand copies without a GPU: both copies go out as one launch whose grid is the two copies'
grids one after the other, the pointers the kernel then reads are the staging buffer's, and the CUDA
source of the copy kernels compiles (nvcc) without spills."""
from __future__ import annotations

import subprocess

import pytest

from gemmgen import build
from gemmgen.runtime import copy_kernels, transpose


@pytest.fixture
def launches(monkeypatch):
    """Copy kernels resolved to fake functions; each launch recorded as (kernel, grid x, y, z, params)."""
    seen = []
    monkeypatch.setattr(copy_kernels, "_function", lambda name: name)
    monkeypatch.setattr(copy_kernels._launch, "launch_kernel",
                        lambda fn, gx, gy, gz, bx, by, bz, smem, stream, argv, extra: seen.append((fn, gx, gy, gz, stream)))
    return seen


def test_two_copies_are_one_launch_over_both_grids(launches):
    # A 300x70 (rows of 70, unaligned) packed; B stored 50x1000 transposed into 1000 rows of 50.
    copies, floats, lds = transpose.pair_copies((300, 70), "N", 70, "N", (50, 1000), "N", 1000, "T", 4)
    assert lds == (72, 52)
    a_floats = -(-300 * 72 // 64) * 64
    assert floats == a_floats + -(-1000 * 52 // 64) * 64
    pa, pb = copies(0x1000, 0x2000, 0x10000, 9)
    assert (pa, pb) == (0x10000, 0x10000 + 4 * a_floats)
    pack, trans = copy_kernels.copy_grid(False, 300, 70), copy_kernels.copy_grid(True, 50, 1000)
    assert pack == (38, 1) and trans == (32, 2)
    assert launches == [("gg_copy_pair", 38 * 1 + 32 * 2, 1, 1, 9)]
    p = copies.launch.buf.params
    assert (p.s0, p.d0, p.rows0, p.cols0, p.lds0, p.ldd0, p.t0, p.gx0, p.gy0) == (0x1000, 0x10000, 300, 70, 70, 72, 0, 38, 1)
    assert (p.s1, p.d1, p.rows1, p.cols1, p.lds1, p.ldd1, p.t1, p.gx1, p.gy1) == (0x2000, pb, 50, 1000, 1000, 52, 1, 32, 2)


def test_one_copy_is_its_own_kernel_and_leaves_the_other_operand(launches):
    copies, floats, lds = transpose.pair_copies((300, 70), "N", 70, None, (50, 1000), "N", 1000, "T", 4)
    assert lds == (70, 52) and floats == -(-1000 * 52 // 64) * 64
    assert copies(0x1000, 0x2000, 0x10000, 9) == (0x1000, 0x10000)
    assert launches == [("gg_transpose", 32, 2, 1, 9)]
    assert transpose.pair_copies((300, 70), "N", 72, None, (50, 1000), "N", 1000, None, 4) == (None, 0, (72, 1000))


@pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
def test_the_copy_kernels_compile_without_spills(tmp_path):
    src = tmp_path / "copies.cu"
    src.write_text(copy_kernels.SOURCE)
    out = subprocess.run([build.nvcc_path(), "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "copies.o"),
                          "-Xptxas", "-v"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for name in ("gg_copy_pair", "gg_pack", "gg_transpose"):
        assert f"Function properties for {name}" in out.stderr
    assert all(" 0 bytes spill" in line for line in out.stderr.splitlines() if "spill stores" in line)


@pytest.mark.parametrize("kernel,struct", [("gg_copy_pair", "_PAIR"), ("gg_pack", "_COPY"), ("gg_transpose", "_COPY")])
def test_each_parameter_struct_matches_its_kernels_signature(kernel, struct):
    """cuLaunchKernel passes one pointer per parameter, read as the kernel declares it: the struct's
    fields must follow the signature in order, with the same types (int, long long, pointer)."""
    import ctypes
    import re

    sig = copy_kernels.SOURCE[copy_kernels.SOURCE.index(f"void {kernel}("):]
    params = [p.strip() for p in sig[sig.index("(") + 1:sig.index(")")].split(",")]
    kind = lambda decl: "p" if "*" in decl else "q" if "long long" in decl else "i" if re.match(r"(const )?int ", decl) else "?"
    ctype = {ctypes.c_int: "i", ctypes.c_longlong: "q", ctypes.c_void_p: "p"}
    fields = getattr(copy_kernels, struct)._fields_
    assert [kind(p) for p in params] == [ctype[t] for _, t in fields]
    assert [p.split()[-1] for p in params] == [name for name, _ in fields]


def test_a_copy_caps_its_grid_along_y_at_the_limit_it_is_given(launches):
    """gridDim.y's hardware limit by default; a smaller one passed in (what the GPU test of the strided
    path uses) caps the tiles along y, the rest strided over by the kernel."""
    copy_kernels.Copy(True, 1000, 37, 37, 1000)(0x1000, 0x2000, 9)
    copy_kernels.Copy(True, 1000, 37, 37, 1000, max_y=2)(0x1000, 0x2000, 9)
    copy_kernels.Copy(False, 50, 1100, 1100, 1104, max_y=2)(0x1000, 0x2000, 9)
    assert launches == [("gg_transpose", 2, 32, 1, 9), ("gg_transpose", 2, 2, 1, 9), ("gg_pack", 7, 2, 1, 9)]
    assert copy_kernels.copy_grid(True, 32 * 70000, 5) == (1, copy_kernels.GRID_Y_LIMIT)
