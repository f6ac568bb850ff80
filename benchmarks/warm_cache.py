"""Compile every preset in every layout it is valid in for this GPU in parallel, filling the kernel cache."""
import sys
import time

from gemmgen.base.devices import detect
from gemmgen.build.parallel import compile_many
from gemmgen.codegen.render import render
from gemmgen.kernel.presets import all_presets
from gemmgen.kernel.rules import explain

arch = detect(0).arch if len(sys.argv) < 2 else sys.argv[1]
configs = [p.replace(layout=l) for p in all_presets(arch) for l in ("NN", "NT", "TN", "TT")]
jobs = [(render(c, arch), arch) for c in configs if not explain(c, arch)]   # wgmma reads NN only
t = time.time()
out = compile_many(jobs, compiler="nvrtc")
bad = [o for o in out if not hasattr(o, "cubin")]
print(f"compiled {len(out)} kernels for {arch} in {time.time() - t:.1f} s; failures: {len(bad)}")
for b in bad:
    print(b.reason, (b.detail or "")[:2000])
