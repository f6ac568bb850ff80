"""GPU limits: read off the present GPU, or taken from :mod:`.gpus`' table of known GPUs for offline
targets; and what this machine lacks for a command (:class:`NoGpu`, :class:`MissingDependency`), said in
one line.

Every architecture CUDA 13 builds for is a target (:data:`ARCHS`, sm_75 to sm_121); a present GPU that
is not in the table is described by the driver's own properties (:func:`spec_from_properties`).

>>> spec = known("h100")
>>> spec.arch, spec.sm_count
('sm_90', 132)
>>> resolve_alias("rtx3090"), resolve_alias("NVIDIA GeForce RTX 5090")
('rtx3090', 'rtx5090')
>>> for_arch("sm_120").key, for_arch("sm_75").key
('rtx5090', 't4')
"""
from __future__ import annotations

import re
import sys
from typing import Callable, Mapping, Optional

from .gpus import (ALIASES, ARCH_LIMITS, ARCHS, FMA_LANES, KNOWN, MMA_TF32_FLOP_PER_CLK_SM,  # noqa: F401
                   REPRESENTATIVE, WGMMA_TF32_FLOP_PER_CLK_SM, ArchLimits, DeviceSpec, arch_of)
from .version import __version__

DEFAULT_ARCH = "sm_90"   # the target of emit, explain and presets where no GPU is present and none is named


class UnknownDevice(ValueError):
    """A GPU or architecture name that gemmgen's table does not know."""


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def resolve_alias(name: str) -> str:
    """Map a user's GPU name ("rtx3090", "H100", "NVIDIA H100 80GB HBM3") to a table key."""
    wanted = _norm(name)
    for key, names in ALIASES.items():
        if wanted == _norm(key) or any(wanted == _norm(n) for n in names):
            return key
    raise UnknownDevice(f"unknown GPU {name!r}; known: {', '.join(KNOWN)}")


def known(name: str) -> DeviceSpec:
    """The table entry for a GPU name or alias."""
    return KNOWN[resolve_alias(name)]


def for_arch(arch: str) -> DeviceSpec:
    """A representative device for an architecture (sm_75 ... sm_121, :data:`REPRESENTATIVE`) or GPU name.

    >>> for_arch("sm_100").name, for_arch("GB10").arch
    ('NVIDIA B200', 'sm_121')
    """
    if arch in ARCHS:
        return KNOWN[REPRESENTATIVE[arch]]
    try:
        return known(arch)
    except UnknownDevice:
        raise UnknownDevice(f"unknown target {arch!r}; valid: {', '.join(ARCHS)} or a GPU name "
                            f"({', '.join(KNOWN)})") from None


# ---- the present GPU ------------------------------------------------------------------------------
class NoGpu(RuntimeError):
    """CuPy, the CUDA driver or a GPU is missing: one line that says which, and what to install."""


class MissingDependency(ImportError):
    """An optional package a command needs is not installed; the message says how to install it."""


INSTALL_CUPY = "pip install 'gemmgen[cuda13]' (or 'gemmgen[cuda12]' for a CUDA 12 driver)"


def require_gpu(device_id: int = 0) -> None:
    """Raise :class:`NoGpu` unless CuPy is installed and CUDA device ``device_id`` is usable.

    The driver is looked for before CuPy is imported (importing it writes ~/.cupy), so a machine
    without a GPU is told so, with no side effect.
    """
    import ctypes
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        raise NoGpu(f"CuPy is not installed, and the GPU commands need it: {INSTALL_CUPY}")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        raise NoGpu("no CUDA GPU found: the NVIDIA driver (libcuda.so.1) is not installed on this machine") from None
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as err:
        raise NoGpu(f"no usable CUDA GPU: {err}; for a CUDA 12 driver: pip install 'gemmgen[cuda12]'") from None
    if not 0 <= device_id < count:
        raise NoGpu(f"no CUDA device {device_id}: this machine has {count} (valid: 0..{count - 1})"
                    if count else "no CUDA GPU found: the driver sees no device")


def spec_from_properties(props: Mapping) -> DeviceSpec:
    """A DeviceSpec from the driver's properties of a GPU (``cudaGetDeviceProperties``' names, with
    ``clockRate`` and ``memoryClockRate`` in kHz, which CUDA 13 gives as device attributes only).

    The limits are the driver's (an H100 PCIe has 114 SMs, not the SXM's 132). A GPU in the table
    (:data:`ALIASES`) keeps its key and its datasheet boost clock and bandwidth; any other is usable
    as it is, key "detected", its clock and bandwidth (memory clock x bus width x 2, double data rate)
    read off the driver too.

    >>> t4 = {"name": b"Tesla T4", "major": 7, "minor": 5, "multiProcessorCount": 40,
    ...       "sharedMemPerBlock": 49152, "sharedMemPerBlockOptin": 65536, "sharedMemPerMultiprocessor": 65536,
    ...       "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "maxThreadsPerBlock": 1024,
    ...       "maxThreadsPerMultiProcessor": 1024, "l2CacheSize": 4194304, "clockRate": 1590000,
    ...       "memoryClockRate": 5001000, "memoryBusWidth": 256}
    >>> spec = spec_from_properties(t4)
    >>> spec.key, spec.arch, spec.clock_mhz, spec.mem_gbs
    ('t4', 'sm_75', 1590, 320)
    >>> spec = spec_from_properties({**t4, "name": "NVIDIA T4G"})   # not in the table: the driver's numbers
    >>> spec.key, spec.mem_gbs, spec.smem_per_block_optin
    ('detected', 320.064, 65536)
    """
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    try:
        table: Optional[DeviceSpec] = KNOWN[resolve_alias(name)]
    except UnknownDevice:
        table = None
    bandwidth = props.get("memoryClockRate", 0) * 1e3 * props.get("memoryBusWidth", 0) / 8 * 2 / 1e9   # GB/s
    return DeviceSpec(
        key=table.key if table else "detected", name=name, cc=(props["major"], props["minor"]),
        sm_count=props["multiProcessorCount"],
        smem_per_block_optin=props.get("sharedMemPerBlockOptin") or props["sharedMemPerBlock"],
        smem_per_sm=props["sharedMemPerMultiprocessor"],
        regs_per_block=props["regsPerBlock"], regs_per_sm=props.get("regsPerMultiprocessor", 65536),
        max_threads_per_block=props["maxThreadsPerBlock"],
        max_threads_per_sm=props["maxThreadsPerMultiProcessor"],
        l2_bytes=props["l2CacheSize"],
        clock_mhz=table.clock_mhz if table else props.get("clockRate", 0) // 1000,
        mem_gbs=table.mem_gbs if table else round(bandwidth, 3),
        tf32_flop_per_clk_sm=table.tf32_flop_per_clk_sm if table else 0,
    )


def detect(device_id: int = 0) -> DeviceSpec:
    """Limits of a present GPU, read through CuPy (raises :class:`NoGpu` without one); see
    :func:`spec_from_properties`."""
    require_gpu(device_id)
    import cupy

    rt = cupy.cuda.runtime
    props = dict(rt.getDeviceProperties(device_id))
    # CUDA 13 dropped the clocks from cudaDeviceProp; the device attributes still have them (kHz).
    for key, attr in (("clockRate", 13), ("memoryClockRate", 36)):   # cudaDevAttrClockRate, ...MemoryClockRate
        if not props.get(key):
            props[key] = rt.deviceGetAttribute(attr, device_id)
    return spec_from_properties(props)


def default_notice(spec: DeviceSpec) -> str:
    """The line that says a command targets :data:`DEFAULT_ARCH`'s GPU because no GPU is present.

    >>> default_notice(for_arch(DEFAULT_ARCH))
    'no GPU found: targeting sm_90 (h100); pass --arch to choose'
    """
    return f"no GPU found: targeting {spec.arch} ({spec.key}); pass --arch to choose"


TCGEN05_ARCHS = ("sm_100", "sm_103", "sm_110")   # tensor cores driven by tcgen05: gemmgen has no such family yet


def arch_note(spec: DeviceSpec) -> Optional[str]:
    """What gemmgen runs on a GPU whose native tensor-core instructions it has no family for, or None.

    >>> arch_note(known("b200"))
    'sm_100 (b200): gemmgen runs its mma.sync kernels (tf32, tf32x3, wmma) and SIMT here; the native tcgen05 tensor-core instructions have no family yet'
    >>> arch_note(known("h100")) is None
    True
    """
    if spec.arch not in TCGEN05_ARCHS:
        return None
    return (f"{spec.arch} ({spec.key}): gemmgen runs its mma.sync kernels (tf32, tf32x3, wmma) and SIMT here; "
            "the native tcgen05 tensor-core instructions have no family yet")


def target(arch: Optional[str], say: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
           find: Callable[[], DeviceSpec] = detect) -> DeviceSpec:
    """The target a command's ``--arch`` names; with none, the GPU present (``find``), else the H100,
    which ``say`` tells in one line (:func:`default_notice`), as it tells :func:`arch_note`'s line for
    a GPU whose native tensor-core instructions gemmgen has no family for.

    >>> def absent():
    ...     raise NoGpu("no CUDA GPU found")
    >>> target(None, say=print, find=absent).key
    no GPU found: targeting sm_90 (h100); pass --arch to choose
    'h100'
    >>> target("sm_120", say=print, find=absent).key
    'rtx5090'
    >>> target("b200", say=print).key
    sm_100 (b200): gemmgen runs its mma.sync kernels (tf32, tf32x3, wmma) and SIMT here; the native tcgen05 tensor-core instructions have no family yet
    'b200'
    """
    if arch is not None:
        spec = for_arch(arch)
    else:
        try:
            spec = find()
        except NoGpu:
            spec = for_arch(DEFAULT_ARCH)
            say(default_notice(spec))
    note = arch_note(spec)
    if note:
        say(note)
    return spec


def fingerprint(device_id: int = 0) -> dict:
    """Identity of the present GPU and software, as stored beside tuned results."""
    import cupy

    spec = detect(device_id)
    return {
        "name": spec.name,
        "cc": f"{spec.cc[0]}.{spec.cc[1]}",
        "sm_count": spec.sm_count,
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "cuda": cupy.cuda.runtime.runtimeGetVersion(),
        "gemmgen": __version__,
    }
