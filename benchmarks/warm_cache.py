"""Compile every preset in every layout for this GPU in parallel, filling the kernel cache."""
import sys
import time

from gemmgen.compile import compile_many
from gemmgen.devices import detect
from gemmgen.presets import all_presets
from gemmgen.render import render

arch = detect(0).arch if len(sys.argv) < 2 else sys.argv[1]
srcs = [render(p.replace(layout=l)) for p in all_presets(arch) for l in ("NN", "NT", "TN", "TT")]
t = time.time()
out = compile_many(srcs, arch)
bad = [o for o in out if not hasattr(o, "cubin")]
print(f"compiled {len(out)} kernels for {arch} in {time.time() - t:.1f} s; failures: {len(bad)}")
for b in bad:
    print(b.reason, (b.detail or "")[:2000])
