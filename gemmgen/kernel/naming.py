"""The procedural name of a kernel config: its CUDA symbol, compile-cache key and results key.

Like CUTLASS's ``procedural_name()``, every parameter that changes the machine code is spelled in
the name, so two configs with the same name are the same kernel. :attr:`KernelConfig.name` calls
:func:`kernel_name`; this module reads only the config's attributes (it imports nothing).

>>> from gemmgen.kernel.config import KernelConfig
>>> kernel_name(KernelConfig(family="naive", BM=32, BN=32))
'gg_naive_nn_32x32_c'
>>> kernel_name(KernelConfig(BM=128, BN=128, BK=8, WM=64, WN=32, TM=8, TN=4))
'gg_simt_nn_b128x128x8_w64x32i1x1_t8x4_v4_akp0s1_bp0s1_r1_s1r_flds_k1_chk'
"""
from __future__ import annotations


def kernel_name(c) -> str:
    """The name of a config ``c`` (a KernelConfig): family, layout, then each parameter group."""
    lay = c.layout.lower()
    if c.family == "naive":
        return "_".join([f"gg_naive_{lay}_{c.BM}x{c.BN}_{'c' if c.coalesced else 'u'}", *_type_suffix(c)])
    if c.family == "skinny":   # b: rows x max N x K step; t: rows per lane; w: warps on K; s: stages
        return "_".join([f"gg_skinny_{lay}_b{c.BM}x{c.BN}x{c.BK}_t{c.TM}_w{c.warps_k}_v{c.vec}_s{c.stages}",
                         f"k{c.split_k}{c.reduce[0] if c.split_k > 1 else ''}", *(["sw"] if c.swap else []),
                         *([f"bs{c.swz_b}"] if c.swz_b != 1 else []), *(["d"] if c.prefetch else []),
                         *([f"o{c.min_blocks}"] if c.min_blocks != 1 else [])])
    head = [f"gg_{c.family}_{lay}", f"b{c.BM}x{c.BN}x{c.BK}"]
    if c.global_layout_smem:   # tensor cores: warp tiles of mma/wmma tiles, shared memory in global layout
        # at: A transposed by the producer where it could be staged as it lies (a_kmajor = False, TMA kernels)
        middle = [f"w{c.WM}x{c.WN}", f"v{c.vec}", f"a{'' if c.a_kmajor else 't'}p{c.pad_a}s{c.swz_a}"]
    else:
        middle = [f"w{c.WM}x{c.WN}i{c.WMITER}x{c.WNITER}", f"t{c.TM}x{c.TN}", f"v{c.vec}",
                  f"a{'k' if c.a_kmajor else 'm'}p{c.pad_a}s{c.swz_a}"]
    overlap = "p" if c.prefetch and c.global_layout_smem else ""   # wgmma: stage k+1's split overlaps k's wgmma
    pipeline = [f"bp{c.pad_b}s{c.swz_b}", f"r{c.raster}", f"s{c.stages}{'c' if c.async_copy else 'r'}{overlap}"]
    if not c.global_layout_smem:
        pipeline.append(f"f{c.frag}{'p' if c.prefetch else ''}{'i' if c.interleave else ''}")
    tail = [f"k{c.split_k}{c.reduce[0] if c.split_k > 1 else ''}", "chk" if c.bounds == "checked" else "fast"]
    occupancy = [f"o{c.min_blocks}"] if c.min_blocks != 1 else []
    # p<blocks>, pp: the persistent and pingpong schedulers (blocks beside plain, refused by the rules, spelled too)
    occupancy += [f"p{c.persistent_blocks}{'pp' if c.scheduler == 'pingpong' else ''}"] if c.scheduler != "plain" or c.persistent_blocks else []
    return "_".join(head + middle + pipeline + tail + occupancy + _type_suffix(c))


def _type_suffix(c) -> list[str]:
    """Name parts of the element type, the mainloop (wg: wgmma; tma, ws: its warp-specialized producer by
    TMA or by cp.async) and the accumulation, where not the defaults."""
    return (([c.dtype] if c.dtype != "f32" else []) + (["wg"] if c.uses_wgmma else [])
            + (["tma" if c.tensor_maps else "ws"] if c.warp_specialized else [])
            + (["direct"] if not c.partials else [])
            + (["sw"] if c.swap else []))   # skinny spells it before its own tail
