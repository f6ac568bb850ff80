"""Did a template change alter the machine code? Render a fixed set of configs, compile each to a cubin
with nvcc (no GPU needed) and compare the SASS of two checkouts.

    PYTHONPATH=/path/to/old/checkout python benchmarks/sass_compare.py dump /tmp/sass_old
    PYTHONPATH=.                      python benchmarks/sass_compare.py dump /tmp/sass_new
    python benchmarks/sass_compare.py diff /tmp/sass_old /tmp/sass_new

``dump`` imports whichever gemmgen is first on the path, so the old checkout renders with its own
templates. ``diff`` prints one verdict per case: identical; same instructions up to register numbers;
same multiset of instructions (scheduled differently); or different, with the opcode counts that differ.
"""
from __future__ import annotations

import collections
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def cases() -> dict:
    """name -> (config, arch): every preset, the golden variants, and layouts, split-K and bounds mixed."""
    from gemmgen.kernel.presets import names, preset
    from gemmgen.tune.space import sample_valid

    def arch_of(c):
        return "sm_90" if c.uses_wgmma else "sm_80" if c.tensor_core else "sm_86"

    out = {n: (preset(n), arch_of(preset(n))) for n in names()}
    out["v13_sm90"] = (preset("v13", "sm_90"), "sm_90")
    extra = {
        "v10_tt_ws_fast": preset("v10").replace(layout="TT", split_k=2, reduce="workspace", bounds="none", label=""),
        "v6_nt_chk": preset("v6").replace(layout="NT", label=""),
        "v9_tn_atomic": preset("v9").replace(layout="TN", split_k=3, label=""),
        "v8_fast": preset("v8").replace(bounds="none", label=""),
        "v11_tt_fast": preset("v11").replace(layout="TT", bounds="none", label=""),
        "v3_nt": preset("v3").replace(layout="NT", label=""),
        "tf32_tt_chk": preset("tf32").replace(layout="TT", label=""),
        "tf32x3_nt_ws": preset("tf32x3").replace(layout="NT", split_k=2, reduce="workspace", label=""),
        "tf32x3_tn_fast": preset("tf32x3").replace(layout="TN", bounds="none", label=""),
        "wg_x3_tn_chk": preset("tf32x3-wgmma").replace(layout="TN", label=""),
        "wg_x3_tt_ws": preset("tf32x3-wgmma").replace(layout="TT", split_k=2, reduce="workspace", label=""),
        "wg_tf32_nt_fast": preset("tf32-wgmma").replace(layout="NT", bounds="none", label=""),
        "wg_x3_nn_atomic": preset("tf32x3-wgmma").replace(split_k=2, label=""),
        "wg_tf32_tt_chk": preset("tf32-wgmma").replace(layout="TT", stages=3, label=""),
        "v10_async_nt": preset("v10").replace(layout="NT", async_copy=True, stages=3, label=""),
        "wmma_fast_tn_ws": preset("wmma-fast").replace(layout="TN", split_k=2, reduce="workspace", label=""),
        "wmma_db_nt_fast": preset("wmma-db").replace(layout="NT", bounds="none", label=""),
        "wmma_tt_atomic": preset("wmma").replace(layout="TT", split_k=2, label=""),
    }
    out.update({n: (c, arch_of(c)) for n, c in extra.items()})
    for family, arch in (("simt", "sm_86"), ("tf32x3", "sm_80"), ("tf32", "sm_86")):
        for i, c in enumerate(sample_valid(3, arch, seed=14, layout="TN", family=family)):
            out[f"rand_{family}_{i}"] = (c, arch)
    return out


def compile_one(name: str, code: str, arch: str, out: Path) -> str:
    (out / f"{name}.cu").write_text(code)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        gencode = f"-gencode=arch=compute_{arch[3:]},code={arch}"
        done = subprocess.run(["nvcc", "-cubin", "-O3", "-std=c++17", gencode, str(out / f"{name}.cu"), "-o", str(cubin)],
                              capture_output=True, text=True)
        if done.returncode:
            return f"{name}: nvcc failed\n{done.stderr[-2000:]}"
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    (out / f"{name}.sass").write_text(sass)
    return f"{name}: {arch}"


def dump(out: Path) -> None:
    from gemmgen.codegen.render import render

    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for name, (config, arch) in cases().items():
        src = render(config, arch, command="sass_compare")
        jobs.append((name, src.code, config.target_arch(arch), out))
    with ThreadPoolExecutor(2) as pool:
        for line in pool.map(lambda j: compile_one(*j), jobs):
            print(line, flush=True)


INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")


def instructions(path: Path) -> list[str]:
    return [m.group(1) for m in INSTR.finditer(path.read_text())]


def verdict(old: list[str], new: list[str]) -> str:
    if old == new:
        return "identical"
    regs = re.compile(r"\b(U?R|U?P)\d+\b")
    if [regs.sub(r"\1", i) for i in old] == [regs.sub(r"\1", i) for i in new]:
        return "identical up to register numbers"
    ops = lambda xs: collections.Counter(i.split()[0] if not i.startswith("@") else i.split()[1] for i in xs)
    a, b = ops(old), ops(new)
    if a == b:
        return f"same {len(old)} instructions, scheduled or addressed differently"
    diff = {k: b[k] - a[k] for k in a.keys() | b.keys() if a[k] != b[k]}
    return f"DIFFERENT: {len(old)} -> {len(new)} instructions, opcode count changes {dict(sorted(diff.items()))}"


def diff(old: Path, new: Path) -> int:
    bad = 0
    for path in sorted(old.glob("*.sass")):
        other = new / path.name
        text = verdict(instructions(path), instructions(other)) if other.exists() else "missing"
        bad += not text.startswith("identical")
        print(f"{path.stem:22s} {text}")
    return bad


if __name__ == "__main__":
    if sys.argv[1:2] == ["dump"]:
        dump(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["diff"]:
        sys.exit(1 if diff(Path(sys.argv[2]), Path(sys.argv[3])) else 0)
    else:
        sys.exit(__doc__)
