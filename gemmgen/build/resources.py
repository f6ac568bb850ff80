"""What ptxas reports about a compiled kernel: registers, shared memory, stack and spills.

``nvcc -cubin -O3 -Xptxas -v`` prints, per kernel, the registers, the static shared memory, the
stack frame and the bytes spilled to local memory. Spills matter: a spilled accumulator turns each
FMA into a local-memory round trip, so a tile that spills is slower than a smaller one that fits.
:func:`~gemmgen.build.nvcc.compile_cubin` returns a :class:`PtxasReport`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel on one architecture."""

    name: str
    arch: str
    registers: int = 0
    smem_bytes: int = 0        # static shared memory (gemmgen's kernels use dynamic shared memory)
    stack_bytes: int = 0
    spill_stores: int = 0      # bytes
    spill_loads: int = 0       # bytes
    barriers: int = 0

    @property
    def spills(self) -> int:
        """Bytes spilled to local memory, stores plus loads (0 for a kernel that fits in registers)."""
        return self.spill_stores + self.spill_loads

    def resident_blocks(self, spec, threads: int, dynamic_smem: int) -> int:
        """Blocks of this kernel an SM of ``spec`` (a DeviceSpec) holds at once, as CUDA's occupancy
        calculator counts them: registers allocated per warp in units of 256 from four sub-partitions'
        files, shared memory with 1 KB reserved per block in units of 128 bytes, threads, and the
        architecture's most blocks per SM (16 on sm_86 and sm_87, 24 on sm_89, else 32).

        >>> k = KernelResources("k", "sm_90a", registers=128)
        >>> from gemmgen.base.devices import known
        >>> k.resident_blocks(known("h100"), 128, 43008), k.resident_blocks(known("h100"), 256, 0)
        (4, 2)
        """
        warps = -(-threads // 32)
        per_warp = -(-max(self.registers, 1) * 32 // 256) * 256
        by_regs = (spec.regs_per_sm // 4 // per_warp) * 4 // warps
        smem = -(-(self.smem_bytes + dynamic_smem + 1024) // 128) * 128
        most = {(8, 6): 16, (8, 7): 16, (8, 9): 24}.get(tuple(spec.cc), 32)
        return max(0, min(by_regs, spec.smem_per_sm // smem, spec.max_threads_per_sm // (warps * 32), most))


@dataclass(frozen=True)
class PtxasReport:
    """Resources of every kernel in one compiled source, with the compiler's log."""

    arch: str
    kernels: dict[str, KernelResources] = field(default_factory=dict)
    log: str = ""
    seconds: float = 0.0

    def __getitem__(self, name: str) -> KernelResources:
        try:
            return self.kernels[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r} in the ptxas report; kernels: {', '.join(self.kernels)}") from None

    @property
    def spills(self) -> int:
        """Spilled bytes summed over all kernels."""
        return sum(k.spills for k in self.kernels.values())


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse(log: str, arch: str = "") -> dict[str, KernelResources]:
    """Per-kernel resources from the text ``-Xptxas -v`` prints.

    >>> log = '''ptxas info    : Compiling entry function 'k' for 'sm_90'
    ... ptxas info    : Function properties for k
    ...     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
    ... ptxas info    : Used 255 registers, used 1 barriers, 16 bytes smem'''
    >>> parse(log)["k"].spills, parse(log)["k"].registers
    (8, 255)
    """
    found: dict[str, dict] = {}
    entry = props = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            entry, arch = m.group(1), m.group(2)
            found[entry] = {"name": entry, "arch": arch}
        elif m := _PROPS.search(line):
            props = m.group(1)      # a frame line follows; it may belong to a non-inlined helper
        elif (m := _FRAME.search(line)) and props in found:
            found[props].update(stack_bytes=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif (m := _USED.search(line)) and entry in found:
            found[entry]["registers"] = int(m[1])
            found[entry]["smem_bytes"] = int(s[1]) if (s := _SMEM.search(line)) else 0
            found[entry]["barriers"] = int(b[1]) if (b := _BARRIERS.search(line)) else 0
    return {name: KernelResources(**{"arch": arch, **d}) for name, d in found.items()}


