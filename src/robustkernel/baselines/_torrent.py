"""TORRENT-GD (Bhatia, Jain, Kar, NeurIPS 2015), kernelised through the core gradient solver."""

from __future__ import annotations

import warnings
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from .._kernel_model.losses import SquaredLoss
from ..subquantile import Problem, gradient_method
from ._common import KERNEL_PARAMETERS_DOC, TrimmedBaselineRegressor


class TorrentGDKernelRegressor(TrimmedBaselineRegressor):
    __doc__ = (
        r"""TORRENT-GD: gradient steps on the active set of the (1 - epsilon) n smallest residuals.

    Bhatia, Jain and Kar, "Robust Regression via Hard Thresholding", NeurIPS 2015, Algorithm
    TORRENT-GD, kernelised: functional gradient descent on the squared loss of the rows of
    smallest residual, the active set chosen anew after every step. A linear kernel with
    alpha -> 0 is the paper's algorithm (with a 1/L step).

    Parameters
    ----------
    epsilon : float, default=0.1
        Corrupted fraction :math:`\beta`; the active set keeps
        :math:`\lceil (1 - \varepsilon) n \rceil` rows.
    """
        + KERNEL_PARAMETERS_DOC
        + r"""
    max_iter : int, default=1000
        Gradient steps (a ConvergenceWarning when reached).
    tol : float, default=1e-8
        Stop when the active set has not changed for ``n_iter_no_change`` steps and the
        relative change of the objective is at most tol.
    n_iter_no_change : int, default=5
        See ``tol``.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,)
        Coefficients :math:`w` of :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b`.
    intercept_ : float
        The intercept.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training data.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        The final active set.
    outlier_scores_ : ndarray of shape (n_samples,)
        Final squared residuals.
    n_iter_ : int
        Gradient steps taken.
    converged_ : bool
        Whether the stopping rule was met.

    See Also
    --------
    robustkernel.SubquantileKernelRegressor : The same objective (solver "gd" and others).

    Notes
    -----
    The paper's algorithm starts from :math:`w = 0` and repeats

    .. math::

        w \leftarrow w - \eta\, X_S \bigl(X_S^\top w - y_S\bigr), \qquad
        S \leftarrow \text{the } (1 - \beta) n \text{ rows of smallest } |y_i - x_i^\top w| .

    Kernelised, that is functional gradient descent on

    .. math::

        F(f) = \sum_{i \in S(f)} \bigl(f(x_i) - y_i\bigr)^2 + \alpha \|f\|_{\mathcal{H}}^2,
        \qquad f(x) = \sum_{j=1}^n w_j \, \kappa(x_j, x) + b,

    with :math:`\kappa` the kernel, :math:`S(f)` the active set, step :math:`1 / L` with
    :math:`L = 2 \lambda_{\max}(K) + 2 \alpha`, and the unpenalized intercept :math:`b` set to
    its exact minimizer on :math:`S` after each step: the core's ``gradient_method`` (solver
    "gd" of :class:`robustkernel.SubquantileKernelRegressor`, of which TORRENT-GD is the
    unconstrained variant, Rathnashyam and Gittens, Section 2), started from :math:`f = 0` as
    in the paper.

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.baselines import TorrentGDKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(100, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    >>> y[:10] += 10.0  # 10% of the targets corrupted
    >>> model = TorrentGDKernelRegressor(epsilon=0.1, alpha=0.1).fit(X, y)
    >>> np.flatnonzero(~model.inlier_mask_)  # the rows left out of the active set
    array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> bool(model.score(X[10:], y[10:]) > 0.95)
    True
"""
    )

    _fit_memory_matrices = 2  # K alone (measured 1.1 n^2)
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **TrimmedBaselineRegressor._parameter_constraints,
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    }

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
        n_iter_no_change: int = 5,
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
        self.n_iter_no_change = n_iter_no_change

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> TorrentGDKernelRegressor:
        """Run TORRENT-GD from f = 0.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, or the n x n kernel matrix for kernel="precomputed".
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : TorrentGDKernelRegressor
            The fitted estimator.
        """
        X, K, Y, kept = self._prepare_fit(X, y)
        n = Y.shape[0]
        problem = Problem(
            K=K,
            Y=Y,
            loss=SquaredLoss(),
            alpha=float(self.alpha),
            k=kept,
            fit_intercept=self.fit_intercept,
        )
        result = gradient_method(
            problem,
            np.zeros((n, 1)),
            np.zeros(1),
            method="gd",
            max_iter=self.max_iter,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            momentum=0.0,
            smoothing=None,
            line_search=False,
        )
        if not result.converged:
            warnings.warn(
                f"TORRENT-GD reached max_iter={self.max_iter} before the active set settled; "
                "increase max_iter.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self._set_dual_model(X, result.w, result.b)
        self.inlier_mask_ = result.evaluation.mask
        self.outlier_scores_ = result.evaluation.losses
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        return self
