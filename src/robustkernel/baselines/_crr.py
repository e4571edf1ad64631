"""CRR: consistent robust regression (Bhatia, Jain, Kamalaruban, Kar, NeurIPS 2017), kernelised."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning

from ._common import KERNEL_PARAMETERS_DOC, TrimmedBaselineRegressor, WeightedKernelRidge


def hard_threshold(v: np.ndarray, k: int) -> np.ndarray:
    """HT_k(v): keep the k entries of largest magnitude (ties to the lower index), zero the rest."""
    out = np.zeros_like(v)
    if k > 0:
        top = np.argsort(-np.abs(v), kind="stable")[:k]
        out[top] = v[top]
    return out


class CRRKernelRegressor(TrimmedBaselineRegressor):
    __doc__ = (
        """Consistent Robust Regression, with the hat matrix of kernel ridge regression.

    Bhatia, Jain, Kamalaruban and Kar, "Consistent Robust Regression", NeurIPS 2017,
    Algorithm 1. The model is y = X^T w* + b* + noise with a k-sparse corruption vector b*; CRR
    alternates b <- HT_k(P b + (I - P) y) from b = 0, with P the hat matrix of least squares and
    HT_k the hard thresholding to the k largest magnitudes, until ||b_new - b||_2 <= tol, and then
    fits w to y - b. Kernelised: P is the hat matrix of kernel ridge regression with an
    unpenalized intercept (P = K (K + alpha I)^-1 without intercept), so P b + (I - P) y is the
    residual y - P (y - b) of the fit to the corrected targets; one Cholesky factorization serves
    every iteration. A linear kernel with alpha -> 0 is the paper's CRR.

    Parameters
    ----------
    epsilon : float, default=0.1
        Assumed corrupted fraction; k = n - ceil((1 - epsilon) n) entries of b are non-zero.
    """
        + KERNEL_PARAMETERS_DOC
        + """
    max_iter : int, default=1000
        Iteration cap (a ConvergenceWarning is raised when reached).
    tol : float, default=1e-8
        Stop when ||b_new - b||_2 <= tol * max(1, ||y||_2).

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
"""
    )

    def __init__(
        self,
        epsilon: float = 0.1,
        *,
        alpha: float = 1.0,
        kernel: str | Any = "rbf",
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        fit_intercept: bool = True,
        max_iter: int = 1000,
        tol: float = 1e-8,
    ) -> None:
        self._set_kernel_parameters(
            alpha, kernel, gamma, degree, coef0, kernel_params, fit_intercept
        )
        self.epsilon = epsilon
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
