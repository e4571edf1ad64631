"""`MetricKernelRidgeCV`: lam chosen by leave-one-out error, and a final ridge for prediction.

Along a warm-started path over ``lam`` every learned metric ``Sigma`` is scored by the closed-form
leave-one-out error of the best kernel ridge fit on it: kernel ``phi(s ||x - x'||^2_Sigma)`` with
a bandwidth factor ``s`` and a ridge ``mu`` from small grids. For the centred kernel ridge fit
with an unpenalized intercept the fitted values are ``S y`` with
``S = 11^T / n + K_c (K_c + n mu I)^{-1}``, so the leave-one-out residual of row ``i`` is
``r_i / (1 - S_ii) = n mu a_i / (n mu [(K_c + n mu I)^{-1}]_ii - 1/n)`` (``a`` the dual
coefficients); one eigendecomposition of ``K_c`` per ``(Sigma, s)`` serves every ``mu``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import eigh
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
    clone,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._estimator import MetricKernelRidge, MetricKernelRidgePath, metric_kernel_ridge_path
from ._objective import (
    DISTANCE_KERNELS,
    INNER_PRODUCT_KERNELS,
    KernelFamily,
    kernel_argument,
    resolve_kernel,
)

__all__ = ["MetricKernelRidgeCV", "leave_one_out_mse"]

DEFAULT_LAMS = tuple(np.round(np.geomspace(1.0, 1e-3, 10), 6).tolist())
DEFAULT_SCALES = tuple(2.0**k for k in range(-3, 4))
DEFAULT_RIDGES = tuple(10.0**k for k in range(-6, 1))


def leave_one_out_mse(
    argument: np.ndarray,
    y: np.ndarray,
    scales: np.ndarray,
    ridges: np.ndarray,
    family: KernelFamily,
) -> np.ndarray:
    """Leave-one-out mean squared error of kernel ridge with kernel ``phi(s A)``, every ``(s, mu)``.

    Parameters
    ----------
    argument : ndarray of shape (n, n)
        ``A``: squared Sigma-distances (or Sigma-inner products) between the training rows.
    y : ndarray of shape (n,)
        Targets.
    scales, ridges : ndarray
        Bandwidth factors ``s`` and ridges ``mu`` (the ``lam`` of `MetricKernelRidge`: the
        penalty ``(mu / 2) ||f||^2`` next to a mean squared error).
    family : KernelFamily
        The kernel profile.

    Returns
    -------
    ndarray of shape (len(scales), len(ridges))
        The mean over rows of the squared leave-one-out residuals (each row deleted from a fit
        with the same penalty ``n mu ||f||^2`` on the sum of squares).
    """
    n = y.shape[0]
    yc = y - y.mean()
    out = np.empty((len(scales), len(ridges)))
    for i, s in enumerate(scales):
        K = family.fn(s * argument)
        shift = K.mean(axis=1)
        shift -= 0.5 * shift.mean()
        Kc = K - shift[:, None]
        Kc -= shift[None, :]
        values, Q = eigh(Kc, overwrite_a=True, check_finite=False)
        values = np.maximum(values, 0.0)
        Qy = Q.T @ yc
        Q2 = Q * Q
        for j, mu in enumerate(ridges):
            inverse = 1.0 / (values + n * mu)
            a = Q @ (inverse * Qy)
            a -= a.mean()
            leverage_gap = n * mu * (Q2 @ inverse) - 1.0 / n
            out[i, j] = float(np.mean((n * mu * a / leverage_gap) ** 2))
    return out


class MetricKernelRidgeCV(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, RegressorMixin, BaseEstimator
):
    """`MetricKernelRidge` with ``lam`` chosen by leave-one-out error, and a ridge tuned to predict.

    Fits `metric_kernel_ridge_path` over ``lams`` (warm starts, in the order given). For every
    learned metric ``Sigma`` it computes, in closed form, the leave-one-out error of kernel ridge
    with kernel ``phi(s ||x - x'||^2_Sigma)`` for every bandwidth factor ``s`` in ``scales`` and
    ridge ``mu`` in ``ridges``; the ``lam`` whose metric reaches the smallest error is kept, and
    the final predictor is that kernel ridge fit (``s``, ``mu``) on all rows. ``lam`` thus decides
    the subspace (and its rank), ``s`` and ``mu`` the fit on it: the paper's ``lam`` that makes
    ``Sigma`` exactly low rank is a heavy ridge for prediction.

    The leave-one-out errors treat each ``Sigma`` as given, although it was learned on the same
    rows: they rank the metrics, they are not an unbiased estimate of the test error.

    Parameters
    ----------
    lams : array-like, default=None
        Grid of ``lam`` for the metric, fitted in the order given. ``None``: 10 values from 1 down
        to 1e-3, evenly spaced in logarithm (from large to small, so that the rank grows along the
        path).
    scales : array-like, default=None
        Bandwidth factors ``s`` of the final ridge. ``None``: 1/8, 1/4, ..., 8.
    ridges : array-like, default=None
        Ridges ``mu`` of the final ridge (the ``lam`` of `MetricKernelRidge`). ``None``:
        1e-6, 1e-5, ..., 1.
    kernel, kernel_params, solver, tol, max_iter, diagonal
        As in `MetricKernelRidge`.

    Attributes
    ----------
    lam_ : float
        The chosen ``lam``.
    scale_, ridge_ : float
        Bandwidth factor and ridge of the final kernel ridge fit.
    loo_mse_ : ndarray of shape (n_lams,)
        Per ``lam``, the smallest leave-one-out mean squared error over ``(s, mu)``.
    path_ : MetricKernelRidgePath
        The path over ``lams`` (with its estimators).
    metric_ : MetricKernelRidge
        The fit at ``lam_``: its ``Sigma_``, ``rank_``, ``components_``, ``eigenvalues_``,
        ``kkt_residual_`` are also exposed here.
    Sigma_, rank_, components_, eigenvalues_, kkt_residual_
        Those of ``metric_``.
    n_iter_ : int
        Iterations of the metric fits, summed over the path.
    final_ : MetricKernelRidge
        The predictor: kernel ridge with the fixed metric ``scale_ * Sigma_`` and ridge ``ridge_``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string feature names.

    See Also
    --------
    MetricKernelRidge : One ``lam``, the paper's estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.metric_kernel_ridge import MetricKernelRidgeCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((120, 4))
    >>> y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.standard_normal(120)
    >>> model = MetricKernelRidgeCV(lams=[0.1, 0.01]).fit(X, y)
    >>> model.rank_ >= 1 and model.predict(X).shape == (120,)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "lams": ["array-like", None],
        "scales": ["array-like", None],
        "ridges": ["array-like", None],
        "kernel": [StrOptions({*DISTANCE_KERNELS, *INNER_PRODUCT_KERNELS}), tuple, list],
        "kernel_params": [dict, None],
        "solver": [StrOptions({"auto", "lbfgs", "projected_gradient"})],
        "tol": [Interval(Real, 0.0, None, closed="left"), None],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "diagonal": ["boolean"],
    }

    def __init__(
        self,
        lams: Any = None,
        *,
        scales: Any = None,
        ridges: Any = None,
        kernel: str | tuple[Any, Any] = "gaussian",
        kernel_params: dict[str, Any] | None = None,
        solver: str = "auto",
        tol: float | None = None,
        max_iter: int = 2000,
        diagonal: bool = False,
    ) -> None:
        self.lams = lams
        self.scales = scales
        self.ridges = ridges
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.diagonal = diagonal

    @staticmethod
    def _grid(values: Any, default: tuple[float, ...], name: str) -> np.ndarray:
        grid = np.asarray(default if values is None else values, dtype=float).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError(f"{name} must be a non-empty list of finite values > 0.")
        return grid

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> MetricKernelRidgeCV:
        """Fit the path, choose ``lam`` and the final ridge by leave-one-out error.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : MetricKernelRidgeCV
            The fitted estimator.
        """
        # leave-one-out needs two rows left after deleting one
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=3)
        y = column_or_1d(y, warn=True).astype(np.float64, copy=False)
        lams = self._grid(self.lams, DEFAULT_LAMS, "lams")
        scales = self._grid(self.scales, DEFAULT_SCALES, "scales")
        ridges = self._grid(self.ridges, DEFAULT_RIDGES, "ridges")
        template = MetricKernelRidge(
            kernel=self.kernel,
            kernel_params=self.kernel_params,
            solver=self.solver,
            tol=self.tol,
            max_iter=self.max_iter,
            diagonal=self.diagonal,
        )
        path: MetricKernelRidgePath = metric_kernel_ridge_path(
            X, y, lams, estimator=template, return_estimators=True
        )
        family = resolve_kernel(self.kernel, self.kernel_params)
        scores = []
        for model in path.estimators:
            argument = kernel_argument(X, None, model._metric_for_kernel(), family)
            scores.append(leave_one_out_mse(argument, y, scales, ridges, family))
        best = [np.unravel_index(np.argmin(s), s.shape) for s in scores]
        self.loo_mse_ = np.array([s[b] for s, b in zip(scores, best, strict=True)])
        k = int(np.argmin(self.loo_mse_))
        self.path_ = path
        self.n_iter_ = int(path.n_iter.sum())
        self.metric_ = path.estimators[k]
        self.lam_ = float(lams[k])
        self.scale_ = float(scales[best[k][0]])
        self.ridge_ = float(ridges[best[k][1]])
        final = clone(template).set_params(
            lam=self.ridge_, init=self.scale_ * self.metric_.Sigma_, max_iter=0
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.final_ = final.fit(X, y)
        for name in ("Sigma_", "rank_", "components_", "eigenvalues_", "kkt_residual_"):
            setattr(self, name, getattr(self.metric_, name))
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predict with the final kernel ridge fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.final_.predict(X)

    def transform(self, X: Any) -> np.ndarray:
        """Coordinates in the subspace learned at ``lam_`` (see `MetricKernelRidge.transform`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        X_new : ndarray of shape (n_samples, rank_)
        """
        check_is_fitted(self)
        return self.metric_.transform(X)

    @property
    def _n_features_out(self) -> int:
        return self.rank_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
