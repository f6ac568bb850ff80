"""Host overhead per call of gemmgen.torch.matmul against torch.mm, on small shapes.

    python -m benchmarks.torch_overhead            # the table (numbers go to docs/PERFORMANCE.md)
    python -m benchmarks.torch_overhead --json     # one JSON object
    python -m benchmarks.torch_overhead --profile  # where gemmgen.torch.matmul's host time goes

The host time to issue one call, as benchmarks/api_overhead.py measures it: a loop of 200 calls
(below the launch queue's depth, so the host never waits for the GPU), the GPU drained before each
round, best of 10 rounds, the rows interleaved over 3 passes. Waiting for the kernels is not host
overhead, so the shapes are small. Rows:

- torch.mm: PyTorch's own call (ATen dispatch, cuBLAS);
- custom op (torch.mm): ``torch.library.custom_op`` wrapping torch.mm, with a fake implementation
  and an autograd formula like gemmgen's: what any custom op costs on top of what it calls;
- gemmgen.torch.matmul: gemmgen's op;
- gemmgen part alone: the op's implementation called directly (checks, kernel lookup, stream,
  output, launch), without the dispatcher;
- gemmgen.matmul(out=): the CuPy-level API on the same torch tensors (CuPy views of them per call).

The target: gemmgen.torch.matmul costs no more than the custom op wrapping torch.mm.
Rows marked "grad" take inputs that require grad (the autograd node is recorded).
"""
from __future__ import annotations

import json
import sys
import time

import torch

import gemmgen
import gemmgen.torch as gt
from gemmgen.torch.launch import gemm


@torch.library.custom_op("gemmgen_bench::mm", mutates_args=())
def custom_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(a, b)


@custom_mm.register_fake
def _(a, b):
    return a.new_empty((a.shape[0], b.shape[1]))


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    return custom_mm(grad, b.t()), custom_mm(a.t(), grad)


custom_mm.register_autograd(_backward, setup_context=_setup)


def per_call_us(fn, calls: int = 200, rounds: int = 10) -> float:
    """Best host time per call over ``rounds`` loops of ``calls`` calls, the GPU drained before each."""
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t)
    torch.cuda.synchronize()
    return best / calls * 1e6


def rows_for(n: int) -> dict:
    a, b = (torch.rand(n, n, device="cuda") for _ in range(2))
    ag, bg = (t.clone().requires_grad_() for t in (a, b))
    out = torch.empty(n, n, device="cuda")
    return {
        "torch.mm": lambda: torch.mm(a, b),
        "custom op (torch.mm)": lambda: custom_mm(a, b),
        "gemmgen.torch.matmul": lambda: gt.matmul(a, b),
        "gemmgen part alone": lambda: gemm(a, b, None, None),
        "gemmgen.matmul(out=)": lambda: gemmgen.matmul(a, b, out=out),
        "torch.mm, grad": lambda: torch.mm(ag, bg),
        "custom op (torch.mm), grad": lambda: custom_mm(ag, bg),
        "gemmgen.torch.matmul, grad": lambda: gt.matmul(ag, bg),
    }


def kernels(sizes=(64, 256)) -> dict[int, str]:
    """The kernel gemmgen.torch.matmul launches at each size, and how many launches that takes."""
    out = {}
    for n in sizes:
        c = gt.kernel_for(torch.rand(n, n, device="cuda"), torch.rand(n, n, device="cuda")).config
        how = (f"split-K {c.split_k}, {c.reduce}: {len(c.kernel_names)} launches" if c.split_k > 1 else "one launch")
        out[n] = f"{c.label or c.name} ({how})"
    return out


def measure(sizes=(64, 256), passes: int = 3) -> dict[int, dict[str, float]]:
    results = {}
    for n in sizes:
        fns = rows_for(n)
        for fn in fns.values():   # warm-up: kernels picked and compiled, allocator and cuBLAS settled
            fn()
        times: dict[str, list[float]] = {}
        for _ in range(passes):   # interleaved: clocks and caches affect every row alike
            for name, fn in fns.items():
                times.setdefault(name, []).append(per_call_us(fn))
        results[n] = {name: min(ts) for name, ts in times.items()}
    return results


def print_table(results: dict, used: dict) -> None:
    print(f"host time per call (us), {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for n, name in used.items():
        print(f"  {n}^3: {name}")
    sizes = list(results)
    print(f"{'call':<30}" + "".join(f"{f'{n}^3':>10}" for n in sizes))
    for name in results[sizes[0]]:
        print(f"{name:<30}" + "".join(f"{results[n][name]:>10.1f}" for n in sizes))
    for n in sizes:
        r = results[n]
        print(f"{n}^3: gemmgen.torch.matmul / custom op (torch.mm) = "
              f"{r['gemmgen.torch.matmul'] / r['custom op (torch.mm)']:.2f} (no grad), "
              f"{r['gemmgen.torch.matmul, grad'] / r['custom op (torch.mm), grad']:.2f} (grad); "
              f"/ torch.mm = {r['gemmgen.torch.matmul'] / r['torch.mm']:.2f}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    results, used = measure(), kernels()
    if "--profile" in argv:
        import cProfile
        import pstats

        a, b = (torch.rand(256, 256, device="cuda") for _ in range(2))
        prof = cProfile.Profile()
        prof.runcall(per_call_us, lambda: gt.matmul(a, b))
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    if "--json" in argv:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "kernels": {str(n): k for n, k in used.items()},
                   "us_per_call": {str(n): r for n, r in results.items()}}, sys.stdout)
        print()
    else:
        print_table(results, used)
    return 0


if __name__ == "__main__":
    sys.exit(main())
