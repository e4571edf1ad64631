"""Shared machinery of the kernel baselines: kernel handling, target encoding, weighted ridge.

Every kernel baseline models f(x) = sum_j w_j k(x_j, x) + b with the kernel arguments of
:class:`robustkernel.SubquantileKernelRegressor` (alpha, kernel, gamma, degree, coef0,
kernel_params, fit_intercept) and stores ``dual_coef_``, ``intercept_`` and ``X_fit_`` exactly like
the core, so ``predict`` is the same K(X, X_fit_) @ dual_coef_ + intercept_.
"""

from __future__ import annotations

from numbers import Real
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from .._kernels import KERNELS, compute_kernel, kernel_params
from .._logit_outputs import LogitClassifierMixin
from .._losses import BinaryLogLoss, Loss, SoftmaxLoss, SquaredLoss

KERNEL_CONSTRAINTS: dict[str, list[Any]] = {
    "alpha": [Interval(Real, 0.0, None, closed="neither")],
    "kernel": [StrOptions(set(KERNELS)), callable],
    "gamma": [Interval(Real, 0.0, None, closed="left"), None],
    "degree": [Interval(Real, 0.0, None, closed="left")],
    "coef0": [Real],
    "kernel_params": [dict, None],
    "fit_intercept": ["boolean"],
}

KERNEL_PARAMETERS_DOC = """alpha : float, default=1.0
        Ridge penalty alpha * ||f||_H^2 added to the loss summed over rows (the convention of
        sklearn's KernelRidge and of the Subquantile estimators).
    kernel : str or callable, default="rbf"
        Kernel as in :class:`sklearn.kernel_ridge.KernelRidge` ("linear" gives the paper's
        linear model); "precomputed" means X is the kernel matrix.
    gamma, degree, coef0 : float, default=None, 3, 1
        Kernel parameters passed to ``pairwise_kernels``; gamma=None is 1 / n_features.
    kernel_params : dict, default=None
        Extra keyword arguments of a callable kernel.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept b."""


class KernelBaseline(BaseEstimator):
    """Base of the kernel baselines: validation, the kernel matrix, prediction.

    Subclasses write their own ``__init__`` (sklearn reads the parameters from its signature),
    set ``_parameter_constraints`` and call :meth:`_prepare` in ``fit``.
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = dict(KERNEL_CONSTRAINTS)
    _is_classifier: ClassVar[bool] = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # -- fitting helpers ---------------------------------------------------------------------

    def _kernel(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        params = kernel_params(self.kernel, self.gamma, self.degree, self.coef0, self.kernel_params)
        return compute_kernel(X, Y, self.kernel, params)

    def _prepare(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, Loss]:
        """Validate (X, y); return X, the kernel matrix, the encoded targets Y (n, C), the loss.

        Regressors take a single real target (squared loss); classifiers encode two classes as a
        {0, 1} column (binary log-loss) and more as one-hot rows (softmax loss).
        """
        X, y = validate_data(self, X, y, y_numeric=not self._is_classifier)
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(
                f'kernel="precomputed" needs a square n x n kernel matrix at fit, got {X.shape}.'
            )
        if self._is_classifier:
            y = column_or_1d(y, warn=True)
            check_classification_targets(y)
            self.classes_, encoded = np.unique(y, return_inverse=True)
            if self.classes_.size < 2:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes; the data "
                    f"contains only one class: {self.classes_[0]!r}."
                )
            if self.classes_.size == 2:
                Y, loss = encoded.astype(float)[:, None], BinaryLogLoss()
            else:
                Y, loss = np.eye(self.classes_.size)[encoded], SoftmaxLoss()
        else:
            Y, loss = np.asarray(y, dtype=float).reshape(-1, 1), SquaredLoss()
        K = self._kernel(X)
        if not np.all(np.isfinite(K)):
            raise ValueError("The kernel matrix contains NaN or infinity; check X and the kernel.")
        return X, K, Y, loss

    def _set_model(self, X: np.ndarray, w: np.ndarray, b: np.ndarray) -> None:
        """Store the fitted coefficients: 1-D for one output column, 2-D for softmax."""
        w = np.asarray(w, dtype=float).reshape(X.shape[0], -1)
        b = np.atleast_1d(np.asarray(b, dtype=float))
        single = w.shape[1] == 1
        self.X_fit_ = X
        self.dual_coef_ = w.ravel() if single else w
        self.intercept_ = float(b[0]) if single else b

    # -- prediction --------------------------------------------------------------------------

    def _decision(self, X: Any) -> np.ndarray:
        """Model outputs f(X), shape (n_samples, n_outputs)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        w = self.dual_coef_.reshape(self.X_fit_.shape[0], -1)
        return self._kernel(X, self.X_fit_) @ w + np.atleast_1d(self.intercept_)


class KernelBaselineRegressor(RegressorMixin, KernelBaseline):
    """Kernel baseline for a single real target (squared loss)."""

    def predict(self, X: Any) -> np.ndarray:
        """Predict targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, or the n_samples x n_train kernel matrix for kernel="precomputed".

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Predictions.
        """
        return self._decision(X).ravel()


class KernelBaselineClassifier(LogitClassifierMixin, ClassifierMixin, KernelBaseline):
    """Kernel baseline for two (logistic loss) or more (softmax loss) classes."""

    _is_classifier = True


class WeightedKernelRidge:
    """Minimizer of sum_i s_i (f(x_i) - z_i)^2 + alpha ||f||_H^2 for fixed weights s >= 0.

    With D = diag(sqrt(s)) and A = D K D + alpha I (factorized once), the solution is
    w = D u with A u = D (z - b 1) and, with an intercept, b = d^T A^-1 D z / d^T A^-1 d where
    d = D 1 (the weighted normal equation sum_i s_i r_i = 0). Rows with s_i = 0 get w_i = 0, so
    0/1 weights fit on a subset. Many targets z can be fitted against one factorization.
    """

    def __init__(
        self,
        K: np.ndarray,
        alpha: float,
        fit_intercept: bool,
        weights: np.ndarray | None = None,
    ) -> None:
        n = K.shape[0]
        self.K = K
        self.fit_intercept = fit_intercept
        self.d = np.ones(n) if weights is None else np.sqrt(np.asarray(weights, dtype=float))
        A = self.d[:, None] * K * self.d[None, :]
        A.flat[:: n + 1] += alpha
        try:
            self._factor = cho_factor(A)
        except LinAlgError as error:
            raise ValueError(
                "The kernel matrix (plus alpha I) is not positive definite: a kernel must be "
                "symmetric positive semidefinite."
            ) from error
        self._v = cho_solve(self._factor, self.d) if fit_intercept else None

    def fit(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coefficients (w of shape (n, C), b of shape (C,)) for targets z of shape (n, C)."""
        z = np.asarray(z, dtype=float).reshape(self.K.shape[0], -1)
        u = cho_solve(self._factor, self.d[:, None] * z)
        b = np.zeros(z.shape[1])
        if self.fit_intercept:
            denominator = float(self.d @ self._v)
            if denominator > 0:
                b = (self.d @ u) / denominator
                u = u - np.outer(self._v, b)
        return self.d[:, None] * u, b

    def fitted_values(self, z: np.ndarray) -> np.ndarray:
        """The hat matrix applied to z: K w + b for the fit of z, shape (n, C)."""
        w, b = self.fit(z)
        return self.K @ w + b
