"""The prepared request (gemmgen.runtime.calls) without a GPU: a fake kernel records its launch."""
from __future__ import annotations

import types

import pytest

from gemmgen.runtime import calls


def _prepared(out_span=(0, 4 * 64 * 32)):
    launched = []

    def prepared(M, N, K, lda, ldb, ldc):
        return lambda *args: launched.append(((M, N, K, lda, ldb, ldc), args))

    kernel = types.SimpleNamespace(config=types.SimpleNamespace(layout="NN"),
                                   loaded=types.SimpleNamespace(prepared=prepared, workspace_floats=lambda M, N: 0))
    spans = (calls.span_offsets((64, 16), (64, 4), 4), calls.span_offsets((16, 32), (4, 64), 4))   # A rows, B columns
    call = calls.Prepared(kernel, 64, 32, 16, "NT", 16, 16, 32, False, False, (64, 16), (32, 16), spans, out_span)
    return call, launched


def test_a_call_launches_the_kernel_with_its_pointers_scalars_and_stream():
    call, launched = _prepared()
    call(0x1000, 0x9000, 0x20000, 0.5, 2.0, types.SimpleNamespace(ptr=77))
    assert launched == [((64, 32, 16, 16, 16, 32), (0x1000, 0x9000, 0x20000, 0.5, 2.0, 77, 0))]


@pytest.mark.parametrize("pc,which", [
    (0x20000, None),                 # C far from both
    (0x1000 + 4 * 64 * 16, None),    # C starts right after A's last element
    (0x1000 + 4 * 64 * 16 - 4, "A"),  # ... or on it
    (0x1000 - 4 * 64 * 32 + 4, "A"),  # C ends one float into A
    (0x9000 + 4 * 100, "B"),
])
def test_overlap_of_out_with_a_or_b_is_found_from_the_prepared_spans(pc, which):
    call, _ = _prepared()
    assert call.overlaps(0x1000, 0x9000, pc) == which


def test_forget_drops_this_threads_prepared_requests():
    calls.kept()["x"] = 1
    calls.forget()
    assert "x" not in calls.kept()
