"""The interleaved SIMT loop (interleave = true) computes what the other loops compute: every layout, one K
step or several, split-K slices, and a single tile, against cuBLAS and float64; on whole tiles (bounds =
none) and, checked, on ragged shapes (edge rows read the last row inside; a partial K tile after the
loop, or alone), where an Inf or NaN on the last row or column of A or B lands where SGEMM puts it."""
from __future__ import annotations

import pytest

from gemmgen.base import Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.gate import gate_bound

pytestmark = pytest.mark.gpu

V10 = preset("v10").replace(bounds="none", interleave=True, label="")              # 128x128x8, 8 rows a step
WIDE = V10.replace(BM=256, BK=16, WM=64, WN=64, WMITER=2, WNITER=4)               # the shipped 256x128x16 tile
CONFIGS = {"v10": V10, "wide": WIDE, "wide-split3": WIDE.replace(split_k=3, reduce="workspace"),
           "v10-split2": V10.replace(split_k=2)}
# whole tiles of both: one tile and one K step, one tile and several, many tiles, deep K
SHAPES = ["256x128x16", "256x128x48", "1024x512x256", "512x1024x2048", "512x256x480"]
CHECKED = {f"{k}-checked": c.replace(bounds="checked") for k, c in CONFIGS.items()}
# ragged M and N, K tails after several whole tiles, K shorter than one tile, whole tiles again
RAGGED = ["1000x1000x1000", "257x129x17", "100x60x8", "300x500x700", "513x260x36", "256x128x48"]


CASES = [(name, shape) for name in CONFIGS for shape in SHAPES] + [(name, shape) for name in CHECKED for shape in RAGGED]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("name,shape", CASES)
def test_interleaved_loop_is_correct(session, name, shape, layout):
    """Whole tiles for every config; ragged shapes for the checked ones."""
    cfg = {**CONFIGS, **CHECKED}[name].replace(layout=layout)
    s = Shape.parse(shape, layout)
    if cfg.accepts(s.M, s.N, s.K):
        pytest.skip(f"{cfg.name}: {cfg.accepts(s.M, s.N, s.K)}")
    errors = session.check(cfg, s, seed=hash((name, shape)) % 1000)
    assert errors["err_cublas"] <= gate_bound(cfg) and errors["err_fp64"] <= gate_bound(cfg)


def test_checked_interleaved_loop_refuses_rows_it_cannot_read_as_vectors():
    cfg = CHECKED["wide-checked"]
    assert "lda % 4 == 0" in cfg.accepts(300, 500, 701)
    assert cfg.accepts(300, 500, 700) is None and cfg.accepts(300, 500, 700, aligned=False)


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_edge_rows_of_inf_and_nan_land_where_sgemm_puts_them(session, layout):
    """The loop reads the last row of A (column of B) again for rows past the edge; the values it reads
    there reach only rows of C the epilogue does not store."""
    import cupy

    from gemmgen.measure.launch import Operands
    from gemmgen.measure.problem import cublas_call

    s = Shape(300, 196, 700, layout)
    k = session.kernel(CHECKED["wide-checked"].replace(layout=layout))
    rng = cupy.random.default_rng(7)
    a = rng.uniform(-1, 1, (s.M, s.K) if layout[0] == "N" else (s.K, s.M), dtype=cupy.float32)
    b = rng.uniform(-1, 1, (s.K, s.N) if layout[1] == "N" else (s.N, s.K), dtype=cupy.float32)
    last_a = (slice(s.M - 1, s.M), slice(0, 5)) if layout[0] == "N" else (slice(0, 5), slice(s.M - 1, s.M))
    last_b = (slice(0, 5), slice(s.N - 1, s.N)) if layout[1] == "N" else (slice(s.N - 1, s.N), slice(0, 5))
    a[last_a] = float("inf")
    b[last_b] = float("nan")
    ours, ref = cupy.ones((s.M, s.N), cupy.float32), cupy.ones((s.M, s.N), cupy.float32)
    k.launch(Operands(s.M, s.N, s.K, a.data.ptr, a.shape[1], b.data.ptr, b.shape[1], ours.data.ptr, s.N))
    cublas_call("fp32", s, a, b, ref)()
    for cls in (cupy.isnan, cupy.isposinf, cupy.isneginf):
        assert bool((cls(ours) == cls(ref)).all()), f"{cls.__name__}: {int(cls(ours).sum())} vs {int(cls(ref).sum())}"
    finite = cupy.isfinite(ref)
    assert float(cupy.abs(ours[finite] - ref[finite]).max()) < 1e-3
