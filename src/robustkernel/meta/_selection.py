"""Which rows a fit keeps: the weighted subquantile, and honest (out-of-fold) per-row losses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import _safe_indexing

from .._fractions import n_kept
from ..subquantile._objective import ClassFloors

RowLosses = Callable[[Any, Any, np.ndarray], np.ndarray]
"""``row_losses(fitted estimator, X, y)``: the loss of every row, shape (n,)."""


def weighted_subquantile(
    losses: np.ndarray,
    epsilon: float,
    weights: np.ndarray | None = None,
    floors: ClassFloors | None = None,
) -> np.ndarray:
    """The weight each row carries in the fit on the subquantile of ``losses``.

    Without ``weights``: 1 for the k = ceil((1 - epsilon) n) rows of smallest loss (ties broken
    by row index), 0 for the others. With ``weights``: the rows of smallest loss keep their
    weight until the kept weight reaches (1 - epsilon) of the total; the row that crosses it
    keeps the part it needs, so integer weights give the fit on the data with each row repeated
    that many times. ``floors`` keep the smallest losses of each class c first, up to a weight of
    ``minimum[c]`` (rows, without weights).
    """
    n = losses.shape[0]
    unit = weights is None
    weights = np.ones(n) if unit else np.asarray(weights, dtype=float)
    if unit or np.all(weights == np.round(weights)):
        needed = float(n_kept(round(weights.sum()), epsilon))
    else:
        needed = round((1.0 - epsilon) * weights.sum(), 12)
    order = np.argsort(losses, kind="stable")
    ordered = weights[order]
    kept = np.zeros(n)
    if floors is not None:  # each class's smallest losses first, up to its floor
        labels = floors.labels[order]
        for label in np.unique(labels):
            rows = np.flatnonzero(labels == label)
            before = np.cumsum(ordered[rows]) - ordered[rows]
            kept[rows] = np.clip(floors.minimum[label] - before, 0.0, ordered[rows])
    spare = ordered - kept
    before = np.cumsum(spare) - spare
    kept += np.clip(needed - kept.sum() - before, 0.0, spare)
    result = np.empty(n)
    result[order] = kept
    return result


def fit_rows(
    estimator: Any, X: Any, y: np.ndarray, row_weights: np.ndarray, weighted: bool
) -> Any:
    """A clone of ``estimator`` fitted on the rows of positive weight (with their weights when
    ``weighted``)."""
    rows = np.flatnonzero(row_weights > 0)
    fitted = clone(estimator)
    params = {"sample_weight": row_weights[rows]} if weighted else {}
    return fitted.fit(_safe_indexing(X, rows), y[rows], **params)


def out_of_fold_losses(
    estimator: Any,
    fitted: Any,
    X: Any,
    y: np.ndarray,
    row_weights: np.ndarray,
    weighted: bool,
    row_losses: RowLosses,
    n_folds: int,
    random_state: Any,
    stratify: bool,
) -> np.ndarray:
    """Per-row losses that no row scores itself with.

    Rows outside the fit (weight 0) get the loss of ``fitted`` (the model on the kept rows);
    each kept row gets the loss of the model fitted on the kept rows of the other folds.
    """
    losses = row_losses(fitted, X, y)
    kept = np.flatnonzero(row_weights > 0)
    folds = cv_splitter(n_folds, random_state, stratify, y[kept])
    for train, test in folds.split(kept, y[kept]):
        fold_weights = np.zeros_like(row_weights)
        fold_weights[kept[train]] = row_weights[kept[train]]
        model = fit_rows(estimator, X, y, fold_weights, weighted)
        rows = kept[test]
        losses[rows] = row_losses(model, _safe_indexing(X, rows), y[rows])
    return losses


def cv_splitter(n_folds: int, random_state: Any, stratify: bool, y: np.ndarray) -> KFold:
    """Shuffled (stratified, for classifiers whose every class fills the folds) k-fold."""
    if stratify and np.unique(y, return_counts=True)[1].min() >= n_folds:
        return StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
    return KFold(n_folds, shuffle=True, random_state=random_state)
