"""Predictions of a meta-estimator that are those of its fitted ``estimator_``.

The meta-estimators (``SubquantileRegressor`` / ``SubquantileClassifier`` and the
``OracleERM`` baseline) fit a clone of a given estimator on some of the rows and predict with it.
:class:`DelegatesToFitted` gives them ``predict`` and, where the estimator has them
(scikit-learn's ``available_if``), ``decision_function``, ``predict_proba`` and
``predict_log_proba``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

__all__ = ["DelegatesToFitted"]


def _estimator_has(method: str) -> Callable[[Any], bool]:
    """Whether the fitted estimator (before fit: the one that will be fitted) has ``method``."""

    def check(self: DelegatesToFitted) -> bool:
        if hasattr(self, "estimator_"):
            return hasattr(self.estimator_, method)
        return hasattr(self._unfitted_estimator(), method)

    return check


class DelegatesToFitted:
    """Mixin: predictions from ``self.estimator_``, the estimator the meta-estimator fitted."""

    estimator: Any

    def _unfitted_estimator(self) -> Any:
        """The estimator ``fit`` will clone (a subclass with a default one overrides this)."""
        return self.estimator

    def predict(self, X: Any) -> np.ndarray:
        """Predict with the fitted estimator (``estimator_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predicted targets or labels.
        """
        check_is_fitted(self)
        return self.estimator_.predict(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        """Compute the decision values of the fitted estimator (``estimator_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            The estimator's decision values.
        """
        check_is_fitted(self)
        return self.estimator_.decision_function(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """Compute the class probabilities of the fitted estimator (``estimator_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities, columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Compute the log-probabilities of the fitted estimator (``estimator_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities, columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        return self.estimator_.predict_log_proba(X)
