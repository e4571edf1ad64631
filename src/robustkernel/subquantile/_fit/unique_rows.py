"""Exact duplicate rows as weights: a fit that depends on the weighted rows only.

scikit-learn defines sample weights by repetition: a row of integer weight w fits as w copies
of it, and a row of weight 0 as no row. The Subquantile objective honours that exactly (the
weighted subquantile), but the automatic configuration (robust scales, leave-one-out residuals,
folds) would see w copies differently from one row of weight w. So, whenever a fit has weights
or exact duplicate rows (the same features and target), it runs on the distinct rows, each
weighing the total weight of its copies, in a canonical order (sorted by content): X with
sample weights and X with its rows repeated then give the same computation, row for row, and
so the same model. The per-row results are mapped back to the given rows afterwards
(:func:`spread_kept_weight`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from ..._kernel_model.losses import power_of_two_below
from ..._memory import row_chunks


@dataclass(frozen=True)
class UniqueRows:
    """The distinct rows of a table, in canonical order.

    ``first``: the index of each distinct row's first copy among the given rows; ``inverse``:
    the distinct row of every given row; ``weights``: the total weight of each distinct row.
    """

    first: np.ndarray
    inverse: np.ndarray
    weights: np.ndarray

    @property
    def has_copies(self) -> bool:
        """Whether some distinct row stands for more than one given row."""
        return self.first.size < self.inverse.size


def unique_rows(X: Any, y: np.ndarray, weights: np.ndarray | None = None) -> UniqueRows:
    """The distinct (features, target) rows of ``X``, ``y`` (dense or sparse X), sorted by
    content (their non-zero positions and values, then the target: the same order for a dense X
    and its sparse form), with the summed ``weights`` (1 per row where None)."""
    n = y.shape[0]
    target = _target_key(y)
    if weights is None and not sparse.issparse(X) and not _has_copies(np.asarray(X), target):
        # the common case, found in O(n) memory: no copies, so no canonical order is needed
        return UniqueRows(np.arange(n), np.arange(n), np.ones(n))
    # dense rows take their sparse form: the same rows give the same order in either format
    inverse, first = _sparse_groups(sparse.csr_array(X), target)
    per_row = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    with np.errstate(over="ignore"):
        totals = np.bincount(inverse, weights=per_row, minlength=first.size)
    if not np.all(np.isfinite(totals)):
        raise ValueError(
            "sample_weight: the weights of identical rows add up beyond the largest float; "
            "divide every weight by a common factor (the fit depends on their ratios and alpha)."
        )
    return UniqueRows(np.asarray(first), inverse, totals)


def _has_copies(X: np.ndarray, target: np.ndarray) -> bool:
    """Whether two rows of (X, target) are equal: rows of equal random projection (columns
    scaled to magnitude 1 first), checked exactly; a projection costs n values, where sorting
    the rows would copy the table."""
    n = X.shape[0]
    if n < 2:
        return False
    direction = np.random.default_rng(0).standard_normal(X.shape[1] + target.shape[1])
    keys = np.zeros(n)
    with np.errstate(over="ignore", invalid="ignore"):
        size = np.concatenate([np.abs(X).max(axis=0), np.abs(target).max(axis=0)])
        weights = direction / power_of_two_below(size)  # columns at magnitude 1, exactly
        for rows in row_chunks(n, X.shape[1] + target.shape[1]):
            # elementwise, the same operations for every row: equal rows give equal keys
            block = np.column_stack([X[rows], target[rows]]) * weights
            keys[rows] = block.sum(axis=1)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    tied = (ordered[1:] == ordered[:-1]) | np.isnan(ordered[1:])
    if not tied.any():
        return False
    # every row in a run of equal keys, compared exactly (runs are short unless rows repeat)
    rows = order[np.unique(np.r_[np.flatnonzero(tied), np.flatnonzero(tied) + 1])]
    table = np.column_stack([X[rows], target[rows]])
    return bool(np.unique(table, axis=0).shape[0] < rows.size)


def _target_key(y: np.ndarray) -> np.ndarray:
    """Targets as float columns (class labels by their index among the sorted labels)."""
    if y.dtype.kind in "fiub":
        return np.asarray(y, dtype=float).reshape(y.shape[0], -1)
    return np.unique(y, return_inverse=True)[1].astype(float).reshape(-1, 1)


def _sparse_groups(X: sparse.csr_array, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``inverse`` and ``first`` of the distinct rows of a CSR matrix (a row's key: its
    non-zero positions and values, then its target), sorted by key."""
    X = X.copy()
    X.eliminate_zeros()
    X.sort_indices()
    keys = [
        X.indices[start:stop].astype(np.int64).tobytes()
        + b"|"
        + X.data[start:stop].astype(float).tobytes()
        + b"|"
        + target[row].tobytes()
        for row, (start, stop) in enumerate(zip(X.indptr[:-1], X.indptr[1:], strict=True))
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    inverse = np.empty(len(keys), dtype=np.int64)
    first: list[int] = []
    for position, row in enumerate(order):
        if position == 0 or keys[row] != keys[order[position - 1]]:
            first.append(row)
        inverse[row] = len(first) - 1
    # the first copy of each group is its smallest index: rows of equal keys keep their order
    return inverse, np.asarray(first, dtype=np.int64)


def spread_kept_weight(
    unique: UniqueRows, kept: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Each given row's part of its distinct row's ``kept`` weight: the copies in their order,
    each up to its own weight (1 where ``weights`` is None), until the kept weight is spent
    (as the subquantile of the repeated rows keeps the first copies at a tie)."""
    n = unique.inverse.size
    per_row = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    unit = power_of_two_below(per_row.max())  # exact: sums of huge weights stay finite
    per_row, kept = per_row / unit, kept / unit
    order = np.argsort(unique.inverse, kind="stable")
    groups = unique.inverse[order]
    cumulative = np.cumsum(per_row[order])
    starts = np.searchsorted(groups, np.arange(unique.first.size))
    before = cumulative - per_row[order] - (cumulative - per_row[order])[starts][groups]
    share = np.empty(n)
    share[order] = np.clip(kept[groups] - before, 0.0, per_row[order])
    return share * unit
