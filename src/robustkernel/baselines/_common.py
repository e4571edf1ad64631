"""Shared machinery of the kernel baselines: parameter docs, the baseline base, weighted ridge.

Every kernel baseline is a :class:`robustkernel._kernel_model.estimator.KernelModel`, the same
kernel model f(x) = sum_j w_j k(x_j, x) + b as the Subquantile estimators, with the same kernel
arguments and the same fitted ``dual_coef_``, ``intercept_`` and ``X_fit_``.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval

from .._fractions import n_kept
from .._kernel_model.estimator import (
    KERNEL_CONSTRAINTS,
    KernelModel,
    KernelRegressorMixin,
    LogitClassifierMixin,
)
from .._kernel_model.kernels import check_finite
from .._kernel_model.losses import Loss

__all__ = [
    "KERNEL_CONSTRAINTS",
    "KERNEL_PARAMETERS_DOC",
    "KernelBaseline",
    "KernelBaselineClassifier",
    "KernelBaselineRegressor",
    "TrimmedBaselineRegressor",
    "WeightedKernelRidge",
]

KERNEL_PARAMETERS_DOC = r"""alpha : float, default=1.0
        Ridge penalty :math:`\alpha \|f\|_{\mathcal{H}}^2` added to the loss summed over rows
        (the convention of sklearn's KernelRidge and of the Subquantile estimators).
    kernel : str or callable, default="rbf"
        Kernel as in :class:`sklearn.kernel_ridge.KernelRidge` ("linear" gives the paper's
        linear model); "precomputed" means X is the kernel matrix.
    gamma, degree, coef0 : float, default=None, 3, 1
        Kernel parameters passed to ``pairwise_kernels``; gamma=None is 1 / n_features.
    kernel_params : dict, default=None
        Extra keyword arguments of a callable kernel.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept b."""


class KernelBaseline(KernelModel):
    """Base of the kernel baselines: the whole kernel matrix of the training rows at once."""

    # K, the weighted matrix D K D and its Cholesky factor (CRR, STIR; measured 3.1 n^2).
    _fit_memory_matrices = 4
    _memory_remedy = (
        "fit on fewer rows, or use SubquantileKernelRegressor / SubquantileKernelClassifier "
        "with n_components= (--n-components on the command line), which needs O(n m) memory"
    )

    def _prepare(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, Loss]:
        """Validate (X, y); return X, the kernel matrix, the encoded targets Y (n, C), the loss."""
        X, y = self._validate_training_data(X, y)
        Y, loss = self._encode_target(y)
        self._check_fit_memory(X.shape[0])
        K = self._kernel(X)
        check_finite(K)
        return X, K, Y, loss

class KernelBaselineRegressor(KernelRegressorMixin, KernelBaseline):
    """Kernel baseline for a single real target (squared loss)."""


class KernelBaselineClassifier(LogitClassifierMixin, ClassifierMixin, KernelBaseline):
    """Kernel baseline for two (logistic loss) or more (softmax loss) classes."""


class TrimmedBaselineRegressor(KernelBaselineRegressor):
    """Base of CRR and TORRENT-GD: regressors told the corrupted fraction ``epsilon``.

    Both keep ceil((1 - epsilon) n) rows (:func:`robustkernel._fractions.n_kept`) and iterate on
    one kernel matrix for at most ``max_iter`` steps, down to a tolerance ``tol``. Subclasses add
    their own parameters to :attr:`_parameter_constraints` and start ``fit`` with
    :meth:`_prepare_fit`.
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **KERNEL_CONSTRAINTS,
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
    }

    def _prepare_fit(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Validate (X, y); return X, the kernel matrix K, the targets as a column Y (n, 1) and
        the number of rows kept, ceil((1 - epsilon) n)."""
        X, K, Y, _ = self._prepare(X, y)
        return X, K, Y, n_kept(Y.shape[0], self.epsilon)


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
