"""Contamination models: corrupt a seeded eps-fraction of the training rows.

Every model replaces the labels (and, for the ``*_feature`` kinds, scales the features) of a
random subset of rows. The number of corrupted rows is ``floor(epsilon * n)`` (see
:func:`n_corrupted`), the same count that a Subquantile fit with the same ``epsilon`` trims
(``n - ceil((1 - epsilon) n)``), so a correct fit can discard every corrupted row.

==========================  ==========  =====================================================
kind                        task        what happens to a corrupted row i
==========================  ==========  =====================================================
``"label"``                 regression  y_i <- N(mean 5, variance 5)
``"oblivious"``             regression  y_i <- N(mean 0, variance 5)
``"label_feature"``         regression  x_i <- 100 x_i, y_i <- 10000 y_i
``"flip"``                  binary      y_i <- the other of the two labels
``"flip_feature"``          binary      the same, and x_i <- 100 x_i
``"wrong_class"``           multiclass  y_i <- a uniformly random *different* class
``"wrong_class_feature"``   multiclass  the same, and x_i <- 100 x_i
==========================  ==========  =====================================================

:func:`contaminated_split` is the experiment protocol: seeded train/test split, standardization
with the statistics of the clean training rows, then corruption of the training rows only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from types import MappingProxyType
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d

from ._fractions import rows_in_fraction

Task = Literal["regression", "binary", "multiclass"]
RandomStateLike = int | np.random.RandomState | None
CorruptionFunction = Callable[
    [np.ndarray, np.ndarray, np.ndarray, RandomStateLike], tuple[np.ndarray, np.ndarray]
]

FEATURE_SCALE = 100.0
LABEL_SCALE = 10_000.0
NOISE_VARIANCE = 5.0
LABEL_NOISE_MEAN = 5.0


# ----------------------------------------------------------------------------------------------
# The models. Each takes (X, y, index, random_state) and returns corrupted copies of X and y;
# the rows outside ``index`` are bit-identical to the input.


def _copies(X: ArrayLike, y: ArrayLike, *, float_y: bool) -> tuple[np.ndarray, np.ndarray]:
    X = np.array(X, dtype=np.float64, copy=True)
    y = np.array(y, dtype=np.float64 if float_y else None, copy=True)
    return X, y


def _gaussian_labels(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike, mean: float
) -> tuple[np.ndarray, np.ndarray]:
    X, y = _copies(X, y, float_y=True)
    rng = check_random_state(random_state)
    y[index] = rng.normal(mean, math.sqrt(NOISE_VARIANCE), size=len(index))
    return X, y


def label_noise(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Replace the targets of the rows ``index`` by draws from N(mean 5, variance 5).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (returned as an unchanged float64 copy).
    y : array-like of shape (n_samples,)
        Real targets.
    index : ndarray of int
        Rows to corrupt.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    X, y : ndarray
        Corrupted copies.
    """
    return _gaussian_labels(X, y, index, random_state, LABEL_NOISE_MEAN)


def oblivious_noise(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Replace the targets of the rows ``index`` by draws from N(mean 0, variance 5).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (returned as an unchanged float64 copy).
    y : array-like of shape (n_samples,)
        Real targets.
    index : ndarray of int
        Rows to corrupt.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    X, y : ndarray
        Corrupted copies.
    """
    return _gaussian_labels(X, y, index, random_state, 0.0)


def label_feature_scaling(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scale the rows ``index``: x_i <- 100 x_i and y_i <- 10000 y_i.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Real targets.
    index : ndarray of int
        Rows to corrupt.
    random_state : None
        Unused (the attack is deterministic); present for a uniform signature.

    Returns
    -------
    X, y : ndarray
        Corrupted copies.
    """
    X, y = _copies(X, y, float_y=True)
    X[index] *= FEATURE_SCALE
    y[index] *= LABEL_SCALE
    return X, y


def label_flip(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Give the rows ``index`` the other label of a binary target (any two label values).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (returned as an unchanged float64 copy).
    y : array-like of shape (n_samples,)
        Labels with exactly two distinct values.
    index : ndarray of int
        Rows to corrupt.
    random_state : None
        Unused (the flip is deterministic); present for a uniform signature.

    Returns
    -------
    X, y : ndarray
        Corrupted copies; y keeps its dtype.
    """
    X, y = _copies(X, y, float_y=False)
    classes = _classes(y, exactly=2, kind="flip")
    y[index] = np.where(y[index] == classes[0], classes[1], classes[0])
    return X, y


def label_flip_feature(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Flip the binary labels of the rows ``index`` and scale their features by 100.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Labels with exactly two distinct values.
    index : ndarray of int
        Rows to corrupt.
    random_state : None
        Unused; present for a uniform signature.

    Returns
    -------
    X, y : ndarray
        Corrupted copies.
    """
    X, y = label_flip(X, y, index)
    X[index] *= FEATURE_SCALE
    return X, y


def wrong_class(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Give each row in ``index`` a class drawn uniformly from the classes other than its own.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (returned as an unchanged float64 copy).
    y : array-like of shape (n_samples,)
        Labels with at least two distinct values (the classes are those present in y).
    index : ndarray of int
        Rows to corrupt.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    X, y : ndarray
        Corrupted copies; y keeps its dtype.
    """
    X, y = _copies(X, y, float_y=False)
    classes = _classes(y, exactly=None, kind="wrong_class")
    rng = check_random_state(random_state)
    true_position = np.searchsorted(classes, y[index])
    # Draw among the C - 1 other classes: skip over the true class's position.
    draw = rng.randint(len(classes) - 1, size=len(index))
    y[index] = classes[draw + (draw >= true_position)]
    return X, y


def wrong_class_feature(
    X: ArrayLike, y: ArrayLike, index: np.ndarray, random_state: RandomStateLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Give the rows ``index`` a random wrong class and scale their features by 100.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Labels with at least two distinct values.
    index : ndarray of int
        Rows to corrupt.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws.

    Returns
    -------
    X, y : ndarray
        Corrupted copies.
    """
    X, y = wrong_class(X, y, index, random_state)
    X[index] *= FEATURE_SCALE
    return X, y


def _classes(y: np.ndarray, *, exactly: int | None, kind: str) -> np.ndarray:
    classes = np.unique(y)
    if exactly is not None and len(classes) != exactly:
        raise ValueError(
            f"Corruption {kind!r} needs exactly {exactly} classes in y; got {len(classes)}."
        )
    if len(classes) < 2:
        raise ValueError(f"Corruption {kind!r} needs at least 2 classes in y; got {len(classes)}.")
    return classes


CORRUPTIONS: Mapping[str, CorruptionFunction] = MappingProxyType(
    {
        "label": label_noise,
        "oblivious": oblivious_noise,
        "label_feature": label_feature_scaling,
        "flip": label_flip,
        "flip_feature": label_flip_feature,
        "wrong_class": wrong_class,
        "wrong_class_feature": wrong_class_feature,
    }
)
"""Corruption name -> function ``f(X, y, index, random_state) -> (X, y)`` (corrupted copies)."""

CORRUPTION_TASKS: Mapping[str, Task] = MappingProxyType(
    {
        "label": "regression",
        "oblivious": "regression",
        "label_feature": "regression",
        "flip": "binary",
        "flip_feature": "binary",
        "wrong_class": "multiclass",
        "wrong_class_feature": "multiclass",
    }
)
"""Corruption name -> the task it applies to (``"wrong_class"`` also accepts two classes)."""


# ----------------------------------------------------------------------------------------------
# Sampling the corrupted rows.


class Corrupted(NamedTuple):
    """Result of :func:`corrupt`.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        Corrupted copy of the features (float64).
    y : ndarray of shape (n_samples,)
        Corrupted copy of the target.
    index : ndarray of int
        Sorted indices of the corrupted rows.
    """

    X: np.ndarray
    y: np.ndarray
    index: np.ndarray


def n_corrupted(n_samples: int, epsilon: float) -> int:
    """Number of rows corrupted at fraction ``epsilon``: floor(epsilon * n_samples).

    The product is rounded to 12 digits before the floor so that, e.g., 0.29 * 100 counts as 29
    and not as the 28.999999999999996 of floating point. floor(eps n) = n - ceil((1 - eps) n) is
    exactly the number of rows a Subquantile fit with the same epsilon leaves out.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    epsilon : float
        Corrupted fraction.

    Returns
    -------
    m : int
        Number of rows to corrupt.
    """
    return rows_in_fraction(epsilon, n_samples, rounding="down")


def _check_target(y: np.ndarray, kind: str) -> None:
    if CORRUPTION_TASKS[kind] == "regression":
        if not np.issubdtype(y.dtype, np.number):
            raise ValueError(f"Corruption {kind!r} is for regression; y must be numeric.")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity.")
    else:
        _classes(y, exactly=2 if CORRUPTION_TASKS[kind] == "binary" else None, kind=kind)


def _validated(X: ArrayLike, y: ArrayLike, kind: str) -> tuple[np.ndarray, np.ndarray]:
    X = check_array(X, dtype=np.float64, ensure_all_finite=True)
    y = column_or_1d(y, warn=True)
    check_consistent_length(X, y)
    _check_target(y, kind)
    return X, y


_PARAMS = {
    "X": ["array-like"],
    "y": ["array-like"],
    "kind": [StrOptions(set(CORRUPTIONS))],
    "epsilon": [Interval(Real, 0.0, 0.5, closed="left")],
    "random_state": ["random_state"],
}


@validate_params(_PARAMS, prefer_skip_nested_validation=True)
def corrupt(
    X: ArrayLike,
    y: ArrayLike,
    kind: str,
    epsilon: float,
    *,
    random_state: RandomStateLike = None,
) -> Corrupted:
    """Corrupt a random ``floor(epsilon * n)`` rows of (X, y) with the model ``kind``.

    The inputs are never modified. The corrupted rows are the first m entries of a seeded
    permutation of the rows, so with one seed the corrupted sets are nested as epsilon grows.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (finite).
    y : array-like of shape (n_samples,)
        Target: real for the regression kinds, two classes for ``"flip*"``, two or more for
        ``"wrong_class*"``.
    kind : str
        The contamination model, a key of ``robustkernel.corruption.CORRUPTIONS``: "label",
        "oblivious", "label_feature" (regression), "flip", "flip_feature" (binary),
        "wrong_class", "wrong_class_feature" (multiclass).
    epsilon : float in [0, 0.5)
        Fraction of rows to corrupt; the count is ``floor(epsilon * n_samples)``
        (``robustkernel.corruption.n_corrupted``).
    random_state : int, RandomState instance or None, default=None
        Seeds the choice of rows and the replacement values.

    Returns
    -------
    corrupted : Corrupted
        Named tuple ``(X, y, index)``: corrupted copies and the sorted corrupted row indices.

    Raises
    ------
    ValueError
        Unknown ``kind``, ``epsilon`` outside [0, 0.5), non-finite X, or a target that does not
        suit the kind (e.g. ``"flip"`` with other than two classes).

    See Also
    --------
    contaminated_split : The experiment protocol: split, standardize, then corrupt.

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.corruption import corrupt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 3))
    >>> y = X.sum(axis=1)
    >>> bad = corrupt(X, y, "label_feature", epsilon=0.1, random_state=0)
    >>> bad.index.size  # floor(0.1 * 100) rows
    10
    >>> bool(np.allclose(bad.X[bad.index], 100 * X[bad.index]))  # x_i <- 100 x_i
    True
    >>> bool(np.allclose(bad.y[bad.index], 10_000 * y[bad.index]))  # y_i <- 10000 y_i
    True
    >>> clean = np.setdiff1d(np.arange(100), bad.index)
    >>> bool(np.array_equal(bad.y[clean], y[clean]))  # every other row is unchanged
    True
    """
    X, y = _validated(X, y, kind)
    rng = check_random_state(random_state)
    m = n_corrupted(X.shape[0], epsilon)
    index = np.sort(rng.permutation(X.shape[0])[:m])
    X_bad, y_bad = CORRUPTIONS[kind](X, y, index, rng)
    return Corrupted(X_bad, y_bad, index)


# ----------------------------------------------------------------------------------------------
# The experiment protocol.


@dataclass(frozen=True, eq=False)
class ContaminatedSplit:
    """Result of :func:`contaminated_split`.

    Attributes
    ----------
    X_train, y_train : ndarray
        Training rows, standardized, then corrupted.
    X_test, y_test : ndarray
        Test rows, standardized with the clean training statistics; never corrupted.
    X_train_clean, y_train_clean : ndarray
        The same training rows before corruption (for Oracle ERM and outlier precision/recall).
    corrupted_index : ndarray of int
        Sorted positions (rows of ``X_train``) that were corrupted.
    train_index, test_index : ndarray of int
        Rows of the original X that form the training and the test split, in that order.
    x_scaler : StandardScaler or None
        Fitted on the clean training features (None if ``standardize=False``).
    y_scaler : StandardScaler or None
        Fitted on the clean training target (regression kinds only; else None).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_train_clean: np.ndarray
    y_train_clean: np.ndarray
    corrupted_index: np.ndarray
    train_index: np.ndarray
    test_index: np.ndarray
    x_scaler: StandardScaler | None
    y_scaler: StandardScaler | None

    @property
    def corrupted_mask(self) -> np.ndarray:
        """Boolean mask over the training rows, True where the row was corrupted."""
        mask = np.zeros(self.X_train.shape[0], dtype=bool)
        mask[self.corrupted_index] = True
        return mask


def _standardized(
    train: np.ndarray, test: np.ndarray, fit: bool
) -> tuple[np.ndarray, np.ndarray, StandardScaler | None]:
    """Scale both parts with the statistics of ``train`` (a no-op copy when ``fit`` is False)."""
    if not fit:
        return train.copy(), test.copy(), None
    two_d = train.ndim == 2
    scaler = StandardScaler().fit(train if two_d else train.reshape(-1, 1))
    if two_d:
        return scaler.transform(train), scaler.transform(test), scaler
    scale = scaler.transform
    return scale(train.reshape(-1, 1)).ravel(), scale(test.reshape(-1, 1)).ravel(), scaler


@validate_params(
    {
        **_PARAMS,
        "test_size": [
            Interval(Real, 0.0, 1.0, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "standardize": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def contaminated_split(
    X: ArrayLike,
    y: ArrayLike,
    kind: str,
    epsilon: float,
    *,
    test_size: float = 0.2,
    standardize: bool = True,
    random_state: RandomStateLike = None,
) -> ContaminatedSplit:
    """Split, standardize with clean training statistics, and corrupt the training rows only.

    The protocol of the Subquantile papers' experiments (Rathnashyam and Gittens, Section 5):
    (1) a seeded train/test split (stratified for the
    classification kinds); (2) standardize x -- and y for the regression kinds -- with the mean
    and standard deviation of the clean training rows, applied to both parts (class labels are
    never scaled); (3) corrupt ``floor(epsilon * n_train)`` training rows with :func:`corrupt`.
    The split is drawn before the corruption from the same seed, so for one ``random_state`` the
    split (and the clean data) is identical for every epsilon and kind of the same task.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Target.
    kind : str
        The contamination model, a key of ``robustkernel.corruption.CORRUPTIONS``: "label",
        "oblivious", "label_feature" (regression), "flip", "flip_feature" (binary),
        "wrong_class", "wrong_class_feature" (multiclass).
    epsilon : float in [0, 0.5)
        Fraction of the training rows to corrupt.
    test_size : float in (0, 1) or int, default=0.2
        As in :func:`sklearn.model_selection.train_test_split`.
    standardize : bool, default=True
        Standardize as described above; if False, the data keep their units.
    random_state : int, RandomState instance or None, default=None
        Seeds the split, the choice of corrupted rows and the replacement values.

    Returns
    -------
    split : ContaminatedSplit
        Corrupted training data, clean test data, the clean training data, the corrupted row
        positions, the split indices and the scalers.

    See Also
    --------
    outlier_precision_recall : Score a fit's flags against ``corrupted_index``.

    Examples
    --------
    Replace 20% of the training targets of scikit-learn's diabetes data by draws from
    N(5, 5), fit on the corrupted rows, and score on the clean test rows:

    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from robustkernel import SubquantileKernelRegressor
    >>> from robustkernel.corruption import contaminated_split
    >>> X, y = load_diabetes(return_X_y=True)
    >>> split = contaminated_split(X, y, "label", epsilon=0.2, random_state=0)
    >>> split.X_train.shape, split.X_test.shape
    ((353, 10), (89, 10))
    >>> split.corrupted_index.size  # floor(0.2 * 353)
    70
    >>> model = SubquantileKernelRegressor().fit(split.X_train, split.y_train)
    >>> flagged = ~model.inlier_mask_
    >>> bool(flagged[split.corrupted_index].mean() > 0.8)  # most corrupted rows flagged
    True
    >>> rmse = np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2))
    >>> bool(rmse < 0.8)  # in standard deviations of the clean training targets
    True
    """
    X, y = _validated(X, y, kind)
    regression = CORRUPTION_TASKS[kind] == "regression"
    rng = check_random_state(random_state)
    train_index, test_index = train_test_split(
        np.arange(X.shape[0]),
        test_size=test_size,
        random_state=rng,
        stratify=None if regression else y,
    )
    X_train, X_test, x_scaler = _standardized(X[train_index], X[test_index], standardize)
    y_train, y_test, y_scaler = _standardized(
        y[train_index], y[test_index], standardize and regression
    )
    bad = corrupt(X_train, y_train, kind, epsilon, random_state=rng)
    return ContaminatedSplit(
        X_train=bad.X,
        y_train=bad.y,
        X_test=X_test,
        y_test=y_test,
        X_train_clean=X_train,
        y_train_clean=y_train,
        corrupted_index=bad.index,
        train_index=train_index,
        test_index=test_index,
        x_scaler=x_scaler,
        y_scaler=y_scaler,
    )


def outlier_precision_recall(
    inlier_mask: ArrayLike, corrupted_index: ArrayLike
) -> tuple[float, float]:
    """Precision and recall of the rows a fit distrusted against the rows actually corrupted.

    The flagged rows are ``~inlier_mask`` (e.g. a Subquantile fit's ``inlier_mask_``).
    precision = (rows flagged and corrupted) / (rows flagged), recall = (rows flagged and
    corrupted) / (rows corrupted). An empty denominator gives 1.0: flagging nothing raises no
    false alarm (precision 1.0), and with nothing corrupted there is nothing to miss (recall
    1.0).

    Parameters
    ----------
    inlier_mask : array-like of bool, shape (n_samples,)
        True for the rows the fit kept.
    corrupted_index : array-like of int
        Indices of the corrupted rows (e.g. ``ContaminatedSplit.corrupted_index``).

    Returns
    -------
    precision, recall : float
        Both in [0, 1].

    Raises
    ------
    TypeError
        If ``inlier_mask`` is not boolean (an index array passed by mistake).
    ValueError
        If ``corrupted_index`` holds duplicates or indices outside the mask.

    Examples
    --------
    Flip 20% of the training labels of scikit-learn's breast cancer data and check which rows
    the classifier distrusts:

    >>> from sklearn.datasets import load_breast_cancer
    >>> from robustkernel import SubquantileKernelClassifier
    >>> from robustkernel.corruption import contaminated_split, outlier_precision_recall
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> split = contaminated_split(X, y, "flip", epsilon=0.2, random_state=0)
    >>> model = SubquantileKernelClassifier().fit(split.X_train, split.y_train)
    >>> precision, recall = outlier_precision_recall(model.inlier_mask_, split.corrupted_index)
    >>> bool(precision > 0.85), bool(recall > 0.85)
    (True, True)
    """
    inlier_mask = column_or_1d(inlier_mask)
    if inlier_mask.dtype != bool:
        raise TypeError(f"inlier_mask must be a boolean array; got dtype {inlier_mask.dtype}.")
    index = np.asarray(corrupted_index, dtype=np.intp).ravel()
    n = inlier_mask.shape[0]
    if index.size and (index.min() < 0 or index.max() >= n):
        raise ValueError(f"corrupted_index must lie in [0, {n}); got values outside.")
    if np.unique(index).size != index.size:
        raise ValueError("corrupted_index contains duplicates.")
    flagged = ~inlier_mask
    hits = int(flagged[index].sum())
    n_flagged = int(flagged.sum())
    precision = hits / n_flagged if n_flagged else 1.0
    recall = hits / index.size if index.size else 1.0
    return precision, recall
