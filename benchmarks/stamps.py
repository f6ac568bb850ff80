"""The clock stamps benchmarks/ws_timeline.py plants into a kernel's source: where they go in a
warp-specialized 3xTF32 kernel and in a cp.async SIMT kernel, which shipped configs take them, and the
buffers they write (per block: %globaltimer stamps at 0..14 and the block's SM at 15, their clock64 at
16..31; clocks by region for the warp-specialized roles).
"""
from __future__ import annotations

import re

BLOCKS = 16384          # blocks the stamp buffers hold

HEAD = rf"""
__device__ unsigned long long gg_tl[{BLOCKS} * 32];   // per block: 16 %globaltimer stamps, then their clock64
__device__ unsigned long long gg_acc[{BLOCKS} * 16];  // per block: clocks by region (producer 0..3, consumer 0 8..12)
__device__ __forceinline__ void tl_stamp(int i) {{
    unsigned long long g, c;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    gg_tl[blockIdx.x * 32 + i] = g; gg_tl[blockIdx.x * 32 + 16 + i] = c;
}}
__device__ __forceinline__ void tl_sm() {{   // the block's SM, in the unused globaltimer slot 15
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    gg_tl[blockIdx.x * 32 + 15] = s;
}}
#define TL(i) tl_stamp(i)
#define TK(v) {{ const long long now_ = clock64(); v += now_ - tk_mark; tk_mark = now_; }}
"""

STAMPS = {0: "entry", 1: "inputs ready (griddepcontrol.wait)", 2: "producer: first stage landed",
          3: "producer: first stage split", 5: "consumer 0: first stage ready", 6: "consumer 0: epilogue",
          14: "consumer 0: end"}
PHASES = [(0, 1), (1, 2), (2, 3), (3, 5), (5, 6), (6, 14), (0, 14)]
SIMT_STAMPS = {0: "entry", 2: "first stage landed", 6: "epilogue", 14: "end"}
SIMT_PHASES = [(0, 2), (2, 6), (6, 14), (0, 14)]
REGIONS = {0: "producer: waiting on full", 1: "producer: splitting B", 2: "producer: waiting on empty",
           3: "producer: issuing copies", 8: "consumer: waiting on ready", 9: "consumer: splitting A",
           10: "consumer: issuing wgmma", 11: "consumer: waiting for wgmma", 12: "consumer: adding the partial"}


def _replaced(code: str, old: str, new: str, times: int = 1) -> str:
    """``code`` with the anchor ``old`` (there ``times`` times) replaced; SystemExit naming it otherwise."""
    if code.count(old) != times:
        raise SystemExit(f"ws_timeline: this kernel's source has {code.count(old)} of the anchor {old[:60]!r}, not {times}")
    return code.replace(old, new)


def _closed(code: str, last: str) -> str:
    """``code`` with ``last`` before the kernel's closing brace (the source's last character)."""
    body = code.rstrip()
    if not body.endswith("}"):
        raise SystemExit("ws_timeline: the source does not end with the kernel's closing brace")
    return body[:-1] + last + "\n}\n"


def plant(code: str, kind: str = "ws") -> str:
    """The kernel source with the stamps of ``kind`` (ws or simt, see :func:`kind_of`); SystemExit naming an
    anchor the template no longer has."""
    if kind == "simt":
        return plant_simt(code)
    # A ragged K's last stage has a copy of the consumer's step of its own (after the loop): its anchors, and
    # stamps, are there twice.
    steps = 2 if "if (kfull < ktiles) {" in code else 1

    def sub(old: str, new: str, times: int = 1) -> None:
        nonlocal code
        code = _replaced(code, old, new, times)

    sub('extern "C" __global__', HEAD + '\nextern "C" __global__')
    sub("    const int wg = threadIdx.x / 128;", "    const int wg = threadIdx.x / 128;\n    if (threadIdx.x == 0) { TL(0); tl_sm(); }")
    sub('asm volatile("griddepcontrol.wait;" ::: "memory");   // the copies or the scale ahead of this kernel are done\n    #endif',
        'asm volatile("griddepcontrol.wait;" ::: "memory");\n    #endif\n    if (threadIdx.x == 0) TL(1);')
    sub("setmaxnreg_dec<72>();", "setmaxnreg_dec<72>(); long long tk_mark = clock64(), PF = 0, PS = 0, PE = 0, PC = 0;")
    sub("mbar_wait(&full[s], ((f - LEAD) / STAGES) & 1);",
        "mbar_wait(&full[s], ((f - LEAD) / STAGES) & 1); TK(PF) if (t == 0 && f == LEAD) TL(2);")
    sub("if (lane == 0) mbar_arrive(&ready[s]);", "if (lane == 0) mbar_arrive(&ready[s]); TK(PS) if (t == 0 && f == LEAD) TL(3);")
    sub("if (f >= STAGES) mbar_wait(&empty[s], ((f / STAGES) - 1) & 1);",
        "if (f >= STAGES) mbar_wait(&empty[s], ((f / STAGES) - 1) & 1); TK(PE)")
    sub("cp_async_arrive(&full[s]);", "cp_async_arrive(&full[s]); TK(PC)")
    sub("        return;\n    }\n\n    // ---- consumers",
        "        if (t == 0) { unsigned long long* q = gg_acc + blockIdx.x * 16; q[0] = PF; q[1] = PS; q[2] = PE; q[3] = PC; }\n"
        "        return;\n    }\n\n    // ---- consumers")
    inc = re.search(r"setmaxnreg_inc<\d+>\(\);", code)
    sub(inc.group(0) if inc else "setmaxnreg_inc<", (inc.group(0) if inc else "") +
        " long long tk_mark = clock64(), CR = 0, CA = 0, CW = 0, CT = 0, CP = 0;\n    bool tl_first = true;")
    old = "mbar_wait(&ready[s], (kt / STAGES) & 1);"
    sub(old, old + " TK(CR) if (threadIdx.x == 128 && tl_first && kt == 0) TL(5);", steps)
    sub("wgmma_fence();", "TK(CA) wgmma_fence();", steps)
    sub("wgmma_commit();", "wgmma_commit(); TK(CW)", steps)
    sub("wgmma_wait<0>();", "wgmma_wait<0>(); TK(CT)", steps)
    sub("if (tid == 0) mbar_arrive(&empty[s]);", "if (tid == 0) mbar_arrive(&empty[s]); TK(CP)", steps)
    sub("// ---- epilogue: C = alpha * acc + beta * C;",
        "if (threadIdx.x == 128 && tl_first) TL(6); tl_first = false;\n        // ---- epilogue: C = alpha * acc + beta * C;")
    return _closed(code, "    if (threadIdx.x == 128) { TL(14); unsigned long long* q = gg_acc + blockIdx.x * 16 + 8;"
                         " q[0] = CR; q[1] = CA; q[2] = CW; q[3] = CT; q[4] = CP; }")


def plant_simt(code: str) -> str:
    """A cp.async SIMT kernel's source with thread 0's stamps: entry (and its SM), the first K step's stage
    landed (after the barrier that follows its wait), the epilogue, the end (after a barrier: every warp's
    stores issued)."""
    code = _replaced(code, 'extern "C" __global__', HEAD + '\nextern "C" __global__')
    smem = "    extern __shared__ __align__(16) float smem[];\n"
    code = _replaced(code, smem, smem + "    if (threadIdx.x == 0) { TL(0); tl_sm(); }\n")
    landed = re.search(r"cp_async_wait<STAGES - 2>\(\);[^\n]*\n\s*__syncthreads\(\);[^\n]*\n", code)
    if not landed or code.count("cp_async_wait<STAGES - 2>();") != 1:
        raise SystemExit("ws_timeline: this kernel's source has no one main-loop wait on a stage followed by a barrier")
    code = code[:landed.end()] + "        if (threadIdx.x == 0 && kt == 0) TL(2);\n" + code[landed.end():]
    code = _replaced(code, "    // ---- epilogue", "    if (threadIdx.x == 0) TL(6);\n    // ---- epilogue")
    return _closed(code, "    __syncthreads();   // the block's last store issued\n    if (threadIdx.x == 0) TL(14);")


def kind_of(c: dict) -> str:
    """Whose stamps a config (a dict) takes: simt or ws (check :func:`known_kind` first)."""
    return "simt" if c["family"] == "simt" else "ws"


def known_kind(c: dict) -> str | None:
    """Why the stamps do not fit a config (a dict), or None: they are written for cp.async warp-specialized
    3xTF32 kernels of one block an SM, one tile a block and unsplit K, and for cp.async SIMT kernels of
    unsplit K."""
    if c["family"] == "simt":
        return None if c["async_copy"] and c["split_k"] == 1 else "a SIMT kernel without cp.async stages, or split K"
    if not (c["family"] == "tf32x3" and c.get("tma") and c["async_copy"]):
        return "not a cp.async warp-specialized 3xTF32 kernel"
    if c["min_blocks"] != 1 or c["split_k"] != 1 or c.get("persistent") or c.get("pingpong"):
        return "two blocks an SM, split K or a persistent grid"
    return None
