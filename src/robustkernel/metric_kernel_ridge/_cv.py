"""`MetricKernelRidgeCV`: lam chosen on held-out rows, and a final ridge tuned for prediction.

Along a warm-started path over ``lam`` on part of the rows, every learned metric ``Sigma`` gets
the kernel ridge fit ``phi(s ||x - x'||^2_Sigma)`` whose bandwidth factor ``s`` and ridge ``mu``
(from small grids) have the smallest closed-form leave-one-out error, and is scored by that fit's
error on the held-out rows. (Leave-one-out alone cannot choose ``lam``: it treats ``Sigma`` as
given, and a small ``lam`` learns directions that fit the noise of the very rows it is scored
on.) For the centred kernel ridge fit
with an unpenalized intercept the fitted values are ``S y`` with
``S = 11^T / n + K_c (K_c + n mu I)^{-1}``, so the leave-one-out residual of row ``i`` is
``r_i / (1 - S_ii) = n mu a_i / (n mu [(K_c + n mu I)^{-1}]_ii - 1/n)`` (``a`` the dual
coefficients); one eigendecomposition of ``K_c`` per ``(Sigma, s)`` serves every ``mu``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import eigh, svd
from scipy.linalg.lapack import dpstrf
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
    clone,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data
from tqdm.auto import tqdm

from .._memory import row_chunks
from .._version_stamp import VersionStamped
from ..subquantile import SubquantileKernelRegressor
from ._estimator import ComponentRows, MetricKernelRidge
from ._gradient_metric import gradient_outer_product_metric
from ._objective import (
    DISTANCE_KERNELS,
    INNER_PRODUCT_KERNELS,
    KernelFamily,
    _try_solution,
    centred,
    kernel_argument,
    kernel_matrix,
    resolve_kernel,
)
from ._trimmed import initial_rows, trimmed_metric_fit

__all__ = ["MetricKernelRidgeCV", "leave_one_out_mse"]

DEFAULT_LAMS = tuple(np.round(np.geomspace(1.0, 1e-3, 10), 6).tolist())
DEFAULT_SCALES = tuple(2.0**k for k in range(-8, 4))
# the pivoted Cholesky route of `_centred_spectrum` up to this numerical rank / n
LOW_RANK_SHARE = 0.25
# the bandwidth factors are searched coarse to fine from this many rows (`_scale_and_ridge`)
COARSE_TO_FINE_ROWS = 500
# the held-out rows of random_state=None: the same on every call
SPLIT_SEED = 0
DEFAULT_RIDGES = tuple(10.0**k for k in range(-9, 1))


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
        values, Q, rest = _centred_spectrum(family.fn(s * argument), family)
        Qy = Q.T @ yc
        Q2 = Q * Q
        for j, mu in enumerate(ridges):
            # (K_c + n mu I)^{-1} = Q diag(1 / (values + n mu)) Q^T + (I - Q Q^T) / (n mu)
            inverse = 1.0 / (values + n * mu) - rest / (n * mu)
            a = Q @ (inverse * Qy) + rest * yc / (n * mu)
            a -= a.mean()
            leverage_gap = n * mu * (Q2 @ inverse) + rest - 1.0 / n
            out[i, j] = float(np.mean((n * mu * a / leverage_gap) ** 2))
    return out


def _centred_spectrum(K: np.ndarray, family: KernelFamily) -> tuple[np.ndarray, np.ndarray, float]:
    """Eigenvalues and eigenvectors of the centred kernel matrix ``H K H``, and 1.0 where they
    span only part of the space (every other eigenvalue below rounding), else 0.0.

    A positive semidefinite ``K`` of low numerical rank r (a kernel on a low-rank metric) is
    factored by a pivoted Cholesky decomposition, ``K = L L^T`` up to LAPACK's tolerance
    (``n`` times the unit roundoff times the largest diagonal entry), in O(n^2 r), and the
    spectrum of ``H K H`` comes from the thin SVD of ``H L``: on the learned metrics of rank
    1 - 3 this is 2 - 8x faster than the full eigendecomposition, which stays the route for
    kernels of higher rank.
    """
    n = K.shape[0]
    if family.positive_definite:
        factor, pivots, rank, info = dpstrf(K, lower=1, overwrite_a=0)
        if info >= 0 and rank <= LOW_RANK_SHARE * n:
            L = np.zeros((n, rank))
            L[pivots - 1] = np.tril(factor[:, :rank])
            L -= L.mean(axis=0)
            Q, singular, _ = svd(L, full_matrices=False, check_finite=False)
            return singular**2, Q, 1.0
    values, Q = eigh(centred(K), overwrite_a=True, check_finite=False)
    return np.maximum(values, 0.0), Q, 0.0


class MetricKernelRidgeCV(
    ComponentRows, VersionStamped, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
    RegressorMixin, BaseEstimator,
):
    """`MetricKernelRidge` with ``lam`` chosen on held-out rows and a ridge tuned to predict.

    A fraction ``validation_fraction`` of the rows is held out. On the others `MetricKernelRidge` is
    fitted along ``lams`` (warm starts, in the order given); for every learned metric ``Sigma`` the
    kernel ridge fit with kernel :math:`\\phi(s \\|x - x'\\|_\\Sigma^2)` whose bandwidth factor
    ``s`` (in ``scales``) and ridge ``mu`` (in ``ridges``) have the smallest closed-form
    leave-one-out error is scored on the held-out rows. The path stops once that score has not
    improved for ``n_iter_no_change`` values of ``lam``. The metric is then refitted on all rows at
    the best ``lam`` (warm-started from its fit on the others; ``n_splits`` repeats the split and
    pools the held-out errors), ``s`` and ``mu`` are chosen again by
    leave-one-out on all rows, and that kernel ridge fit is the predictor. ``lam`` decides the
    subspace (and its rank), ``s`` and ``mu`` the fit on it: the paper's ``lam`` that makes
    ``Sigma`` exactly low rank is a heavy ridge for prediction.

    One more metric competes on the same held-out rows (``gradient_metric=True``, the default):
    the average gradient outer product of kernel ridge fits, iterated from :math:`I / p` as the
    recursive feature machine does [1]_ until the leave-one-out error of the fit stops falling
    (at most 10 rounds; the round of lowest error is kept), cut to the directions whose
    eigenvalue is at least 1% of the largest (so it is exactly low rank too). The objective
    :math:`J_n` has several stationary points, and its path from the isotropic start can settle
    on a wrong subspace that this estimate avoids: on the paper's f (b) - (d) at p = 20 (n = 300,
    3 seeds) it wins the held-out comparison in 8 of 9 fits and cuts the median test RMSE from
    0.76 / 1.24 / 1.11 to 0.13 / 0.20 / 0.36 (``metric_source_`` says which metric won; with
    it, ``lam_`` is None). It is not used with ``epsilon`` or ``diagonal=True``, nor for the
    inner-product kernels.

    With ``epsilon``, all of this happens on the rows a Subquantile fit keeps: the path and the
    held-out rows are drawn from the rows kept by ``SubquantileKernelRegressor(epsilon)``, the refit
    at ``lam_`` is ``MetricKernelRidge(epsilon=...)``'s alternation started from those rows, and
    ``s`` is chosen on the rows it keeps. The predictor is then
    ``SubquantileKernelRegressor(kernel="precomputed", epsilon=epsilon)`` on the learned kernel
    :math:`\\phi(s \\|x - x'\\|_\\Sigma^2)`: with the learned metric the fit is sharp enough to
    expose corrupted rows that the isotropic start kept (on the paper's f (a), p = 20, 20% of the
    targets replaced by N(5, 5) draws, 5 seeds: median test RMSE 0.140 against 0.109 for this
    estimator on the clean rows alone and 1.73 without ``epsilon``; BENCHMARKS.md,
    "contaminated targets").

    Parameters
    ----------
    lams : array-like, default=None
        Grid of ``lam`` for the metric, fitted in the order given. ``None``: 10 values from 1 down
        to 1e-3, evenly spaced in logarithm (from large to small, so that the rank grows along the
        path).
    scales : array-like, default=None
        Bandwidth factors ``s`` of the final ridge. ``None``: 2^-8, 2^-7, ..., 8 (wide
        bandwidths with tiny ridges fit the smooth polynomial-like targets of the benchmarks; with
        the earlier 1/8, ..., 8 the choice sat at the grid's edge).
    ridges : array-like, default=None
        Ridges ``mu`` of the final ridge (the ``lam`` of `MetricKernelRidge`). ``None``:
        1e-9, 1e-8, ..., 1.
    validation_fraction : float or None, default=0.2
        Fraction of the rows held out to choose ``lam`` (in each of ``n_splits`` random splits).
        None: ``n_splits`` folds, each held out in turn, so that every row is held out once
        (``n_splits >= 2``). On the paper's functions and the oblique model (n = 300, p = 20,
        ten values of ``random_state``) three folds chose the same rank in 10 of 10 fits on f
        (a), (b), (d) and the oblique model (one split: 9, 10, 10 and 6 of 10) but 6 of 10 on
        f (c) (one split: 9), at 1.4 - 2.3x the time (BENCHMARKS.md, "Learned metric:
        stability").
    n_iter_no_change : int, default=3
        Stop the path after this many values of ``lam`` without a better held-out error.
    n_splits : int, default=1
        Number of random held-out splits, each of ``validation_fraction`` of the rows (or of
        folds, with ``validation_fraction=None``). The path is fitted on the other rows of every
        split; ``lam``, and the choice between the path's metric and the gradient outer product
        metric, minimize the held-out error pooled over the splits, and the refit on all rows
        starts from the split's metric with the lowest :math:`J_n` on them. More splits make the
        choice depend less on one split, at ``n_splits`` times the cost of the path
        (BENCHMARKS.md, "Learned metric: stability").
    random_state : int, RandomState instance or None, default=None
        Seeds the choice of the held-out rows. None holds out the same rows on every call (a
        fixed seed), so that two fits on the same data agree, as the folds of scikit-learn's
        cross-validated estimators (``RidgeCV``, ``LassoCV``) are the same on every call; an int
        or a RandomState draws other rows. How much the fit depends on the split: BENCHMARKS.md,
        "Learned metric: stability".
    kernel : {"gaussian", "rbf", "gaussian_mixture", "linear", "cubic"} or (callable, callable), \
default="gaussian"
        As in :class:`MetricKernelRidge`.
    kernel_params : dict, default=None
        As in :class:`MetricKernelRidge`.
    solver : {"auto", "lbfgs", "projected_gradient"}, default="auto"
        As in :class:`MetricKernelRidge`.
    tol : float, default=None
        As in :class:`MetricKernelRidge`.
    max_iter : int, default=2000
        As in :class:`MetricKernelRidge`.
    diagonal : bool, default=False
        As in :class:`MetricKernelRidge`.
    epsilon : float in [0, 0.5), "auto" or None, default=None
        Fraction of the rows to leave out as suspects, as in `MetricKernelRidge`; ``None`` uses
        every row.
    gradient_metric : bool, default=True
        Score the average gradient outer product metric beside the path's metrics (see above);
        False keeps to the path of :math:`J_n`.
    predictor : {"kernel_ridge", "gaussian_process"}, default="kernel_ridge"
        The final model. "kernel_ridge": kernel ridge on the learned metric, its bandwidth factor
        ``scale_`` and ridge ``ridge_`` chosen by leave-one-out. "gaussian_process": a Gaussian
        process on the learned coordinates ``transform(X)``, an RBF kernel with one length
        scale per learned direction times an amplitude, plus white noise, all by marginal
        likelihood (scikit-learn's `GaussianProcessRegressor`, ``normalize_y=True``). It
        predicted no better at n = 300 (0.90x-1.05x the kernel ridge's test RMSE on the
        paper's simulations) and better at n = 1000 where the subspace is found (0.84x-0.93x
        on f (c), f (d) and an oblique index model, p = 20), at up to 11 s more
        (BENCHMARKS.md, "Peers: learned metric"). Not with ``epsilon``.
    verbose : int, default=0
        Show a progress bar over the fits along ``lams`` (and the refit) when positive.

    Attributes
    ----------
    lam_ : float or None
        The chosen ``lam``; None when the gradient outer product metric won.
    metric_source_ : {"path", "gradient"}
        Which metric the fit uses: the path's at ``lam_``, or the average gradient outer
        product's.
    gradient_validation_mse_ : float or None
        Held-out mean squared error of the gradient outer product metric, pooled over the splits
        (None when it was not scored).
    scale_, ridge_ : float
        Bandwidth factor and ridge of the final kernel ridge fit.
    lams_ : ndarray of shape (n_fitted,)
        The values of ``lam`` fitted before the path stopped.
    validation_mse_ : ndarray of shape (n_fitted,)
        Held-out mean squared error per fitted ``lam``, pooled over the splits.
    validation_ranks_ : ndarray of shape (n_fitted, n_splits)
        Rank of the metric learned without the held-out rows, per fitted ``lam`` and split.
    metric_ : MetricKernelRidge
        The metric fitted on all rows at ``lam_`` (or the gradient outer product metric of all
        rows, held fixed: ``max_iter=0``, so its ``kkt_residual_`` is not that of a stationary
        point); its ``Sigma_``, ``rank_``, ``components_``, ``eigenvalues_``, ``kkt_residual_``
        are also exposed here.
    Sigma_, rank_, components_, eigenvalues_, kkt_residual_
        Those of ``metric_``.
    n_iter_ : int
        Iterations of all metric fits (the path and the refit).
    final_ : MetricKernelRidge, GaussianProcessRegressor or SubquantileKernelRegressor
        The predictor: kernel ridge with the fixed metric ``scale_ * Sigma_`` and ridge
        ``ridge_``; with ``predictor="gaussian_process"``, the Gaussian process on
        ``transform(X)``; with ``epsilon``, the Subquantile kernel ridge on that kernel
        (precomputed; ``ridge_`` then only scored the metric, the predictor chooses its own
        penalty).
    inlier_mask_, outlier_scores_, epsilon_ : ndarray, ndarray, float
        With ``epsilon``: those of ``final_`` (the rows the predictor was fitted on, every row's
        squared residual under it, the fraction left out).
    X_fit_ : ndarray of shape (n_samples, n_features)
        With ``epsilon``: the training rows (the precomputed kernel of ``predict`` needs them).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when X has string feature names.

    See Also
    --------
    MetricKernelRidge : One ``lam``, the paper's estimator.

    Notes
    -----
    Each metric of the path minimizes :math:`J_n(\\Sigma)` of :class:`MetricKernelRidge` at its
    :math:`\\lambda`. The predictor on a metric :math:`\\Sigma` is kernel ridge regression with an
    unpenalized intercept and the kernel :math:`\\phi(s \\|x - x'\\|_\\Sigma^2)`; with
    :math:`H = I - \\mathbf{1}\\mathbf{1}^\\top / n`, :math:`K_c = H K H` and the ridge
    :math:`\\mu`, its fitted values are :math:`S y` with

    .. math::

        S = \\frac{1}{n} \\mathbf{1}\\mathbf{1}^\\top + K_c (K_c + n \\mu I)^{-1},

    so that its leave-one-out mean squared error, which chooses :math:`(s, \\mu)`, is

    .. math::

        \\mathrm{LOO}(s, \\mu) = \\frac{1}{n} \\sum_{i=1}^n
        \\Bigl(\\frac{y_i - (S y)_i}{1 - S_{ii}}\\Bigr)^2,

    from one eigendecomposition of :math:`K_c` per :math:`(\\Sigma, s)` for every :math:`\\mu`.
    ``lam`` is chosen by the held-out error instead: leave-one-out treats :math:`\\Sigma` as
    given, and a small ``lam`` learns directions that fit the noise of the very rows it is
    scored on.

    References
    ----------
    .. [1] A. Radhakrishnan, D. Beaglehole, P. Pandit and M. Belkin, "Mechanism for feature
       learning in neural networks and backpropagation-free machine learning models",
       Science 383 (2024).

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.metric_kernel_ridge import MetricKernelRidgeCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((120, 4))
    >>> y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.standard_normal(120)
    >>> model = MetricKernelRidgeCV(lams=[0.1, 0.01], random_state=0).fit(X, y)
    >>> model.rank_ >= 1 and model.predict(X).shape == (120,)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "lams": ["array-like", None],
        "scales": ["array-like", None],
        "ridges": ["array-like", None],
        "validation_fraction": [Interval(Real, 0.0, 1.0, closed="neither"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "n_splits": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "kernel": [StrOptions({*DISTANCE_KERNELS, *INNER_PRODUCT_KERNELS}), tuple, list],
        "kernel_params": [dict, None],
        "solver": [StrOptions({"auto", "lbfgs", "projected_gradient"})],
        "tol": [Interval(Real, 0.0, None, closed="left"), None],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "diagonal": ["boolean"],
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left"), StrOptions({"auto"}), None],
        "gradient_metric": ["boolean"],
        "predictor": [StrOptions({"kernel_ridge", "gaussian_process"})],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        lams: Any = None,
        *,
        scales: Any = None,
        ridges: Any = None,
        validation_fraction: float | None = 0.2,
        n_iter_no_change: int = 3,
        n_splits: int = 1,
        random_state: int | np.random.RandomState | None = None,
        kernel: str | tuple[Any, Any] = "gaussian",
        kernel_params: dict[str, Any] | None = None,
        solver: str = "auto",
        tol: float | None = None,
        max_iter: int = 2000,
        diagonal: bool = False,
        epsilon: float | str | None = None,
        gradient_metric: bool = True,
        predictor: str = "kernel_ridge",
        verbose: int = 0,
    ) -> None:
        self.lams = lams
        self.scales = scales
        self.ridges = ridges
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.n_splits = n_splits
        self.random_state = random_state
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.diagonal = diagonal
        self.epsilon = epsilon
        self.gradient_metric = gradient_metric
        self.predictor = predictor
        self.verbose = verbose

    @staticmethod
    def _grid(values: Any, default: tuple[float, ...], name: str) -> np.ndarray:
        grid = np.asarray(default if values is None else values, dtype=float).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError(f"{name} must be a non-empty list of finite values > 0.")
        return grid

    @staticmethod
    def _scale_and_ridge(
        argument: np.ndarray, y: np.ndarray, grids: tuple[np.ndarray, np.ndarray],
        family: KernelFamily, near: float | None = None,
    ) -> tuple[float, float, float]:
        """The ``(s, mu)`` of least closed-form leave-one-out error on the distances given, and
        that error: every ``mu``, and every ``s`` below ``COARSE_TO_FINE_ROWS`` rows, else ``s``
        coarse to fine (every other factor of the grid, then the factors next to the best of
        those). The leave-one-out error over ``s`` can have several minima, and the gradient
        metric's rounds follow the choice: on 300 rows (where a grid costs about 0.15 s) the
        coarse search changed two of five fits of the paper's f (c) at p = 50 and the median
        subspace error from 0.85 to 1.19; on 1000 rows (2-3 s a grid) it cut the fit time of
        f (b) from 32.5 to 19.0 s and of f (a) from 26.3 to 23.5 s with the same test RMSE, and
        the race at n = 1000 kept its medians (BENCHMARKS.md, "Peers: learned metric ... n =
        1000").

        ``near`` (from ``COARSE_TO_FINE_ROWS`` rows): the previous round's ``s`` of the gradient
        metric, whose metric moves little from round to round; the search starts at the grid's
        factor nearest to it and its two neighbours, and moves on to the next factor while the
        best is at an end (3 - 4 eigendecompositions a round instead of 8). On 1000 and 2000
        rows it gave the same fits in 11 of 12 and a better one in the last, at 0.68 - 0.93x the
        fit time (BENCHMARKS.md, "Learned metric: bandwidth search of the gradient metric")."""
        scales, ridges = grids
        coarse = scales.size > 3 and y.shape[0] >= COARSE_TO_FINE_ROWS
        scores: dict[int, np.ndarray] = {}  # grid index of s -> errors over the ridges

        def score(indices: Iterable[int]) -> None:
            new = [i for i in indices if 0 <= i < scales.size and i not in scores]
            if new:
                errors = leave_one_out_mse(argument, y, scales[new], ridges, family)
                scores.update(zip(new, errors, strict=True))

        def best() -> int:
            return min(scores, key=lambda i: scores[i].min())

        if coarse and near is not None:
            start = int(np.argmin(np.abs(np.log(scales / near))))
            score([start - 1, start, start + 1])
            while True:  # each pass scores a new factor, beyond an end of those scored
                edge = best()
                step = -1 if edge == min(scores) else 1 if edge == max(scores) else 0
                if step == 0 or not 0 <= edge + step < scales.size:
                    break
                score([edge + step])
        else:
            # from COARSE_TO_FINE_ROWS rows: every other s first, then the two between the best
            # of those and its neighbours (8 of the default 12 eigendecompositions)
            score(range(0, scales.size, 2 if coarse else 1))
            first = best()
            score([first - 1, first + 1])
        tried = list(scores)
        table = np.vstack([scores[i] for i in tried])
        i, j = np.unravel_index(np.argmin(table), table.shape)
        return float(scales[tried[i]]), float(ridges[j]), float(table[i, j])

    @staticmethod
    def _fixed_metric(
        template: MetricKernelRidge, metric: np.ndarray, lam: float, X: np.ndarray,
        y: np.ndarray,
    ) -> MetricKernelRidge:
        """Kernel ridge with the metric held fixed (``max_iter=0``) and ridge ``lam``."""
        model = clone(template).set_params(lam=lam, init=metric, max_iter=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(X, y)

    @classmethod
    def _ridge_on(
        cls,
        template: MetricKernelRidge,
        metric: np.ndarray,
        X: np.ndarray,
        y: np.ndarray,
        grids: tuple[np.ndarray, np.ndarray],
        family: KernelFamily,
    ) -> tuple[float, float, MetricKernelRidge]:
        """The kernel ridge fit on the fixed ``metric`` (as the kernel takes it: a diagonal
        metric as its diagonal) with the best leave-one-out (s, mu)."""
        argument = kernel_argument(X, None, metric, family)
        scale, ridge, _ = cls._scale_and_ridge(argument, y, grids, family)
        return scale, ridge, cls._fixed_metric(template, scale * metric, ridge, X, y)

    @classmethod
    def _held_out_mse(
        cls,
        template: MetricKernelRidge,
        metric: np.ndarray,
        X: np.ndarray,
        y: np.ndarray,
        split: tuple[np.ndarray, np.ndarray],
        grids: tuple[np.ndarray, np.ndarray],
        family: KernelFamily,
    ) -> float:
        """Held-out mean squared error of the leave-one-out tuned ridge on ``metric``, fitted on
        the rows ``split[0]`` and scored on ``split[1]``."""
        train, val = split
        ridge = cls._ridge_on(template, metric, X[train], y[train], grids, family)[2]
        return float(np.mean((ridge.predict(X[val]) - y[val]) ** 2))

    @staticmethod
    def _lowest_objective(
        metrics: list[MetricKernelRidge], X: np.ndarray, y: np.ndarray, family: KernelFamily
    ) -> np.ndarray:
        """The ``Sigma_`` among the splits' fits at one ``lam`` with the lowest ``J_n`` on the
        rows given: the start of the refit on them."""
        if len(metrics) == 1:
            return metrics[0].Sigma_
        values = []
        for model in metrics:
            solution = _try_solution(X, y, model._metric_for_kernel(), model.lam, family)
            values.append(np.inf if solution is None else solution.objective)
        return metrics[int(np.argmin(values))].Sigma_

    def _splits(self, candidates: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """(training rows, held-out rows) of every split of ``candidates``."""
        n = candidates.size
        rng = check_random_state(SPLIT_SEED if self.random_state is None else self.random_state)
        if self.validation_fraction is None:
            if not 2 <= self.n_splits <= n // 2:
                raise ValueError(
                    "validation_fraction=None holds out n_splits folds in turn: n_splits must be "
                    f"between 2 and half the rows ({n // 2}); got n_splits={self.n_splits}."
                )
            order = candidates[rng.permutation(n)]
            folds = np.array_split(order, self.n_splits)
            return [
                (np.concatenate(folds[:k] + folds[k + 1 :]), fold)
                for k, fold in enumerate(folds)
            ]
        n_val = min(max(1, round(self.validation_fraction * n)), n - 3)
        splits = []
        for _ in range(self.n_splits):
            order = candidates[rng.permutation(n)]
            splits.append((order[n_val:], order[:n_val]))
        return splits

    def _takes_gradient_metric(self, family: KernelFamily) -> bool:
        """The gradient metric needs a full metric of a distance kernel."""
        return family.kind == "distance" and not self.diagonal

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> MetricKernelRidgeCV:
        """Fit the path on part of the rows, choose ``lam``, refit on all rows.

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
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=4)
        y = column_or_1d(y, warn=True).astype(np.float64, copy=False)
        if self.predictor == "gaussian_process" and self.epsilon is not None:
            raise ValueError(
                "predictor='gaussian_process' is not available with epsilon: a Gaussian process "
                "fits every row; use predictor='kernel_ridge' (the Subquantile kernel ridge)."
            )
        lams = self._grid(self.lams, DEFAULT_LAMS, "lams")
        grids = (
            self._grid(self.scales, DEFAULT_SCALES, "scales"),
            self._grid(self.ridges, DEFAULT_RIDGES, "ridges"),
        )
        kept = np.ones(X.shape[0], dtype=bool)
        if self.epsilon is not None:
            kept = initial_rows(X, y, self.epsilon, self.random_state)
        problem = _Problem(
            X, y, kept, self._splits(np.flatnonzero(kept)), grids,
            resolve_kernel(self.kernel, self.kernel_params),
            MetricKernelRidge(
                kernel=self.kernel,
                kernel_params=self.kernel_params,
                solver=self.solver,
                tol=self.tol,
                max_iter=self.max_iter,
                diagonal=self.diagonal,
            ),
        )
        with tqdm(
            total=len(lams) + 1, desc=type(self).__name__, unit="fit", disable=not self.verbose
        ) as bar:
            path = self._path(problem, lams, bar)
            result = self._final_fit(problem, path)
            bar.update()
        self._set_fitted(result)
        return self

    def _path(self, problem: _Problem, lams: np.ndarray, bar: Any) -> _Path:
        """The metric fitted along ``lams`` on each split's training rows (warm-started from
        the previous ``lam``'s), each scored by its held-out MSE (:meth:`_held_out_mse`);
        stops ``n_iter_no_change`` values past the best."""
        X, y = problem.X, problem.y
        inits: list[np.ndarray | None] = [None] * len(problem.splits)
        errors, ranks, metrics = [], [], []
        n_iter = 0
        for lam in lams:
            split_errors, split_ranks, split_metrics = [], [], []
            for s, (train, val) in enumerate(problem.splits):
                model = clone(problem.template).set_params(lam=float(lam), init=inits[s])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.fit(X[train], y[train])
                inits[s], n_iter = model.Sigma_, n_iter + model.n_iter_
                split_errors.append(
                    self._held_out_mse(
                        model, model._metric_for_kernel(), X, y, (train, val), problem.grids,
                        problem.family,
                    )
                )
                split_ranks.append(model.rank_)
                split_metrics.append(model)
            errors.append(float(np.mean(split_errors)))
            ranks.append(split_ranks)
            metrics.append(split_metrics)
            bar.update()
            bar.set_postfix(
                lam=f"{lam:.3g}", validation_mse=f"{errors[-1]:.4g}", rank=split_ranks[0]
            )
            if len(errors) - 1 - int(np.argmin(errors)) >= self.n_iter_no_change:
                break
        return _Path(
            lams[: len(errors)].copy(), np.asarray(errors), np.asarray(ranks, dtype=int),
            metrics, n_iter,
        )

    def _final_fit(self, problem: _Problem, path: _Path) -> _FittedCV:
        """The metric at the chosen ``lam`` (or the gradient metric, where its held-out MSE is
        lower) on every kept row, its scale and ridge by leave-one-out, and the final fit."""
        X, y, grids, family, template = (
            problem.X, problem.y, problem.grids, problem.family, problem.template
        )
        k = int(np.argmin(path.errors))
        lam: float | None = float(path.lams[k])
        source, gradient_mse = "path", None
        def choose(
            argument: np.ndarray, y: np.ndarray, near: float | None
        ) -> tuple[float, float, float]:
            return self._scale_and_ridge(argument, y, grids, family, near)

        if self.gradient_metric and self.epsilon is None and self._takes_gradient_metric(family):
            gradient_mse = float(
                np.mean(
                    [
                        self._held_out_mse(
                            template,
                            gradient_outer_product_metric(X[train], y[train], family, choose),
                            X, y, (train, val), grids, family,
                        )
                        for train, val in problem.splits
                    ]
                )
            )
            if gradient_mse < path.errors[k]:
                source, lam = "gradient", None
        rows = np.flatnonzero(problem.kept)
        start = self._lowest_objective(path.metrics[k], X[rows], y[rows], family)
        refit = clone(template).set_params(lam=lam, init=start)
        trimmed: dict[str, Any] = {}
        if source == "gradient":
            metric = gradient_outer_product_metric(X, y, family, choose)
            scale, ridge, final = self._ridge_on(template, metric, X, y, grids, family)
            metric_model = self._fixed_metric(template, metric, ridge, X, y)
        elif self.epsilon is None:
            metric_model = refit.fit(X, y)
            scale, ridge, final = self._ridge_on(
                metric_model, metric_model._metric_for_kernel(), X, y, grids, family
            )
        else:
            fit = trimmed_metric_fit(refit, X, y, problem.kept)
            metric_model, mask = fit.model, fit.mask
            scale, ridge, _ = self._ridge_on(
                metric_model, metric_model._metric_for_kernel(), X[mask], y[mask], grids, family
            )
            # the rows are chosen again by a Subquantile fit on the learned kernel: the metric's
            # in-sample residuals cannot expose a corrupted row that the metric fit explains
            final = SubquantileKernelRegressor(
                kernel="precomputed", epsilon=self.epsilon, random_state=self.random_state
            ).fit(learned_kernel(metric_model, scale, family, X), y)
            trimmed = {
                "X_fit_": X,
                "inlier_mask_": final.inlier_mask_,
                "outlier_scores_": final.outlier_scores_,
                "epsilon_": final.epsilon_,
            }
        if self.predictor == "gaussian_process":
            final = self._coordinate_process(metric_model.transform(X), y)
        return _FittedCV(
            lams_=path.lams,
            validation_mse_=path.errors,
            validation_ranks_=path.ranks,
            lam_=lam,
            metric_source_=source,
            gradient_validation_mse_=gradient_mse,
            metric_=metric_model,
            scale_=scale,
            ridge_=ridge,
            final_=final,
            n_iter_=path.n_iter + metric_model.n_iter_,
            trimmed=trimmed,
        )

    def _set_fitted(self, result: _FittedCV) -> None:
        """Store ``result``: the one place ``fit`` writes fitted attributes. The trimmed fit's
        (``X_fit_``, ``inlier_mask_``, ``outlier_scores_``, ``epsilon_``) exist only where it
        ran; ``Sigma_``, ``rank_``, ``components_``, ``eigenvalues_`` and ``kkt_residual_`` are
        ``metric_``'s."""
        for stale in ("X_fit_", "inlier_mask_", "outlier_scores_", "epsilon_"):
            self.__dict__.pop(stale, None)
        for attribute in fields(result):
            if attribute.name != "trimmed":
                setattr(self, attribute.name, getattr(result, attribute.name))
        for name, value in result.trimmed.items():
            setattr(self, name, value)
        for name in ("Sigma_", "rank_", "components_", "eigenvalues_", "kkt_residual_"):
            setattr(self, name, getattr(result.metric_, name))

    def _coordinate_process(self, Z: np.ndarray, y: np.ndarray) -> GaussianProcessRegressor:
        """The Gaussian process on the learned coordinates ``Z``: amplitude times an RBF kernel
        with one length scale per coordinate, plus white noise, by marginal likelihood."""
        kernel = ConstantKernel() * RBF(length_scale=np.ones(Z.shape[1])) + WhiteKernel(0.01)
        process = GaussianProcessRegressor(
            kernel, normalize_y=True, random_state=self.random_state
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a length scale at its bound
            return process.fit(Z, y)

    def predict(self, X: Any) -> np.ndarray:
        """Predict with the final fit (kernel ridge or the Gaussian process, see ``predictor``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions of the final fit.
        """
        check_is_fitted(self)
        if isinstance(self.final_, GaussianProcessRegressor):
            X = validate_data(self, X, dtype=np.float64, reset=False)
            return self.final_.predict(self.metric_.transform(X))
        if not hasattr(self, "X_fit_"):
            return self.final_.predict(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        family = resolve_kernel(self.kernel, self.kernel_params)
        out = np.empty(X.shape[0])
        for rows in row_chunks(X.shape[0], self.X_fit_.shape[0]):
            kernel = learned_kernel(self.metric_, self.scale_, family, X[rows], self.X_fit_)
            out[rows] = self.final_.predict(kernel)
        return out

    def transform(self, X: Any) -> np.ndarray:
        """Project X on the subspace learned at ``lam_`` (see `MetricKernelRidge.transform`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        X_new : ndarray of shape (n_samples, ``rank_``)
            The coordinates of X in the learned subspace.
        """
        check_is_fitted(self)
        return self.metric_.transform(X)


def learned_kernel(
    metric: MetricKernelRidge,
    scale: float,
    family: KernelFamily,
    X: np.ndarray,
    Y: np.ndarray | None = None,
) -> np.ndarray:
    """Kernel matrix with the metric ``scale * metric.Sigma_`` between ``X`` and ``Y`` (or
    ``X``)."""
    return kernel_matrix(X, Y, scale * metric._metric_for_kernel(), family)


@dataclass(frozen=True)
class _Problem:
    """What every step of a cross-validated fit reads: the rows, the rows kept by the start
    (all without ``epsilon``), the held-out splits, the grids of the final ridge, the kernel
    family and the unfitted metric estimator."""

    X: np.ndarray
    y: np.ndarray
    kept: np.ndarray
    splits: list[tuple[np.ndarray, np.ndarray]]
    grids: tuple[np.ndarray, np.ndarray]
    family: KernelFamily
    template: MetricKernelRidge


@dataclass(frozen=True)
class _Path:
    """The path of ``lam`` values tried: held-out MSE and ranks per value (and split), the
    fitted metric of every split, and the metric fits' iterations."""

    lams: np.ndarray
    errors: np.ndarray
    ranks: np.ndarray
    metrics: list[list[MetricKernelRidge]]
    n_iter: int


@dataclass(frozen=True)
class _FittedCV:
    """The fitted attributes of a cross-validated fit (``trimmed``: those of the trimmed fit,
    empty without ``epsilon``)."""

    lams_: np.ndarray
    validation_mse_: np.ndarray
    validation_ranks_: np.ndarray
    lam_: float | None
    metric_source_: str
    gradient_validation_mse_: float | None
    metric_: MetricKernelRidge
    scale_: float
    ridge_: float
    final_: Any
    n_iter_: int
    trimmed: dict[str, Any] = field(default_factory=dict)
