"""Least squares with non-negative coefficients, for the dispatch model's fit (:mod:`.predict`): a
handful of columns, so every subset of them is solved exactly and the best non-negative one kept."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def nonnegative_least_squares(rows: Sequence[tuple[Sequence[float], float]]) -> tuple[float, list[float]]:
    """(sum of squared residuals, x) of argmin over x >= 0 of sum (row . x - y)^2 for rows (row, y): the
    best unconstrained fit over each subset of the columns (the others at zero) whose coefficients are
    all non-negative. A handful of columns: every subset is tried.

    >>> nonnegative_least_squares([((1.0, 0.0), 2.0), ((0.0, 1.0), 3.0)])
    (0.0, [2.0, 3.0])
    >>> nonnegative_least_squares([((1.0, 1.0), 1.0), ((1.0, 2.0), 0.0)])[1]    # the free fit has x[1] < 0
    [0.5, 0.0]
    >>> nonnegative_least_squares([((2.0, 2.0), 4.0)])[1]     # ties (here exact fits) go to the first subset
    [2.0, 0.0]
    """
    if not rows:
        raise ValueError("no rows to fit")
    x_all = np.array([x for x, _ in rows], dtype=float)
    y_all = np.array([y for _, y in rows], dtype=float)
    k = x_all.shape[1]
    gram, rhs, yy = (x_all.T @ x_all).tolist(), (x_all.T @ y_all).tolist(), float(y_all @ y_all)
    best: tuple[float, list[float]] = (yy, [0.0] * k)
    for mask in range(1, 1 << k):
        cols = [i for i in range(k) if mask >> i & 1]
        sol = _solve([[gram[i][j] for j in cols] for i in cols], [rhs[i] for i in cols])
        if sol is None or min(sol) < 0:
            continue
        x = [0.0] * k
        for i, v in zip(cols, sol):
            x[i] = v
        residual = yy - 2 * sum(x[i] * rhs[i] for i in range(k)) + sum(
            x[i] * gram[i][j] * x[j] for i in range(k) for j in range(k))
        if residual < best[0] - 1e-12 * max(yy, 1e-300):
            best = (max(residual, 0.0), x)
    return best


def _solve(m: list[list[float]], b: list[float]) -> list[float] | None:
    """x with m x = b (Gaussian elimination, partial pivoting), or None where m is (nearly) singular."""
    n = len(b)
    m = [row[:] + [v] for row, v in zip(m, b)]
    scale = max((abs(v) for row in m for v in row[:n]), default=0.0)
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) <= 1e-10 * scale:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x
