"""alpha="auto" and gamma="auto" for the regressor: chosen on the contaminated data itself.

Plain cross-validation is steered by the corrupted rows of its validation folds. Here every
candidate gamma gets a trimmed fit (at ``START_ALPHA``) whose kept rows S carry the selection:
one eigendecomposition of K_SS gives, for every alpha of the grid, the closed-form leave-one-out
residuals of kernel ridge (with its unpenalized intercept) on S, and the out-of-sample residuals
of the rows outside S. The score of (gamma, alpha) is the mean of the squared residuals of all
rows after dropping the largest ``trim`` fraction (at least ``MIN_TRIM``): corrupted rows, which
no good fit explains, are dropped and cannot pull the choice toward fits that chase them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.linalg import eigh

ALPHAS = tuple(float(a) for a in np.logspace(-4, 1, 11))
GAMMA_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # times 1 / (n_features var(X))
START_ALPHA = 0.1
MIN_TRIM = 0.1


def gamma_grid(X: np.ndarray) -> list[float]:
    """Candidate gammas around 1 / (n_features sigma^2), sigma^2 a robust feature variance.

    scikit-learn's "scale" uses var(X), which rows moved far away (x -> 100 x) inflate; here
    each feature's variance is (1.4826 MAD)^2, averaged over the features.
    """
    deviations = np.abs(X - np.median(X, axis=0))
    variance = float(np.mean((1.4826 * np.median(deviations, axis=0)) ** 2))
    scale = 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
    return [factor * scale for factor in GAMMA_FACTORS]


def honest_residuals(
    K: np.ndarray, Y: np.ndarray, kept: np.ndarray, alphas: Sequence[float], fit_intercept: bool
) -> np.ndarray:
    """Squared residual norms of every row under kernel ridge on the rows ``kept``, per alpha.

    Leave-one-out residuals c_i / G_ii for the kept rows (G the inverse of the bordered system
    of kernel ridge with intercept), plain residuals for the others; shape (len(alphas), n).
    """
    eigenvalues, V = eigh(K[np.ix_(kept, kept)])
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
        scores[row] = np.sum(residuals**2, axis=1)
    return scores


def trimmed_mean(values: np.ndarray, trim: float) -> np.ndarray:
    """Mean over the last axis after dropping the largest ``trim`` fraction of each row."""
    n = values.shape[-1]
    keep = max(1, int(np.floor((1.0 - trim) * n)))
    return np.sort(values, axis=-1)[..., :keep].mean(axis=-1)


def select(
    Y: np.ndarray,
    gammas: Sequence[float],
    alphas: Sequence[float],
    trim: float,
    kernel_matrix: Callable[[float], np.ndarray],
    kept_rows: Callable[[np.ndarray], np.ndarray],
    fit_intercept: bool,
) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The (gamma, alpha) of least trimmed honest residuals, and the score of every pair.

    Parameters
    ----------
    Y : ndarray
        Targets (n, C).
    gammas, alphas : sequence of float
        The candidates (one value each when the user fixed it).
    trim : float
        Fraction of the largest squared residuals dropped from each score (``MIN_TRIM`` at
        least).
    kernel_matrix : callable
        ``kernel_matrix(gamma)``: the n x n kernel matrix.
    kept_rows : callable
        ``kept_rows(K)``: the rows a trimmed fit at ``START_ALPHA`` (or the fixed alpha) keeps.
    fit_intercept : bool
        Whether the model has an unpenalized intercept.

    Returns
    -------
    gamma, alpha : float
        The chosen pair.
    scores : ndarray of shape (len(gammas), len(alphas))
        The trimmed mean squared honest residual of every pair.
    kept : ndarray of bool
        The rows the trimmed fit at the chosen gamma kept: the final fit starts from them (a
        start from the ordinary fit at a small alpha interpolates every row, and in-sample
        losses then cannot tell the corrupted rows).
    """
    trim = max(trim, MIN_TRIM)
    scores = np.empty((len(gammas), len(alphas)))
    masks = []
    for row, gamma in enumerate(gammas):
        K = kernel_matrix(gamma)
        masks.append(kept_rows(K))
        residuals = honest_residuals(K, Y, masks[-1], alphas, fit_intercept)
        scores[row] = trimmed_mean(residuals, trim)
    best = np.unravel_index(np.argmin(scores), scores.shape)
    return float(gammas[best[0]]), float(alphas[best[1]]), scores, masks[best[0]]
