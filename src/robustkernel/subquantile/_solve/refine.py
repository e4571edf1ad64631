"""The M-step after a trimmed regression fit: bounded influence, and the clean hard rows back.

The trimmed fit keeps k = ceil((1 - epsilon) n) rows whatever their losses: when the corrupted
rows outnumber n - k, the kept ones among them (one is enough) pull the fit, and most of all its
unpenalized intercept, without bound. As MM-estimators follow a high-breakdown start (Yohai,
"High breakdown-point and high efficiency robust estimates for regression", Annals of
Statistics 15(2), 1987), :func:`biweight_refinement` starts from the trimmed fit and runs
iteratively reweighted kernel ridge regression with Tukey's biweight:

    minimize  sum_i w_i (f(x_i) - y_i)^2 + alpha ||f||^2,  w_i = rho'(r_i / s) / (r_i / s),

with the residual scale s fixed from the trimmed fit (1.4826 x the median absolute residual over
all rows: a breakdown point of 50%). A row whose residual exceeds ``BIWEIGHT_C`` s gets weight 0,
so its influence is bounded (zero beyond that); clean rows the trim dropped come back with
weights near 1. c = 4.685 gives 95% efficiency at Gaussian noise. Residuals are honest: the
leave-one-out residual of every row the weighted fit sees, so that a wrong row cannot hide
behind its own kernel coefficient (a flexible kernel fits any single row closely in sample).

Measured (test RMSE / that of the same learner fitted on the clean rows; medians over seeds):

* sklearn's diabetes, standardized, 80/20 split, ceil(0.2 n) training rows scaled x -> 100 x,
  y -> 1e4 y, epsilon=0.2, defaults otherwise, 5 seeds: trimmed fit 1.19 (1.15-1.95; it keeps
  one scaled row and the intercept follows it to -2 ... -9), with the M-step 1.00 (0.997-1.002),
  exactly the 71 scaled rows at weight 0.
* Clean data trimmed by epsilon=0.3 (a sine of two features, 500 rows, 3 seeds): 1.63 trimmed,
  1.02 with the M-step (the trimmed clean rows come back).
* Where the model's bias, not noise, dominates the residuals (sin(2 x_1) + x_2^2 - x_3 with
  alpha = 0.1, gamma = 0.5, 300 rows, 20% of the labels N(5, 5) or rows scaled as above; the
  tests of ``tests/test_subquantile_estimators.py``): 1.03-1.08 trimmed, 1.34-1.44 with the
  M-step, which down-weights the clean rows at the edges where the fit is biased.

So it is not the default: whether it should be, with the hyper-parameters chosen from the data
(a smaller bias), is for the benchmark of the automatic configuration to decide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from ..._memory import row_chunks
from .objective import FeatureProblem, Problem
from .refits import weighted_feature_ridge, weighted_kernel_ridge

BIWEIGHT_C = 4.685
MAD_TO_SIGMA = 1.4826  # 1 / Phi^-1(3/4): the median absolute deviation of N(0, 1) is 1 / 1.4826


@dataclass(frozen=True)
class Refinement:
    """The reweighted fit: coefficients, the final row weights and the residual scale."""

    w: np.ndarray
    b: np.ndarray
    weights: np.ndarray
    scale: float


def biweight(u: np.ndarray) -> np.ndarray:
    """Tukey's biweight weights (1 - (u / c)^2)^2 for |u| < c, else 0."""
    inside = np.clip(1.0 - (np.asarray(u) / BIWEIGHT_C) ** 2, 0.0, None)
    return inside * inside


def weighted_ridge(
    problem: Problem | FeatureProblem, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimize sum_i weights_i (f(x_i) - y_i)^2 + alpha ||f||^2 (intercept unpenalized).

    Returns the coefficients (w, b) and every row's honest residual norm: the leave-one-out
    residual for the rows of positive weight, y_i - f(x_i) for the others (which the fit does
    not see). In-sample residuals of a kernel fit are not honest: a row the kernel fits through
    its own coefficient looks good however wrong it is.
    """
    if isinstance(problem, FeatureProblem):
        return _weighted_feature_ridge(problem, weights)
    rows = weights > 0
    (w, b), lower, solution = weighted_kernel_ridge(problem, weights, problem.alpha)
    # (K_SS + alpha W^-1) c = Y_S - b with 1^T c = 0: the leave-one-out residual of row i is
    # c_i / G_ii, G the inverse of the bordered system restricted to S (Cawley and Talbot 2004).
    inverse_diagonal = np.sum(solve_triangular(lower, np.eye(lower.shape[0]), lower=True) ** 2, 0)
    if problem.fit_intercept:
        ones = solution[:, -1]
        inverse_diagonal = inverse_diagonal - ones**2 / ones.sum()
    residuals = problem.Y - (problem.apply(w) + b)
    residuals[rows] = w[rows] / inverse_diagonal[:, None]
    return w, b, np.linalg.norm(residuals, axis=1)


def _weighted_feature_ridge(
    problem: FeatureProblem, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = problem.n_coefficients
    theta, b, factor, centre, total = weighted_feature_ridge(problem, weights, problem.alpha)
    # Leverage of row i in the weighted fit: w_i (1 / W + (z_i - zbar)^T M^-1 (z_i - zbar)).
    leverage = np.zeros(problem.n_samples)
    for rows in row_chunks(problem.n_samples, m):
        centred = np.asarray(problem.Z[rows], dtype=np.float64) - centre
        quadratic = np.sum(centred * cho_solve(factor, centred.T).T, axis=1)
        leverage[rows] = weights[rows] * (quadratic + (1.0 / total if problem.fit_intercept else 0))
    residuals = problem.Y - (problem.apply(theta) + b)
    return theta, b, np.linalg.norm(residuals, axis=1) / (1.0 - leverage)


def biweight_refinement(
    problem: Problem | FeatureProblem, kept: np.ndarray, *, max_iter: int = 50, tol: float = 1e-8
) -> Refinement | None:
    """Iteratively reweighted kernel ridge with Tukey's biweight, from the trimmed fit.

    Parameters
    ----------
    problem : Problem or FeatureProblem
        The squared-loss objective (its ``k`` and ``radius`` are not used).
    kept : ndarray of bool
        The rows of the trimmed fit, the start: the fit on them and its honest residuals fix
        the residual scale s (1.4826 x their median).
    max_iter : int, default=50
        Reweighting steps at most.
    tol : float, default=1e-8
        Stop when no weight changes by more than ``tol``.

    Returns
    -------
    refinement : Refinement or None
        None when the residual scale is 0 (the start fits half the rows exactly: there is no
        scale to bound residuals by, and the trimmed fit is kept).
    """
    weights = kept.astype(float)
    w, b, residuals = weighted_ridge(problem, weights)
    scale = float(MAD_TO_SIGMA * np.median(residuals))
    if not scale > 0:
        return None
    for _ in range(max_iter):
        updated = biweight(residuals / scale)
        change = float(np.max(np.abs(updated - weights)))
        weights = updated
        w, b, residuals = weighted_ridge(problem, weights)
        if change <= tol:
            break
    return Refinement(w, b, weights, scale)
