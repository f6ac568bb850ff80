"""The fp32 promise on every input: Inf and NaN in A or B come out where cuBLAS SGEMM puts them (3xTF32
used to turn an Inf into NaN: the small part of Inf was Inf - Inf), and inputs scaled by large and
small powers of two are as accurate as SGEMM. Every fp32-accurate kernel family, every layout."""
from __future__ import annotations

import pytest

from gemmgen.measure.gate import allowed, rel_error
from gemmgen.base import Shape
from gemmgen.kernel.presets import preset
from gemmgen.measure.problem import cublas_call

pytestmark = pytest.mark.gpu

LAYOUTS = ["NN", "NT", "TN", "TT"]
PLANTS = {"inf": [float("inf")], "-inf": [float("-inf")], "nan": [float("nan")],
          "all": [float("inf"), float("-inf"), float("nan")]}


def _fp32_kernels(session, layout):
    """The fp32-accurate kernels that run ``layout`` here (the TMA kernel reads layout NT only; its
    cp.async-producer variant, tf32x3-ws, every layout)."""
    names = ["v13", "tf32x3"] + (["tf32x3-wgmma", "tf32x3-tma", "tf32x3-ws", "tf32x3-ws-pp"] if session.spec.cc == (9, 0) else [])
    kernels = [preset(n, session.spec.arch) for n in names]
    if session.spec.cc == (9, 0):   # the TMA kernel's split-K slices add their Inf/NaN into C atomically
        kernels.append(preset("tf32x3-tma").replace(BN=128, WN=128, stages=4, split_k=4, label=""))
        # the cp.async kernel whose split of the next stage overlaps this stage's wgmma (safe split too)
        kernels.append(preset("tf32x3-wgmma").replace(BK=32, stages=3, prefetch=True, label=""))
    return [c for c in kernels if not c.tensor_maps or layout == c.layout]


def _classes(c):
    import cupy

    return cupy.stack([cupy.isnan(c), cupy.isposinf(c), cupy.isneginf(c)])


def _differences(cfg, plant, ours, ref) -> str:
    import cupy

    where = cupy.argwhere((_classes(ours) != _classes(ref)).any(axis=0))[:5].get().tolist()
    return (f"{cfg.label} with {plant} planted: NaN/+Inf/-Inf counts {_classes(ours).sum(axis=(1, 2)).get().tolist()} "
            f"vs SGEMM's {_classes(ref).sum(axis=(1, 2)).get().tolist()}; first differences "
            + ", ".join(f"C[{i},{j}] = {float(ours[i, j])} vs {float(ref[i, j])}" for i, j in where))


def _run_both(session, cfg, shape, a_store, b_store):
    """(ours, SGEMM's) C for the stored operands, both computed into C filled with 1.0."""
    import cupy

    from gemmgen.measure.launch import Operands

    wgmma_t = cfg.uses_wgmma and not cfg.warp_specialized and shape.layout[1] == "T"   # B's k-contiguous rows want 4 floats of padding
    k = session.kernel(cfg.replace(layout=shape.layout, pad_b=4 if wgmma_t else cfg.pad_b))
    ours = cupy.ones((shape.M, shape.N), cupy.float32)
    ref = cupy.ones((shape.M, shape.N), cupy.float32)
    k.launch(Operands(shape.M, shape.N, shape.K, a_store.data.ptr, a_store.shape[1], b_store.data.ptr,
                      b_store.shape[1], ours.data.ptr, shape.N))
    cublas_call("fp32", shape, a_store, b_store, ref)()
    return ours, ref


def _stores(shape, seed, scale=1.0):
    import cupy

    rng = cupy.random.default_rng(seed)
    a = rng.uniform(-1, 1, (shape.M, shape.K) if shape.layout[0] == "N" else (shape.K, shape.M), dtype=cupy.float32)
    b = rng.uniform(-1, 1, (shape.K, shape.N) if shape.layout[1] == "N" else (shape.N, shape.K), dtype=cupy.float32)
    return a * cupy.float32(scale), b * cupy.float32(scale)


def _plant(store, values, start=(5, 3), step=(17, 31)):
    """values written into a stored operand, the i-th at start + i * step (wrapped): different rows and
    columns, so in different k whichever way the operand is stored."""
    for i, v in enumerate(values):
        store[(start[0] + step[0] * i) % store.shape[0], (start[1] + step[1] * i) % store.shape[1]] = v


def _planted_like_sgemm(session, configs, shape, plant):
    """Inf/NaN planted in A and B land in C where SGEMM puts them, for each config."""
    for cfg in configs:
        a, b = _stores(shape, seed=len(plant))
        _plant(a, PLANTS[plant])
        _plant(b, PLANTS[plant], start=(11, 7), step=(13, 29))
        ours, ref = _run_both(session, cfg, shape, a, b)
        got, want = _classes(ours), _classes(ref)
        assert int(want.sum()) > 100, "the planted values reach whole rows and columns of C"
        assert bool((got == want).all()), _differences(cfg, plant, ours, ref)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("plant", PLANTS)
def test_inf_and_nan_land_where_sgemm_puts_them(session, plant, layout):
    _planted_like_sgemm(session, _fp32_kernels(session, layout), Shape(200, 136, 300, layout), plant)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inf_times_large_values_and_overflowing_products_keep_their_sign(session, layout):
    """An Inf against finite values of 4096 and more, and finite products past FLT_MAX: C holds the Inf
    of the sign SGEMM gives. A split whose big part rounds up leaves a small part of the opposite sign
    (4098 = 4100 - 2); small * the Inf's big part (+-0x1.ffcp127) then overflows to the other Inf, and
    Inf - Inf is NaN (a bit-exact model of a rounded split shows it)."""
    import cupy

    shape = Shape(200, 136, 300, layout)
    large = cupy.array([4098.0, -4098.0, 4102.0, 12345.0, -98765.0, 1000003.0], cupy.float32)
    for cfg in _fp32_kernels(session, layout):
        a, b = _stores(shape, seed=11)
        A = a if layout[0] == "N" else a.T   # views in C's terms: A[i, k], B[k, j]
        B = b if layout[1] == "N" else b.T
        A[5, 3] = float("inf")                          # row 5 of C: Inf * B[3, :], B[3, :] large
        B[3, :] = cupy.resize(large, shape.N)
        B[11, 7] = float("-inf")                        # column 7 of C: A[:, 11] * -Inf, A[:, 11] large
        A[:, 11] = cupy.resize(large, shape.M)
        A[40, 20] = 1.7014117e38                        # C[40, 50] and C[40, 51]: products past FLT_MAX
        B[20, 50], B[20, 51] = 1.7014117e38, -1.7014117e38
        ours, ref = _run_both(session, cfg, shape, a, b)
        got, want = _classes(ours), _classes(ref)
        assert int(want[1:].sum()) > 300, "the planted values reach whole rows and columns of C as Infs"
        assert bool((got == want).all()), _differences(cfg, "large values beside Inf", ours, ref)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_flt_max_times_one_stays_finite(session, layout):
    """FLT_MAX and its neighbours times 1.0 (an identity, a permutation): SGEMM's C is finite there. A split
    that rounds the small part up makes big + small exceed x by up to 2^-22 of it, past FLT_MAX for x
    within two ulps of it (a bit-exact model of the rounded split shows it)."""
    import cupy

    shape = Shape(200, 136, 300, layout)
    top = cupy.array([3.4028235e38, -3.4028235e38, 3.4028233e38, -3.4028231e38], cupy.float32)
    for cfg in _fp32_kernels(session, layout):
        a, b = _stores(shape, seed=17)
        A = a if layout[0] == "N" else a.T   # views in C's terms: A[i, k], B[k, j]
        B = b if layout[1] == "N" else b.T
        A[5:9, 3] = top                     # rows 5..8 of C: A's largest values times B[3, :] = 1
        B[3, :] = 1.0
        B[11, 7:11] = top                   # columns 7..10 of C: A[:, 11] = 1 times B's largest values
        A[:, 11] = 1.0
        A[5:9, 11] = 0.0                    # (rows 5..8 take only A's: two of them would overflow in SGEMM too)
        ours, ref = _run_both(session, cfg, shape, a, b)
        got, want = _classes(ours), _classes(ref)
        assert not bool(want.any()), "SGEMM's C is finite here"
        assert bool((got == want).all()), _differences(cfg, "FLT_MAX times 1", ours, ref)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_nan_whose_payload_is_in_the_low_bits_stays_nan(session, layout):
    """A NaN whose payload lies in the low 13 bits alone (0x7f800001 .. 0x7f801fff, signalling NaNs among
    them) has the top 19 bits of an Inf, which is what the tensor core reads of an fp32: C is NaN there,
    as in SGEMM, not +-Inf (the warp-specialized kernels kept such a NaN as both parts of the split)."""
    import cupy

    shape = Shape(200, 136, 300, layout)
    for cfg in _fp32_kernels(session, layout):
        a, b = _stores(shape, seed=13)
        _plant(a.view(cupy.uint32), [0x7f800001, 0xff801fff, 0x7f801000])
        _plant(b.view(cupy.uint32), [0xff800001, 0x7f800fff], start=(11, 7), step=(13, 29))
        ours, ref = _run_both(session, cfg, shape, a, b)
        got, want = _classes(ours), _classes(ref)
        assert int(want[0].sum()) > 300, "the planted NaNs reach whole rows and columns of C"
        assert bool((got == want).all()), _differences(cfg, "NaNs with low payloads", ours, ref)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("plant", PLANTS)
def test_inf_and_nan_in_the_skinny_kernels(session, plant, layout):
    """The skinny family (N <= BN) zero-fills past K and repeats row M - 1 past M: neither reaches C."""
    skinny = (preset("skinny"), preset("skinny").replace(split_k=3, reduce="workspace", label="skinny k3w"))
    if layout[0] == "T":   # A's rows contiguous: read straight into registers (zeros past K there too)
        skinny += (preset("skinny").replace(layout=layout, prefetch=True, BK=8, label="skinny direct"),)
    _planted_like_sgemm(session, skinny, Shape(203, 29, 301, layout), plant)
    _planted_like_sgemm(session, (preset("skinny-m"),), Shape(29, 203, 301, layout), plant)


@pytest.mark.parametrize("exponent", [-48, -24, 24, 48])
def test_extreme_magnitudes_are_as_accurate_as_sgemm(session, exponent):
    """A and B scaled by 2^e: products span 2^(2e-20)..2^(2e) (normal floats), so SGEMM keeps its
    accuracy, and so must the split of 3xTF32 (its small parts are 2^-11 of the inputs)."""
    for layout in ("NN", "NT"):
        _check_accuracy(session, Shape(256, 192, 512, layout), seed=exponent & 0xff, scale=2.0 ** exponent)


@pytest.mark.parametrize("operand", ["A", "B"])
def test_finite_values_past_tf32s_largest_stay_finite(session, operand):
    """x in (0x1.ffcp127, FLT_MAX] lies past the largest TF32 value: a split that rounds its big part to
    nearest would make it +-Inf there (and C NaN); the split keeps it finite (small = x - big), so C is
    finite where SGEMM's is, and as accurate."""
    big = [3.4028235e38, -3.4028235e38, 3.4026e38, -3.40275e38]
    for layout in ("NN", "NT"):
        _check_accuracy(session, Shape(200, 136, 300, layout), seed=5, plant=(operand, big))


def _check_accuracy(session, shape, seed, scale=1.0, plant=None):
    """Each fp32 kernel's relative error against float64 within the gate's bound of SGEMM's on
    uniform(-1, 1) * scale operands; plant = (operand, values): those values put in A's or B's stored
    rows, in different k."""
    import cupy

    for cfg in _fp32_kernels(session, shape.layout):
        a, b = _stores(shape, seed=seed, scale=scale)
        if plant:
            _plant(a if plant[0] == "A" else b, plant[1])
        ours, ref = _run_both(session, cfg, shape, a, b)
        a64, b64 = a.astype(cupy.float64), b.astype(cupy.float64)
        exact = (a64 if shape.layout[0] == "N" else a64.T) @ (b64 if shape.layout[1] == "N" else b64.T)
        assert bool(cupy.isfinite(exact).all() and cupy.isfinite(ref).all()), "SGEMM's C is finite here"
        assert bool(cupy.isfinite(ours).all()), (cfg.label, shape, int((~cupy.isfinite(ours)).sum()), "entries not finite")
        err, sgemm = rel_error(ours, exact), rel_error(ref, exact)
        assert err <= allowed("fp32", sgemm), (cfg.label, shape, err, sgemm)


def test_the_cp_async_ws_kernels_round_a_small_part_held_in_registers(session):
    """At K = 16 3xTF32's error is the split's own (SGEMM's is 7e-8 there). The warp-specialized cp.async
    kernels round A's small part to TF32 in registers; the TMA kernel truncates it, as the tensor core
    does. On the same operands the first errs well under the second (2.2e-7 against 3.0e-7 at
    512x512x16 NT in float64 emulation): a split that truncated again would not."""
    import cupy

    if session.spec.cc != (9, 0):
        pytest.skip("the wgmma kernels need sm_90")
    shape = Shape(512, 512, 16, "NT")
    a, b = _stores(shape, seed=3)
    exact = a.astype(cupy.float64) @ b.astype(cupy.float64).T
    err = {name: rel_error(_run_both(session, preset(name, session.spec.arch), shape, a, b)[0], exact)
           for name in ("tf32x3-ws", "tf32x3-tma")}
    assert err["tf32x3-ws"] < 0.85 * err["tf32x3-tma"], err
