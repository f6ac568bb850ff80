"""gemmgen.torch on a GPU: values and gradients against float64 autograd within the fp32 accuracy gate, in
every layout; batched linear with and without bias; torch.compile(fullgraph=True); CUDA-graph capture
and replay; the current stream; no copies; one-line errors.

The bound of each comparison is the gate's (:func:`gemmgen.measure.gate.allowed`): our relative
Frobenius error against float64 may be at most 1.5x that of PyTorch's own result in the same mode
(cuBLAS SGEMM with TF32 off for fp32) on the same inputs, never below the class's floor, never above
its ceiling. gradcheck itself needs float64 kernels, which gemmgen does not have (the formulas are
gradchecked in float64 on the CPU in tests/test_torch.py).
"""
from __future__ import annotations

import gc

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("PyTorch has no CUDA device here", allow_module_level=True)

import gemmgen.torch as gt  # noqa: E402
from gemmgen.measure.gate import CEILING, FLOOR, allowed  # noqa: E402

pytestmark = pytest.mark.gpu
CUDA = "cuda"


@pytest.fixture(autouse=True)
def strict_fp32():
    """PyTorch's fp32 matmuls as strict SGEMM (the gate's fp32 baseline); restored afterwards."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref||_F / ||ref||_F in float64."""
    return float((out.double() - ref).norm() / ref.norm())


def randn(*shape, seed: int, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator(device=CUDA).manual_seed(seed)
    return torch.randn(*shape, device=CUDA, generator=g).to(dtype)


def operand(rows: int, cols: int, transposed: bool, seed: int, dtype=torch.float32) -> torch.Tensor:
    """A rows x cols leaf tensor, row-major or a transposed view of a cols x rows one (layout T)."""
    t = randn(cols, rows, seed=seed, dtype=dtype).t() if transposed else randn(rows, cols, seed=seed, dtype=dtype)
    return t.requires_grad_()


def leaves(*ts):
    """Copies of leaf tensors in the same layout, as fresh leaves, and float64 ones."""
    same = [t.detach().clone().requires_grad_() for t in ts]   # clone keeps the strides of a dense tensor
    wide = [t.detach().double().requires_grad_() for t in ts]
    return same, wide


def assert_within_gate(mode: str, what: str, ours, theirs, exact) -> None:
    err, base = rel_err(ours, exact), rel_err(theirs, exact)
    bound = allowed(mode, base)
    assert err <= bound, f"{what}: relative error {err:.3g} > {bound:.3g} (1.5 x PyTorch's {base:.3g}, floored)"


# ---- values and gradients -------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("M,N,K", [(257, 129, 300), (1024, 768, 512)])
def test_matmul_values_and_gradients(layout, M, N, K):
    a, b = operand(M, K, layout[0] == "T", 1), operand(K, N, layout[1] == "T", 2)
    (a32, b32), (a64, b64) = leaves(a, b)
    grad = randn(M, N, seed=3)
    out = gt.matmul(a, b)
    out.backward(grad)
    ref = a64 @ b64
    ref.backward(grad.double())
    theirs = a32 @ b32
    theirs.backward(grad)
    assert out.dtype == torch.float32 and gt.kernel_for(a, b).config.layout == layout
    for what, ours, pt, exact in (("C", out, theirs, ref), ("dA", a.grad, a32.grad, a64.grad),
                                  ("dB", b.grad, b32.grad, b64.grad)):
        assert_within_gate("fp32", f"{layout} {M}x{N}x{K} {what}", ours, pt, exact)


def test_tf32_precision_within_its_gate():
    torch.backends.cuda.matmul.allow_tf32 = True   # PyTorch's TF32 mode: the tf32 class's baseline
    a, b = operand(512, 384, False, 4), operand(384, 256, True, 5)
    (a32, b32), (a64, b64) = leaves(a, b)
    out, theirs, ref = gt.matmul(a, b, precision="tf32"), a32 @ b32, a64 @ b64
    for t in (out, theirs, ref):
        t.sum().backward()
    assert gt.kernel_for(a, b, precision="tf32").config.precision == "tf32"
    assert_within_gate("tf32", "C", out, theirs, ref)
    assert_within_gate("tf32", "dA", a.grad, a32.grad, a64.grad)


@pytest.mark.parametrize("dtype,mode", [(torch.float16, "f16"), (torch.bfloat16, "bf16")])
def test_half_inputs(dtype, mode):
    """Half inputs: products exact, fp32 sums, a float32 C (baseline: SGEMM on the same values). Their
    gradients come back in the half type, from dC rounded to it: two roundings of at most half an ulp
    each, so the bound is the type's eps (2 unit roundoffs: 2^-10 for float16, 2^-7 for bfloat16)."""
    a, b = operand(300, 200, False, 6, dtype), operand(200, 100, True, 7, dtype)
    (_, _), (a64, b64) = leaves(a, b)
    out, ref = gt.matmul(a, b), a64 @ b64
    out.sum().backward()
    ref.sum().backward()
    assert out.dtype == torch.float32 and a.grad.dtype == dtype
    assert_within_gate(mode, "C", out, a.detach().float() @ b.detach().float(), ref)
    eps = torch.finfo(dtype).eps
    assert rel_err(a.grad, a64.grad) <= eps and rel_err(b.grad, b64.grad) <= eps


def _linear_input(case: str, features: int) -> torch.Tensor:
    if case == "x transposed":          # 2-D, column-major: read as layout T
        return operand(130, features, True, 8)
    if case == "vector":                # one sample, as nn.Linear takes it
        return randn(features, seed=8).requires_grad_()
    return randn(4, 33, features, seed=8).requires_grad_()   # leading dimensions flattened as a view


@pytest.mark.parametrize("case", ["batched", "batched, no bias", "x transposed", "weight transposed", "vector"])
def test_linear_values_and_gradients(case):
    in_f, out_f = 200, 96
    x = _linear_input(case, in_f)
    w = operand(out_f, in_f, case == "weight transposed", 9)
    b = None if case == "batched, no bias" else randn(out_f, seed=10).requires_grad_()
    params = [x, w] + ([b] if b is not None else [])
    same, wide = leaves(*params)
    grad = randn(*x.shape[:-1], out_f, seed=11)
    out = gt.linear(*params)
    out.backward(grad)
    theirs = torch.nn.functional.linear(*same)
    theirs.backward(grad)
    ref = torch.nn.functional.linear(*wide)
    ref.backward(grad.double())
    assert out.shape == ref.shape
    assert_within_gate("fp32", f"{case}: y", out, theirs, ref)
    for name, p, q, r in zip(("dx", "dW", "db"), params, same, wide):
        assert_within_gate("fp32", f"{case}: {name}", p.grad, q.grad, r.grad)


def test_linear_module_matches_nn_linear_within_the_gate():
    torch.manual_seed(0)
    ref_layer = torch.nn.Linear(384, 256).cuda()
    layer = gt.Linear.from_linear(ref_layer)
    x = randn(64, 384, seed=12)
    assert_within_gate("fp32", "Linear", layer(x), ref_layer(x), torch.nn.functional.linear(
        x.double(), ref_layer.weight.double(), ref_layer.bias.double()))


# ---- no copies, streams, graphs ------------------------------------------------------------------------
def _allocations() -> int:
    torch.cuda.synchronize()
    return torch.cuda.memory_stats()["allocation.all.allocated"]


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_each_layout_allocates_only_its_output(layout):
    """Transposed views are read in place: one allocation per call, C's, and the split-K workspace where
    the planned kernel reduces through one (its plan says so)."""
    from gemmgen.torch.launch import plan_for

    a, b = operand(512, 256, layout[0] == "T", 13).detach(), operand(256, 384, layout[1] == "T", 14).detach()
    gt.matmul(a, b)   # picks and loads the kernel
    plan = plan_for(a, b, None, None)
    assert (plan.M, plan.N, plan.K) == (512, 384, 256)
    before = _allocations()
    gt.matmul(a, b)
    assert _allocations() - before == 1 + (plan.workspace > 0)


def test_backward_allocates_only_the_gradients():
    """dA and dB, handed to .grad as they are: no copy of an operand, only the split-K workspace of a
    kernel that reduces through one (taken from PyTorch's allocator per call, by design)."""
    from gemmgen.torch.launch import plan_for

    a, b = operand(512, 256, False, 15), operand(256, 384, False, 16)
    grad = randn(512, 384, seed=17)
    gt.matmul(a, b).backward(grad)   # warm-up: the NT and TN kernels of backward
    a.grad = b.grad = None
    out = gt.matmul(a, b)
    # backward's two products, on the views it passes (dA = dC @ B^T, dB = A^T @ dC): their plans say
    # which kernels reduce split-K through a workspace
    plans = [plan_for(grad, b.detach().t(), None, None), plan_for(a.detach().t(), grad, None, None)]
    assert [(p.M, p.N, p.K) for p in plans] == [(512, 256, 384), (256, 384, 512)]
    workspaces = sum(p.workspace > 0 for p in plans)
    before = _allocations()
    out.backward(grad)
    assert _allocations() - before == 2 + workspaces


def test_the_current_stream_is_used():
    """On a side stream that sleeps, then overwrites a: launched on that stream, the product sees the
    new a; launched anywhere else it would run at once and read the old one."""
    a, b, a_new = randn(512, 512, seed=18), randn(512, 512, seed=19), randn(512, 512, seed=20)
    gt.matmul(a, b)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)   # ~50 ms of spinning on the side stream
        a.copy_(a_new)
        c = gt.matmul(a, b)
    side.synchronize()
    assert_within_gate("fp32", "C on a side stream", c, a_new @ b, a_new.double() @ b.double())


@pytest.fixture
def deterministic():
    """torch.use_deterministic_algorithms(True) for one test (warn_only: the test's own torch ops may lack a
    deterministic implementation without failing it), restored afterwards."""
    before, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(before, warn_only=warn)


def _graph_model():
    torch.manual_seed(1)
    return gt.swap_linear(torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                              torch.nn.Linear(512, 128))).cuda()


def _replay_and_eager(model):
    """(replayed, eager): y and the parameters' gradients from a captured training step replayed on new
    inputs, and from the same step run eagerly on them."""
    static_x = randn(64, 256, seed=21)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up, as torch.cuda.graphs asks: kernels picked and compiled here
        for _ in range(2):
            model.zero_grad(set_to_none=True)
            model(static_x).square().sum().backward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    model.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_y = model(static_x)
        static_y.square().sum().backward()
    x = randn(64, 256, seed=22)
    static_x.copy_(x)
    graph.replay()
    torch.cuda.synchronize()
    replayed = [static_y.detach().clone()] + [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    y = model(x)
    y.square().sum().backward()
    return replayed, [y.detach()] + [p.grad for p in model.parameters()]


def _atomic_kernels(model) -> list[str]:
    """The atomic split-K kernels among those serving the model's layers (forward, dx, dW)."""
    x = randn(64, 256, seed=21)
    names = []
    for layer in (m for m in model if isinstance(m, gt.Linear)):
        w = layer.weight.detach()
        g = torch.empty(x.shape[0], w.shape[0], device=CUDA)
        for a, b in ((x, w.t()), (g, w), (g.t(), x)):
            names += [gt.kernel_for(a, b).config.name] if gt.kernel_for(a, b).config.split_atomic else []
        x = torch.empty(x.shape[0], w.shape[0], device=CUDA)
    return names


def test_cuda_graph_replay_is_bitwise_eager_under_deterministic_algorithms(deterministic):
    """With torch.use_deterministic_algorithms(True) no kernel adds split-K slices atomically, so the
    replay recomputes eager's values bit for bit (same kernels, same inputs, same order)."""
    model = _graph_model()
    replayed, eager = _replay_and_eager(model)
    assert _atomic_kernels(model) == []
    for name, r, e in zip(("y", "W1", "b1", "W2", "b2"), replayed, eager):
        assert torch.equal(r, e), f"{name}: replay differs from eager under deterministic algorithms"


def test_cuda_graph_replay_matches_eager_to_rounding():
    """By default the dispatch may pick atomic split-K kernels for this model's small GEMMs, whose
    slices meet in C in the order the blocks finish: replay and eager then differ only in that order
    of fp32 additions, a few unit roundoffs per element, so at most 2^-19 (32 unit roundoffs, the fp32
    gate's floor) in relative Frobenius norm."""
    replayed, eager = _replay_and_eager(_graph_model())
    for name, r, e in zip(("y", "W1", "b1", "W2", "b2"), replayed, eager):
        diff = float((r.double() - e.double()).norm() / e.double().norm())
        assert diff <= FLOOR["fp32"], f"{name}: replay differs from eager by {diff:.3g} > 2^-19"


def test_deterministic_algorithms_give_bitwise_repeatable_products(deterministic):
    a, b = randn(64, 512, seed=25), randn(128, 512, seed=26).t()   # 64x128x512 NT
    kernel = gt.kernel_for(a, b)
    assert not kernel.config.split_atomic, kernel.config.name
    first = gt.matmul(a, b)
    assert all(torch.equal(first, gt.matmul(a, b)) for _ in range(20))
    assert_within_gate("fp32", "C, deterministic", first, a @ b, a.double() @ b.double())


def test_a_new_shape_inside_capture_asks_for_a_warm_up():
    a, b = randn(77, 55, seed=23), randn(55, 33, seed=24)   # a shape no other test uses
    # Earlier tests' dropped kernels (CuPy modules in reference cycles) must not be collected inside the
    # capture: unloading a module there invalidates it (cudaErrorStreamCaptureInvalidated; seen once in
    # 2678 tests). That is the capture's rule for any CUDA library, not this op's.
    gc.collect()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with pytest.raises(RuntimeError, match="warm-up"):
            gt.matmul(a, b)


def _small_model() -> torch.nn.Module:
    torch.manual_seed(2)
    return torch.nn.Sequential(torch.nn.Linear(256, 384), torch.nn.ReLU(), torch.nn.Linear(384, 64)).cuda()


# How many of gemmgen's GEMMs each result of a _small_model training step passes through (layers "0" and
# "2", a ReLU between): y = layer 2 (ReLU (layer 0 (x))); loss = sum y^2, so g2 = 2y; dW2 = g2^T h and
# db2 = sum g2; g0 = (g2 W2) masked by the ReLU; dW0 = g0^T x, db0 = sum g0.
DEPTH = {"y": 2, "2.weight": 3, "2.bias": 2, "0.weight": 4, "0.bias": 3}


def assert_within_chained_gate(what: str, depth: int, ours, theirs, exact) -> None:
    """The gate for a result that ``depth`` GEMMs feed, one after the other. gemmgen's promise is per GEMM:
    each product within max(1.5 x SGEMM's error, 2^-19) of the exact product of its operands. The floor
    is 3xTF32's own error, which does not shrink with K (both TF32 parts truncated, each stage summed on
    the tensor core with truncation: gate.py), while SGEMM's does: at this model's K (64 to 384) every
    single gemmgen GEMM errs 5.0e-7..7.4e-7 against SGEMM's 1.1e-7..1.5e-7, 4-7x, within the floor
    (H100, docs/PERFORMANCE.md). A relative error of one GEMM reaches the result to first order with gain
    ~1 here (random layers), and truncation errors lean one way, so a chain's errors add: measured, y
    (2 GEMMs) 1.17e-6, dW0 (4 GEMMs) 2.13e-6 = 0.9 x the sum of its GEMMs' errors, where PyTorch's
    SGEMM chain gives 3.1e-7. So the floor of a result is the sum of its GEMMs' floors, depth x 2^-19;
    where SGEMM's own error is larger (K in the thousands) 1.5x it still decides."""
    err, base = rel_err(ours, exact), rel_err(theirs, exact)
    bound = min(CEILING["fp32"], max(allowed("fp32", base), depth * FLOOR["fp32"]))
    assert err <= bound, (f"{what}: relative error {err:.3g} > {bound:.3g} (max(1.5 x PyTorch's {base:.3g}, "
                          f"{depth} GEMMs x 2^-19))")


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compile_fullgraph_matches_eager_and_float64_within_the_gate(mode):
    """TorchInductor calls the ops as extern kernels; "reduce-overhead" also records them in CUDA graphs.
    The compiled step computes what the eager one does (the same kernels; only the order of fp32 sums
    may differ: atomic split-K, Inductor's own reduction for the bias gradient) and is within the
    chained gate of float64."""
    torch._dynamo.reset()
    ref_model, eager_model = _small_model(), gt.swap_linear(_small_model())
    model = gt.swap_linear(_small_model())
    wide = _small_model().double()
    compiled = torch.compile(model, fullgraph=True, mode=mode)
    for step in range(3):   # warm-up, record, replay (reduce-overhead)
        x = randn(128, 256, seed=30 + step)
        for m in (model, eager_model, ref_model, wide):
            m.zero_grad(set_to_none=True)
        y = compiled(x)
        y.square().sum().backward()
        eager, theirs, exact = eager_model(x), ref_model(x), wide(x.double())
        for out in (eager, theirs, exact):
            out.square().sum().backward()
        named = [("y", y, eager, theirs, exact)] + [
            (name, p.grad, e.grad, q.grad, r.grad) for (name, p), e, q, r in
            zip(model.named_parameters(), eager_model.parameters(), ref_model.parameters(), wide.parameters())]
        for name, ours, same, pt, ref in named:
            diff = float((ours.double() - same.double()).norm() / same.double().norm())
            assert diff <= FLOOR["fp32"], f"step {step} {name}: compiled differs from eager by {diff:.3g}"
            assert_within_chained_gate(f"step {step} {name}", DEPTH[name], ours, pt, ref)


@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_opcheck(op):
    """PyTorch's own checks of a custom op: schema, autograd registration, fake tensors, AOT dispatch."""
    if op == "matmul":
        args = (operand(64, 48, False, 40), operand(48, 32, True, 41), None, None)
    else:
        args = (operand(2 * 16, 48, False, 42).detach().view(2, 16, 48).requires_grad_(), operand(24, 48, False, 43),
                randn(24, seed=44).requires_grad_(), None, None)
    torch.library.opcheck(getattr(torch.ops.gemmgen, op).default, args)


# ---- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,kind,words", [
    (lambda: gt.matmul(randn(3, 4, seed=0), torch.zeros(4, 2)), TypeError, ["b is a cpu tensor", "(4, 2)"]),
    (lambda: gt.matmul(randn(3, 4, seed=0).double(), randn(4, 2, seed=0).double()), TypeError,
     ["a has dtype torch.float64"]),
    (lambda: gt.matmul(randn(3, 4, seed=0), randn(5, 2, seed=0)), ValueError, ["a is 3x4, b is 5x2"]),
    (lambda: gt.linear(randn(8, 5, seed=0), randn(6, 4, seed=0)), ValueError, ["x has shape (8, 5)"]),
    (lambda: gt.linear(randn(8, 4, seed=0), randn(6, 4, seed=0), torch.zeros(6)), TypeError, ["bias is a cpu tensor"]),
])
def test_bad_inputs_raise_one_line_errors(call, kind, words):
    with pytest.raises(kind) as info:
        call()
    assert "\n" not in str(info.value) and all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_operands_on_two_gpus_are_refused():
    with pytest.raises(ValueError, match="cuda:0 and b on cuda:1"):
        gt.matmul(randn(3, 4, seed=0), randn(4, 2, seed=0).to("cuda:1"))
