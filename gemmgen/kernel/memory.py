"""The shared memory of a kernel config: the tiles of A and B one pipeline stage holds, their layouts,
and the bytes a block asks for. :class:`SharedMemory` is a base of
:class:`~gemmgen.kernel.config.KernelConfig`, whose fields and layout properties it reads.

>>> from gemmgen.kernel.presets import preset
>>> preset("v8").a_tile_shape, preset("v8").smem_bytes
((8, 132), 16640)
"""
from __future__ import annotations

from .families import HALF

HOPPER_SMEM_PER_BLOCK = 232448   # shared memory an sm_90 block may opt in to (H100 and H200 alike)
HOPPER_SMEM_PER_SM = 233472      # ... and an sm_90 SM holds
EPILOGUE_LD = 20                  # floats per row of the wmma family's 16x16 epilogue staging tile
HOPPER_CARVEOUTS_KIB = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)   # shared memory an sm_90 SM can split off L1


def hopper_carveout(per_sm: int) -> int | None:
    """The least shared-memory carveout (bytes) of an sm_90 SM that holds ``per_sm`` bytes (its blocks'
    shared memory, 1 KB reserved each); L1 gets the rest of 256 KB. None past the largest.

    >>> hopper_carveout(193 * 1024), hopper_carveout(205 * 1024) // 1024, hopper_carveout(229 * 1024)
    (200704, 228, None)
    """
    return next((k * 1024 for k in HOPPER_CARVEOUTS_KIB if k * 1024 >= per_sm), None)


class SharedMemory:
    """Shared-memory geometry, derived from the config's fields (a mixin: no state of its own)."""

    __slots__ = ()

    @property
    def skinny_k_contiguous(self) -> bool:
        """The skinny kernel's big operand (A; B when swapped, see ``swap``) is stored with k contiguous."""
        return self.b_transposed if self.swap else not self.a_transposed

    @property
    def a_smem_kmajor(self) -> bool:
        """A is stored [BK][BM] in shared memory. Tensor-core families keep the global layout, so
        every cp.async moves 16 contiguous bytes (T: A is column-major, m contiguous)."""
        return self.a_transposed if self.global_layout_smem else self.a_kmajor

    @property
    def b_smem_kmajor(self) -> bool:
        """B is stored [BK][BN] in shared memory (simt: always; tensor cores: when B is row-major)."""
        return not self.b_transposed if self.global_layout_smem else True

    @property
    def a_tile_shape(self) -> tuple[int, int]:
        """Shared-memory array of A for one stage: (rows, row length in elements incl. padding)."""
        return (self.BK, self.BM + self.pad_a) if self.a_smem_kmajor else (self.BM, self.BK + self.pad_a)

    @property
    def b_tile_shape(self) -> tuple[int, int]:
        """Shared-memory array of B for one stage: [BK][BN + pad_b], or [BN][BK + pad_b] (n-major)."""
        return (self.BK, self.BN + self.pad_b) if self.b_smem_kmajor else (self.BN, self.BK + self.pad_b)

    @property
    def smem_per_stage(self) -> int:
        """Bytes of shared memory one pipeline stage holds (A tile plus B tile; skinny: one warp's)."""
        if self.family == "naive":
            return 0
        if self.family == "skinny":   # the big operand [BM][BK + 4] (k contiguous) or [BK][BM] (none: prefetch), B [BK][BN]
            big = 0 if self.prefetch else self.BM * (self.BK + 4 * self.skinny_k_contiguous)
            return 4 * (big + self.BK * self.BN)
        (ra, ca), (rb, cb) = self.a_tile_shape, self.b_tile_shape
        return self.elem_bytes * (ra * ca + rb * cb)

    @property
    def a_mmajor_stage(self) -> bool:
        """The warp-specialized cp.async 3xTF32 kernel stages an m-contiguous A as it lies, [BK][BM + 8]
        (16-byte copies of its rows of k; the consumers read their fragments from it into registers),
        not transposed into wgmma's K-major layout by 4-byte copies: where it can (``a_mmajor_choice``)
        and ``a_kmajor`` (A [BK][BM] in shared memory, the default) asks for it. Neither wins everywhere:
        the 128x192 one-block kernels spill more staging A as it lies."""
        return self.a_kmajor and self.a_mmajor_choice

    @property
    def a_mmajor_choice(self) -> bool:
        """The warp-specialized cp.async 3xTF32 kernel can stage A either way (``a_mmajor_stage``):
        A is m-contiguous where the kernel runs it, the producers' mapping fits BM and BK, and the
        stages have room for A's padding."""
        if not (self.mainloop == "ws_cpasync" and self.family == "tf32x3" and self.run_layout[0] == "T"):
            return False
        # ... its 128 producers move chunk t % (BM / 4) of rows t / (BM / 4) + (512 / BM) i: rows a multiple
        # of 4 apart (one shift a thread), BK a multiple of that step
        if 128 % self.BM or (512 // self.BM) % 4 or self.BK % (512 // self.BM):
            return False
        # ... where the stages have room for the padding (else transposed as before)
        return self._fits(self._mmajor_pad)

    @property
    def a_kshift_stage(self) -> bool:
        """The warp-specialized cp.async 3xTF32 kernel stages a k-contiguous A unswizzled, [BM][BK + 4]: each
        row as the 16-byte chunks of global memory around it, so rows that are not 16-byte aligned (lda % 4
        != 0) are copied 16 bytes at a time too (row m lands (m * lda) % 4 floats late, and the consumers,
        which read their fragments into registers, read it there), not 4 bytes a copy into wgmma's swizzled
        layout. Where BK is 32 (a quarter-warp moves a row's 8 chunks), B is k contiguous too (NT as run),
        and the 9th chunk of each row keeps the SM's shared-memory carveout (:func:`hopper_carveout`); else
        swizzled as before. On the H100 the NT plans with unaligned rows of A gained 3-11%, but where the
        padding moved the carveout L1 lost the room the 4-byte copies go through (B's unaligned or
        n-contiguous rows), and those plans ran 6-16% slower (NN stays swizzled: it gained nowhere)."""
        if not (self.mainloop == "ws_cpasync" and self.family == "tf32x3" and self.run_layout == "NT"):
            return False
        if self.BK != 32 or self.BM % 64:
            return False
        # min_blocks blocks an SM: registers hold these kernels there (384 threads of 168, or 80 at two)
        per_sm = [self.min_blocks * (self._block_bytes(pad) + 1024) for pad in (0, self._kshift_pad)]
        return self._fits(self._kshift_pad) and hopper_carveout(per_sm[1]) == hopper_carveout(per_sm[0])

    @property
    def _mmajor_pad(self) -> int:
        """Bytes a stage of A staged m-major (a_mmajor_stage) adds: its BK rows padded to BM + 8."""
        return 8 * self.BK * 4

    @property
    def _kshift_pad(self) -> int:
        """Bytes a stage of A staged unswizzled (a_kshift_stage) adds: its BM rows padded to BK + 4."""
        return 4 * self.BM * 4

    def _block_bytes(self, a_pad: int) -> int:
        """A TMA kernel's shared memory a block with ``a_pad`` more bytes a stage: the tiles, then the
        stages' mbarriers (full, empty, ready: 24 bytes a stage)."""
        return self._tma_bytes(a_pad) + self.stages * 24

    def _fits(self, a_pad: int) -> bool:
        """Whether the stages, ``a_pad`` bytes more each, have room: Hopper's 227 KB a block, and its
        min_blocks blocks on an SM (1 KB each reserved)."""
        need = self._block_bytes(a_pad)
        return need <= HOPPER_SMEM_PER_BLOCK and self.min_blocks * (need + 1024) <= HOPPER_SMEM_PER_SM

    @property
    def tma_tile_bytes(self) -> int:
        """A TMA kernel's tiles in shared memory: the stages (3xTF32: and B's small parts), then C's staging
        tile where persistent (else C is staged in the drained stages); its mbarriers follow."""
        if self.a_kshift_stage:
            return self._tma_bytes(self._kshift_pad)
        return self._tma_bytes(self._mmajor_pad if self.a_mmajor_stage else 0)

    def _tma_bytes(self, a_pad: int) -> int:
        """tma_tile_bytes with ``a_pad`` more bytes a stage."""
        split = self.family == "tf32x3"
        c_tile = self.c_stage_floats * 4 if self.persistent_blocks else 0
        return self.stages * (self.smem_per_stage + a_pad + split * self.BN * self.BK * 4) + c_tile

    @property
    def c_ld(self) -> int:
        """Row stride of a TMA kernel's staged C: 8 banks mod 32 (8-byte writes hit 32 banks), >= BN + 4.
        Swapped, each consumer stages its tile transposed (BN rows of WM): WM + 4, 4 banks mod 32 (the
        4-byte writes of a warp's 8 rows x 4 column pairs hit 32 banks)."""
        if self.swap:
            return self.WM + 4
        pad = (8 - self.BN % 32) % 32
        return self.BN + (pad if pad >= 4 else pad + 32)

    @property
    def c_stage_floats(self) -> int:
        """Floats of a TMA kernel's staged C: each consumer's WM rows of C_LD (BM in all, two tiles' with
        ``pingpong``), or swapped, each consumer's BN x C_LD."""
        return self.consumers * (self.BN if self.swap else self.WM) * self.c_ld

    @property
    def c_staged(self) -> bool:
        """Whether a TMA kernel's epilogue stages C in shared memory: persistent, in a region of its own;
        else where the consumers' tiles fit in the drained stages (else fragments go straight to C)."""
        return bool(self.persistent_blocks) or self.c_stage_floats * 4 <= self.tma_tile_bytes

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per block, all stages. The half family's epilogue reuses it to stage
        one 16x16 fp32 tile per warp, so it is at least that."""
        pipeline = self.smem_per_stage * self.stages
        if self.family == "skinny":   # each warp's ring, then the warps' BM x BN partials (rows BN + 1)
            return self.warps_k * max(pipeline, 4 * self.BM * (self.BN + 1))
        if self.warp_specialized:   # the tiles, then 2 or 3 mbarriers per stage (3 with the 3xTF32 split's), pingpong's 2 more
            return self.tma_tile_bytes + self.stages * (24 if self.family == "tf32x3" else 16) + 16 * (self.scheduler == "pingpong")
        if self.uses_wgmma:   # tiles of A beside the ring: its small parts (3xTF32), its transpose (layout T)
            return pipeline + 4 * self.BM * self.BK * ((self.family == "tf32x3") + self.a_transposed) * (1 + self.prefetch)
        if self.family in HALF:
            return max(pipeline, (self.threads // 32) * 16 * EPILOGUE_LD * 4)
        return pipeline
