"""The subquantile: which rows the objective keeps, and its threshold."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit


def n_kept(n_samples: int, epsilon: float) -> int:
    """k = ceil((1 - epsilon) n), the number of rows kept in the objective.

    The product is rounded to 12 digits first so that, e.g., (1 - 0.2) * 10 counts as 8 and not
    as the 8.000000000000002 that floating point gives.
    """
    return max(1, math.ceil(round((1.0 - epsilon) * n_samples, 12)))


def subquantile(losses: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Mask of the k rows with the smallest loss (ties broken by row index) and the threshold.

    The threshold is the k-th smallest loss: the maximizing t of the papers' g(t, f).
    """
    order = np.argsort(losses, kind="stable")
    mask = np.zeros(losses.shape[0], dtype=bool)
    mask[order[:k]] = True
    return mask, float(losses[order[k - 1]])


def smooth_weights(losses: np.ndarray, threshold: float, smoothing: float) -> np.ndarray:
    """Softplus-smoothed membership sigma(s (t - l_i)) of each row in the subquantile."""
    return expit(smoothing * (threshold - losses))
