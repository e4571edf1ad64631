"""Exact minimizers of the objective restricted to a fixed set S of kept rows.

The alternating solver calls one of these once per iteration:

* :class:`RidgeSubsetFitter` (squared loss): kernel ridge regression on S in closed form. It
  factorizes K + alpha I once and answers every later subset through the Schur complement of the
  rows left out, caching the columns of (K + alpha I)^-1 it has needed; when the subset changes
  too much for that to pay off it factorizes K_SS + alpha I directly.
* :class:`LbfgsSubsetFitter` (logistic and softmax losses): L-BFGS warm-started at the current
  model, in coordinates whitened by a Cholesky factor of K computed once per fit.

Both honour the RKHS-ball constraint through :func:`fit_in_ball`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, solve, solve_triangular
from scipy.optimize import brentq, minimize

from ._problem import Problem

Coefficients = tuple[np.ndarray, np.ndarray]
_AMORTIZED_ITERATIONS = 3


class RidgeSubsetFitter:
    """Kernel ridge regression (with optional unpenalized intercept) on a subset of the rows."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        n = problem.n_samples
        try:
            self._full = cho_factor(_shifted(problem.K, problem.alpha))
        except LinAlgError as error:
            raise ValueError(_NOT_PSD) from error
        self._inverse_columns = np.empty((n, 0))
        self._position = np.full(n, -1)

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """Minimize the objective over (w, b) with the kept rows fixed to ``mask``."""
        problem = self.problem
        rhs = problem.Y[mask]
        if problem.fit_intercept:
            rhs = np.column_stack([rhs, np.ones(rhs.shape[0])])
        if alpha == problem.alpha:
            solution = self._solve(mask, rhs)
        else:
            solution = cho_solve(cho_factor(_shifted(problem.K[np.ix_(mask, mask)], alpha)), rhs)
        w = np.zeros((problem.n_samples, problem.n_outputs))
        b = np.zeros(problem.n_outputs)
        if problem.fit_intercept:
            u, v = solution[:, :-1], solution[:, -1]
            b = u.sum(axis=0) / v.sum()
            w[mask] = u - np.outer(v, b)
        else:
            w[mask] = solution
        return w, b

    def _solve(self, mask: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve (K_SS + alpha I) x = rhs, choosing the cheaper of Schur complement or direct."""
        n = self.problem.n_samples
        out = np.flatnonzero(~mask)
        if out.size == 0:
            return cho_solve(self._full, rhs)
        k = n - out.size
        missing = out[self._position[out] < 0]
        # New columns of (K + alpha I)^-1 are paid once and reused by every later iteration:
        # amortize them over the few iterations that typically follow.
        schur_cost = 2.0 * n * n * missing.size / _AMORTIZED_ITERATIONS + out.size**3 / 3.0
        direct_cost = k**3 / 3.0
        if direct_cost < schur_cost:
            sub = _shifted(self.problem.K[np.ix_(mask, mask)], self.problem.alpha)
            return cho_solve(cho_factor(sub), rhs)
        self._add_inverse_columns(missing)
        embedded = np.zeros((n, rhs.shape[1]))
        embedded[mask] = rhs
        z = cho_solve(self._full, embedded)
        columns = self._inverse_columns[:, self._position[out]]
        try:
            v = solve(columns[out], z[out], assume_a="pos")
        except LinAlgError:
            sub = _shifted(self.problem.K[np.ix_(mask, mask)], self.problem.alpha)
            return cho_solve(cho_factor(sub), rhs)
        return z[mask] - columns[mask] @ v

    def _add_inverse_columns(self, rows: np.ndarray) -> None:
        if rows.size == 0:
            return
        unit = np.zeros((self.problem.n_samples, rows.size))
        unit[rows, np.arange(rows.size)] = 1.0
        self._position[rows] = self._inverse_columns.shape[1] + np.arange(rows.size)
        self._inverse_columns = np.hstack([self._inverse_columns, cho_solve(self._full, unit)])


class LbfgsSubsetFitter:
    """Kernel logistic / softmax regression on a subset, by L-BFGS in whitened coordinates.

    With K + delta I = L L^T, the variable is v = L^T w, in which the Hessian of the ridge term
    is close to 2 alpha I; the objective and its gradient stay exact in w.
    """

    def __init__(self, problem: Problem, max_iter: int = 1000, tol: float = 1e-7) -> None:
        self.problem = problem
        self.max_iter = max_iter
        self.tol = tol
        self._chol = _jittered_cholesky(problem.K)

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """Minimize the objective over (w, b) with the kept rows fixed to ``mask``."""
        problem = self.problem
        n, C = problem.n_samples, problem.n_outputs
        L = self._chol
        weights = mask.astype(float)[:, None]

        def unpack(x: np.ndarray) -> Coefficients:
            v = x[: n * C].reshape(n, C)
            b = x[n * C :] if problem.fit_intercept else np.zeros(C)
            return solve_triangular(L, v, lower=True, trans="T"), b

        def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
            w, b = unpack(x)
            Kw = problem.K @ w
            F = Kw + b
            value = np.sum(problem.loss.loss(F, problem.Y)[mask]) + alpha * np.sum(w * Kw)
            G = problem.loss.gradient(F, problem.Y) * weights
            grad_v = solve_triangular(L, problem.K @ (G + 2.0 * alpha * w), lower=True)
            parts = [grad_v.ravel()]
            if problem.fit_intercept:
                parts.append(G.sum(axis=0))
            return float(value), np.concatenate(parts)

        start = [(L.T @ w0).ravel()]
        if problem.fit_intercept:
            start.append(b0)
        x0 = np.concatenate(start)
        result = minimize(
            value_and_grad,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 1e-14},
        )
        best = result.x if result.fun <= value_and_grad(x0)[0] else x0
        return unpack(best)


SubsetFit = Callable[[np.ndarray, np.ndarray, np.ndarray, float], Coefficients]


def fit_in_ball(
    fit: SubsetFit,
    problem: Problem,
    mask: np.ndarray,
    w0: np.ndarray,
    b0: np.ndarray,
) -> Coefficients:
    """Minimize on S subject to ||f||_H <= radius.

    For a convex loss the constrained minimizer is the penalized one with the ridge raised to
    alpha + mu, mu >= 0 the Lagrange multiplier; mu is found by a root search on log(mu).
    """
    w, b = fit(mask, w0, b0, problem.alpha)
    if problem.radius is None or _rkhs_norm(problem, w) <= problem.radius:
        return w, b

    def excess(log_mu: float) -> float:
        w_mu, _ = fit(mask, w0, b0, problem.alpha + np.exp(log_mu))
        return _rkhs_norm(problem, w_mu) - problem.radius

    low = np.log(max(problem.alpha, 1e-12)) - 30.0
    high = np.log(max(problem.alpha, 1.0))
    while excess(high) > 0:
        high += 2.0
    log_mu = brentq(excess, low, high, xtol=1e-10, rtol=1e-10)
    w, b = fit(mask, w0, b0, problem.alpha + np.exp(log_mu))
    norm = _rkhs_norm(problem, w)
    if norm > problem.radius:
        w = w * (problem.radius / norm)
    return w, b


def _rkhs_norm(problem: Problem, w: np.ndarray) -> float:
    return float(np.sqrt(max(np.sum(w * (problem.K @ w)), 0.0)))


def _shifted(K: np.ndarray, shift: float) -> np.ndarray:
    A = K.copy()
    A.flat[:: A.shape[0] + 1] += shift
    return A


_NOT_PSD = (
    "The kernel matrix (plus alpha I) is not positive definite: a kernel must be symmetric "
    "positive semidefinite. Check a precomputed or callable kernel."
)


def _jittered_cholesky(K: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of K + delta I, delta the smallest of 1e-10, 1e-9, ... x tr(K)/n."""
    scale = max(float(np.trace(K)) / K.shape[0], np.finfo(float).tiny)
    for exponent in range(-10, -1):
        try:
            return np.linalg.cholesky(_shifted(K, 10.0**exponent * scale))
        except np.linalg.LinAlgError:
            continue
    raise ValueError(_NOT_PSD)
