"""The warp-specialized 3xTF32 kernel whose producer copies with cp.async (mainloop="ws_cpasync",
preset tf32x3-ws), without a GPU: the rules, what it accepts, the source it renders, and (slow) that
nvcc compiles every layout and variant for sm_90a without spills. tests/gpu/test_ws_gpu.py runs it."""
from __future__ import annotations

import re

import pytest

from gemmgen.build import nvcc as build
from gemmgen.codegen.render import render
from gemmgen.base.devices import for_arch
from gemmgen.kernel.presets import preset
from gemmgen.kernel.rules import explain

WS = preset("tf32x3-ws").replace(label="")
LAYOUTS = ["NN", "NT", "TN", "TT"]
VARIANTS = {
    "plain": {},
    "split-atomic": dict(BN=64, WN=64, stages=6, split_k=4),
    "split-workspace": dict(BM=64, split_k=3, reduce="workspace"),
    "persistent": dict(stages=2, scheduler="persistent", persistent_blocks=16),
    "narrow": dict(BN=24, WN=24, stages=6, split_k=2),
    "swap": dict(BM=64, BN=32, WN=32, stages=8, swap=True),
    "swap-split-workspace": dict(BN=48, WN=48, stages=6, split_k=3, reduce="workspace", swap=True),
    "swap-persistent": dict(BN=64, WN=64, stages=2, scheduler="persistent", persistent_blocks=16, swap=True),
    # two blocks an SM: the whole kernel under 80 (two consumers) or 128 (one) registers a thread
    "two-blocks": dict(BN=32, WN=32, stages=4, split_k=4, min_blocks=2),
    "two-blocks-swap": dict(BN=32, WN=32, stages=4, min_blocks=2, swap=True),
    "two-blocks-64": dict(BM=64, BN=64, WN=64, stages=4, split_k=3, reduce="workspace", min_blocks=2),
    # two consumers taking 64-row tiles of a persistent grid in turn
    "pingpong": dict(BM=64, WM=64, stages=3, scheduler="pingpong", persistent_blocks=16),
    "pingpong-64x64": dict(BM=64, WM=64, BN=64, WN=64, stages=4, scheduler="pingpong", persistent_blocks=16),
}


def _a_stage_floats(cfg):
    """Floats of A a stage holds: [BK][BM + 8] staged as it lies (m contiguous), [BM][BK + 4] unswizzled
    (k contiguous), else [BM][BK] swizzled."""
    if cfg.a_mmajor_stage:
        return cfg.BK * (cfg.BM + 8)
    return cfg.BM * (cfg.BK + 4) if cfg.a_kshift_stage else cfg.BM * cfg.BK


def _rules(cfg, target="h100"):
    return [v.rule for v in explain(cfg, target)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_valid_in_every_layout(layout, variant):
    assert _rules(WS.replace(layout=layout, **VARIANTS[variant])) == []


def test_only_the_3xtf32_family_and_only_hopper():
    assert "TMA_COPY" in _rules(WS.replace(family="tf32"))
    assert "TMA_KIND" in _rules(WS, "sm_86")
    # the TMA kernel itself still reads layout NT only
    assert _rules(WS.replace(mainloop="ws_tma")) == ["TMA_LAYOUT"]


def test_consumers_get_fewer_registers_than_under_tma():
    """The cp.async producer keeps 72 registers (its loop spilled under 40), so the consumers' budget
    is 216, not 232: BN = 208 (104 accumulators twice, ~232 registers) fits the TMA kernel only."""
    wide = dict(BN=208, WN=208, stages=2)
    assert _rules(WS.replace(mainloop="ws_tma", layout="NT", **wide)) == []
    assert _rules(WS.replace(**wide)) == ["TMA_REGISTERS"]


def test_accepts_rows_of_any_alignment_and_unaligned_starts():
    for lda, ldb, ldc in ((777, 999, 999), (778, 1001, 1003), (780, 1000, 1000)):
        assert WS.accepts(1001, 999, 777, lda, ldb, ldc) is None
    assert WS.accepts(1001, 999, 777, 777, 999, 999, aligned=False) is None
    tma = WS.replace(mainloop="ws_tma", layout="NT")
    assert "TMA needs" in tma.accepts(1001, 999, 777)


def test_name_tells_it_from_the_tma_kernel():
    assert WS.name.endswith("_s4c_k1_chk_wg_ws")
    assert WS.replace(mainloop="ws_tma", layout="NT").name.endswith("_s4r_k1_chk_wg_tma")
    assert WS.tensor_maps is False and WS.replace(mainloop="ws_tma").tensor_maps is True


def _code(layout, **change):
    return render(WS.replace(layout=layout, **change), for_arch("sm_90")).code


@pytest.mark.parametrize("layout", LAYOUTS)
def test_source_copies_with_cp_async_and_takes_no_tensor_maps(layout):
    code = _code(layout)
    assert "TmaMap tmA" not in code and "tma_load(" not in code.split("__global__")[-1]
    assert "cp.async.mbarrier.arrive.noinc" in code and "mbar_init(&full[s], PRODUCERS)" in code
    # 16-byte copies exist for the operands whose k is contiguous (A in N, B in T) and for an m-contiguous
    # A, staged as it lies (3xTF32: the consumers read A into registers) ...
    assert "a_vec" in code and ("b_vec" in code) == (layout[1] == "T")
    assert ("A + (long long)(k0 + r0) * lda + m" in code) == (layout[0] == "T") == WS.replace(layout=layout).a_mmajor_stage
    # ... and an n-contiguous B is moved 4 bytes at a time, transposed: element (k, n) of the stored matrix
    transposed = set(re.findall(r"\(long long\)\(k0 \+ k\) \* ld([ab]) \+ b[mn]0", code))
    assert transposed == ({"b"} if layout[1] == "N" else set())
    # every consumer fences its stage's generic-proxy writes before wgmma reads it
    assert code.count("fence_async_smem();") >= 2


@pytest.mark.parametrize("layout", LAYOUTS)
def test_swapped_kernel_computes_the_transposed_product(layout):
    """swap: the parameters are named for C^T = op(B)^T op(A)^T (M is C's N, A is C's B), whose layout
    flips NN <-> TT and keeps NT and TN; so the operand copied 16 bytes at a time follows that layout;
    C is stored transposed (row n of C at column m) from a tile staged WM + 4 floats a row."""
    cfg = WS.replace(layout=layout, swap=True)
    assert cfg.run_layout == {"NN": "TT", "TT": "NN"}.get(layout, layout) and cfg.name.endswith("_ws_sw")
    code = _code(layout, swap=True)
    signature = code[code.index(cfg.name + "("):].split("{")[0]
    assert signature.index("const int N") < signature.index("const int M")
    assert signature.index("B, const int ldb") < signature.index("A, const int lda")
    run = cfg.run_layout
    assert "a_vec" in code and ("b_vec" in code) == (run[1] == "T") and cfg.a_mmajor_stage == (run[0] == "T")
    assert "out + (long long)n * ldo + m" in code and f"C_LD = {cfg.WM + 4}" in code
    # the same kernel unswapped keeps C's names and its own layout's copies
    plain = _code(layout)
    assert "out + (long long)n * ldo + m" not in plain and "a_vec" in plain
    assert ("A + (long long)(k0 + r0) * lda + m" in plain) == (layout[0] == "T")


def test_swap_is_for_the_skinny_and_the_cp_async_kernels_only():
    assert _rules(WS.replace(swap=True, BN=24, WN=24)) == []
    assert "WARPS_K" in _rules(WS.replace(mainloop="ws_tma", layout="NT", swap=True))
    assert "WARPS_K" in _rules(preset("tf32x3-wgmma").replace(swap=True))
    # a swapped workspace split writes C's rows N floats apart (C's N is the kernel's M)
    code = _code("NN", swap=True, split_k=2, reduce="workspace")
    assert "const int ldo = M;" in code and "const int ldo = N;" in _code("NN", split_k=2, reduce="workspace")
    # the persistent kernel's staging tile is each consumer's BN x (WM + 4)
    per = WS.replace(swap=True, scheduler="persistent", persistent_blocks=16, stages=2)
    assert per.c_stage_floats == 2 * 128 * 68 and per.smem_bytes - per.replace(scheduler="plain", persistent_blocks=0).smem_bytes == 4 * 2 * 128 * 68


@pytest.mark.parametrize("change", [dict(), dict(swap=True), dict(swap=True, BN=32, WN=32),
                                    dict(swap=True, BN=128, WN=128), dict(swap=True, BN=24, WN=24, BM=64)])
def test_persistent_mbarriers_sit_past_the_staging_tile_at_the_end_of_shared_memory(change):
    """The persistent kernel's mbarriers follow C's staging tile: at the byte smem_bytes reserves for them
    (a swapped tile is CONSUMERS x BN x (WM + 4) floats, not BM x C_LD: with BN = 32 they lay past the
    allocation, with BN = 128 on consumer 1's staging tile)."""
    cfg = WS.replace(stages=2, scheduler="persistent", persistent_blocks=16, **{"BN": 64, "WN": 64, **change})
    code = render(cfg, for_arch("sm_90")).code
    offset = int(re.search(r"reinterpret_cast<unsigned long long\*>\(cstage \+ (\d+)\)", code).group(1))
    stages_floats = cfg.stages * (_a_stage_floats(cfg) + 2 * cfg.BN * cfg.BK)   # A and B, then B's small parts
    assert (stages_floats + offset) * 4 + cfg.stages * 24 == cfg.smem_bytes
    assert offset == cfg.c_stage_floats


def test_unaligned_rows_of_c_store_whole_chunks_apart_from_the_row_ends():
    """C's rows not 16-byte aligned: the loop of 16-byte stores holds no element path (a lane on a row's
    end made its warp wait on 4 more stores: the unaligned epilogue ran 30% slower than the aligned one at
    10% once the ends went to a loop of their own); the ends, a
    lane each, take the element path. The GPU tests check the values on odd N, padded rows and offsets."""
    code = render(WS.replace(layout="NN"), for_arch("sm_90")).code
    unaligned = code.split("C's rows are not 16-byte aligned")[1].split("// ---- ")[0]
    whole, ends = unaligned.split("for (int q = tid; q < 2 * WM; q += 128)")
    assert "float4* const p" in whole and "e[4]" not in whole and "n + i" not in whole
    assert "n + i >= bn0 && n + i < n_end" in ends and "float4" not in ends


@pytest.mark.parametrize("bn", [64, 128, 160])
def test_shifted_staging_rows_are_apart_so_that_a_warps_writes_need_two_wavefronts(bn):
    """The rendered stride of the shifted staging rows, in a model of shared memory's 32 banks: a warp's
    4-byte writes (8 rows x 4 columns, each row shifted by its own (lead + m * ldo) % 4) need at most 2
    wavefronts for every ldo % 4 and lead. At C_LD (8 banks mod 32) ldo % 4 == 2 needed 4; at BN + 4 the
    plans on such rows ran 4-10% faster on the H100."""
    code = render(WS.replace(layout="NN", BN=bn, WN=bn), for_arch("sm_90")).code
    stride = eval(re.search(r"constexpr int C_LD_S = ([^;]+);", code).group(1), {"BN": bn})
    assert "r * C_LD_S + shift(m0 + r)" in code
    worst = 0
    for ldo, lead, m0 in ((4000 + o, lead, m0) for o in range(4) for lead in range(4) for m0 in range(0, 64, 8)):
        for j in range(bn // 8):
            for e in (0, 1):
                words = {(m0 + lane // 4) * stride + (lead + (m0 + lane // 4) * ldo) % 4 + 8 * j + 2 * (lane % 4) + e
                         for lane in range(32)}
                per_bank = {}
                for w in words:
                    per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
                worst = max(worst, max(per_bank.values()))
    assert worst <= 2, (bn, stride, worst)


def test_the_tma_kernels_render_as_before():
    """The TMA variant's source has no trace of the cp.async producer."""
    code = render(preset("tf32x3-tma"), for_arch("sm_90")).code
    assert "cp_async" not in code and "PRODUCERS" not in code and "STAGE_BYTES" in code



@pytest.mark.parametrize("variant, mode", [("plain", "tail"), ("split-workspace", "tail"), ("persistent", "branch"),
                                           ("pingpong", None), ("two-blocks", None), ("two-blocks-64", None),
                                           ("wide", None), ("tma", "tail"), ("tma-wide", None), ("tf32-tma", None)])
def test_the_last_stage_of_a_ragged_k_issues_only_its_k_steps_inside_k(variant, mode):
    """After the loop over the stages whose k all lie inside K, a copy of the step of its own for the last
    ("tail"); persistent cp.async kernels choose between both copies in the loop ("branch"); kernels near
    their register limit (two blocks an SM, over 80 sums a consumer thread), pingpong and kernels without
    partials (TF32 on the tensor cores' sum: ptxas serialized their wgmma, C7515) keep the one loop."""
    cfg = {"wide": WS.replace(BN=176, WN=176, stages=3), "tma": preset("tf32x3-tma").replace(BN=128, WN=128),
           "tma-wide": preset("tf32x3-tma"), "tf32-tma": preset("tf32-tma").replace(BN=128, WN=128, label="")
           }.get(variant) or WS.replace(**VARIANTS[variant])
    code = render(cfg, for_arch("sm_90")).code
    assert ("if (kfull < ktiles) {" in code) == (mode == "tail")
    assert ("if (ksteps >= BK / KSTEP) {" in code) == (mode == "branch")
    assert code.count("if (ks < ksteps)") == (0 if mode is None else 3)   # A's split and both rounds of wgmma

@pytest.mark.slow
@pytest.mark.skipif(not build.have_nvcc(), reason="nvcc (CUDA toolkit) is not installed")
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_compiles_for_sm_90a_without_spills(layout, variant):
    cfg = WS.replace(layout=layout, **VARIANTS[variant])
    report = build.compile_cubin(render(cfg, for_arch("sm_90")), "sm_90")
    res = report[cfg.name]
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_bytes == 0, res
    assert res.registers <= 65536 // (cfg.threads * cfg.min_blocks), res
    bad = [line for line in report.log.splitlines() if re.search(r"serializ|C7508|setmaxnreg|warning", line, re.I)]
    assert not bad, bad


def test_m_contiguous_a_is_staged_as_it_lies_where_the_stages_have_room():
    """3xTF32 with the kernel's A m contiguous (TN, TT, NN swapped): A staged [BK][BM + 8] (1 KB more a
    stage), except where that would not fit a block (227 KB) or its min_blocks on an SM: then the 4-byte
    transposing copies as before, and the config stays valid (no rule rejects what it accepted)."""
    for layout, swap in (("TN", False), ("TT", False), ("NN", True)):
        assert WS.replace(layout=layout, swap=swap).a_mmajor_stage
    assert not WS.replace(layout="NT").a_mmajor_stage and not WS.replace(layout="NN").a_mmajor_stage
    plain = WS.replace(layout="TN")
    assert plain.tma_tile_bytes - plain.replace(layout="TN", a_kmajor=False).tma_tile_bytes == plain.stages * 8 * plain.BK * 4
    for cfg in (WS.replace(layout="TN", BM=64, BN=192, WN=192, stages=4),            # 227 KB a block
                WS.replace(layout="TN", BN=48, WN=48, stages=4, min_blocks=2)):     # two blocks an SM
        assert not cfg.a_mmajor_stage and not explain(cfg, "h100"), cfg.name
        assert "A + (long long)(k0 + r0) * lda + m" not in _code("TN", **{k: v for k, v in cfg.to_dict().items()
                                                                 if k in ("BM", "BN", "WN", "stages", "min_blocks")})


def test_a_kmajor_false_keeps_the_producers_transposing_copies_where_a_could_be_staged_as_it_lies():
    """a_kmajor = False (name part ``atp``): an m-contiguous A is transposed K-major by the producer's
    4-byte copies, the older staging (the 128x192 one-block kernels spill less that way), so
    both variants can be timed and dispatched; only where A could be staged as it lies (else the rules
    refuse it, and a moved config drops out of that layout)."""
    for layout, swap in (("TN", False), ("TT", False), ("NN", True)):
        cfg = WS.replace(layout=layout, swap=swap, a_kmajor=False)
        assert cfg.a_mmajor_choice and not cfg.a_mmajor_stage and not explain(cfg, "h100"), cfg.name
        assert "_atp0s8_" in cfg.name and "_atp" not in WS.replace(layout=layout, swap=swap).name
        assert cfg.tma_tile_bytes == cfg.stages * (cfg.BM * cfg.BK + 2 * cfg.BN * cfg.BK) * 4   # A swizzled, no padding
        code = _code(layout, swap=swap, a_kmajor=False)
        assert "A + (long long)(k0 + r0) * lda + m" not in code
        assert "A + (long long)(k0 + r0) * lda + m" in _code(layout, swap=swap)
    for cfg in (WS.replace(layout="NT", a_kmajor=False), WS.replace(layout="NN", a_kmajor=False),
                WS.replace(layout="TN", BM=64, BN=192, WN=192, stages=4, a_kmajor=False)):   # no room: one way only
        reasons = [v.reason for v in explain(cfg, "h100") if v.rule == "TMA_DEFAULTS"]
        assert reasons and "a_kmajor = false, A transposed by the producer, is a choice only where" in reasons[0]
    # moved to a layout without the choice (warm starts, timings, the dispatch's other layouts), an atp
    # kernel is the a_kmajor = True one there; a SIMT kernel's a_kmajor = False is its own in every layout
    atp = WS.replace(layout="TN", a_kmajor=False)
    assert atp.in_layout("NT") == WS.replace(layout="NT") and atp.in_layout("TT") == atp.replace(layout="TT")
    assert not preset("v5").in_layout("TN").a_kmajor


def test_k_contiguous_a_is_staged_unswizzled_and_copied_16_bytes_a_copy_where_the_carveout_stays():
    """3xTF32 with the kernel's A and B k contiguous (NT, swapped or not): A staged [BM][BK + 4] (2 KB more a
    stage at BM = 128), its rows copied as the 16-byte chunks around them (unaligned rows shifted, a 9th
    chunk for their ends) and read by the consumers where they landed; only where that padding keeps the
    SM's shared-memory carveout (else L1, through which 4-byte copies go, shrinks: 266x7295x474 NT ran
    0.84x as fast with it) and fits; else the swizzled layout as before."""
    from gemmgen.kernel.memory import hopper_carveout

    kshift = WS.replace(layout="NT", BN=160, WN=160, stages=3)
    for swap in (False, True):
        cfg = kshift.replace(swap=swap)
        assert cfg.a_kshift_stage and not cfg.a_mmajor_stage and not explain(cfg, "h100"), cfg.name
        assert cfg.tma_tile_bytes == cfg.stages * (cfg.BM * (cfg.BK + 4) + 2 * cfg.BN * cfg.BK) * 4
        code = render(cfg, for_arch("sm_90")).code
        assert "constexpr int LDK = BK + 4;" in code and "row r's chunk 8 (shifted rows)" in code
        assert "a[r * LDK + ks * KSTEP + 4 * (e >> 1) + tig]" in code and "const int a_shift = row_shift(grp, a_ld4);" in code
    # the carveout: 4 stages of 128x128 hold 193 KiB an SM (carveout 196), padded 201 (228): swizzled
    plain = WS.replace(layout="NT")
    assert not plain.a_kshift_stage and "LDK" not in _code("NT")
    padded = plain._tma_bytes(4 * plain.BM * 4) + plain.stages * 24 + 1024
    assert hopper_carveout(plain.smem_bytes + 1024) < hopper_carveout(padded)
    # A m contiguous (staged as it lies instead), or B n contiguous (its transposing copies want L1)
    for layout, swap in (("TN", False), ("TT", False), ("NN", True), ("NN", False), ("TT", True), ("TN", True)):
        cfg = kshift.replace(layout=layout, swap=swap)
        assert not cfg.a_kshift_stage and "LDK" not in render(cfg, for_arch("sm_90")).code
    assert not kshift.replace(mainloop="ws_tma").a_kshift_stage            # TMA: the copy engine's layout


def test_pingpong_takes_whole_tiles_of_a_persistent_grid_in_turn():
    """pingpong: two consumers, each a whole BM = WM tile at a time, so the block has 384 threads and C's
    staging tile holds two tiles; it needs a persistent grid, WM = BM, and no swap."""
    pp = preset("tf32x3-ws-pp")
    assert _rules(pp) == [] and pp.consumers == 2 and pp.threads == 384 and pp.BM == pp.WM == 64
    assert pp.c_stage_floats == 2 * 64 * pp.c_ld
    assert pp.name.endswith("_k1_chk_p132pp_wg_ws") and pp.replace(scheduler="persistent").name.endswith("_p132_wg_ws")
    assert pp.smem_bytes - pp.replace(scheduler="persistent").smem_bytes == 4 * 64 * pp.c_ld + 16   # a tile more, 2 mbarriers
    assert _rules(pp.replace(persistent_blocks=0)) == ["SCHEDULER"]
    assert _rules(pp.replace(swap=True)) == ["SCHEDULER"]
    assert _rules(pp.replace(BM=128)) == ["TMA_TILE"]
    assert _rules(pp.replace(mainloop="ws_tma", layout="NT")) == []       # the TMA kernel too
    assert pp.replace(scheduler="persistent").to_dict()["scheduler"] == "persistent" and pp.to_dict()["scheduler"] == "pingpong"


def test_pingpong_consumers_wait_for_each_others_main_loops():
    """Consumer w takes the block's tiles w, w + 2, ..., skips the other's stages, and waits on order[w]
    for the other's main loop before its own (consumer 0's first tile excepted); the stages go back with
    one consumer's arrival."""
    code = render(preset("tf32x3-ws-pp"), for_arch("sm_90")).code
    assert "for (int pid = blockIdx.x + cw * gridDim.x, turn = 0; pid < ntiles; pid += CONSUMERS * gridDim.x, it += ktiles, ++turn)" in code
    assert "it = cw * ktiles;" in code
    assert "if (cw == 1 || turn > 0) mbar_wait(&order[cw], (turn - 1 + cw) & 1);" in code
    assert "mbar_arrive(&order[1 - cw]);" in code and "mbar_init(&empty[s], 1);" in code
    assert "const int m0 = bm0;" in code and "cw * WM * BK" not in code
    # the producer still walks every tile of the block, a grid apart
    assert "tile_origin(blockIdx.x + (f / ktiles) * gridDim.x, tiles_m, tiles_n, bm0, bn0);" in code


def test_pingpong_mbarriers_sit_past_both_staging_tiles():
    cfg = preset("tf32x3-ws-pp")
    code = render(cfg, for_arch("sm_90")).code
    offset = int(re.search(r"reinterpret_cast<unsigned long long\*>\(cstage \+ (\d+)\)", code).group(1))
    stages_floats = cfg.stages * (_a_stage_floats(cfg) + 2 * cfg.BN * cfg.BK)
    assert offset == cfg.c_stage_floats
    assert (stages_floats + offset) * 4 + cfg.stages * 24 + 16 == cfg.smem_bytes   # 3 per stage, then order[2]


def test_explain_counts_the_pingpong_consumers_and_says_they_take_tiles_in_turn():
    from gemmgen.cli.describe import features

    text = " ".join(features(preset("tf32x3-ws-pp")))
    assert "2 consumer warpgroups (384 threads)" in text and "in turn (pingpong)" in text
    assert "each consumer owns 64 rows" in " ".join(features(WS))
