"""benchmarks/ws_timeline.py without a GPU: the stamps go into every shipped kernel it knows, the planted
source compiles, and bad input is one line."""
from __future__ import annotations

import pytest

from gemmgen.codegen.render import render_validated
from gemmgen.kernel.config import KernelConfig
from tests.scripts import load

timeline = load("ws_timeline")


@pytest.fixture(scope="module")
def shipped():
    return timeline.configs()


def test_every_shipped_kernel_of_its_kind_takes_the_stamps(shipped):
    names = [n for n, c in shipped.items() if timeline.known_kind(c) is None]
    assert len(names) > 50
    for name in names:
        code = timeline.plant(render_validated(KernelConfig.from_dict(shipped[name]), "sm_90").code)
        # each milestone stamped, each region counted, the counters stored
        for i in (0, 1, 2, 3, 6, 14):
            assert f"TL({i})" in code, (name, i)
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
        if timeline.known_kind(c) is not None:
            continue
        source = render_validated(KernelConfig.from_dict(c), "sm_90").code
        tail = "if (kfull < ktiles) {" in source
        code = timeline.plant(source)
        copies[tail] += 1
        for region in ("CR", "CA", "CW", "CT", "CP"):
            assert code.count(f"TK({region})") == (2 if tail else 1), (name, region)
    assert copies[True] > 20 and copies[False] > 5, copies

def test_a_kernel_of_another_kind_is_refused_in_one_line(shipped):
    simt = next(n for n, c in shipped.items() if c["family"] == "simt")
    with pytest.raises(SystemExit) as err:
        timeline.plant(render_validated(KernelConfig.from_dict(shipped[simt]), "sm_90").code)
    assert "anchor" in str(err.value) and "\n" not in str(err.value)


def test_the_planted_source_compiles(shipped, tmp_path):
    from gemmgen.build.nvcc import compile_cubin, have_nvcc

    if not have_nvcc():
        pytest.skip("no nvcc")
    name = "gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s4c_k1_chk_wg_ws"
    config = KernelConfig.from_dict(shipped[name])
    code = timeline.plant(render_validated(config, "sm_90").code)
    assert compile_cubin(code, config.target_arch("sm_90"))[config.name].registers > 0


@pytest.mark.parametrize("text, words", [
    ("gg_nope@64x64x64", "unknown kernel 'gg_nope'"),
    ("gg_tf32x3_nn_b128x128x32_w64x128_v4_ap0s8_bp0s8_r8_s2c_k1_chk_p132_wg_ws@64x64x64", "a persistent grid"),
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
