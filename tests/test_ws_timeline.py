"""benchmarks/ws_timeline.py without a GPU: the stamps go into every shipped kernel it knows (warp-specialized
3xTF32 and SIMT), the planted source compiles, the grid's figures come out of known stamps, and bad input is
one line."""
from __future__ import annotations

import pytest

from gemmgen.codegen.render import render_validated
from gemmgen.kernel.config import KernelConfig
from tests.scripts import load

timeline = load("ws_timeline")


@pytest.fixture(scope="module")
def shipped():
    return timeline.configs()


def ws_kernel(c: dict) -> bool:
    return timeline.known_kind(c) is None and timeline.kind_of(c) == "ws"


def test_every_shipped_kernel_of_its_kind_takes_the_stamps(shipped):
    names = [n for n, c in shipped.items() if ws_kernel(c)]
    assert len(names) > 50
    for name in names:
        code = timeline.plant(render_validated(KernelConfig.from_dict(shipped[name]), "sm_90").code)
        # each milestone stamped, each region counted, the counters stored
        for i in (0, 1, 2, 3, 6, 14):
            assert f"TL({i})" in code, (name, i)
        assert code.count("{ TL(0); tl_sm(); }") == 1, name   # the block's SM, for the grid's figures
        # the consumers' first-ready stamp is the first K step's (not every step of the first tile)
        assert "tl_first && kt == 0) TL(5);" in code
        for region in ("PF", "PS", "PE", "PC", "CR", "CA", "CW", "CT", "CP"):
            assert f"TK({region})" in code, (name, region)
        assert "q[3] = PC" in code and "q[4] = CP" in code



def test_the_ragged_stages_copy_is_counted_as_the_loops_steps_are(shipped):
    """Where the last stage of a ragged K has a consumer step of its own after the loop, its waits and work are
    counted too: each consumer region's counter twice, once a copy; elsewhere once."""
    copies = {True: 0, False: 0}
    for name, c in shipped.items():
        if not ws_kernel(c):
            continue
        source = render_validated(KernelConfig.from_dict(c), "sm_90").code
        tail = "if (kfull < ktiles) {" in source
        code = timeline.plant(source)
        copies[tail] += 1
        for region in ("CR", "CA", "CW", "CT", "CP"):
            assert code.count(f"TK({region})") == (2 if tail else 1), (name, region)
    assert copies[True] > 20 and copies[False] > 5, copies

def test_a_kernel_planted_as_the_other_kind_is_refused_in_one_line(shipped):
    simt = next(n for n, c in shipped.items() if c["family"] == "simt")
    ws = next(n for n, c in shipped.items() if ws_kernel(c))
    for name, kind in ((simt, "ws"), (ws, "simt")):
        with pytest.raises(SystemExit) as err:
            timeline.plant(render_validated(KernelConfig.from_dict(shipped[name]), "sm_90").code, kind)
        assert "anchor" in str(err.value) and "\n" not in str(err.value)


def test_every_shipped_simt_kernel_of_its_kind_takes_the_stamps(shipped):
    names = [n for n, c in shipped.items() if timeline.known_kind(c) is None and timeline.kind_of(c) == "simt"]
    assert len(names) > 50
    for name in names:
        code = timeline.plant(render_validated(KernelConfig.from_dict(shipped[name]), "sm_90").code, "simt")
        assert code.count("{ TL(0); tl_sm(); }") == 1 and code.count("TL(6);") == 1, name
        # the first stage's stamp follows the barrier after the main loop's wait, and only in the first step
        wait = code.index("cp_async_wait<STAGES - 2>();")
        landed = code.index("if (threadIdx.x == 0 && kt == 0) TL(2);")
        assert wait < code.index("__syncthreads();", wait) < landed < code.index("// ---- epilogue"), name
        assert code.rstrip().endswith("__syncthreads();   // the block's last store issued\n"
                                      "    if (threadIdx.x == 0) TL(14);\n}"), name


def test_split_or_register_staged_simt_kernels_are_not_its_kind(shipped):
    split = next(c for c in shipped.values() if c["family"] == "simt" and c["split_k"] > 1)
    staged = next(c for c in shipped.values() if c["family"] == "simt" and not c["async_copy"])
    assert "split K" in timeline.known_kind(split) and "cp.async" in timeline.known_kind(staged)


def test_grid_figures_from_known_stamps():
    """Four blocks on two of four SMs: entries 0, 1, 2, 5 us after the first, ends 4, 6, 7, 9 us; SM 3 ran the
    first two (busy 0 -> 6 us), SM 8 the others (2 -> 9 us: 7 us); the stamps' least gap is 1 us."""
    import numpy as np

    t = np.zeros((5, 32), np.int64)
    t[:4, 0] = np.array([0, 1, 2, 5]) * 1000 + 10**9
    t[:4, 14] = np.array([4, 6, 7, 9]) * 1000 + 10**9
    t[:4, 15] = [3, 3, 8, 8]
    g = timeline.grid_figures(t, 4, 4)   # the fifth row is past the grid: never read
    assert g["entry_median_us"] == 1.5 and g["entry_last_us"] == 5 and g["last_block_end_us"] == 9
    assert g["sms_used"] == 2 and g["blocks_per_sm_median"] == 2 and g["blocks_per_sm_most"] == 2
    assert g["sm_busy_median_us"] == 6.5 and g["sm_busy_share"] == pytest.approx(13 / 4 / 9)
    assert g["timer_step_us"] == 1
    t[2, 14] = 0   # a block that never reached its end stamp
    with pytest.raises(SystemExit, match="no entry or end stamp"):
        timeline.grid_figures(t, 4, 4)


def test_the_planted_source_compiles(shipped, tmp_path):
    from gemmgen.build.nvcc import compile_cubin, have_nvcc

    if not have_nvcc():
        pytest.skip("no nvcc")
    simt = [n for n, c in shipped.items() if timeline.known_kind(c) is None and timeline.kind_of(c) == "simt"]
    # one of each kind of SIMT main loop: with and without the fragment prefetch, fragments by shuffles
    picks = {(shipped[n]["prefetch"], shipped[n]["frag"]): n for n in simt}
    assert len(picks) >= 3
    for name in ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws", *picks.values()):
        config = KernelConfig.from_dict(shipped[name])
        code = timeline.plant(render_validated(config, "sm_90").code, timeline.kind_of(shipped[name]))
        assert compile_cubin(code, config.target_arch("sm_90"))[config.name].registers > 0, name


@pytest.mark.parametrize("text, words", [
    ("gg_nope@64x64x64", "unknown kernel 'gg_nope'"),
    ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s2c_k1_chk_p132_wg_ws@64x64x64", "a persistent grid"),
    ("gg_simt_nn_b128x128x8_w32x64i2x2_t8x2_v4_akp4s1_bp0s1_r4_s3c_fldsp_k2a_chk@64x64x64", "or split K"),
    ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws@64x\u00b2x64", "bad shape"),
    ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws@20000x20000x64", "the stamps hold 16384"),
    ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws@64x0x64", "bad shape '64x0x64'"),
    ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws", "bad shape ''"),
])
def test_bad_items_are_one_line_naming_the_value(shipped, text, words, capsys):
    assert timeline.main([text]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err


def test_a_json_path_in_no_folder_is_refused_before_any_gpu_work(capsys):
    name = "gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws"
    assert timeline.main([f"{name}@256x256x64", "--json", "/nonexistent/dir/t.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "/nonexistent/dir/t.json" in err and "\n" not in err


@pytest.mark.parametrize("regions", [{}, {"producer: waiting on full": 0.25}])
def test_report_names_the_grid_and_the_phases(regions):
    """The printed block for a row as measure() returns it: the grid line's figures, each phase, and the
    regions only where the kernel has them (SIMT rows carry none)."""
    grid = {"entry_median_us": 0.21, "entry_last_us": 0.5, "last_block_end_us": 4.1, "sms_used": 132.0,
            "blocks_per_sm_median": 2.0, "blocks_per_sm_most": 3.0, "sm_busy_median_us": 2.4, "sm_busy_share": 0.585,
            "timer_step_us": 0.032}
    row = {"kernel": "gg_k", "shape": "434x668x22/NN", "blocks": 294, "sm_mhz": 1980, "mhz_assumed": False,
           "planted_us": 6.3, "plain_us": 6.1, "cublas_us": 7.0, "runs": 9, "grid": grid,
           "phases_us": {"entry -> first stage landed": 1.2, "first stage landed -> epilogue": None},
           "regions_us": regions}
    text = timeline.report(row)
    assert "132 SMs ran 2 blocks each (at most 3)" in text and "busy 2.4 us (all SMs: 58% of the span)" in text
    assert "globaltimer step 0.032 us" in text
    assert "the last ends at 4.1 us" in text and "medians of 9 flushed runs" in text
    assert "entry -> first stage landed" in text and text.count("\n") == 3 + (2 if regions else 0)


def test_measure_takes_the_median_of_its_flushed_runs(monkeypatch):
    """measure() against a stand-in GPU: run r of RUNS (9) has its last block enter r us after the first and end
    3 us later, each block 1 us from entry to its first stage, 2 us more to the epilogue, 0.5 us to the end
    (clocks at 2000 MHz); the figures are the runs' medians, each block a different SM of four."""
    import sys
    import types

    import numpy as np

    from gemmgen.base.shape import Shape

    store, runs = {}, []

    class Pointer:
        def __init__(self, name):
            self.name = name

    class Array:
        def __init__(self, shape, dtype, pointer):
            self.a = store.setdefault(pointer.name, np.zeros(shape, np.uint64))

        def fill(self, value):
            self.a[:] = value

        def get(self):
            return self.a.copy()

    stream = types.SimpleNamespace(synchronize=lambda: None)
    cuda = types.SimpleNamespace(MemoryPointer=Pointer, get_current_stream=lambda: stream)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda, ndarray=Array, uint64=np.uint64))

    class Kernel:
        module = types.SimpleNamespace(get_global_var=Pointer)

        def launch(self, operands):
            r = len(runs)
            runs.append(r)
            t = store["gg_tl"].reshape(-1, 32)
            t[:4, 0] = 10**12 + np.array([0, 0, r, r]) * 1000
            t[:4, 14] = t[:4, 0] + 3000
            t[:4, 15] = [0, 1, 2, 3]
            for slot, us in ((0, 0), (2, 1), (6, 3), (14, 3.5)):
                t[:4, 16 + slot] = 5000 + int(us * 2000)

    timed = types.SimpleNamespace(ms=0.006, cublas_ms=0.007, clock_mhz=(2000, 2000))
    session = types.SimpleNamespace(spec=types.SimpleNamespace(sm_count=4, clock_mhz=1500), flush=lambda s: None,
                                    retime=lambda *a, **k: [timed, timed], kernel=lambda *a, **k: Kernel(),
                                    problem=lambda s: types.SimpleNamespace(operands=lambda a, b: None))
    config = types.SimpleNamespace(name="gg_k", grid=lambda M, N, K: (4, 1, 1))
    row = timeline.measure(session, config, Shape(64, 64, 64), "code", "simt")
    assert len(runs) == timeline.RUNS == 9 and row["sm_mhz"] == 2000 and not row["mhz_assumed"]
    g = row["grid"]
    assert g["entry_last_us"] == 4 and g["last_block_end_us"] == 7 and g["sms_used"] == 4
    assert g["sm_busy_median_us"] == 3 and g["sm_busy_share"] == pytest.approx(3 / 7, abs=1e-3)
    assert list(row["phases_us"].values()) == [1, 2, 0.5, 3.5] and row["regions_us"] == {}
    assert "4 SMs ran 1 blocks each" in timeline.report(row)
