"""Trimmed validation scores: model selection that contaminated validation folds cannot mislead.

A validation fold drawn from contaminated data holds about the same fraction of corrupted rows
as the training folds. Plain RMSE on such a fold is dominated by the corrupted rows, so plain
cross-validation rewards the models that chase them (no trimming, a weak ridge). A trimmed score
drops the fraction ``trim`` of validation rows with the largest loss before averaging -- the
subquantile of the validation loss, the same rule the Subquantile estimators fit with -- so it
measures how well a model explains the rows it can trust.

Choosing ``trim``: at least the contaminated fraction you expect (when unsure, the ``epsilon_``
of an ``epsilon="auto"`` fit, rounded up), and not much more: a larger trim also drops the hard
clean rows and blurs the differences between good models. The default is 0.2.

Recipe (GridSearchCV over alpha, gamma and epsilon on contaminated data):

>>> import numpy as np
>>> from sklearn.model_selection import GridSearchCV, KFold
>>> from robustkernel import SubquantileKernelRegressor
>>> from robustkernel.metrics import make_trimmed_scorer
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(-2, 2, size=(120, 1))
>>> y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=120)
>>> y[:24] = rng.normal(5, np.sqrt(5), size=24)  # 20% of the labels replaced
>>> search = GridSearchCV(
...     SubquantileKernelRegressor(),
...     {"epsilon": [0.0, 0.2], "alpha": [0.01, 1.0], "gamma": [1.0]},
...     scoring=make_trimmed_scorer("rmse", trim=0.25),
...     cv=KFold(4, shuffle=True, random_state=0),
... ).fit(X, y)
>>> search.best_params_["epsilon"]
0.2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import make_scorer
from sklearn.utils.validation import check_consistent_length, column_or_1d

from ._fractions import n_kept

DEFAULT_TRIM = 0.2


def _kept_losses(losses: np.ndarray, trim: float) -> np.ndarray:
    """The ceil((1 - trim) n) smallest losses."""
    if not 0.0 <= trim < 1.0:
        raise ValueError(f"trim must be in [0, 1), got {trim!r}.")
    return np.sort(losses)[: n_kept(losses.shape[0], trim)]


def trimmed_rmse(y_true: ArrayLike, y_pred: ArrayLike, *, trim: float = DEFAULT_TRIM) -> float:
    """Root mean squared error over the rows left after dropping the worst ``trim`` fraction.

    The ceil((1 - trim) n) rows with the smallest squared error are kept; trim=0 is the plain
    RMSE.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Observed targets (possibly contaminated).
    y_pred : array-like of shape (n_samples,)
        Predictions.
    trim : float in [0, 1), default=0.2
        Fraction of rows dropped: the rows with the largest squared error.

    Returns
    -------
    rmse : float
        Trimmed RMSE; lower is better.

    Examples
    --------
    >>> from robustkernel.metrics import trimmed_rmse
    >>> trimmed_rmse([0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 100.0], trim=0.2)
    1.0
    """
    y_true, y_pred = column_or_1d(y_true), column_or_1d(y_pred)
    check_consistent_length(y_true, y_pred)
    squared = (np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)) ** 2
    return float(np.sqrt(np.mean(_kept_losses(squared, trim))))


def trimmed_accuracy(y_true: ArrayLike, y_pred: ArrayLike, *, trim: float = DEFAULT_TRIM) -> float:
    """Accuracy over the rows left after dropping up to ``trim`` of the rows, errors first.

    With a 0-1 loss the dropped rows are misclassified ones, so the score is
    min(1, n_correct / k) with k = ceil((1 - trim) n): every model that errs on at most the trim
    fraction scores 1 (choose ``trim`` close to the expected contamination, see the module
    documentation).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Observed labels (possibly flipped).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    trim : float in [0, 1), default=0.2
        Fraction of rows dropped, misclassified rows first.

    Returns
    -------
    accuracy : float
        Trimmed accuracy in [0, 1]; higher is better.

    Examples
    --------
    >>> from robustkernel.metrics import trimmed_accuracy
    >>> trimmed_accuracy([0, 1, 1, 0, 1], [0, 1, 0, 1, 1], trim=0.2)
    0.75
    """
    y_true, y_pred = column_or_1d(y_true), column_or_1d(y_pred)
    check_consistent_length(y_true, y_pred)
    errors = (y_true != y_pred).astype(float)
    return float(1.0 - np.mean(_kept_losses(errors, trim)))


METRICS: dict[str, tuple[Callable[..., float], bool]] = {
    "rmse": (trimmed_rmse, False),
    "accuracy": (trimmed_accuracy, True),
}


def make_trimmed_scorer(
    metric: Literal["rmse", "accuracy"], *, trim: float = DEFAULT_TRIM
) -> Callable[..., float]:
    """A scikit-learn scorer (for ``scoring=`` of GridSearchCV, cross_val_score, ...).

    Built with :func:`sklearn.metrics.make_scorer`; the RMSE scorer has
    ``greater_is_better=False``, so GridSearchCV reports it negated (as "neg_root_mean_squared
    _error" is), and the best model has the largest score.

    Parameters
    ----------
    metric : {"rmse", "accuracy"}
        :func:`trimmed_rmse` (regression) or :func:`trimmed_accuracy` (classification).
    trim : float in [0, 1), default=0.2
        Fraction of each validation fold dropped before scoring.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y)``.

    Examples
    --------
    >>> from robustkernel.metrics import make_trimmed_scorer
    >>> scorer = make_trimmed_scorer("rmse", trim=0.1)
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}.")
    function, greater_is_better = METRICS[metric]
    _kept_losses(np.zeros(1), trim)  # validate trim now, not at the first fold
    return make_scorer(function, greater_is_better=greater_is_better, trim=trim)
