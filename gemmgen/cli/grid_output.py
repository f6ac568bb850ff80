"""What ``gemmgen search --grid`` prints: a line per finished shape (stderr), a closing table (stdout),
or everything as JSON with ``--json``.

>>> p = Progress(total=4, start=0.0)
>>> p.line(1, "tf32x3 4096x4096x4096/NN: 24 trials (plateau), 86.0 TFLOP/s, 1.63x cuBLAS", 30.0, now=60.0)
'[1/4] tf32x3 4096x4096x4096/NN: 24 trials (plateau), 86.0 TFLOP/s, 1.63x cuBLAS, 30 s on GPU 1; elapsed 1:00, ETA 3:00'
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


def clock(seconds: float) -> str:
    """'1:02:03' or '4:05' for seconds.

    >>> clock(3723), clock(245.4)
    ('1:02:03', '4:05')
    """
    s = int(round(seconds))
    h, m = divmod(s, 3600)
    m, s = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


@dataclass
class Progress:
    """Counts finished items of a stage and estimates the time left from the rate so far."""

    total: int
    start: float = field(default_factory=time.time)
    done: int = 0
    end: float | None = None   # time.time() when the budget ends: the line says how much is left

    def line(self, device: int, what: str, seconds: float, now: float | None = None) -> str:
        self.done += 1
        now = time.time() if now is None else now
        eta = (now - self.start) / self.done * (self.total - self.done)
        left = "" if self.end is None else f", budget left {clock(max(0.0, self.end - now))}"
        return (f"[{self.done}/{self.total}] {what}, {seconds:.0f} s on GPU {device}; "
                f"elapsed {clock(now - self.start)}, ETA {clock(eta)}{left}")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def task_summary(r: Mapping[str, Any]) -> str:
    """'tf32x3 1024x1024x1024/NN: 24 trials (plateau), 45.2 TFLOP/s, 1.34x cuBLAS'."""
    return (f"{r['family']} {r['shape']}: {r['measured']} trials ({r['stopped']}), {r['tflops']:.1f} TFLOP/s, "
            f"{r['ratio']:.2f}x cuBLAS")


def batch_summary(shape: str, timed: Sequence[Mapping[str, Any]]) -> str:
    """'timings 4096x4096x4096/NN: 12 kernels, 1 failed, best 86.0 TFLOP/s (1.63x cuBLAS)'."""
    ok = [t for t in timed if "tflops" in t]
    best = max(ok, key=lambda t: t["tflops"], default=None)
    tail = f", best {best['tflops']:.1f} TFLOP/s ({best['ratio']:.2f}x cuBLAS)" if best else ""
    return f"timings {shape}: {len(timed)} kernels, {len(timed) - len(ok)} failed{tail}"


def table(shapes: Sequence[str], families: Sequence[str], tasks: Mapping[tuple[str, str], Mapping],
          entries: Mapping[str, Mapping]) -> str:
    """The closing table: per shape, each family's best (TFLOP/s and ratio to cuBLAS) and the stored
    fp32 entry.

    >>> print(table(["64x64x64/NN"], ["simt"], {("simt", "64x64x64/NN"): {"tflops": 1.5, "ratio": 0.5}},
    ...             {"64x64x64/NN": {"family": "simt", "tflops": 1.5, "ratio": 0.5}}))
    shape                 simt           fp32 entry
    64x64x64/NN             1.5  0.50x   simt 1.5 (0.50x)
    """
    head = f"{'shape':<21} " + "".join(f"{f:<15}" for f in families) + "fp32 entry"
    rows = [head]
    for shape in shapes:
        cells = []
        for family in families:
            r = tasks.get((family, shape))
            cells.append(f"{r['tflops']:5.1f} {r['ratio']:5.2f}x   " if r and "tflops" in r else
                         f"{(r or {}).get('status', '-'):<15}")
        e = entries.get(shape)
        stored = f"{e['family']} {e['tflops']:.1f} ({e['ratio']:.2f}x)" if e else "-"
        rows.append(f"{shape:<21} " + "".join(cells) + stored)
    return "\n".join(rows)


def dump(report: Mapping[str, Any]) -> None:
    """``--json``: the whole report on stdout."""
    json.dump(report, sys.stdout, indent=1)
    print()
