"""Prediction from logits, shared by every kernel classifier of the library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit, softmax


class LogitClassifierMixin:
    """``decision_function``, ``predict_proba`` and ``predict`` from the model's logits.

    The host class provides ``classes_`` and ``_decision(X)``, the logits of shape
    (n_samples, 1) for two classes (binary cross-entropy) or (n_samples, n_classes) for more
    (softmax cross-entropy).
    """

    classes_: np.ndarray
    _decision: Callable[[Any], np.ndarray]

    def decision_function(self, X: Any) -> np.ndarray:
        """Logits f(x): shape (n_samples,) for two classes, (n_samples, n_classes) otherwise.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, or the n_samples x n_train kernel matrix for kernel="precomputed".

        Returns
        -------
        scores : ndarray
            Positive values favour ``classes_[1]`` in the binary case.
        """
        F = self._decision(X)
        return F.ravel() if F.shape[1] == 1 else F

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (sigmoid or softmax of the logits).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``.
        """
        F = self._decision(X)
        if F.shape[1] == 1:
            positive = expit(F[:, 0])
            return np.column_stack([1.0 - positive, positive])
        return softmax(F, axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Predicted class labels.
        """
        F = self._decision(X)
        index = (F[:, 0] > 0).astype(int) if F.shape[1] == 1 else np.argmax(F, axis=1)
        return self.classes_[index]
