"""Counting rows from a fraction: the one rounding rule of the library.

A fraction of n rows is ``fraction * n`` rounded to 12 digits first, so that, e.g., (1 - 0.2) * 10
counts as 8 and not as the 8.000000000000002 that floating point gives, then rounded up (rows
kept by a trimmed objective, rows removed per round) or down (rows corrupted).
"""

from __future__ import annotations

import math
from typing import Literal


def rows_in_fraction(
    fraction: float, n_samples: int, rounding: Literal["up", "down"] = "up"
) -> int:
    """The number of rows that make up ``fraction`` of ``n_samples``, rounded up or down."""
    exact = round(fraction * n_samples, 12)
    return math.ceil(exact) if rounding == "up" else math.floor(exact)


def n_kept(n_samples: int, epsilon: float) -> int:
    """k = ceil((1 - epsilon) n), at least 1: the rows a trimmed objective keeps."""
    return max(1, rows_in_fraction(1.0 - epsilon, n_samples))
