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
# The mainloop (CUTLASS's KernelSchedule): how a block's K loop copies tiles and multiplies them.
#   simt: FMA on the CUDA cores (naive, simt, skinny); mma_sync: mma.sync / wmma tensor-core tiles (sm_80+ for
#   cp.async stages); wgmma: a warpgroup's wgmma.mma_async on a cp.async ring (sm_90a); ws_cpasync, ws_tma: warp-
#   specialized, a producer warpgroup fills mbarrier stages by cp.async or by TMA for wgmma consumer warpgroups.
MAINLOOPS = ("simt", "mma_sync", "wgmma", "ws_cpasync", "ws_tma")
WGMMA_MAINLOOPS = ("wgmma", "ws_cpasync", "ws_tma")      # those that multiply with wgmma (sm_90a)
WARP_SPECIALIZED = ("ws_cpasync", "ws_tma")             # those with a producer warpgroup
# Each family's own mainloop: what KernelConfig's mainloop "" (its default) takes. The rules say which others a
# family may take (kernel.rules.wgmma, .tma).
FAMILY_MAINLOOP = {"naive": "simt", "simt": "simt", "skinny": "simt", "tf32": "mma_sync", "tf32x3": "mma_sync",
                   "wmma": "mma_sync"}
# The tile scheduler (CUTLASS's TileScheduler): plain, a block per tile of C; persistent, KernelConfig.persistent_blocks
# blocks walking the tiles; pingpong, persistent with two consumer warpgroups taking a block's tiles in turn.
SCHEDULERS = ("plain", "persistent", "pingpong")
LAYOUTS = ("NN", "NT", "TN", "TT")
BOUNDS = ("checked", "none")
REDUCTIONS = ("atomic", "workspace")
FRAGMENT_LOADS = ("lds", "shfl")

# Where each family runs: the oldest compute capability with the instructions its kernels use, as the
# rules that say so check it (explain() gives their reason in words). Every target gemmgen builds for is
# sm_75 or newer, so "(7, 5)" means everywhere.
#   naive, simt: plain loads and FMAs; simt with async_copy uses cp.async (sm_80+, ASYNC_ARCH)
#   skinny: its per-warp ring is filled with cp.async (SKINNY_ARCH)
#   tf32, tf32x3: mma.sync m16n8k8 with .tf32 operands and cp.async (TENSOR_CORE_ARCH)
#   wmma: fp16 WMMA wherever there are tensor cores (sm_70+), bf16 and cp.async stages from sm_80 (WMMA_ARCH)
#   mainloop wgmma and the warp-specialized ones: wgmma.mma_async, on sm_90a only (WGMMA_ARCH, TMA_KIND): not on
#   Blackwell, whose datacenter tensor cores take tcgen05, for which gemmgen has no family yet, so
#   sm_100, sm_103 and sm_110 run the mma.sync kernels (gemmgen.base.devices.arch_note says so).
RUNS_FROM = {"naive": (7, 5), "simt": (7, 5), "skinny": (8, 0), "tf32": (8, 0), "tf32x3": (8, 0), "wmma": (7, 0)}
HOPPER = (9, 0)   # the one compute capability of wgmma and the TMA kernels (compiled as sm_90a)
