"""Benchmark configs against cuBLAS: run, tabulate (TFLOP/s, % of cuBLAS, registers, occupancy), JSON, roofline and bar plots.

The measure function is injected, so the table and JSON logic is tested without a GPU.

>>> from gemmgen.base import Measurement, Shape
>>> from gemmgen.kernel.presets import preset
>>> fake = lambda cfg, shape: Measurement(cfg.name, shape, 2.0, 0.01, 2.5, 1e-7)
>>> rows = run([preset("v5")], [Shape(1024, 1024, 1024)], fake)
>>> round(rows[0].measurement.ratio, 2)
1.25
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from ..base.outcome import Failure, Measurement
from ..base.shape import Shape
from ..kernel.config import KernelConfig

Measure = Callable[[KernelConfig, Shape], Measurement]
Progress = Callable[[int, int, "Row"], None]


@dataclass(frozen=True)
class Row:
    """One kernel on one shape: a measurement or the failure that stopped it."""

    config: KernelConfig
    shape: Shape
    measurement: Optional[Measurement] = None
    failure: Optional[Failure] = None

    @property
    def label(self) -> str:
        return self.config.label or self.config.name

    def to_dict(self) -> dict:
        d = {"id": self.label, "kernel": self.config.name, "shape": self.shape.key, "config": self.config.to_dict()}
        if self.measurement:
            d.update(self.measurement.to_dict())
            d.update({k: self.measurement.extra[k] for k in ACCURACY if k in self.measurement.extra})
        if self.failure:
            d["failure"] = self.failure.to_dict()
        return d


def run(configs: Sequence[KernelConfig], shapes: Iterable[Shape], measure: Measure,
        progress: Optional[Progress] = None) -> list[Row]:
    """Measure every config on every shape (in each shape's layout); failures become rows."""
    jobs = [(c.replace(layout=s.layout), s) for s in shapes for c in configs]
    rows = []
    for i, (cfg, shape) in enumerate(jobs, 1):
        try:
            row = Row(cfg, shape, measurement=measure(cfg, shape))
        except Failure as exc:
            row = Row(cfg, shape, failure=exc)
        rows.append(row)
        if progress:
            progress(i, len(jobs), row)
    return rows


COLUMNS = ("ID", "kernel", "TFLOP/s", "time (ms)", "% of cuBLAS", "cuBLAS mode", "err vs fp64",
           "cuBLAS err", "regs", "smem (B)", "occupancy")
ACCURACY = ("err_fp64", "cublas_err_fp64", "bound", "baseline")   # Measurement.extra keys of the gate


def baseline(m: Measurement) -> str:
    """The cuBLAS mode a measurement was timed and gated against (fp32 where it was not recorded)."""
    return m.extra.get("baseline", "fp32")


def table(rows: Sequence[Row]) -> str:
    """A table per shape (ID, kernel, TFLOP/s, time, % of cuBLAS, registers, shared memory, occupancy),
    with one cuBLAS baseline row per mode (median of its interleaved runs), and each kernel's error against float64 beside cuBLAS's in the same mode."""
    out = []
    for shape in dict.fromkeys(r.shape for r in rows):
        sub = [r for r in rows if r.shape == shape]
        body = [_cells(r) for r in sub]
        done = [r.measurement for r in sub if r.measurement]
        for mode in dict.fromkeys(baseline(m) for m in done):
            ref = sorted(m.cublas_ms for m in done if baseline(m) == mode)
            ms = ref[len(ref) // 2]
            body.append(["-", f"cuBLAS {mode} (baseline)", f"{shape.flops / ms / 1e9:.2f}", f"{ms:.3f}", "100.0",
                         mode, "", _err(next(m for m in done if baseline(m) == mode), "cublas_err_fp64"), "", "", ""])
        out.append(f"{shape.M}x{shape.N}x{shape.K} {shape.layout}\n{_format(COLUMNS, body)}")
    return "\n\n".join(out)


def _cells(r: Row) -> list[str]:
    m = r.measurement
    if m is None:
        return [r.label, r.config.name, f"FAILED {r.failure.kind}: {r.failure.reason}"[:60], *[""] * 8]
    return [r.label, _short(r.config), f"{m.tflops:.2f}", f"{m.ms:.3f}", f"{100 * m.ratio:.1f}", baseline(m),
            _err(m, "err_fp64", m.rel_error), _err(m, "cublas_err_fp64"), str(m.registers), str(m.smem_bytes),
            f"{m.occupancy:.2f}"]


def _err(m: Measurement, key: str, default: Optional[float] = None) -> str:
    value = m.extra.get(key, default)
    return "" if value is None else f"{value:.1e}"


def _short(c: KernelConfig) -> str:
    if c.family == "naive":
        return "naive " + ("coalesced" if c.coalesced else "uncoalesced")
    tile = f"{c.BM}x{c.BN}x{c.BK}"
    if c.family == "skinny":
        return f"skinny {tile} t{c.TM} w{c.warps_k} s{c.stages}"
    if c.family != "simt":   # tensor cores: warp tiles of mma tiles, no thread tiles
        return " ".join([c.family, tile, f"w{c.WM}x{c.WN}", f"s{c.stages}"] + ([c.dtype] if c.dtype != "f32" else []))
    return f"{tile} t{c.WMITER * c.TM}x{c.WNITER * c.TN} s{c.stages}"


def _format(header: Sequence[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(row) for row in body)])


def to_json(rows: Sequence[Row], device: Optional[dict] = None) -> dict:
    """Everything the table shows, and more, for scripts."""
    return {"device": device or {}, "rows": [r.to_dict() for r in rows]}


def plot(rows: Sequence[Row], spec, path: str) -> None:
    """Roofline (arithmetic intensity vs TFLOP/s with the FP32 and DRAM ceilings) and % of cuBLAS bars."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("--plot needs matplotlib: pip install 'gemmgen[plot]'") from None
    done = [r for r in rows if r.measurement]
    fig, (roof, bars) = plt.subplots(1, 2, figsize=(13, 5))
    _roofline(roof, done, spec)
    labels = [f"{r.label}\n{r.shape.M}x{r.shape.N}x{r.shape.K}" if len({x.shape for x in done}) > 1 else r.label
              for r in done]
    bars.bar(range(len(done)), [100 * r.measurement.ratio for r in done], color="tab:blue")
    bars.axhline(100, color="k", lw=1, ls="--", label="cuBLAS")
    bars.set_xticks(range(len(done)), labels, rotation=60, fontsize=7)
    bars.set_ylabel("% of cuBLAS (same run)")
    bars.legend()
    fig.suptitle(f"gemmgen on {spec.name}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _roofline(ax, rows: Sequence[Row], spec) -> None:
    import numpy as np

    peak, bw = spec.fp32_tflops, spec.mem_gbs / 1000.0   # TFLOP/s and TB/s
    ai = np.logspace(-2, 3, 200)
    ax.loglog(ai, np.minimum(peak, bw * ai), "k-", label=f"ceilings: FP32 {peak:.1f} TFLOP/s, DRAM {spec.mem_gbs:.0f} GB/s")
    for r in rows:
        x = 0.25 if r.config.family == "naive" else r.config.arithmetic_intensity()
        ax.loglog([x], [r.measurement.tflops], "o")
        ax.annotate(r.label, (x, r.measurement.tflops), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("arithmetic intensity (FLOP/byte, seed 001's block-tile formula)")
    ax.set_ylabel("TFLOP/s")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
