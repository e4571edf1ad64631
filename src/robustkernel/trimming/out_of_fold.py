"""Honest per-row losses: a clone of any estimator fitted on given rows, and out-of-fold losses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.utils import _safe_indexing

RowLosses = Callable[[Any, Any, np.ndarray], np.ndarray]
"""``row_losses(fitted estimator, X, y)``: the loss of every row, shape (n,)."""


def fit_rows(
    estimator: Any, X: Any, y: np.ndarray, row_weights: np.ndarray, weighted: bool
) -> Any:
    """A clone of ``estimator`` fitted on the rows of positive weight (with their weights when
    ``weighted``)."""
    rows = np.flatnonzero(row_weights > 0)
    fitted = clone(estimator)
    params = {"sample_weight": row_weights[rows]} if weighted else {}
    try:
        return fitted.fit(_safe_indexing(X, rows), y[rows], **params)
    except (ValueError, ArithmeticError) as error:
        if type(error) not in (ValueError, ArithmeticError, FloatingPointError, OverflowError):
            raise  # the library's own errors (a memory or parameter error) keep their type
        raise ValueError(  # numpy's or scipy's message, placed
            f"estimator: {type(estimator).__name__}.fit failed on {rows.size} rows: {error}"
        ) from error


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
    each kept row gets the loss of the model fitted on the kept rows of the other folds. For a
    classifier (``stratify``), other folds that hold a single class (the rows of a rare class
    all in the scored fold) give the constant model of that class: most classifiers refuse one
    class, and no model fitted on one class predicts another.
    """
    losses = row_losses(fitted, X, y)
    kept = np.flatnonzero(row_weights > 0)
    folds = cv_splitter(n_folds, random_state, stratify, y[kept])
    for train, test in folds.split(kept, y[kept]):
        fold_weights = np.zeros_like(row_weights)
        fold_weights[kept[train]] = row_weights[kept[train]]
        if stratify and np.unique(y[kept[train]]).size < 2:
            model = DummyClassifier(strategy="prior").fit(
                np.zeros((train.size, 1)), y[kept[train]]
            )
        else:
            model = fit_rows(estimator, X, y, fold_weights, weighted)
        rows = kept[test]
        losses[rows] = row_losses(model, _safe_indexing(X, rows), y[rows])
    return losses


def cv_splitter(n_folds: int, random_state: Any, stratify: bool, y: np.ndarray) -> KFold:
    """Shuffled (stratified, for classifiers whose every class fills the folds) k-fold."""
    if stratify and np.unique(y, return_counts=True)[1].min() >= n_folds:
        return StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
    return KFold(n_folds, shuffle=True, random_state=random_state)
