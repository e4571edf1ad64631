"""Kernel ridge regression with a learned metric ``Sigma`` (Chen, Li, Liu and Ruan, 2023).

The kernel ``k_Sigma(x, x') = phi(||x - x'||^2_Sigma)`` carries a PSD matrix ``Sigma`` learned by
projected gradient descent on ``J_n(Sigma)``, the kernel ridge objective minimized over the
coefficients and intercept. The learned ``Sigma`` is typically exactly low rank; its column space
estimates the central mean subspace, so the estimator is both a regressor and a transformer.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
    clone,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    validate_data,
)
from tqdm.auto import tqdm

from .._kernel_model.kernels import check_finite
from .._kernel_model.losses import power_of_two_below
from .._memory import check_fit_memory, check_memory, row_chunks
from .._version_stamp import VersionStamped
from ._objective import (
    DEFAULT_INNER_PRODUCT_BOUND,
    DISTANCE_KERNELS,
    INNER_PRODUCT_KERNELS,
    KernelFamily,
    factored_descent,
    kernel_argument,
    kernel_matrix,
    projected_gradient_descent,
    resolve_kernel,
)
from ._trimmed import initial_rows, trimmed_metric_fit

__all__ = ["MetricKernelRidge", "MetricKernelRidgePath", "metric_kernel_ridge_path"]

RANK_RTOL = 1e-6
PROJECTED_GRADIENT_TOL = 1e-3  # the paper's ||Sigma+ - Sigma||_F / eta < 1e-3
KKT_TOL = 1e-6  # relative KKT residual the L-BFGS solver drives the fit to
MINIBATCH_WINDOW = 10
TRIMMING_ATTRIBUTES = ("inlier_mask_", "outlier_scores_", "epsilon_", "n_rounds_")
FIT_MEMORY_MATRICES = 8  # argument, K, K_c and the gradient weights, twice in a line search
METRIC_MEMORY_MATRICES = 8  # Sigma, gradient, eigenvectors, candidate..., p x p each
MAX_TARGET_SPREAD = 1e150  # max |y - mean(y)| whose squares, summed, stay finite
MEMORY_REMEDY = (
    "fit on a subsample of the rows (batch_size= bounds the memory of the descent, but the "
    "final fit on all rows is exact)"
)


class ComponentRows:
    """Mixin placed before ``VersionStamped``: ``components_`` holds the learned directions as
    rows, shape (``rank_``, n_features), as ``PCA.components_`` does, and ``transform`` gives
    ``rank_`` coordinates (``get_feature_names_out``) in float64. Estimators pickled before
    this layout held them as columns; their state has no ``ROWS_KEY`` and is transposed when
    loaded, so old model files keep working."""

    ROWS_KEY = "_components_are_rows"

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), self.ROWS_KEY: True}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if not state.pop(self.ROWS_KEY, False) and "components_" in state:
            state["components_"] = np.ascontiguousarray(np.asarray(state["components_"]).T)
        super().__setstate__(state)

    @property
    def _n_features_out(self) -> int:
        """Number of output features of ``transform`` (for ``get_feature_names_out``)."""
        return self.rank_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


class MetricKernelModel(
    ComponentRows, VersionStamped, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
    BaseEstimator,
):
    """Shared core of the estimators with a learned metric: fitting, storage, ``transform``.

    A subclass writes its own ``__init__`` (the parameters of ``_parameter_constraints``, with
    its defaults, and its own), extends ``_parameter_constraints``, encodes ``y`` and calls
    `_fit_metric`; ``_family`` gives the kernel and the loss of the inner problem.
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "lam": [Interval(Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({*DISTANCE_KERNELS, *INNER_PRODUCT_KERNELS}), tuple, list],
        "kernel_params": [dict, None],
        "lr": [Interval(Real, 0.0, None, closed="neither")],
        "armijo_c": [Interval(Real, 0.0, 1.0, closed="left")],
        "beta": [Interval(Real, 0.0, 1.0, closed="neither")],
        "solver": [StrOptions({"auto", "lbfgs", "projected_gradient"})],
        "tol": [Interval(Real, 0.0, None, closed="left"), None],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "diagonal": ["boolean"],
        "init": [StrOptions({"identity"}), "array-like", None],
        "op_norm_bound": [Interval(Real, 0.0, None, closed="neither"), None],
        "batch_size": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def _family(self) -> KernelFamily:
        return resolve_kernel(self.kernel, self.kernel_params)

    def _upper(self, family: KernelFamily) -> float:
        if self.op_norm_bound is not None:
            return float(self.op_norm_bound)
        return DEFAULT_INNER_PRODUCT_BOUND if family.kind == "inner" else np.inf

    def _initial_metric(self, p: int) -> np.ndarray:
        """Starting point as a (p, p) matrix, or its diagonal (p,) when ``diagonal``."""
        if self.init is None or (isinstance(self.init, str) and self.init == "identity"):
            scale = 1.0 / p if self.init is None else 1.0
            return np.full(p, scale) if self.diagonal else np.eye(p) * scale
        S = np.asarray(self.init, dtype=float)
        if not np.all(np.isfinite(S)):
            raise ValueError("init contains NaN or infinity.")
        if self.diagonal and S.shape == (p,):
            return S.copy()
        if S.shape != (p, p):
            raise ValueError(
                f"init must have shape ({p}, {p})"
                + (f" or ({p},)" if self.diagonal else "")
                + f" to match n_features={p}; got {S.shape}."
            )
        if self.diagonal:
            return np.diag(S).copy()
        return 0.5 * (S + S.T)

    def _solver(self, family: KernelFamily, minibatch: bool) -> str:
        """The solver ``"auto"`` stands for, or a ValueError where ``"lbfgs"`` does not apply."""
        lbfgs_applies = family.kind == "distance" and self.op_norm_bound is None and not minibatch
        if self.solver == "auto":
            return "lbfgs" if lbfgs_applies else "projected_gradient"
        if self.solver == "lbfgs" and not lbfgs_applies:
            raise ValueError(
                "solver='lbfgs' needs a translation-invariant kernel, no op_norm_bound and "
                "all rows (batch_size=None); use solver='projected_gradient' (or 'auto')."
            )
        return self.solver

    def _batch_sampler(self, n: int) -> Callable[[], np.ndarray] | None:
        """Draws of ``batch_size`` rows without replacement, or ``None`` to use all ``n`` rows."""
        if self.batch_size is None or self.batch_size >= n:
            return None
        rng = check_random_state(self.random_state)
        m = int(self.batch_size)
        return lambda: rng.choice(n, size=m, replace=False)

    def _fit_metric(
        self,
        X: np.ndarray,
        y: np.ndarray,
        family: KernelFamily,
        weights: np.ndarray | None = None,
    ) -> None:
        """Learn ``Sigma`` on validated ``X`` and encoded ``y`` (rows weighted by ``weights``)
        and store the fitted attributes."""
        n, p = X.shape
        check_fit_memory(type(self).__name__, n, FIT_MEMORY_MATRICES, MEMORY_REMEDY)
        check_memory(
            (2 if self.diagonal else METRIC_MEMORY_MATRICES) * 8.0 * float(p) ** 2,
            f"{type(self).__name__}: a metric on p={p} features (p x p float64 matrices)",
            "reduce the number of features (e.g. PCA or feature selection first)",
        )
        Sigma0 = self._initial_metric(p)
        if self.max_iter > 0 and (self.init is None or isinstance(self.init, str)):
            # a default start: an explicit init (a warm start, or max_iter=0 for plain kernel
            # ridge with a fixed metric) is used as given
            _check_start(X, Sigma0, family)
        batch = self._batch_sampler(n)
        solver = self._solver(family, batch is not None)
        with tqdm(
            total=int(self.max_iter), desc=type(self).__name__, unit="it",
            disable=not self.verbose,
        ) as bar:

            def progress(objective: float) -> None:
                bar.update()
                bar.set_postfix(J=f"{objective:.6g}")

            if solver == "lbfgs":
                descent, tol, options = factored_descent, KKT_TOL, {}
            else:
                descent, tol = projected_gradient_descent, PROJECTED_GRADIENT_TOL
                options = {
                    "upper": self._upper(family),
                    "batch": batch,
                    "window": 1 if batch is None else MINIBATCH_WINDOW,
                }
            tol = tol if self.tol is None else float(self.tol)
            result = descent(
                X, y, Sigma0, float(self.lam), family,
                tol=tol, max_iter=int(self.max_iter), progress=progress, weights=weights,
                lr=float(self.lr), armijo_c=float(self.armijo_c), beta=float(self.beta),
                **options,
            )
        if not result.converged and self.max_iter > 0:
            warnings.warn(
                f"{type(self).__name__} did not meet tol={tol} within max_iter={self.max_iter} "
                "iterations; increase max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )
        self._store(X, result)

    def _store(self, X: np.ndarray, result: Any) -> None:
        """Set the fitted attributes from a `DescentResult`."""
        if result.eigenvectors is None:  # diagonal metric
            d = result.Sigma
            order = np.argsort(-d, kind="stable")
            eigenvalues = d[order]
            vectors = np.eye(d.size)[:, order]
            self.Sigma_ = np.diag(d)
        else:
            order = np.arange(result.eigenvalues.size)[::-1]
            eigenvalues = result.eigenvalues[order]
            vectors = result.eigenvectors[:, order]
            self.Sigma_ = result.Sigma
        self.eigenvalues_ = eigenvalues
        self.rank_ = int(np.count_nonzero(eigenvalues > 0))
        top = eigenvalues[0] if eigenvalues.size else 0.0
        self.numerical_rank_ = int(np.count_nonzero(eigenvalues > RANK_RTOL * top)) if top else 0
        components = vectors[:, : self.rank_].T
        # eigenvectors have no sign: fix it as PCA does (largest entry of each row positive), so
        # that equal metrics give equal components whatever rounding chose
        largest = components[np.arange(self.rank_), np.argmax(np.abs(components), axis=1)]
        self.components_ = np.ascontiguousarray(components * np.sign(largest)[:, None])
        self.dual_coef_ = result.solution.dual_coef
        self.intercept_ = result.solution.intercept
        self.X_fit_ = X
        self.n_iter_ = result.n_iter
        self.objective_history_ = result.objective_history
        self.objective_ = float(result.solution.objective)
        self.kkt_residual_ = float(result.kkt_residual)
        self.converged_ = bool(result.converged)

    # ------------------------------------------------------------------ inference
    def _metric_for_kernel(self) -> np.ndarray:
        return np.diag(self.Sigma_).copy() if self.diagonal else self.Sigma_

    def _decision(self, X: Any) -> np.ndarray:
        """``f(x) + gamma``: the kernel expansion on the training rows, in row chunks."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        metric, family = self._metric_for_kernel(), self._family()
        out = np.empty(X.shape[0])
        for rows in row_chunks(X.shape[0], self.X_fit_.shape[0]):
            K = kernel_matrix(X[rows], self.X_fit_, metric, family)
            check_finite(K)
            np.matmul(K, self.dual_coef_, out=out[rows])
        out += self.intercept_
        return out

    def transform(self, X: Any) -> np.ndarray:
        """Project on the learned subspace: ``X U`` with ``U = V sqrt(D)`` on ``D > 0``.

        Then ``k_Sigma(x, x') = phi(||U^T x - U^T x'||^2)``: an isotropic kernel on the output
        reproduces the learned one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        X_new : ndarray of shape (n_samples, ``rank_``)
            Coordinates in the learned subspace, scaled by ``sqrt`` of the eigenvalues.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        U = self.components_.T * np.sqrt(self.eigenvalues_[: self.rank_])
        out = np.empty((X.shape[0], U.shape[1]))
        for rows in row_chunks(X.shape[0], max(X.shape[1], U.shape[1])):
            np.matmul(X[rows], U, out=out[rows])
        return out


class MetricKernelRidge(RegressorMixin, MetricKernelModel):
    """Kernel ridge regression that also learns the metric ``Sigma`` of its kernel.

    Solves :math:`\\min_{f, \\gamma, \\Sigma \\succeq 0} \\frac{1}{2n} \\sum_i (y_i - f(x_i) -
    \\gamma)^2 + \\frac{\\lambda}{2} \\|f\\|_{\\mathcal{H}_\\Sigma}^2` over the RKHS
    :math:`\\mathcal{H}_\\Sigma` of :math:`k_\\Sigma(x, x') = \\phi(\\|x - x'\\|_\\Sigma^2)`,
    :math:`\\|v\\|_\\Sigma^2 = v^\\top \\Sigma v` (Chen, Li, Liu and Ruan 2023, eq. (1.2); see
    Notes). For fixed ``Sigma`` the inner problem is solved in closed form; the reduced objective
    :math:`J_n(\\Sigma)` is minimized over the PSD cone from :math:`\\Sigma = I / p`, by default to
    a relative KKT residual of ``1e-6`` (``kkt_residual_``). No rank penalty is used, yet the
    solution is typically exactly low rank; ``transform`` projects on its column space.

    ``Sigma`` is in the units of ``X`` and the descent's ``lr`` and ``tol`` in those of ``y``:
    standardize both. Features so large next to the default ``init`` that the kernel vanishes
    between most pairs of rows (e.g. magnitudes of 1e9) are refused with a ValueError, as are
    targets whose squares overflow float64 and fits whose n x n matrices would not fit in the
    available memory (``MemoryError``).

    Parameters
    ----------
    lam : float, default=0.1
        Ridge parameter :math:`\\lambda > 0` (the penalty is :math:`\\frac{\\lambda}{2}
        \\|f\\|_{\\mathcal{H}_\\Sigma}^2` next to a *mean* squared error, so ``lam`` corresponds to
        ``alpha = n * lam`` of ``sklearn.kernel_ridge.KernelRidge``). Not named ``alpha`` as in
        ``SubquantileKernelRegressor`` and ``KernelRidge``, whose ``alpha`` weighs a *sum* of
        losses: one value means a different fit at every n, and ``lam`` is the paper's symbol
        (its tables and the reproduction give ``lam``).
    kernel : {"gaussian", "rbf", "gaussian_mixture", "linear", "cubic"} or (callable, callable), \
            default="gaussian"
        ``"gaussian"``: :math:`\\phi(z) = e^{-z}`; ``"rbf"`` is the same kernel under the
        name ``SubquantileKernelRegressor`` and scikit-learn give it: their
        :math:`e^{-\\gamma \\|x - x'\\|^2}` is :math:`\\Sigma = \\gamma I` here, and the learned
        ``Sigma_`` holds gamma (no ``gamma`` parameter). ``"gaussian_mixture"``:
        :math:`\\phi(z) = \\sum_m c_m e^{-t_m z}` with
        ``kernel_params={"weights": c, "scales": t}``. A pair ``(phi, dphi)`` of vectorised
        callables gives any other translation-invariant kernel
        :math:`\\phi(\\|x - x'\\|_\\Sigma^2)`. ``"linear"`` (:math:`x^\\top \\Sigma x'`) and
        ``"cubic"`` (:math:`(x^\\top \\Sigma x')^3`) are the inner-product kernels of the paper's
        control experiment; they carry the constraint
        :math:`\\|\\Sigma\\|_{\\mathrm{op}} \\le` ``op_norm_bound``.
    kernel_params : dict, default=None
        Parameters of ``"gaussian_mixture"``.
    epsilon : float in [0, 0.5), "auto" or None, default=None
        Fraction of the rows to leave out as suspects (contaminated targets). ``None`` fits all
        rows (the paper's estimator). Otherwise ``Sigma`` and ``f`` are learned on the
        ``k = ceil((1 - epsilon) n)`` rows they explain best (Subquantile minimization):
        starting from the rows kept by ``SubquantileKernelRegressor(epsilon=epsilon)``, metric
        fits on the kept rows alternate with keeping the ``k`` rows of smallest squared residual
        until the kept rows repeat. ``"auto"`` takes ``k`` from that start's estimate of the
        contaminated fraction (``epsilon_``).
    diagonal : bool, default=False
        Restrict ``Sigma`` to diagonal matrices (feature selection).
    random_state : int, RandomState instance or None, default=None
        Seeds the mini-batch draws (ignored when all rows are used). Pass an int for
        reproducible fits.
    verbose : int, default=0
        Show a progress bar over the iterations (with the current ``J_n``) when positive.
    solver : {"auto", "lbfgs", "projected_gradient"}, default="auto"
        ``"projected_gradient"``: the paper's projected gradient descent with Armijo backtracking
        (Section 7.1), stopped by the step-size rule below. ``"lbfgs"``: rounds of L-BFGS on a
        factor ``L`` with ``Sigma = L L^T`` (as many columns as the current rank), each followed
        by one projected gradient step that sets vanishing eigenvalues exactly to zero and lets
        new directions enter, until ``kkt_residual_ <= tol``; translation-invariant kernels
        without ``op_norm_bound`` or ``batch_size`` only. ``"auto"`` is ``"lbfgs"`` where it
        applies and ``"projected_gradient"`` otherwise. ``J_n`` is not convex in ``Sigma``: from
        the same start the two solvers can end at different stationary points (on the paper's
        f = 0 data sets L-BFGS from ``I / p`` sometimes ends at a higher ``J_n`` than projected
        gradient descent continued by L-BFGS; REPRODUCTION.md). Pass a fit's ``Sigma_`` as
        ``init`` to continue it with the other solver.
    lr : float, default=0.1
        Initial step size of every projected gradient line search.
    armijo_c : float, default=1e-3
        Sufficient-decrease constant :math:`c` of the Armijo rule
        :math:`J(\\Sigma^+) \\le J(\\Sigma) - c \\, \\eta \\, \\|G_p\\|_F^2`.
    beta : float, default=0.5
        Backtracking factor.
    tol : float, default=None
        ``"projected_gradient"``: stop when :math:`\\|\\Sigma^+ - \\Sigma\\|_F / \\eta <` ``tol``
        (``None``: ``1e-3``, the paper's). ``"lbfgs"``: stop when ``kkt_residual_ <= tol``
        (``None``: ``1e-6``).
    max_iter : int, default=2000
        Maximum number of iterations: projected gradient steps, plus L-BFGS iterations for
        ``"lbfgs"`` (``0`` fits plain kernel ridge with ``Sigma = init``).
    init : None, "identity" or array-like of shape (n_features, n_features), default=None
        Starting metric. ``None`` is ``I / p`` as in the paper, ``"identity"`` is ``I``; an array
        is projected on the feasible set (its diagonal is used when ``diagonal=True``; a vector of
        length ``p`` is also accepted then).
    op_norm_bound : float, default=None
        Upper bound ``M`` on the eigenvalues of ``Sigma``. ``None`` means ``1e5`` (the paper's
        ``M``) for the inner-product kernels and no bound for translation-invariant kernels.
    batch_size : int, default=None
        ``None`` (or ``batch_size >= n_samples``): every iteration uses all rows, as in the paper.
        An integer ``m >= 2`` below ``n_samples`` gives stochastic (mini-batch) descent: every
        iteration draws ``m`` rows without replacement and computes ``J``, its exact gradient and
        the whole Armijo search on those rows only; the stopping rule is then applied to the step
        averaged over the last 10 iterations, :math:`\\|\\Sigma_t - \\Sigma_{t-10}\\|_F /
        (\\eta_{t-9} + \\dots + \\eta_t) <` ``tol``, so that part of the batch noise cancels. With
        the default ``tol`` that rule is rarely met (the steps stay noisy at the solution), so
        ``max_iter`` acts as the iteration budget and a ``ConvergenceWarning`` is the normal
        outcome. See Notes for the trade-off.

    Attributes
    ----------
    Sigma_ : ndarray of shape (n_features, n_features)
        Learned metric, exactly symmetric PSD.
    eigenvalues_ : ndarray of shape (n_features,)
        Eigenvalues of ``Sigma_`` in decreasing order, as left by the last projection (the
        directions the projection removed are exactly zero).
    components_ : ndarray of shape (``rank_``, n_features)
        Orthonormal basis of the column space of ``Sigma_`` (columns match the first ``rank_``
        entries of ``eigenvalues_``), as rows, as in ``PCA.components_``.
    rank_ : int
        Number of strictly positive eigenvalues left by the projection.
    numerical_rank_ : int
        Number of eigenvalues above ``1e-6`` times the largest.
    dual_coef_ : ndarray of shape (n_samples,)
        Kernel coefficients ``a`` (they sum to zero).
    intercept_ : float
        Intercept ``gamma``.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs (needed by ``predict``); with ``epsilon``, the kept rows.
    n_iter_ : int
        Accepted gradient steps.
    objective_history_ : ndarray of shape (``n_iter_`` + 1,)
        ``J_n`` at the start and after every step; non-increasing. With mini-batches: ``J`` on
        the batch of each step (the first entry on the first batch), hence noisy.
    objective_ : float
        Final ``J_n(Sigma_)`` on all rows.
    kkt_residual_ : float
        How far ``Sigma_`` is from a stationary point of ``J_n`` on the feasible set: in the
        eigenbasis of ``Sigma_`` the norm of the gradient on and across its column space plus
        the negative part of the gradient on its null space (a direction outside the column
        space along which ``J_n`` decreases), times :math:`\\|\\Sigma\\|_F / J_n` so that it is
        scale free. ``0`` exactly at a first-order stationary point.
    converged_ : bool
        Whether the stopping rule was met before ``max_iter``.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        With ``epsilon``: the rows ``Sigma_`` and ``f`` were fitted on (``X_fit_`` holds them).
    outlier_scores_ : ndarray of shape (n_samples,)
        With ``epsilon``: every row's squared residual under the final fit (kept rows in
        sample, the others out of sample); the left-out rows have the largest.
    epsilon_ : float
        With ``epsilon``: the fraction of rows left out.
    n_rounds_ : int
        With ``epsilon``: metric fits done by the alternation.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when X has string feature names.

    See Also
    --------
    metric_kernel_ridge_path : Fit along a grid of ``lam`` with warm starts.
    sklearn.kernel_ridge.KernelRidge : Kernel ridge regression with a fixed kernel.

    Notes
    -----
    Objective. With the kernel :math:`k_\\Sigma(x, x') = \\phi(\\|x - x'\\|_\\Sigma^2)`,
    :math:`\\|v\\|_\\Sigma^2 = v^\\top \\Sigma v`, and :math:`\\mathcal{H}_\\Sigma` its RKHS,
    the metric minimizes

    .. math::

        J_n(\\Sigma) = \\min_{f \\in \\mathcal{H}_\\Sigma, \\, \\gamma} \\;
        \\frac{1}{2n} \\sum_{i=1}^n \\bigl(y_i - f(x_i) - \\gamma\\bigr)^2
        + \\frac{\\lambda}{2} \\|f\\|_{\\mathcal{H}_\\Sigma}^2
        \\quad \\text{over } \\Sigma \\succeq 0 .

    With :math:`K` the kernel matrix, :math:`H = I - \\mathbf{1}\\mathbf{1}^\\top / n` and
    :math:`K_c = H K H`, the inner problem is solved by
    :math:`f = \\sum_j a_j k_\\Sigma(x_j, \\cdot)`,

    .. math::

        a = (K_c + n \\lambda I)^{-1} H y, \\qquad
        \\gamma = \\operatorname{mean}(y - K a), \\qquad
        J_n(\\Sigma) = \\frac{\\lambda}{2} (H y)^\\top (K_c + n \\lambda I)^{-1} H y,

    and the gradient is :math:`\\nabla J_n(\\Sigma) = -\\frac{\\lambda}{2} \\sum_{i,j} a_i a_j \\,
    \\phi'(\\|x_i - x_j\\|_\\Sigma^2) \\, (x_i - x_j)(x_i - x_j)^\\top`. The projected gradient step
    is :math:`\\Sigma^+ = P(\\Sigma - \\eta \\nabla J_n(\\Sigma))`, :math:`P` clipping the negative
    eigenvalues to 0.

    Cost. With all ``n`` rows an iteration costs ``O(n^2 p + n^3)`` time (kernel matrix and
    gradient contraction, Cholesky solve; one more solve per backtracking step) and ``O(n^2)``
    memory. With ``batch_size=m`` it costs ``O(m^2 p + m^3)`` time and ``O(m^2)`` memory,
    independent of ``n``. After the descent, ``dual_coef_`` and ``intercept_`` are always fitted
    on **all** rows with the final ``Sigma_``: one full inner solve, ``O(n^2 p + n^3)`` time and
    ``O(n^2)`` memory, which is what ``predict`` needs anyway.

    Accuracy. A batch of ``m`` rows estimates ``J_n`` and its gradient with noise; each step is
    an exact descent step (Armijo on the same batch) for the batch objective ``J_m``, not for
    ``J_n``, so ``J_n`` need not decrease at every step and the iterate stays in a noise ball
    around a minimizer whose size shrinks as ``m`` grows; more iterations do not shrink it (the
    step size is not decreased). Batch noise also keeps weak directions in ``Sigma``: the rank
    can be larger than with full descent. In the paper's simulation f (c) with p = 20, lam = 0.1
    (``benchmarks/bench_metric.py --section minibatch``, BENCHMARKS.md) ``m = 500`` and 50
    iterations matched the full fit (rank 1, same subspace error and test RMSE) at a fraction of
    the time, while ``m = 200`` was cheaper still but left rank 3 - 5 and a larger subspace error
    with a slightly worse test RMSE; with p = 10 and f (a), ``m = 200`` recovers the direction.
    Use ``m`` in the hundreds, a modest ``max_iter``, and compare ``objective_`` (the full-data
    ``J_n``) between settings.

    References
    ----------
    Y. Chen, Y. Li, K. Liu and F. Ruan, "Kernel Learning in Ridge Regression 'Automatically'
    Yields Exact Low Rank Solution", arXiv:2310.11736.

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.metric_kernel_ridge import MetricKernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 5))
    >>> y = X[:, 0] + X[:, 1] + 0.1 * rng.standard_normal(100)
    >>> model = MetricKernelRidge(lam=0.1).fit(X, y)
    >>> model.transform(X).shape[1] == model.rank_
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **MetricKernelModel._parameter_constraints,
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left"), StrOptions({"auto"}), None],
    }

    def __init__(
        self,
        lam: float = 0.1,
        *,
        kernel: str | tuple[Any, Any] = 'gaussian',
        kernel_params: dict[str, Any] | None = None,
        epsilon: float | str | None = None,
        diagonal: bool = False,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        solver: str = 'auto',
        lr: float = 0.1,
        armijo_c: float = 0.001,
        beta: float = 0.5,
        tol: float | None = None,
        max_iter: int = 2000,
        init: str | np.ndarray | None = None,
        op_norm_bound: float | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.lam = lam
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.epsilon = epsilon
        self.diagonal = diagonal
        self.random_state = random_state
        self.verbose = verbose
        self.solver = solver
        self.lr = lr
        self.armijo_c = armijo_c
        self.beta = beta
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.op_norm_bound = op_norm_bound
        self.batch_size = batch_size

    # ------------------------------------------------------------------ fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MetricKernelRidge:
        """Learn ``Sigma`` and the kernel ridge fit that goes with it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights in ``J_n``'s mean of squared residuals: integer weights fit as the rows
            repeated, weights of 0 as the rows left out. Not with ``epsilon`` or
            ``batch_size``.

        Returns
        -------
        self : MetricKernelRidge
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = column_or_1d(y, warn=True).astype(np.float64, copy=False)
        spread = float(np.max(np.abs(y - np.mean(y)), initial=0.0))
        if spread > MAX_TARGET_SPREAD:
            raise ValueError(
                f"MetricKernelRidge: the targets are too large for float64 (max |y - mean(y)| "
                f"= {spread:.3g} > {MAX_TARGET_SPREAD:.0e}: J_n, a mean of squared residuals, "
                "overflows); rescale y (e.g. divide it by its standard deviation)."
            )
        for stale in TRIMMING_ATTRIBUTES:
            self.__dict__.pop(stale, None)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
        if sample_weight is not None and not np.all(sample_weight == 1.0):
            if self.epsilon is not None or self.batch_size is not None:
                raise ValueError(
                    "MetricKernelRidge.fit with sample_weight learns the metric on all rows at "
                    "once: give epsilon=None and batch_size=None."
                )
            # relative weights, divided by a power of two near the largest (exact): their sum
            # stays finite whatever their scale (two weights of 1e308 overflowed it)
            sample_weight = sample_weight / power_of_two_below(sample_weight.max())
            rows = sample_weight > 0
            self._fit_metric(X[rows], y[rows], self._family(), sample_weight[rows])
            return self
        if self.epsilon is not None:
            self._fit_trimmed(X, y)
            return self
        self._fit_metric(X, y, self._family())
        return self

    def _fit_trimmed(self, X: np.ndarray, y: np.ndarray) -> None:
        """Fit on the subquantile of the rows (``epsilon`` given): see `_trimmed`."""
        template = clone(self).set_params(epsilon=None)
        first = initial_rows(X, y, self.epsilon, self.random_state)
        trimmed = trimmed_metric_fit(template, X, y, first)
        for name, value in vars(trimmed.model).items():
            if name.endswith("_") and not name.startswith("_") and name != "n_features_in_":
                setattr(self, name, value)
        self.inlier_mask_ = trimmed.mask
        self.outlier_scores_ = trimmed.losses
        self.epsilon_ = trimmed.epsilon
        self.n_rounds_ = trimmed.n_rounds

    def predict(self, X: Any) -> np.ndarray:
        """Predict ``f(x) + gamma`` with the learned kernel.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions.
        """
        return self._decision(X)


def _check_start(X: np.ndarray, Sigma0: np.ndarray, family: KernelFamily) -> None:
    """Refuse a start where a distance kernel vanishes between most pairs of rows.

    There (features of huge magnitude next to ``init``, e.g. 1e9 with ``Sigma = I / p``) the
    kernel matrix is numerically the identity, J_n has no gradient and the fit would silently
    return ``init`` with an interpolating ridge fit. Checked on at most 500 rows.
    """
    if family.kind != "distance" or X.shape[0] < 2:
        return
    rows = X[: min(X.shape[0], 500)]
    with np.errstate(all="ignore"):
        K = kernel_matrix(rows, None, Sigma0, family)
        diagonal = float(np.max(np.abs(np.diag(K))))
    off_diagonal = np.abs(K[~np.eye(K.shape[0], dtype=bool)])
    if not np.all(np.isfinite(K)) or np.median(off_diagonal) > np.finfo(float).tiny * diagonal:
        return
    distances = kernel_argument(rows, None, Sigma0, family)[~np.eye(rows.shape[0], dtype=bool)]
    raise ValueError(
        "MetricKernelRidge: at the starting metric the kernel vanishes between most pairs of "
        f"rows (median squared Sigma-distance {np.median(distances):.3g}), so J_n has no "
        "gradient and no metric can be learned; standardize X (e.g. sklearn.preprocessing."
        "StandardScaler) or pass a smaller init."
    )


@dataclass
class MetricKernelRidgePath:
    """Results of `metric_kernel_ridge_path`, one entry per ``lam`` (in the order fitted).

    The fields are also the constructor's parameters (a dataclass).

    Parameters
    ----------
    lams : ndarray of shape (n_lams,)
        The values of ``lam`` fitted.
    rank : ndarray of int, shape (n_lams,)
        ``rank_`` of each fit.
    numerical_rank : ndarray of int, shape (n_lams,)
        ``numerical_rank_`` of each fit.
    objective : ndarray of shape (n_lams,)
        Final ``J_n`` per ``lam``.
    n_iter : ndarray of int, shape (n_lams,)
        Iterations of each fit.
    converged : ndarray of bool, shape (n_lams,)
        Whether each fit met its stopping rule.
    Sigma : ndarray of shape (n_lams, n_features, n_features)
        The learned metrics.
    train_rmse : ndarray of shape (n_lams,)
        Training RMSE of each fit.
    test_rmse : ndarray of shape (n_lams,) or None, default=None
        Test RMSE, given ``X_test`` and ``y_test``.
    estimators : list of MetricKernelRidge or None, default=None
        The fitted estimators, given ``return_estimators=True``.

    See Also
    --------
    metric_kernel_ridge_path : The function that fits the path and returns this object.

    Notes
    -----
    Entry :math:`l` describes the fit at :math:`\\lambda_l`: ``Sigma[l]`` is its minimizer
    :math:`\\Sigma_l` of :math:`J_n(\\Sigma; \\lambda_l)` (see :class:`MetricKernelRidge`),
    ``objective[l]`` is :math:`J_n(\\Sigma_l; \\lambda_l)`, and the RMSEs are
    :math:`\\bigl(\\frac{1}{n} \\sum_i (y_i - \\hat f_l(x_i))^2\\bigr)^{1/2}` on the training and
    the test rows.

    Examples
    --------
    >>> from robustkernel import metric_kernel_ridge_path
    >>> from robustkernel.datasets import make_kl_regression
    >>> X, y = make_kl_regression(150, p=5, f="b", random_state=0)
    >>> path = metric_kernel_ridge_path(X, y, [0.1, 0.01])
    >>> path.Sigma.shape  # one learned metric per lam
    (2, 5, 5)
    >>> path.to_frame().columns.tolist()
    ['lam', 'rank', 'numerical_rank', 'objective', 'n_iter', 'converged', 'train_rmse']
    """

    lams: np.ndarray
    rank: np.ndarray
    numerical_rank: np.ndarray
    objective: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    Sigma: np.ndarray
    train_rmse: np.ndarray
    test_rmse: np.ndarray | None = None
    estimators: list[MetricKernelRidge] | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """Return the scalar results as a DataFrame.

        Returns
        -------
        DataFrame
            One row per ``lam``: lam, rank, numerical_rank, objective, n_iter, converged,
            train_rmse (and test_rmse when given); ``Sigma`` left out.
        """
        data = {
            "lam": self.lams,
            "rank": self.rank,
            "numerical_rank": self.numerical_rank,
            "objective": self.objective,
            "n_iter": self.n_iter,
            "converged": self.converged,
            "train_rmse": self.train_rmse,
        }
        if self.test_rmse is not None:
            data["test_rmse"] = self.test_rmse
        return pd.DataFrame(data)


def _rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


def metric_kernel_ridge_path(
    X: Any,
    y: Any,
    lams: Sequence[float],
    *,
    X_test: Any = None,
    y_test: Any = None,
    estimator: MetricKernelRidge | None = None,
    return_estimators: bool = False,
    **params: Any,
) -> MetricKernelRidgePath:
    """Fit `MetricKernelRidge` along a grid of ``lam``, warm-starting each fit from the last.

    The grid is used in the order given (the paper goes from small to large ``lam``); the first
    fit starts from the estimator's ``init``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training inputs.
    y : array-like of shape (n_samples,)
        Training targets.
    lams : sequence of float
        Ridge parameters, each > 0.
    X_test, y_test : array-like, default=None
        Held-out data; when both are given the test RMSE is reported per ``lam``.
    estimator : MetricKernelRidge, default=None
        Template whose parameters (other than ``lam`` and, after the first fit, ``init``) are
        used; it is cloned, never modified.
    return_estimators : bool, default=False
        Keep the fitted estimator of every ``lam``.
    **params
        Parameters of `MetricKernelRidge` set on the template (e.g. ``kernel="linear"``).

    Returns
    -------
    MetricKernelRidgePath
        Per-``lam`` rank, objective, ``Sigma``, iterations, and train (and test) RMSE.

    See Also
    --------
    MetricKernelRidge : The estimator fitted at every ``lam``.
    MetricKernelRidgeCV : ``lam`` chosen on held-out rows along such a path.

    Notes
    -----
    For :math:`\\lambda_1, \\lambda_2, \\dots` in the order given, the fit at :math:`\\lambda_l`
    minimizes :math:`J_n(\\Sigma; \\lambda_l)` of :class:`MetricKernelRidge` starting from the
    previous solution,

    .. math::

        \\Sigma_l = \\arg\\min_{\\Sigma \\succeq 0} J_n(\\Sigma; \\lambda_l)
        \\quad \\text{from } \\Sigma_{l-1}
        \\qquad (\\Sigma_0 = \\text{the estimator's init}),

    so that a path from large to small :math:`\\lambda` follows the rank of :math:`\\Sigma` as it
    grows.

    Examples
    --------
    >>> from robustkernel import metric_kernel_ridge_path
    >>> from robustkernel.datasets import make_kl_regression
    >>> X, y = make_kl_regression(150, p=5, f="b", random_state=0)  # y = x1 x2 + noise
    >>> X_test, y_test = make_kl_regression(100, p=5, f="b", random_state=1)
    >>> path = metric_kernel_ridge_path(X, y, [0.1, 0.01], X_test=X_test, y_test=y_test)
    >>> path.rank.tolist()  # the two directions x1 and x2
    [2, 2]
    >>> bool(path.test_rmse[1] < path.test_rmse[0])  # the smaller lam predicts better here
    True
    """
    lams_arr = np.asarray(lams, dtype=float).ravel()
    if lams_arr.size == 0:
        raise ValueError("lams must contain at least one value.")
    if not np.all(np.isfinite(lams_arr)) or np.any(lams_arr <= 0):
        raise ValueError(f"every lam must be finite and > 0; got {lams_arr.tolist()}.")
    if (X_test is None) != (y_test is None):
        raise ValueError("Give both X_test and y_test, or neither.")
    template = clone(estimator) if estimator is not None else MetricKernelRidge()
    template.set_params(**params)
    y_arr = np.asarray(y, dtype=float)

    fits: list[MetricKernelRidge] = []
    init = template.init
    rows: dict[str, list[Any]] = {k: [] for k in ("rank", "nrank", "obj", "it", "conv", "S")}
    train_rmse, test_rmse = [], []
    for lam in lams_arr:
        model = clone(template).set_params(lam=float(lam), init=init)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
        init = model.Sigma_
        rows["rank"].append(model.rank_)
        rows["nrank"].append(model.numerical_rank_)
        rows["obj"].append(model.objective_)
        rows["it"].append(model.n_iter_)
        rows["conv"].append(model.converged_)
        rows["S"].append(model.Sigma_)
        train_rmse.append(_rmse(model.predict(X), y_arr.ravel()))
        if X_test is not None:
            test_rmse.append(_rmse(model.predict(X_test), np.asarray(y_test, dtype=float).ravel()))
        if return_estimators:
            fits.append(model)
    return MetricKernelRidgePath(
        lams=lams_arr,
        rank=np.asarray(rows["rank"], dtype=int),
        numerical_rank=np.asarray(rows["nrank"], dtype=int),
        objective=np.asarray(rows["obj"], dtype=float),
        n_iter=np.asarray(rows["it"], dtype=int),
        converged=np.asarray(rows["conv"], dtype=bool),
        Sigma=np.stack(rows["S"]),
        train_rmse=np.asarray(train_rmse),
        test_rmse=np.asarray(test_rmse) if X_test is not None else None,
        estimators=fits if return_estimators else None,
    )
