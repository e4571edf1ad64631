"""Counting rows from a fraction, and a fraction from rows: the one rounding rule of the library
and the one definition of a fit's epsilon (:func:`trimmed_fraction`).

A fraction of n rows is ``fraction * n`` rounded to 12 digits first, so that, e.g., (1 - 0.2) * 10
counts as 8 and not as the 8.000000000000002 that floating point gives, then rounded up (rows
kept by a trimmed objective, rows removed per round) or down (rows corrupted).
"""

from __future__ import annotations

import math
from typing import Any, Literal


def rows_in_fraction(
    fraction: float, n_samples: int, rounding: Literal["up", "down"] = "up"
) -> int:
    """The number of rows that make up ``fraction`` of ``n_samples``, rounded up or down."""
    exact = round(fraction * n_samples, 12)
    return math.ceil(exact) if rounding == "up" else math.floor(exact)


def n_kept(n_samples: int, epsilon: float) -> int:
    """k = ceil((1 - epsilon) n), at least 1: the rows a trimmed objective keeps."""
    return max(1, rows_in_fraction(1.0 - epsilon, n_samples))


def trimmed_fraction(kept: Any, weights: Any = None) -> float:
    """The share of the rows a fit leaves out, its epsilon: one minus the kept weight over the
    total weight.

    Parameters
    ----------
    kept : array of shape (n_samples,)
        Each row's kept weight: a mask (True counts as 1), or a weight (with sample weights,
        the row that crosses the weighted subquantile keeps part of its weight). A Dask array
        is computed.
    weights : array of shape (n_samples,), default=None
        The rows' weights; None: every row counts 1.

    Returns
    -------
    epsilon : float
        In [0, 1].
    """
    total = kept.size if weights is None else weights.sum()
    return 1.0 - float(kept.sum() / total)
