"""The planner's values and rules: a :class:`Request`, a candidate :class:`Plan`, and the named guards a
plan with copies must pass (:data:`GUARDS`); :func:`cheapest` picks among plans (:mod:`.planner`).

>>> Request(4095, 4095, 4095).lds, Plan("timed", "NT", copy_b=True).copies
((4095, 4095), 'B')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..base.shape import Shape
from ..kernel.config import KernelConfig
from ..records.entry import Entry
from .dispatch import best
from .predict import Fitted

class NoFixedOrder(RuntimeError):
    """A request with ``fixed_order`` that only kernels adding K slices atomically serve."""


@dataclass(frozen=True)
class Request:
    """One GEMM request: C (M x N, rows ``ldc`` apart) = A (M x K) @ B (K x N) stored as ``layout``
    says, rows ``lda`` and ``ldb`` apart (None: packed); ``rows_aligned`` False where A or B does not
    start on 16 bytes; ``elem`` bytes an input element; ``copies``: operands may be copied first;
    ``fixed_order``: no kernel that adds K slices atomically (bitwise repeatable results)."""

    M: int
    N: int
    K: int
    layout: str = "NN"
    lda: int | None = None
    ldb: int | None = None
    ldc: int | None = None
    precision: str = "fp32"
    family: str | None = None
    rows_aligned: bool = True
    elem: int = 4
    copies: bool = True
    fixed_order: bool = False

    @property
    def shape(self) -> Shape:
        return Shape(self.M, self.N, self.K, self.layout)

    @property
    def lds(self) -> tuple[int, int]:
        """(lda, ldb), packed where not given."""
        packed = self.shape.lds
        return (self.lda if self.lda is not None else packed[0], self.ldb if self.ldb is not None else packed[1])


@dataclass(frozen=True)
class Plan:
    """A way to run a request: ``config`` (a tuned kernel) or ``route`` (a hand-written one: "gemv",
    "dots", "outer"), the layout the kernel reads (copies make it), the operands copied first, and the
    predicted ms of the kernel and of the copies (None: a source without a time model). ``rival``: the
    plan this one would replace (what its guards weigh it against); ``fit`` the timed kernel's model,
    ``entry`` the stored entry."""

    source: str
    layout: str
    config: KernelConfig | None = None
    route: str | None = None
    copy_a: bool = False
    copy_b: bool = False
    kernel_ms: float | None = None
    copies_ms: float = 0.0
    fit: Fitted | None = None
    entry: Entry | None = None
    rival: "Plan | None" = None
    detail: str = ""                 # a preset's origin: "stored" (this GPU's v13 winner) or "built-in"

    @property
    def name(self) -> str:
        return self.config.name if self.config is not None else str(self.route)

    @property
    def ms(self) -> float | None:
        """Predicted ms of the plan: its kernel plus its copies (None without a time model)."""
        return None if self.kernel_ms is None else self.kernel_ms + self.copies_ms

    @property
    def copies(self) -> str:
        """The operands copied first: '', 'A', 'B' or 'AB'."""
        return "A" * self.copy_a + "B" * self.copy_b


# ---- guards: what a plan with copies must pass ------------------------------------------------------------
def worth_copying(planner: "planner.Planner", req: Request, plan: Plan) -> bool:
    """A request predicted under ``min_pack_ms`` never copies: copies cost launches and host time the GPU
    no longer hides."""
    return plan.rival.ms >= planner.policy.min_pack_ms


def small_copy(planner: "planner.Planner", req: Request, plan: Plan) -> bool:
    """Under ``small_pack_ms``, copies must feed a TMA kernel (``small_needs_tma``), cost at most
    ``copy_share`` of it (``split_copy_share`` of a split-K one: its reduce is one more launch, so only a
    skinny operand's copy pays), and feed at least ``min_stage_k`` of K. A/Bs on the H100: copying into the
    TMA kernel's layout won up to 1.6x on mid-size shapes (468x8958x654 NN: 0.94x -> 1.47x cuBLAS);
    copies into cp.async kernels lost 4 of 6 (174x2792x3814 NT: 0.97x -> 0.64x); with the copies' host
    time cut, small shallow-K shapes won too (4687x9902x35 NN 0.69x -> 0.95x)."""
    p, c = planner.policy, plan.config
    if plan.rival.ms >= p.small_pack_ms:
        return True
    share = p.split_copy_share if c.split_k > 1 else p.copy_share
    return ((c.warp_specialized or not p.small_needs_tma) and plan.copies_ms <= share * plan.kernel_ms
            and req.K >= p.min_stage_k)


def trusted(planner: "planner.Planner", req: Request, plan: Plan) -> bool:
    """An aligning copy (same layout) replaces the rows as they are only where that is sure (the copied
    plan beats even the as-is kernels' aligned predictions, a lower bound on their time: 4-byte loads
    never run faster than 16-byte ones), or the as-is prediction rests on unaligned shapes measured
    nearby, or the copies cost at most ``cheap_pack`` of the product: on the H100, copying on the unaligned
    guess alone lost on small skinny shapes (74x480x8760 TT: 0.33x), where a copy costs as much as the
    product, while on large ones (copies 2% of the product) the unaligned kernel ran 1.23x cuBLAS where
    aligned neighbours run 1.5x. (A layout change's kernel is chosen among trusted kernels already:
    :func:`layout_changes`.)"""
    if plan.layout != req.layout:
        return True
    lda, ldb = req.lds
    floor = best(planner.candidates(req.precision, req.layout, req.family), req.M, req.N, req.K, req.layout,
                 lda, ldb, req.ldc, True)
    sure = floor is not None and plan.ms < floor[0]
    return (sure or plan.rival.fit.measured_near(req.shape, False)
            or plan.copies_ms <= planner.policy.cheap_pack * plan.kernel_ms)


def beats_rival(planner: "planner.Planner", req: Request, plan: Plan) -> bool:
    """A plan with copies must be faster than the plan it replaces; one that changes the layout by
    ``margin`` (a second copy and its host time)."""
    margin = planner.policy.margin if plan.layout != req.layout else 0.0
    return plan.ms < plan.rival.ms * (1.0 - margin)


GUARDS: tuple[tuple[str, Callable[["planner.Planner", Request, Plan], bool]], ...] = (
    ("worth copying", worth_copying), ("small copy", small_copy), ("trusted", trusted), ("beats rival", beats_rival))


def passes(planner: "planner.Planner", req: Request, plan: Plan) -> bool:
    """Whether ``plan`` passes every guard (a plan without copies passes them all)."""
    return not plan.copies or all(guard(planner, req, plan) for _, guard in GUARDS)


def cheapest(planner: "planner.Planner", req: Request, plans: Sequence[Plan]) -> Plan | None:
    """The plan of least predicted ms among those that pass the guards (ties, and plans without a time
    model: the first offered), or None."""
    ok = [p for p in plans if passes(planner, req, p)]
    return min(ok, key=lambda p: p.ms if p.ms is not None else float("inf"), default=None)
