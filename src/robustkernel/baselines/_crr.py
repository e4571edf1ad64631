"""CRR: consistent robust regression (Bhatia, Jain, Kamalaruban, Kar, NeurIPS 2017), kernelised."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning

from ._common import (
    KERNEL_PARAMETERS_DOC,
    TrimmedBaselineRegressor,
    WeightedKernelRidge,
)


def hard_threshold(v: np.ndarray, k: int) -> np.ndarray:
    """HT_k(v): keep the k entries of largest magnitude (ties to the lower index), zero the rest."""
    out = np.zeros_like(v)
    if k > 0:
        top = np.argsort(-np.abs(v), kind="stable")[:k]
        out[top] = v[top]
    return out


class CRRKernelRegressor(TrimmedBaselineRegressor):
    __doc__ = (
        r"""Consistent Robust Regression, with the hat matrix of kernel ridge regression.

    Bhatia, Jain, Kamalaruban and Kar, "Consistent Robust Regression", NeurIPS 2017,
    Algorithm 1, kernelised: the targets are a clean fit plus a sparse corruption vector,
    which hard thresholding estimates; the model is then fitted to the corrected targets. A
    linear kernel with alpha -> 0 is the paper's CRR.

    Parameters
    ----------
    epsilon : float, default=0.1
        Assumed corrupted fraction; :math:`k = n - \lceil (1 - \varepsilon) n \rceil` entries of
        the corruption vector are non-zero.
    """
        + KERNEL_PARAMETERS_DOC
        + r"""
    max_iter : int, default=1000
        Iteration cap (a ConvergenceWarning is raised when reached).
    tol : float, default=1e-8
        Stop when :math:`\|b_{\mathrm{new}} - b\|_2 \le \mathrm{tol} \cdot \max(1, \|y\|_2)`.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,)
        Coefficients of the final fit to y - b.
    intercept_ : float
        The intercept.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training data.
    corruption_ : ndarray of shape (n_samples,)
        The estimated corruption vector b (k non-zeros).
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        False on the support of ``corruption_``.
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the tolerance was met.

    See Also
    --------
    TorrentGDKernelRegressor : Hard thresholding of the residuals instead of the corruptions.
    robustkernel.SubquantileKernelRegressor : The subquantile objective, with exact refits.

    Notes
    -----
    The paper's model is :math:`y = X^\top w^* + b^* + \text{noise}` with a :math:`k`-sparse
    corruption vector :math:`b^*`. From :math:`b = 0`, CRR repeats

    .. math::

        b \leftarrow \operatorname{HT}_k\bigl(P b + (I - P) y\bigr)

    until :math:`\|b_{\mathrm{new}} - b\|_2 \le \mathrm{tol} \cdot \max(1, \|y\|_2)`, where
    :math:`\operatorname{HT}_k` keeps the :math:`k` entries of largest magnitude and zeroes the
    rest, and :math:`P` is the hat matrix of least squares. Kernelised, :math:`P` is the hat
    matrix of kernel ridge regression with an unpenalized intercept
    (:math:`P = K (K + \alpha I)^{-1}` without the intercept), so that
    :math:`P b + (I - P) y = y - P (y - b)` is the residual of the fit to the corrected targets;
    one Cholesky factorization serves every iteration. The model is then the kernel ridge fit
    to :math:`y - b`,

    .. math::

        \min_f \; \sum_{i=1}^n \bigl(f(x_i) - (y_i - b_i)\bigr)^2
        + \alpha \|f\|_{\mathcal{H}}^2,
        \qquad f(x) = \sum_{j=1}^n w_j \, \kappa(x_j, x) + c,

    with :math:`\kappa` the kernel and the intercept :math:`c` unpenalized.

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.baselines import CRRKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(100, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    >>> y[:10] += 10.0  # 10% of the targets corrupted
    >>> model = CRRKernelRegressor(epsilon=0.1, alpha=0.1).fit(X, y)
    >>> np.flatnonzero(model.corruption_)  # the support of the estimated corruption
    array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> bool(model.score(X[10:], y[10:]) > 0.95)
    True
"""
    )

    def __init__(
        self,
        epsilon: float = 0.1,
        *,
        alpha: float = 1.0,
        kernel: str | Any = 'rbf',
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        fit_intercept: bool = True,
        max_iter: int = 1000,
        tol: float = 1e-8,
    ) -> None:
        self.epsilon = epsilon
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> CRRKernelRegressor:
        """Estimate the corruption vector, then fit the corrected targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, or the n x n kernel matrix for kernel="precomputed".
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : CRRKernelRegressor
            The fitted estimator.
        """
        X, K, Y, kept = self._prepare_fit(X, y)
        y = Y[:, 0]
        n = y.shape[0]
        k = n - kept
        smoother = WeightedKernelRidge(K, float(self.alpha), self.fit_intercept)
        threshold = self.tol * max(1.0, float(np.linalg.norm(y)))
        b = np.zeros(n)
        converged, n_iter = False, 0
        while n_iter < self.max_iter:
            n_iter += 1
            new_b = hard_threshold(y - smoother.fitted_values(y - b)[:, 0], k)
            change = float(np.linalg.norm(new_b - b))
            b = new_b
            if change <= threshold:
                converged = True
                break
        if not converged:
            warnings.warn(
                f"CRR reached max_iter={self.max_iter} before ||b_new - b|| <= tol; increase "
                "max_iter or tol.",
                ConvergenceWarning,
                stacklevel=2,
            )
        w, intercept = smoother.fit(y - b)
        self._set_dual_model(X, w, intercept)
        self.corruption_ = b
        self.inlier_mask_ = b == 0
        self.n_iter_ = n_iter
        self.converged_ = converged
        return self
