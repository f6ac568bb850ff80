"""``gemmgen demo``: the main job on a fresh machine, in one command.

On a GPU it times :func:`gemmgen.matmul` against cuBLAS SGEMM (strict fp32) on a few shapes, one of
them ragged, in this process: both interleaved run by run with the L2 flushed before each
(:func:`gemmgen.measure.timing.bench_interleaved`), and both checked against a float64 product. Without
a GPU it does what this machine can: it emits a kernel with its cuBLAS-checking ``main()`` into a folder
and builds it with the nvcc line its header prints, and says why the GPU part was skipped.

>>> print(table([{"shape": "64x64x64", "layout": "NN", "cublas_tflops": 1.0, "gemmgen_tflops": 1.5,
...               "speedup": 1.5, "err_gemmgen": 1e-7, "err_cublas": 2e-7, "bound": 3e-7, "ok": True}]))
shape     layout  cuBLAS TFLOP/s  gemmgen TFLOP/s  speedup  err gemmgen  err cuBLAS  within bound
64x64x64  NN      1.00            1.50             1.50x    1.0e-07      2.0e-07     yes
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable

from ..base.devices import NoGpu, for_arch, require_gpu
from ..base.shape import Shape
from ..codegen.build_line import build_line, program
from ..codegen.render import emit
from ..kernel.presets import preset
from .command import Command
from .options import DEFAULT_ARCH

# Square, another layout, a short-and-wide product, and a ragged one (no size a multiple of a tile).
SHAPES = ("4096x4096x4096", "2048x2048x2048/TN", "128x4096x4096", "3001x1999x777")
PRESET = "v8"   # the kernel built without a GPU: the classic 2-D block-tiled SGEMM
COLUMNS = ("shape", "layout", "cuBLAS TFLOP/s", "gemmgen TFLOP/s", "speedup", "err gemmgen", "err cuBLAS",
           "within bound")


# ---- on a GPU: matmul against cuBLAS ------------------------------------------------------------------
def measure(shape: Shape, rep_ms: float = 100.0, seed: int = 0) -> dict:
    """gemmgen.matmul and cuBLAS SGEMM on the same random operands: TFLOP/s (median of interleaved runs,
    L2 flushed before each), speedup, and each one's error against float64: relative Frobenius (what
    the table shows, held to the bound gemmgen's gate sets for cuBLAS's error,
    :func:`gemmgen.measure.gate.allowed`) and the largest element's (:func:`max_error`)."""
    import cupy

    import gemmgen
    from ..base.devices import detect
    from ..measure.gate import allowed, rel_error
    from ..measure.problem import Problem, cublas_call
    from ..measure.timing import L2Flusher, bench_interleaved

    p = Problem(shape, seed=seed)
    c_gg = cupy.full((shape.M, shape.N), cupy.nan, dtype=cupy.float32)   # NaN: an unwritten element shows
    c_cb = cupy.full((shape.M, shape.N), cupy.nan, dtype=cupy.float32)
    run_gg = lambda: gemmgen.matmul(p.A, p.B, out=c_gg)
    run_cb = cublas_call("fp32", shape, p.a_store, p.b_store, c_cb)
    run_gg()
    run_cb()
    ref = p.reference64(1.0, 0.0, None)
    err_gg, err_cb = rel_error(c_gg, ref), rel_error(c_cb, ref)
    max_gg, max_cb = max_error(c_gg, ref), max_error(c_cb, ref)
    del ref
    t_gg, t_cb = bench_interleaved([run_gg, run_cb], L2Flusher(detect(cupy.cuda.Device().id).l2_bytes), rep_ms=rep_ms)
    bound = allowed("fp32", err_cb)
    return {"shape": f"{shape.M}x{shape.N}x{shape.K}", "layout": shape.layout,
            "gemmgen_tflops": shape.flops / t_gg.median / 1e9, "cublas_tflops": shape.flops / t_cb.median / 1e9,
            "speedup": t_cb.median / t_gg.median, "gemmgen_ms": t_gg.median, "cublas_ms": t_cb.median,
            "err_gemmgen": err_gg, "err_cublas": err_cb, "bound": bound, "ok": err_gg <= bound,
            "max_err_gemmgen": max_gg, "max_err_cublas": max_cb}


def max_error(out, ref) -> float:
    """The largest element's error, relative to the largest element of ``ref``: max|out - ref| / max|ref|
    (NaN where ``out`` holds a NaN)."""
    import cupy

    return float(cupy.max(cupy.abs(out.astype(cupy.float64) - ref)) / cupy.max(cupy.abs(ref)))


def table(rows: list[dict]) -> str:
    """The rows as aligned columns (left-aligned, two spaces apart)."""
    body = [(r["shape"], r["layout"], f"{r['cublas_tflops']:.2f}", f"{r['gemmgen_tflops']:.2f}",
             f"{r['speedup']:.2f}x", f"{r['err_gemmgen']:.1e}", f"{r['err_cublas']:.1e}",
             "yes" if r["ok"] else "NO") for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(COLUMNS)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(COLUMNS), *map(line, body)])


def on_gpu(shapes: list[Shape], rep_ms: float, progress: Callable[[str], None]) -> dict:
    """The table's rows, the GPU, and what matmul warned about (a GPU without tuned kernels)."""
    from ..base.devices import detect

    spec = detect(0)
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for shape in shapes:
            progress(f"timing {shape.key} (the first call of a kind compiles its kernel) ...")
            rows.append(measure(shape, rep_ms))
    ours = [w for w in caught if str(w.message).startswith("gemmgen")]
    for w in caught:   # others' warnings are shown as they would have been
        if w not in ours:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    notes = sorted({str(w.message) for w in ours})
    return {"gpu": {"name": spec.name, "arch": spec.arch, "sm_count": spec.sm_count}, "rows": rows, "notes": notes}


# ---- without a GPU: emit a kernel and build it ----------------------------------------------------------
def offline(folder: Path, arch: str = DEFAULT_ARCH, name: str = PRESET,
            find_nvcc: Callable[[], str] | None = None) -> dict:
    """Emit preset ``name`` for ``arch`` into ``folder`` and build it with its header's nvcc line, run
    there: the --harness program where cuBLAS's headers are found, else the kernel's cubin. ``find_nvcc``
    locates nvcc (default :func:`gemmgen.build.nvcc.nvcc_path`); without one the source is written and
    the build is skipped, with the reason."""
    from ..build.nvcc import ToolkitMissing, cublas_flags, nvcc_path

    config, device = preset(name), for_arch(arch)
    target = config.target_arch(device.arch)
    nvcc, missing, link = None, "", []
    try:
        nvcc = (find_nvcc or nvcc_path)()
        link = cublas_flags()
    except ToolkitMissing as err:   # no nvcc: nothing is built; no cuBLAS to link: the kernel alone is
        missing = "" if nvcc else str(err)
    harness = bool(link)
    file = f"{name}.cu"
    (folder / file).write_text(emit(config, device, command=f"gemmgen demo (preset {name}, {arch})",
                                    harness=harness, file=file))
    line = build_line(target, harness, file)
    out = {"source": str(folder / file), "folder": str(folder), "arch": target, "harness": harness,
           "build_line": line, "built": False}
    if not nvcc:
        return {**out, "skipped": missing}
    words = shlex.split(line)
    words[0] = nvcc
    if harness:
        at = words.index("-lcublas")
        words[at:at + 1] = link
    done = subprocess.run(words, cwd=folder, capture_output=True, text=True, timeout=900)
    built = folder / (program(file) if harness else f"{program(file)}.cubin")
    out.update(command=shlex.join(words), output=str(built), built=done.returncode == 0 and built.is_file())
    if not out["built"]:
        from ..build.logs import first_error

        out["error"] = first_error(done.stdout + done.stderr)
    return out


def offline_text(gpu_skipped: str, r: dict) -> str:
    """What the offline demo did, in lines a user can follow."""
    lines = [f"GPU part skipped: {gpu_skipped}",
             f"wrote {r['source']}: preset {PRESET} for {r['arch']}"
             + (", with a main() that checks it against cuBLAS and times both" if r["harness"] else "")]
    if "skipped" in r:
        lines += [f"build skipped: {r['skipped']}", f"its header's build line, to run in {r['folder']}: {r['build_line']}"]
    else:
        lines += [f"build (in {r['folder']}): {r['command']}",
                  f"built {r['output']}" if r["built"] else f"build FAILED: {r['error']}"]
        if r["built"] and r["harness"]:
            lines.append(f"on a machine with a GPU: {Path(r['output']).name} checks the kernel against cuBLAS "
                         f"and times both (./{Path(r['output']).name} 4096 4096 4096)")
    return "\n".join(lines)


# ---- the command -------------------------------------------------------------------------------------------
def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--rep-ms", type=float, default=100.0, metavar="MS",
                        help="timing budget per shape on a GPU, in milliseconds (default 100)")
    parser.add_argument("--out", metavar="DIR",
                        help="without a GPU: the folder for the emitted kernel and its build (default: a new "
                             "temporary folder, kept)")
    parser.add_argument("--arch", default=DEFAULT_ARCH, metavar="TARGET",
                        help=f"without a GPU: the target to build for (default {DEFAULT_ARCH})")


def run(args: argparse.Namespace) -> int:
    from . import checks

    checks.positive(rep_ms=args.rep_ms)
    for_arch(args.arch)   # a bad target is refused whether or not a GPU is here
    try:
        require_gpu(0)
    except NoGpu as err:
        return _offline(args, str(err))
    progress = lambda text: print(text, file=sys.stderr, flush=True)
    found = on_gpu([Shape.parse(s) for s in SHAPES], args.rep_ms, progress)
    if args.json:
        print(json.dumps(found, indent=1))
    else:
        print(f"gemmgen.matmul against cuBLAS SGEMM (strict fp32) on {found['gpu']['name']} ({found['gpu']['arch']}); "
              "errors: relative Frobenius against float64")
        print(table(found["rows"]))
        for note in found["notes"]:
            print(f"note: {note}")
    return 0 if all(r["ok"] for r in found["rows"]) else 1


def _offline(args: argparse.Namespace, why: str) -> int:
    folder = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="gemmgen-demo-"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"--out {args.out!r}: cannot make the folder ({err.strerror or err}); "
                         "give a writable folder (created if missing)") from None
    r = offline(folder, args.arch)
    if args.json:
        print(json.dumps({"gpu": None, "gpu_skipped": why, **r}, indent=1))
    else:
        print(offline_text(why, r))
    return 0 if r["built"] or "skipped" in r else 1


COMMAND = Command(
    name="demo",
    help="the main job in one command: matmul against cuBLAS on this GPU, or without one emit and build a kernel",
    description="On a GPU: time gemmgen.matmul against cuBLAS SGEMM (strict fp32) on four shapes, one ragged, "
                "in this process, and check both against float64. Without a GPU: emit preset v8 with its "
                "cuBLAS-checking main() into a folder and build it with the nvcc line its header prints. "
                "Exits 1 when a result is outside the accuracy bound or the build fails.",
    configure=configure,
    run=run,
    epilog="examples:\n  gemmgen demo\n  gemmgen demo --json\n  gemmgen demo --out demo/ --arch sm_86   "
           "(without a GPU: where to build, and for which target)",
)
