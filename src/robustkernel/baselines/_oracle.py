"""Oracle ERM: the base learner fitted on the uncorrupted rows only."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import _num_samples, check_is_fitted

from .._delegation import DelegatesToFitted
from .._version_stamp import VersionStamped


class OracleERM(VersionStamped, DelegatesToFitted, MetaEstimatorMixin, BaseEstimator):
    r"""The ordinary fit of ``estimator`` on the rows known to be clean ("Oracle ERM").

    The practical lower bound of the error under contamination: the same base learner as the
    robust methods, trained on the uncorrupted training rows only. Which rows are clean is data,
    not a hyper-parameter, so it is passed to ``fit`` as the sample-aligned ``clean_mask`` (like
    ``sample_weight``); without it every row is used and the oracle is plain ERM. Prediction,
    ``decision_function``, ``predict_proba`` and ``score`` are those of the fitted base learner.

    Parameters
    ----------
    estimator : estimator object
        The base learner, e.g. ``SubquantileKernelRegressor(epsilon=0)`` (kernel ridge with an
        unpenalized intercept) or ``SubquantileKernelClassifier(epsilon=0)``; cloned at fit.

    Attributes
    ----------
    estimator_ : estimator object
        The base learner fitted on the clean rows.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        The rows used (``clean_mask`` as a boolean mask).
    classes_ : ndarray of shape (n_classes,)
        Class labels (classifiers only).
    n_features_in_ : int
        Number of features seen during fit.

    Notes
    -----
    With :math:`C` the clean rows (``clean_mask``) and :math:`\ell_i` the base learner's loss,
    the oracle is the base learner's own fit on :math:`C`; for the default kernel learners,
    ``SubquantileKernelRegressor(epsilon=0)`` or ``SubquantileKernelClassifier(epsilon=0)``,

    .. math::

        \min_f \; \sum_{i \in C} \ell_i(f) + \alpha \|f\|_{\mathcal{H}}^2, \qquad
        f(x) = \sum_{j \in C} w_j \, \kappa(x_j, x) + b,

    the kernel ridge (squared loss) or kernel logistic / softmax fit without the corrupted
    rows. A robust method whose test error is close to the oracle's lost little to the
    contamination.

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel import SubquantileKernelRegressor
    >>> from robustkernel.baselines import OracleERM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 2))
    >>> y = X[:, 0] + 0.1 * rng.normal(size=50)
    >>> y[:10] = 100.0  # corrupted rows
    >>> clean = np.arange(50) >= 10
    >>> oracle = OracleERM(SubquantileKernelRegressor(epsilon=0, kernel="linear"))
    >>> bool(oracle.fit(X, y, clean_mask=clean).score(X[clean], y[clean]) > 0.9)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "estimator": [HasMethods(["fit", "predict"])]
    }

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.input_tags = inner.input_tags
        tags.target_tags = inner.target_tags
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        return tags

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: Any, y: Any, clean_mask: Any = None, **fit_params: Any) -> OracleERM:
        """Fit a clone of ``estimator`` on the clean rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets or labels.
        clean_mask : array-like of bool of shape (n_samples,) or of int indices, default=None
            The uncorrupted rows; None uses all rows.
        **fit_params : dict
            Passed to the base learner's ``fit``.

        Returns
        -------
        self : OracleERM
            The fitted estimator.
        """
        n = _num_samples(X)
        if clean_mask is None:
            mask = np.ones(n, dtype=bool)
        else:
            given = np.asarray(clean_mask)
            if given.dtype == bool:
                if given.shape != (n,):
                    raise ValueError(
                        f"clean_mask must be a boolean array of shape ({n},), got {given.shape}."
                    )
                mask = given
            elif np.issubdtype(given.dtype, np.integer) and given.ndim == 1:
                if given.size and (given.min() < -n or given.max() >= n):
                    raise ValueError(f"clean_mask indices must lie in [0, {n}).")
                mask = np.zeros(n, dtype=bool)
                mask[given] = True
            else:
                raise ValueError(
                    "clean_mask must be a boolean mask or an array of integer row indices, "
                    f"got dtype {given.dtype}."
                )
        if not mask.any():
            raise ValueError("clean_mask selects no rows; the oracle needs clean rows to fit.")
        index = np.flatnonzero(mask)
        self.estimator_ = clone(self.estimator).fit(
            _safe_indexing(X, index), _safe_indexing(y, index), **fit_params
        )
        self.inlier_mask_ = mask
        return self

    @property
    def classes_(self) -> np.ndarray:
        check_is_fitted(self)
        return self.estimator_.classes_

    @property
    def n_features_in_(self) -> int:
        check_is_fitted(self)
        return self.estimator_.n_features_in_

    @property
    def feature_names_in_(self) -> np.ndarray:
        check_is_fitted(self)
        return self.estimator_.feature_names_in_

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """The base learner's score (R^2 for regressors, accuracy for classifiers).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            True targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            The score.
        """
        check_is_fitted(self)
        return self.estimator_.score(X, y, sample_weight=sample_weight)
