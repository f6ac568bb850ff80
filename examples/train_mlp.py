"""Train an fp32 MLP with PyTorch's strict fp32 matmul and with gemmgen, from the same weights and data.

    python examples/train_mlp.py              # 200 steps, batch 8192, width 4096, 3 layers (~30 s on an H100)
    python examples/train_mlp.py --json       # one JSON object, for scripts
    python examples/train_mlp.py --steps 50 --batch 2048 --width 1024     # a quick look

Three copies of one MLP (Linear, ReLU, ..., Linear; MSE regression on synthetic data, SGD with
momentum) train side by side, step by step on one stream, from the same initial weights and batches:

- "torch": PyTorch's fp32 matmul, strict (``torch.backends.cuda.matmul.allow_tf32 = False``: cuBLAS
  SGEMM, no TF32);
- "permuted": the same on a permuted copy of the problem (batch rows, input features, hidden units and
  outputs permuted once, weights and data alike): the same training in exact arithmetic, since every
  step is elementwise or permutation-equivariant and the loss is a mean, but every GEMM, forward and
  backward, sums in another order. Its distance from "torch" is the fp32 noise of the loss curve;
- "gemmgen": the nn.Linear layers swapped for gemmgen.torch.Linear (fp32-accurate kernels: 3xTF32
  tensor cores, family tf32x3 by default, or whatever the dispatch picks with --family any).

It prints the loss curves every 20 steps, the median step time of each and their ratio, the kernels
gemmgen used, and the largest relative difference of gemmgen's loss from PyTorch's over the run,
against the bound: 4 x the largest difference between "torch" and "permuted" (never below the fp32
gate's floor, 2^-19). Training amplifies the rounding differences of fp32 GEMMs of the same accuracy
alike, so gemmgen's curve should stay as close to PyTorch's as a reordered computation does; the 4x
margin covers the spread of that amplification between perturbations of the same size (on the CPU,
this MLP at width 512, four seeds: float64-accumulated GEMMs rounded to fp32 against strict fp32 ended
0.3-2.0x as far from it as the permuted run), and a kernel with a real error (a wrong tile, TF32's
1e-4) exceeds it by orders of magnitude. The exit status is 1 when the difference exceeds the bound.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys

import torch
import torch.nn.functional as F

import gemmgen.torch as gt
from gemmgen.measure.gate import FLOOR

MARGIN = 4.0   # bound = MARGIN x the fp32 noise of the loss (see the module docstring)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=8192)
    p.add_argument("--width", type=int, default=4096, help="features of every layer")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--every", type=int, default=20, help="print the losses every N steps")
    p.add_argument("--family", default="tf32x3", help="gemmgen kernel family (tf32x3, simt) or 'any' (the dispatch's pick)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    return p.parse_args(argv)


def make_data(args, device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """4 batches of x ~ N(0, 1) and targets tanh(x @ T / sqrt(width)) for one random T (strict fp32)."""
    g = torch.Generator(device=device).manual_seed(args.seed)
    teacher = torch.randn(args.width, args.width, device=device, generator=g) / args.width ** 0.5
    xs = [torch.randn(args.batch, args.width, device=device, generator=g) for _ in range(4)]
    return [(x, torch.tanh(x @ teacher)) for x in xs]


def make_model(args, device) -> torch.nn.Sequential:
    torch.manual_seed(args.seed)
    layers = []
    for i in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width)] + ([torch.nn.ReLU()] if i < args.layers - 1 else [])
    return torch.nn.Sequential(*layers).to(device)


def permuted(model: torch.nn.Sequential, data, seed: int):
    """A copy of the problem with batch rows, input features, hidden units and outputs permuted: the
    same training in exact arithmetic, every GEMM summing in another order (the noise reference)."""
    model = copy.deepcopy(model)
    device = data[0][0].device
    g = torch.Generator().manual_seed(seed + 1)
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    dims = [linears[0].in_features] + [m.out_features for m in linears]
    perms = [torch.randperm(d, generator=g).to(device) for d in dims]
    rows = torch.randperm(data[0][0].shape[0], generator=g).to(device)
    with torch.no_grad():
        for p_in, p_out, m in zip(perms, perms[1:], linears):
            m.weight.copy_(m.weight[p_out][:, p_in])
            m.bias.copy_(m.bias[p_out])
    return model, [(x[rows][:, perms[0]], y[rows][:, perms[-1]]) for x, y in data]


def variants(model, data, args) -> dict[str, tuple[torch.nn.Module, list]]:
    """name -> (model, its batches), all from the same initial weights and data."""
    family = None if args.family == "any" else args.family
    return {"torch": (copy.deepcopy(model), data), "permuted": permuted(model, data, args.seed),
            "gemmgen": (gt.swap_linear(copy.deepcopy(model), precision="fp32", family=family), data)}


def step(model, opt, x, y) -> torch.Tensor:
    opt.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()   # no .item(): the host never waits for the GPU inside the loop


def optimizer(model, args):
    return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)


def warm_up(models: dict) -> None:
    """Two steps of a throwaway copy of each: gemmgen picks and compiles its kernels here, cuBLAS and
    the caching allocator settle, and no timed step pays for it."""
    for model, data in models.values():
        spare = copy.deepcopy(model)
        opt = torch.optim.SGD(spare.parameters(), lr=0.0)
        for x, y in data[:2]:
            step(spare, opt, x, y)
    torch.cuda.synchronize()


def train(models: dict, args) -> dict[str, dict]:
    """The runs side by side, one step of each in turn: their losses and step times (CUDA events)."""
    opts = {name: optimizer(m, args) for name, (m, _) in models.items()}
    # The losses go into one preallocated tensor per run, not a list of the steps' loss tensors: in
    # PyTorch 2.11 the 0-dim result of F.mse_loss(reduction="mean") keeps the whole elementwise buffer
    # as its storage (8192 x 4096 floats, 128 MiB a step here: out of memory by step ~190 on an H100).
    device = next(iter(models.values()))[0][0].weight.device
    runs = {name: {"loss": torch.empty(args.steps, device=device), "events": []} for name in models}
    for i in range(args.steps):
        for name, (model, data) in models.items():
            x, y = data[i % len(data)]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            runs[name]["loss"][i] = step(model, opts[name], x, y)
            end.record()
            runs[name]["events"].append((start, end))
    torch.cuda.synchronize()
    return {name: {"loss": r["loss"].double().tolist(),
                   "ms": [s.elapsed_time(e) for s, e in r["events"]]} for name, r in runs.items()}


def kernels_used(model, data) -> dict[str, str]:
    """The kernel gemmgen uses for each GEMM of a hidden layer: forward x @ W^T, dx = dy @ W, dW = dy^T @ x."""
    x = data[0][0]
    layer = next(m for m in model.modules() if isinstance(m, gt.Linear))
    w, fam = layer.weight.detach(), layer.family
    pairs = {"forward": (x, w.t()), "dx": (x, w), "dW": (x.t(), x)}
    return {what: _name(gt.kernel_for(a, b, "fp32", fam)) for what, (a, b) in pairs.items()}


def _name(kernel) -> str:
    """A kernel's layout and name (a preset's label where it has one; a hand-written route has no config)."""
    config = getattr(kernel, "config", None)
    return f"{kernel.layout} {getattr(config, 'label', '') or kernel.name}"


def summarize(runs: dict, args) -> dict:
    ref = runs["torch"]["loss"]
    diff = {name: [abs(a - b) / abs(b) for a, b in zip(runs[name]["loss"], ref)] for name in ("gemmgen", "permuted")}
    noise = max(diff["permuted"])
    bound = max(MARGIN * noise, FLOOR["fp32"])
    ms = {name: statistics.median(r["ms"]) for name, r in runs.items()}
    return {"median_step_ms": ms, "speedup": ms["torch"] / ms["gemmgen"], "rel_diff": diff,
            "max_rel_diff": max(diff["gemmgen"]), "noise": noise, "bound": bound,
            "within_bound": max(diff["gemmgen"]) <= bound, "peak_gib": torch.cuda.max_memory_allocated() / 2 ** 30}


def print_report(runs: dict, summary: dict, kernels: dict, args) -> None:
    print(f"MLP: {args.layers} x Linear({args.width}, {args.width}) with ReLU between, batch {args.batch}, MSE, "
          f"SGD lr {args.lr} momentum 0.9, fp32, {args.steps} steps; {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("gemmgen kernels: " + "; ".join(f"{k} {v}" for k, v in kernels.items()))
    print(f"\n{'step':>5} {'torch fp32':>12} {'permuted':>12} {'gemmgen':>12} {'diff permuted':>14} {'diff gemmgen':>13}")
    shown = sorted(set(range(0, args.steps, args.every)) | {args.steps - 1})
    for i in shown:
        r = [runs[n]["loss"][i] for n in ("torch", "permuted", "gemmgen")]
        d = [summary["rel_diff"][n][i] for n in ("permuted", "gemmgen")]
        print(f"{i:>5} {r[0]:>12.7f} {r[1]:>12.7f} {r[2]:>12.7f} {d[0]:>14.2e} {d[1]:>13.2e}")
    ms = summary["median_step_ms"]
    print(f"\nmedian step time: torch fp32 {ms['torch']:.2f} ms, permuted {ms['permuted']:.2f} ms, gemmgen {ms['gemmgen']:.2f} ms:"
          f" gemmgen {summary['speedup']:.2f}x torch (target >= 1.3x)")
    print(f"peak GPU memory allocated: {summary['peak_gib']:.2f} GiB (data, three models with their gradients and "
          "momenta, one step's activations)")
    verdict = "within" if summary["within_bound"] else "OUTSIDE"
    print(f"largest relative loss difference, gemmgen vs torch: {summary['max_rel_diff']:.2e}, {verdict} the bound "
          f"{summary['bound']:.2e} = max({MARGIN:g} x fp32 noise {summary['noise']:.2e}, 2^-19), the noise being the "
          "largest difference of torch on the permuted problem")


def main(argv=None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("train_mlp.py needs a CUDA GPU (gemmgen runs on CUDA tensors)", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False   # PyTorch's fp32 matmul as strict SGEMM
    device = torch.device("cuda")
    data = make_data(args, device)
    models = variants(make_model(args, device), data, args)
    warm_up(models)
    runs = train(models, args)
    summary = summarize(runs, args)
    kernels = kernels_used(*models["gemmgen"])
    if args.json:
        json.dump({"config": vars(args), "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "kernels": kernels, "loss": {n: r["loss"] for n, r in runs.items()},
                   "step_ms": {n: r["ms"] for n, r in runs.items()}, **summary}, sys.stdout)
        print()
    else:
        print_report(runs, summary, kernels, args)
    return 0 if summary["within_bound"] else 1


if __name__ == "__main__":
    sys.exit(main())
