"""The names every stage shares: the template families, the accuracy class each computes, and the
values of the config's categorical parameters. :mod:`.config` re-exports them.

>>> PRECISION["skinny"], [f for f in FAMILIES if f not in TENSOR_CORE + HALF]
('fp32', ['naive', 'simt', 'skinny'])
"""
from __future__ import annotations

FAMILIES = ("naive", "simt", "tf32", "tf32x3", "wmma", "skinny")
TENSOR_CORE = ("tf32", "tf32x3")   # mma.sync m16n8k8 families; tf32x3 is fp32-accurate (3xTF32)
HALF = ("wmma",)                   # fp16/bf16 inputs on the tensor cores (nvcuda::wmma 16x16x16, seed 004)
# What each family computes: the accuracy class the correctness gate holds it to (gemmgen.measure.gate.gate_bound).
# The half family's class is its dtype ("f16" or "bf16"): see KernelConfig.precision.
PRECISION = {"naive": "fp32", "simt": "fp32", "tf32": "tf32", "tf32x3": "fp32", "skinny": "fp32"}
DTYPES = ("f32", "f16", "bf16")   # element type of A and B; C is always fp32
HALF_DTYPES = ("f16", "bf16")
MMA_KINDS = ("sync", "wgmma")     # tensor-core instruction: mma.sync (sm_80+) or wgmma.mma_async (sm_90a)
LAYOUTS = ("NN", "NT", "TN", "TT")
BOUNDS = ("checked", "none")
REDUCTIONS = ("atomic", "workspace")
FRAGMENT_LOADS = ("lds", "shfl")
