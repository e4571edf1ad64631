"""alpha="auto" and gamma="auto": chosen on the contaminated data itself.

Plain cross-validation is steered by the corrupted rows of its validation folds. Here every
candidate gamma gets a trimmed fit (at a starting alpha) whose kept rows S carry the selection:
only kept rows train the models that are scored, and every row is scored out of sample.

Regressor: one eigendecomposition of K_SS (of Z_S^T Z_S on approximate features) gives, for
every alpha of the grid, the closed-form leave-one-out residuals of kernel ridge (with its
unpenalized intercept) on S, and the out-of-sample residuals of the rows outside S. The score of
(gamma, alpha) is the mean of the squared residuals of all rows after dropping the largest
``trim`` fraction (at least ``MIN_TRIM``): corrupted rows, which no good fit explains, are dropped
and cannot pull the choice toward fits that chase them. Kernels without a gamma (linear, cosine,
precomputed, callables) only choose alpha.

Classifier: gammas ``CLASSIFIER_GAMMA_FACTORS`` times :func:`robust_gamma` (scikit-learn's
gamma="scale" with a robust variance) and alphas ``CLASSIFIER_ALPHAS``, chosen by stratified
3-fold cross-validation whose models are fitted on the kept rows of the other folds only
(``_folds.out_of_fold_outputs``) and scored by the misclassification rate of all rows against
their given labels, untrimmed: under label noise the data can recover (flipped rows a minority
in every region) the error against the given labels grows with the error against the true ones,
whereas a log-loss, trimmed or not, rewards over- or under-confidence on the flipped rows.
Among equal scores the smallest alpha wins (equal regression scores do not occur in practice).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import sparse
from scipy.linalg import eigh
from sklearn.metrics.pairwise import KERNEL_PARAMS
from sklearn.utils.sparsefuncs import mean_variance_axis

from ..._kernel_model.losses import (
    LinkSquaredLoss,
    SquaredLoss,
    class_indices,
)
from ..._memory import row_chunks
from .._solve.objective import FeatureProblem, Problem
from .folds import out_of_fold_outputs
from .groups import deletable_groups

ALPHAS = tuple(float(a) for a in np.logspace(-4, 1, 11))
GAMMA_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # times 1 / (n_features var(X))
START_ALPHA = 0.1
MIN_TRIM = 0.1
CLASSIFIER_ALPHAS = (0.01, 0.1, 1.0)
CLASSIFIER_GAMMA_FACTORS = (0.25, 1.0, 4.0)
CLASSIFIER_START_ALPHA = 1.0
# The hinge losses: alpha = 1 / (2 C) for SVC's C in 0.1, 1, 10, 100 (the grid a tuned SVC
# searches), and five kernel widths around scikit-learn's gamma="scale".
HINGE_ALPHAS = (0.005, 0.05, 0.5, 5.0)
HINGE_GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


def takes_gamma(kernel: object) -> bool:
    """Whether the kernel (a name of ``pairwise_kernels``) has a gamma parameter."""
    return isinstance(kernel, str) and "gamma" in KERNEL_PARAMS.get(kernel, ())


def robust_gamma(X: np.ndarray | sparse.spmatrix) -> float:
    """1 / (n_features sigma^2), sigma^2 a robust feature variance.

    scikit-learn's "scale" uses var(X), which rows moved far away (x -> 100 x) inflate; here
    each feature's scale is 1.4826 MAD, and sigma^2 the mean of their squares. A feature whose
    MAD is 0 (a binary feature with a majority value, a feature mostly 0) takes the median of
    the other features' scales: its standard deviation is not robust (Boston housing, 20% of
    the rows x -> 100 x: the two such features' standard deviations took gamma from 0.11 to
    0.0004). Where every MAD is 0, the standard deviations; where sigma^2 is then 0 or not
    representable (features beyond 1e154), 1 / n_features (gamma=None). A sparse X gives the
    same value without being made dense (its medians from each column's stored values and
    its count of zeros).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if sparse.issparse(X):
            scales = 1.4826 * _sparse_column_mads(sparse.csc_array(X))
            deviations = np.sqrt(mean_variance_axis(sparse.csc_matrix(X), axis=0)[1])
        else:
            deviations = np.std(X, axis=0)
            scales = 1.4826 * np.median(np.abs(X - np.median(X, axis=0)), axis=0)
        positive = scales[scales > 0]
        fallback = np.median(positive) if positive.size else deviations
        scales = np.where(scales > 0, scales, fallback)
        variance = float(np.mean(scales**2))
    if not 0 < variance < np.inf:
        return 1.0 / X.shape[1]
    return 1.0 / (X.shape[1] * variance)


def _sparse_column_mads(X: sparse.csc_array) -> np.ndarray:
    """Median absolute deviation of each column of a sparse matrix (zeros included)."""
    n = X.shape[0]
    mads = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        stored = X.data[X.indptr[j] : X.indptr[j + 1]]
        zeros = n - stored.size
        median = _median_with_zeros(stored, zeros)
        mads[j] = _median_with_zeros(np.abs(stored - median), zeros, fill=abs(median))
    return mads


def _median_with_zeros(values: np.ndarray, zeros: int, fill: float = 0.0) -> float:
    """np.median of ``values`` together with ``zeros`` copies of ``fill`` (when the copies are
    more than half of all, the median is ``fill`` without building them)."""
    if zeros > values.size:
        return fill
    return float(np.median(np.concatenate([values, np.full(zeros, fill)])))


def gamma_grid(X: np.ndarray, factors: Sequence[float] = GAMMA_FACTORS) -> list[float]:
    """Candidate gammas: ``factors`` times :func:`robust_gamma`."""
    scale = robust_gamma(X)
    return [factor * scale for factor in factors]


def honest_residuals(
    problem: Problem | FeatureProblem,
    kept: np.ndarray,
    alphas: Sequence[float],
    counted: np.ndarray | None = None,
) -> np.ndarray:
    """Squared residual norms of the rows ``counted`` (a mask; every row where None) under
    ridge on the rows ``kept``, per alpha.

    Leave-one-out residuals for the kept rows, plain residuals for the others; shape
    (len(alphas), number of counted rows). The problem's own alpha is not used.
    """
    if isinstance(problem, FeatureProblem):
        return _feature_honest_residuals(problem, kept, alphas, counted)
    scores = kernel_honest_residuals(problem.K, problem.Y, kept, alphas, problem.fit_intercept)
    return scores if counted is None else scores[:, counted]


def kernel_honest_residuals(
    K: np.ndarray, Y: np.ndarray, kept: np.ndarray, alphas: Sequence[float], fit_intercept: bool
) -> np.ndarray:
    """Kernel ridge: leave-one-out residuals c_i / G_ii (G the inverse of the bordered system
    of kernel ridge with intercept, c = G y) for the kept rows; for a group of near-duplicate
    kept rows (``groups``), the residuals of the fit without the whole group, (G_gg)^-1 c_g
    (:func:`~robustkernel.subquantile._automatic.groups.deletable_groups`: not a group of every
    kept row with an intercept, which leaves nothing to fit).
    """
    K_kept = K[np.ix_(kept, kept)]
    groups = deletable_groups(K_kept, fit_intercept)
    eigenvalues, V = eigh(K_kept, overwrite_a=True)
    del K_kept
    eigenvalues = np.clip(eigenvalues, 0.0, None)
    Vy, V1 = V.T @ Y[kept], V.sum(axis=0)
    squared_V = V * V
    K_out = K[np.ix_(~kept, kept)]
    scores = np.empty((len(alphas), Y.shape[0]))
    for row, alpha in enumerate(alphas):
        d = 1.0 / (eigenvalues + alpha)
        u = V @ (d[:, None] * Vy)
        diagonal = squared_V @ d
        b = np.zeros(Y.shape[1])
        if fit_intercept:
            v = V @ (d * V1)
            b = u.sum(axis=0) / v.sum()
            u = u - np.outer(v, b)
            diagonal = diagonal - v**2 / v.sum()
        residuals = np.empty_like(Y)
        residuals[kept] = u / diagonal[:, None]
        residuals[~kept] = Y[~kept] - (K_out @ u + b)
        kept_residuals = residuals[kept]
        for group in groups:
            block = (V[group] * d) @ V[group].T
            if fit_intercept:
                block -= np.outer(v[group], v[group]) / v.sum()
            kept_residuals[group] = np.linalg.solve(block, u[group])
        residuals[kept] = kept_residuals
        scores[row] = np.sum(residuals**2, axis=1)
    return scores


def _feature_honest_residuals(
    problem: FeatureProblem,
    kept: np.ndarray,
    alphas: Sequence[float],
    counted: np.ndarray | None = None,
) -> np.ndarray:
    """Ridge on features f = z^T theta + b: leave-one-out residuals r_i / (1 - h_ii) of the
    rows ``counted`` (every row where None).

    With the intercept, features and targets are centred on the kept rows' means; the hat
    matrix of the kept rows is then 1/k + Zc (Zc_S^T Zc_S + alpha I)^-1 Zc^T, and one
    eigendecomposition Zc_S^T Zc_S = V diag(s) V^T serves every alpha: with P = Zc V,
    h_ii = 1/k + sum_j P_ij^2 / (s_j + alpha) and the fit is P (V^T Zc_S^T y_S) / (s + alpha).
    Only the counted rows' P is formed: O(n m^2) for the Gram matrix, O(c m^2) for c counted
    rows.
    """
    Z, Y = problem.Z, problem.Y
    n, m = Z.shape
    k = int(kept.sum())
    z_mean = np.zeros(m)
    y_mean = np.zeros(Y.shape[1])
    if problem.fit_intercept:
        z_mean = np.asarray(Z[kept], dtype=float).mean(axis=0)
        y_mean = Y[kept].mean(axis=0)
    gram = np.zeros((m, m))
    moment = np.zeros((m, Y.shape[1]))
    for rows in row_chunks(n, m):
        block = np.asarray(Z[rows], dtype=float)[kept[rows]] - z_mean
        gram += block.T @ block
        moment += block.T @ (Y[rows][kept[rows]] - y_mean)
    eigenvalues, V = eigh(gram)
    eigenvalues = np.clip(eigenvalues, 0.0, None)
    scored = np.arange(n) if counted is None else np.flatnonzero(counted)
    P = np.empty((scored.size, m))
    shift = z_mean @ V  # (z - z_mean) V without a centred copy of the features
    for rows in row_chunks(scored.size, m):
        P[rows] = np.asarray(Z[scored[rows]], dtype=float) @ V - shift
    projected = V.T @ moment
    centred = Y[scored] - y_mean
    in_fit = kept[scored]
    D = 1.0 / (eigenvalues[:, None] + np.asarray(alphas, dtype=float))  # m x n_alphas
    leverages = (1.0 / k if problem.fit_intercept else 0.0) + np.square(P) @ D
    scores = np.empty((len(alphas), scored.size))
    for row in range(len(alphas)):
        residuals = centred - P @ (D[:, row, None] * projected)
        residuals[in_fit] /= (1.0 - leverages[in_fit, row])[:, None]
        scores[row] = np.sum(residuals**2, axis=1)
    return scores


def out_of_fold_errors(
    problem: Problem | FeatureProblem, kept: np.ndarray, alphas: Sequence[float]
) -> np.ndarray:
    """1.0 where a row's out-of-fold prediction (``_folds.out_of_fold_outputs``) differs from
    its given label; shape (len(alphas), n_samples)."""
    labels = class_indices(problem.Y)
    outputs = out_of_fold_outputs(problem, kept, alphas)
    return np.array([problem.loss.predicted_classes(F) != labels for F in outputs], dtype=float)


def honest_scores(
    problem: Problem | FeatureProblem,
    kept: np.ndarray,
    alphas: Sequence[float],
    trim: float,
    counted: np.ndarray | None = None,
) -> np.ndarray:
    """Score of every alpha (lower is better) at the problem's kernel and kept rows ``kept``,
    over the rows ``counted`` (a mask; every row where None).

    Squared loss: the trimmed mean of :func:`honest_residuals` (trim at least ``MIN_TRIM``;
    a kept row of leverage 1 has no leave-one-out residual, and the alpha then scores inf).
    Squared loss through a link: the same trimmed mean of out-of-fold squared residuals.
    Classification losses: the mean of :func:`out_of_fold_errors`.
    """
    rows = slice(None) if counted is None else counted
    if isinstance(problem.loss, LinkSquaredLoss):
        outputs = out_of_fold_outputs(problem, kept, alphas)
        losses = np.array([problem.loss.loss(F, problem.Y) for F in outputs])
        return trimmed_mean(losses[:, rows], max(trim, MIN_TRIM))
    if not isinstance(problem.loss, SquaredLoss):
        return out_of_fold_errors(problem, kept, alphas)[:, rows].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        residuals = honest_residuals(problem, kept, alphas, counted)
    residuals = np.where(np.isnan(residuals), np.inf, residuals)
    return trimmed_mean(residuals, max(trim, MIN_TRIM))


def trimmed_mean(values: np.ndarray, trim: float) -> np.ndarray:
    """Mean over the last axis after dropping the largest ``trim`` fraction of each row."""
    n = values.shape[-1]
    keep = max(1, int(np.floor((1.0 - trim) * n)))
    return np.sort(values, axis=-1)[..., :keep].mean(axis=-1)


def select(
    gammas: Sequence[float | None],
    alphas: Sequence[float],
    trim: float,
    trimmed_fit: Callable[[float | None], tuple[Problem | FeatureProblem, np.ndarray]],
    kept_only: bool = False,
) -> tuple[float | None, float, np.ndarray, np.ndarray]:
    """The (gamma, alpha) of least :func:`honest_scores`, and the score of every pair.

    Parameters
    ----------
    gammas, alphas : sequence of float
        The candidates (one value each when the user fixed it; gamma None for kernels
        without one).
    trim : float
        Regression: fraction of the largest squared residuals dropped from each score
        (``MIN_TRIM`` at least).
    trimmed_fit : callable
        ``trimmed_fit(gamma)``: the problem (kernel matrix or features) at that gamma and the
        rows a trimmed fit at the starting alpha (or the fixed alpha) keeps.
    kept_only : bool
        Score the kept rows only (rows known to be outliers, out of every fit, are left out of
        the score, whatever ``trim``); else every row.

    Returns
    -------
    gamma, alpha : float
        The chosen pair; among equal scores the smallest alpha, then the first gamma.
    scores : ndarray of shape (len(gammas), len(alphas))
        The score of every pair.
    kept : ndarray of bool
        The rows the trimmed fit at the chosen gamma kept: the final fit starts from them (a
        start from the ordinary fit at a small alpha interpolates every row, and in-sample
        losses then cannot tell the corrupted rows).
    """
    scores = np.empty((len(gammas), len(alphas)))
    masks = []
    for row, gamma in enumerate(gammas):
        problem, kept = trimmed_fit(gamma)
        masks.append(kept)
        scores[row] = honest_scores(problem, kept, alphas, trim, kept if kept_only else None)
    best_rows, best_columns = np.nonzero(scores == scores.min())
    pick = int(np.argmin(np.asarray(alphas, dtype=float)[best_columns]))
    return (
        gammas[best_rows[pick]],
        float(alphas[best_columns[pick]]),
        scores,
        masks[best_rows[pick]],
    )


def squared_norm(problem: Problem | FeatureProblem) -> float:
    """The trace of the kernel matrix on the host: of K, or ||Z||_F^2 of features."""
    if isinstance(problem, FeatureProblem):
        return float(np.sum(np.square(problem.Z, dtype=float)))
    return float(np.trace(problem.K))


def resolvable_alpha(alpha: float, trace: float) -> float:
    """alpha, or the smallest ridge float64 resolves on a Gram matrix of this trace where alpha
    is below it: 10 eps tr(K). A smaller ridge is lost to rounding (a positive semidefinite
    kernel then factorizes as indefinite); raising it to this level changes the fit by less than
    the rounding does (for an RBF kernel on n rows the level is 2.2e-15 n)."""
    return max(alpha, 10.0 * np.finfo(float).eps * trace)
