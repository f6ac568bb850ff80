"""gemmgen.torch on the CPU: imported only on request, one-line errors, shapes on meta tensors, the autograd
formulas (gradcheck in float64 through CPU reference kernels), torch.compile tracing, swap_linear.

The GPU side (values against float64, CUDA graphs, streams) is tests/gpu/test_torch_gpu.py.
"""
from __future__ import annotations

import subprocess
import sys

import pytest


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_gemmgen_does_not_import_torch():
    run = _python("import sys, gemmgen, gemmgen.cli, gemmgen.runtime\n"
                  "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_gemmgen_torch_without_torch_says_what_to_install():
    run = _python("import sys; sys.modules['torch'] = None\nimport gemmgen.torch")
    assert run.returncode != 0
    assert "gemmgen.torch needs PyTorch (pip install torch)" in run.stderr.splitlines()[-1]


torch = pytest.importorskip("torch")
import gemmgen.torch as gt  # noqa: E402
from gemmgen.torch import ops  # noqa: E402
from gemmgen.torch.tensors import check_matmul, matrix  # noqa: E402


def meta(*shape, dtype=None, grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype or torch.float32, requires_grad=grad)


# ---- errors ---------------------------------------------------------------------------------------
BAD = [   # (call, error type, words the message must hold)
    (lambda: gt.matmul(torch.zeros(3, 4), meta(4, 2)), TypeError, ["a is a cpu tensor", "(3, 4)", "a.cuda()"]),
    (lambda: gt.matmul(meta(3, 4), torch.zeros(4, 2)), TypeError, ["b is a cpu tensor", "(4, 2)"]),
    (lambda: gt.matmul(meta(3, 4, dtype=torch.float64), meta(4, 2)), TypeError, ["a has dtype torch.float64"]),
    (lambda: gt.matmul(meta(3, 4), meta(4, 2, dtype=torch.int32)), TypeError, ["b has dtype torch.int32"]),
    (lambda: gt.matmul(meta(3, 4), meta(4, 2, dtype=torch.float16)), ValueError, ["torch.float32", "torch.float16"]),
    (lambda: gt.matmul(meta(2, 3, 4), meta(4, 2)), ValueError, ["a has 3 dimensions (2, 3, 4)"]),
    (lambda: gt.matmul(meta(3, 4), meta(5, 2)), ValueError, ["a is 3x4, b is 5x2"]),
    (lambda: gt.matmul(meta(3, 4), [[1.0]]), TypeError, ["b must be a torch.Tensor, got list"]),
    (lambda: gt.linear(None, meta(3, 4)), TypeError, ["x must be a torch.Tensor, got NoneType"]),
    (lambda: gt.matmul(meta(3, 4), meta(4, 2), precision="fp16"), ValueError, ["precision='fp16'", "fp32, tf32"]),
    (lambda: gt.matmul(meta(3, 4, dtype=torch.float16), meta(4, 2, dtype=torch.float16), precision="tf32"),
     ValueError, ["precision='tf32' needs float32"]),
    (lambda: gt.matmul(meta(3, 4), meta(4, 2), family="wmma"), ValueError, ["family='wmma'", "simt, tf32x3"]),
    (lambda: gt.linear(meta(8, 5), meta(6, 4)), ValueError, ["x has shape (8, 5)", "takes 4 features"]),
    (lambda: gt.linear(meta(8, 4), meta(6, 4), meta(4)), ValueError, ["bias has shape (4,)", "(6,)"]),
    (lambda: gt.linear(meta(8, 4), meta(6, 4), torch.zeros(6)), TypeError, ["bias is a cpu tensor"]),
    (lambda: gt.linear(meta(8, 4), meta(4)), ValueError, ["weight has 1 dimensions (4,)"]),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_inputs_raise_one_line_errors_naming_the_value(case):
    call, kind, words = BAD[case]
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


# ---- shapes and dtypes (meta tensors run the fake implementations) -------------------------------------
def test_outputs_are_float32_of_the_product_shape():
    assert gt.matmul(meta(3, 4), meta(5, 4).t()).shape == (3, 5)
    half = gt.matmul(meta(3, 4, dtype=torch.bfloat16), meta(4, 5, dtype=torch.bfloat16))
    assert half.dtype == torch.float32                       # gemmgen's C is float32 whatever A and B are
    assert gt.linear(meta(2, 7, 4), meta(6, 4), meta(6)).shape == (2, 7, 6)
    assert gt.linear(meta(4), meta(6, 4)).shape == (6,)     # a single vector, as nn.Linear takes it


def test_half_gradients_come_back_in_the_input_type():
    a, b = meta(3, 4, dtype=torch.float16, grad=True), meta(4, 5, dtype=torch.float16, grad=True)
    gt.matmul(a, b).sum().backward()
    assert (a.grad.dtype, a.grad.shape, b.grad.dtype, b.grad.shape) == (torch.float16, (3, 4), torch.float16, (4, 5))


@pytest.mark.parametrize("t,expect", [
    (lambda: torch.zeros(3, 5), ("N", 5)),
    (lambda: torch.zeros(5, 3).t(), ("T", 3)),
    (lambda: torch.zeros(3, 8)[:, :5], ("N", 8)),             # padded rows: read in place
    (lambda: torch.zeros(8, 3).t()[:, :5], ("T", 3)),
    (lambda: torch.zeros(1, 5).expand(3, 5), ("N", 5)),      # stride 0: copied
    (lambda: torch.zeros(3, 10)[:, ::2], ("N", 5)),           # every other column: copied
])
def test_layout_from_strides(t, expect):
    x = t()
    y, letter, ld = matrix(x, "x")
    assert (letter, ld) == expect
    copied = x.stride() in ((0, 1), (10, 2))
    assert (y.data_ptr() != x.data_ptr() or y.stride() != x.stride()) == copied


# ---- the autograd formulas, in float64 through CPU reference kernels -----------------------------------
@pytest.fixture
def reference_kernels():
    """CPU kernels for the two operators: torch's own products in the inputs' type (float64 here), so
    that gradcheck can test gemmgen's backward formulas; each call's operands are recorded. The
    operators' own implementation (which refuses CPU tensors) is put back afterwards."""
    calls = []

    def mm(a, b, precision=None, family=None):
        calls.append((a, b, precision, family))
        return a @ b

    def linear(x, weight, bias=None, precision=None, family=None):
        return torch.nn.functional.linear(x, weight, bias)

    ops._matmul.register_kernel("cpu")(mm)
    ops._linear.register_kernel("cpu")(linear)
    yield calls
    ops._matmul.register_kernel("cpu")(ops._matmul_impl)
    ops._linear.register_kernel("cpu")(ops._linear_impl)


def _operand(rows, cols, transposed, seed):
    g = torch.Generator().manual_seed(seed)
    if transposed:
        return torch.randn(cols, rows, dtype=torch.float64, generator=g).t().requires_grad_()
    return torch.randn(rows, cols, dtype=torch.float64, generator=g, requires_grad=True)


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_matmul_gradients(reference_kernels, layout):
    a, b = _operand(5, 3, layout[0] == "T", 1), _operand(3, 4, layout[1] == "T", 2)
    assert torch.autograd.gradcheck(lambda p, q: gt.matmul(p, q, precision="tf32"), (a, b))
    assert torch.autograd.gradgradcheck(lambda p, q: gt.matmul(p, q), (a, b))
    assert {c[2] for c in reference_kernels} == {"tf32", None}   # backward keeps the forward's precision


def test_backward_reads_the_saved_operands_in_place(reference_kernels):
    """dA = dC @ B^T and dB = A^T @ dC are transposed views of the forward's tensors: no copies
    (B is column-major here, so B^T is row-major; A is row-major, so A^T is column-major)."""
    a, b = _operand(5, 3, False, 1), _operand(3, 4, True, 2)
    grad = torch.randn(5, 4, dtype=torch.float64)
    gt.matmul(a, b).backward(grad)
    (_, _, *_), (ga_p, ga_q, *_), (gb_p, gb_q, *_) = reference_kernels
    assert ga_p.data_ptr() == grad.data_ptr() and ga_q.data_ptr() == b.data_ptr() and ga_q.stride() == (3, 1)
    assert gb_p.data_ptr() == a.data_ptr() and gb_p.stride() == (1, 3) and gb_q.data_ptr() == grad.data_ptr()
    assert torch.allclose(a.grad, grad @ b.detach().t()) and torch.allclose(b.grad, a.detach().t() @ grad)


def test_only_the_needed_gradients_are_computed(reference_kernels):
    a, b = _operand(5, 3, False, 1), _operand(3, 4, False, 2).detach()
    gt.matmul(a, b).sum().backward()
    assert len(reference_kernels) == 2 and b.grad is None   # forward, dA


@pytest.mark.parametrize("shape,bias", [((6, 3), True), ((2, 5, 3), True), ((2, 5, 3), False), ((3,), True)])
def test_linear_gradients(reference_kernels, shape, bias):
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, requires_grad=True) if bias else None
    args = (x, w, b) if bias else (x, w)
    assert torch.autograd.gradcheck(lambda *t: gt.linear(*t), args)
    assert torch.autograd.gradgradcheck(lambda *t: gt.linear(*t), args)


def test_linear_backward_layouts(reference_kernels):
    """dx = dy @ W (both row-major: NN), dW = dy^T @ x (TN): views of dy, W and x, never copies."""
    x = torch.randn(2, 5, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    gt.linear(x, w).sum().backward()
    (gx_p, gx_q, *_), (gw_p, gw_q, *_) = reference_kernels
    assert gx_q.data_ptr() == w.data_ptr() and gx_q.stride() == (3, 1)
    assert gw_p.stride() == (1, 4) and gw_q.data_ptr() == x.data_ptr() and gw_q.stride() == (3, 1)


# ---- torch.compile and modules ----------------------------------------------------------------------
def test_compile_fullgraph_traces_forward_and_backward():
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def keep(gm, _):
        graphs.append([n.target for n in gm.graph.nodes if n.op == "call_function"])
        return make_boxed_func(gm.forward)

    model = gt.swap_linear(torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2)).to("meta"))
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=keep, bw_compiler=keep), fullgraph=True)
    x = meta(5, 4, grad=True)
    compiled(x).sum().backward()
    assert x.grad.shape == (5, 4) and model[0].weight.grad.shape == (6, 4)
    forward, backward = graphs
    assert forward.count(torch.ops.gemmgen.linear.default) == 2
    assert backward.count(torch.ops.gemmgen.matmul.default) == 4   # dx and dW of each layer


def test_swap_linear_keeps_parameters_and_state_dict():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4, bias=False), torch.nn.ReLU()])
            self.special = torch.nn.modules.linear.NonDynamicallyQuantizableLinear(4, 4)   # a subclass: kept

    model = Block()
    before = {k: v for k, v in model.state_dict().items()}
    params = list(model.parameters())
    assert gt.swap_linear(model, family="tf32x3") is model
    assert type(model.proj) is gt.Linear and type(model.layers[0]) is gt.Linear and model.layers[0].bias is None
    assert type(model.special) is torch.nn.modules.linear.NonDynamicallyQuantizableLinear
    assert list(model.parameters()) == params and model.state_dict().keys() == before.keys()
    assert model.proj.family == "tf32x3" and "family='tf32x3'" in repr(model.proj)


def test_linear_module_is_a_drop_in():
    layer = gt.Linear(4, 3, precision="tf32", device="meta")
    assert isinstance(layer, torch.nn.Linear) and layer(meta(2, 4)).shape == (2, 3)
    assert gt.Linear.from_linear(torch.nn.Linear(4, 3).eval()).training is False


# ---- the launch, with the GPU faked -----------------------------------------------------------------
class _FakeKernel:
    """Records each launch; ``bounds`` and ``workspace`` stand for the picked config's."""

    def __init__(self, bounds="checked", workspace=0):
        import types

        self.config = types.SimpleNamespace(bounds=bounds, warp_specialized=False, tensor_maps=False, interleave=False, family="simt")
        self.launches = []   # (the operands as a namespace, the stream, the workspace pointer)

        def prepared(M, N, K, lda, ldb, ldc):
            def launch(A, B, C, alpha, beta, stream, work):
                ops = types.SimpleNamespace(M=M, N=N, K=K, A=A, lda=lda, B=B, ldb=ldb, C=C, ldc=ldc, alpha=alpha, beta=beta)
                self.launches.append((ops, stream, work))
            return launch

        self.loaded = types.SimpleNamespace(workspace_floats=lambda M, N: workspace, prepared=prepared)


@pytest.fixture
def fake_gpu(monkeypatch):
    """launch.gemm on CPU tensors: no device switch, a named stream, one fake kernel for every request,
    the argument checks passing CPU tensors, and no plans left over from other tests."""
    from gemmgen.torch import launch

    state = {"kernel": _FakeKernel(), "picked": [], "checked": 0}

    def check(a, b, precision, family):
        state["checked"] += 1
        return check_matmul(a, b, precision, family, ("cpu",))

    monkeypatch.setattr(launch, "_PLANS", {})
    monkeypatch.setattr(launch, "check_matmul", check)
    monkeypatch.setattr(launch, "_current_device", lambda: None)
    monkeypatch.setattr(launch, "raw_stream", lambda dev: "torch's current stream")
    monkeypatch.setattr(launch, "_kernel", lambda *key: state["picked"].append(key[4:7]) or state["kernel"])
    return launch, state


@pytest.mark.parametrize("a,b,request_", [
    (lambda: torch.zeros(5, 8), lambda: torch.zeros(8, 6), ("NN", 8, 6)),
    (lambda: torch.zeros(8, 5).t(), lambda: torch.zeros(8, 12)[:, :6], ("TN", 5, 12)),
    (lambda: torch.zeros(5, 16)[:, :8], lambda: torch.zeros(6, 8).t(), ("NT", 16, 8)),
])
def test_launch_reads_operands_where_they_lie(fake_gpu, a, b, request_):
    launch, state = fake_gpu
    a, b = a(), b()
    out = launch.gemm(a, b, None, None)
    (ops, stream, workspace), = state["kernel"].launches
    assert state["picked"] == [request_] and stream == "torch's current stream" and workspace == 0
    assert (ops.M, ops.N, ops.K, ops.A, ops.B, ops.C, ops.ldc) == (5, 6, 8, a.data_ptr(), b.data_ptr(), out.data_ptr(), 6)
    assert (ops.lda, ops.ldb, ops.alpha, ops.beta) == (*request_[1:], 1.0, 0.0)


def test_a_repeated_call_is_checked_and_planned_once(fake_gpu):
    """The checks and the kernel choice depend on shapes, strides, dtypes, devices and options only:
    the second call of a kind looks its plan up; new strides or options make a new plan."""
    launch, state = fake_gpu
    a, b = torch.zeros(5, 8), torch.zeros(8, 6)
    launch.gemm(a, b, None, None)
    launch.gemm(torch.ones(5, 8), torch.ones(8, 6), None, None)
    assert state["checked"] == 1 and len(state["picked"]) == 1 and len(state["kernel"].launches) == 2
    launch.gemm(a, torch.zeros(6, 8).t(), None, None)   # b transposed: another layout
    launch.gemm(a, b, "tf32", None)
    assert state["checked"] == 3 and state["picked"][1:] == [("NT", 8, 8), ("NN", 8, 6)]


def test_deterministic_mode_is_part_of_the_request(fake_gpu):
    launch, state = fake_gpu
    a, b = torch.zeros(5, 8), torch.zeros(8, 6)
    picked = []
    launch._kernel = lambda *key: picked.append(key[-1]) or state["kernel"]
    launch.gemm(a, b, None, None)
    torch.use_deterministic_algorithms(True)
    try:
        launch.gemm(a, b, None, None)
    finally:
        torch.use_deterministic_algorithms(False)
    assert picked == [False, True]


def test_misaligned_operands_of_a_fast_path_kernel_get_a_kernel_that_reads_them(fake_gpu):
    """The plan's kernel reads A and B from 16-byte aligned pointers without checking them; operands that
    start elsewhere are served, as they are, by the kernel the library picks for misaligned ones."""
    launch, state = fake_gpu
    state["kernel"] = _FakeKernel(bounds="none")
    a = torch.zeros(4, 9)[:, 1:]            # rows of 8 floats 9 apart, starting 4 bytes into the storage
    launch.gemm(a, torch.zeros(8, 4), None, None)
    assert state["picked"] == [("NN", 9, 4), ("NN", 9, 4)]
    assert state["kernel"].launches[0][0].A == a.data_ptr()


def test_strides_no_kernel_reads_are_copied_on_every_call(fake_gpu):
    launch, state = fake_gpu
    a = torch.arange(30.0).view(3, 10)[:, ::2]   # every other column
    for _ in range(2):
        launch.gemm(a, torch.zeros(5, 4), None, None)
    assert all(ops.A != a.data_ptr() and ops.lda == 5 for ops, *_ in state["kernel"].launches)
    assert len(state["kernel"].launches) == 2


def test_launch_takes_the_workspace_from_torch(fake_gpu):
    launch, state = fake_gpu
    state["kernel"] = _FakeKernel(workspace=4 * 5 * 6)
    launch.gemm(torch.zeros(5, 8), torch.zeros(8, 6), None, None)
    assert state["kernel"].launches[0][2] > 0


def test_empty_products(fake_gpu):
    launch, state = fake_gpu
    assert launch.gemm(torch.zeros(0, 3), torch.zeros(3, 4), None, None).shape == (0, 4)
    assert torch.equal(launch.gemm(torch.zeros(2, 0), torch.zeros(0, 4), None, None), torch.zeros(2, 4))
    assert not state["kernel"].launches


def test_a_new_request_inside_capture_is_refused_before_picking(monkeypatch):
    from gemmgen.torch import kernels

    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    monkeypatch.setattr(kernels, "library_for", lambda *a: pytest.fail("picked a kernel inside capture"))
    with pytest.raises(RuntimeError, match="inside CUDA graph capture.*warm-up"):
        kernels.pick(0, 11, 12, 13, "NN", 13, 12, "fp32", None)


# ---- deterministic mode: no atomic split-K -------------------------------------------------------------
def _h100_library():
    from gemmgen.base.devices import known
    from gemmgen.records.lookup import load_device
    from gemmgen.runtime.library import KernelLibrary

    found = load_device("NVIDIA H100 80GB HBM3")
    return KernelLibrary(known("h100"), found.entries, 0, False, found.timings)


def test_fixed_order_replaces_atomic_split_k_by_the_next_best_timed_kernel():
    """On the shipped H100 timings some small NT requests plan an atomic split-K kernel (which ones moves as
    the results are re-tuned: the first of a list of small shapes that does); with ``fixed_order`` (what
    gemmgen.torch asks under deterministic algorithms) the planner picks among the kernels that reduce in
    a fixed order."""
    from gemmgen.runtime.dispatch import choose
    from gemmgen.runtime.planner import Request

    lib = _h100_library()
    small = [(M, N, K, "NT", K, K) for M in (64, 128, 256) for N in (64, 128, 256) for K in (512, 1024, 4096)]
    ask = lambda r, fixed: Request(*r, r[1], copies=False, fixed_order=fixed)
    request = next((r for r in small if lib.plan(ask(r, False)).config.split_atomic), None)
    assert request is not None, "no small NT request plans atomic split-K on the shipped H100 timings"
    M, N, K, _, lda, ldb = request
    fixed = lib.plan(ask(request, True)).config
    assert not fixed.split_atomic and fixed.layout == "NT" and fixed.accepts(M, N, K, lda, ldb, N) is None
    others = [f for f in lib.candidates("fp32", "NT") if not f.config.split_atomic]
    assert fixed == choose(others, *request, N).config


def test_fixed_order_where_only_atomic_kernels_are_timed_takes_one_slice_of_the_same_tile():
    from gemmgen.base.devices import known
    from gemmgen.base.shape import Shape
    from gemmgen.kernel.presets import preset
    from gemmgen.runtime.planner import Planner, Request
    from gemmgen.runtime.predict import Fitted

    atomic = preset("tf32x3-wgmma").replace(split_k=4)
    assert atomic.split_atomic
    fit = Fitted.fit(atomic, {Shape(n, n, n): 0.001 * n / 64 for n in (256, 512, 1024, 2048)}, known("h100"))
    planner = Planner(known("h100"), {}, timed=lambda precision, layout, family: [fit] if layout == "NN" else [])
    ask = lambda fixed, M=64: Request(M, 128, 512, "NN", 512, 128, 128, copies=False, fixed_order=fixed)
    assert planner.plan(ask(False)).config == atomic
    assert planner.plan(ask(True)).config == atomic.replace(split_k=1)
