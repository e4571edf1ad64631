"""SubquantileRegressor and SubquantileClassifier: Subquantile minimization around any estimator."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.linalg import LinAlgError
from scipy.special import expit, softmax
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    MetaEstimatorMixin,
    RegressorMixin,
    _fit_context,
    is_classifier,
    is_regressor,
)
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import RobustScaler
from sklearn.utils import check_random_state, indexable
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    StrOptions,
)
from sklearn.utils.validation import (
    _check_sample_weight,
    _num_samples,
    check_array,
    check_consistent_length,
    column_or_1d,
    has_fit_parameter,
    validate_data,
)

from .._delegation import DelegatesToFitted
from .._kernel_model.estimator import class_labels, single_class_error
from .._kernel_model.losses import SquaredLoss
from .._version_stamp import VersionStamped
from ..subquantile import (
    IntervalRegressorMixin,
    high_breakdown_start,
    numeric_rows,
    regression_probabilities,
    robust_gamma,
)
from ..subquantile import calibrate_intervals as calibrate_intervals
from ..trimming import (
    MAX_EPSILON,
    MAX_ROUNDS,
    REGRESSION_START,
    ClassFloors,
    alternate,
    beyond_scale,
    flag_rounds,
    label_flags,
    weighted_subquantile,
)
from ..trimming.out_of_fold import fit_rows, out_of_fold_losses

# Fits without a smaller objective before the alternation stops (a heuristic estimator's kept
# rows can cycle without repeating).
PATIENCE = 3
PROBABILITY_FLOOR = 1e-15  # -log of it, 34.5, is the largest classification loss
# The regressor's epsilon="auto" starts from the high-breakdown start on at most this many rows
# (its cost grows as n^3; the reweighting rounds then see every row).
START_ROWS = 500


@dataclass(frozen=True)
class _Trimmed:
    """What a fit's route (the alternation, or epsilon="auto") ends with: the estimator, the
    row weights it was fitted with, every row's loss, its rounds and whether they settled."""

    estimator: Any
    row_weights: np.ndarray
    losses: np.ndarray
    n_iter: int
    converged: bool


@dataclass(frozen=True)
class _MetaFit:
    """One fit of the alternation: the row weights it was fitted with, the fitted estimator,
    every row's loss under it, the row weights its subquantile keeps (the next fit's) and the
    sum of their losses."""

    row_weights: np.ndarray | None
    fitted: Any
    losses: np.ndarray | None
    selected: np.ndarray
    objective: float


class _BaseSubquantileMeta(
    VersionStamped, DelegatesToFitted, MetaEstimatorMixin, BaseEstimator
):
    """Alternating Subquantile minimization around a scikit-learn estimator."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left"), StrOptions({"auto"})],
        "n_folds": [Interval(Integral, 2, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    # -- what subclasses define -----------------------------------------------------------------

    # (the kind of estimator wrapped, scikit-learn's test of it, the default, the other kind's
    # meta-estimator)
    _wraps: ClassVar[tuple[str, Callable[[Any], bool], type, str]]

    def _default_estimator(self) -> Any:
        return self._wraps[2]()

    def _check_estimator(self, estimator: Any) -> None:
        """Raise InvalidParameterError (a ValueError and a TypeError) naming ``estimator`` when
        it is not of the kind the meta-estimator needs."""
        kind, test, _, other = self._wraps
        if not test(estimator):
            raise InvalidParameterError(
                f"The 'estimator' parameter of {type(self).__name__} must be a {kind} "
                f"(scikit-learn's {test.__name__}), got {estimator!r}; around "
                f"{'a classifier' if kind == 'regressor' else 'a regressor'}, use {other}."
            )

    def _encode_target(self, y: Any) -> np.ndarray:
        raise NotImplementedError

    def _check_targets(self, y: np.ndarray, present: np.ndarray) -> None:
        """Check the targets of the rows of positive weight (``y[present]``; the others are
        left out, as if absent) and set what the losses need from them."""
        raise NotImplementedError

    def _finite(self, fitted: Any, method: str, X: Any) -> np.ndarray:
        """``fitted.method(X)``, refused when a value is NaN or inf: such a loss cannot be
        ranked (NaN would sort last and be trimmed without a word)."""
        values = np.asarray(getattr(fitted, method)(X))
        if np.issubdtype(values.dtype, np.number) and not np.all(np.isfinite(values)):
            bad = int(np.count_nonzero(~np.isfinite(values).reshape(len(values), -1).all(axis=1)))
            raise ValueError(
                f"{type(self).__name__}: the fitted 'estimator' {type(fitted).__name__}."
                f"{method} returned values that are not finite (NaN or inf) for {bad} of "
                f"{len(values)} rows, so the rows cannot be ranked; check the estimator and "
                "its parameters on these data."
            )
        return values

    def _row_losses(self, fitted: Any, X: Any, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _flags(self, losses: np.ndarray, row_weights: np.ndarray, weights: np.ndarray):
        raise NotImplementedError

    def _start_epsilon(self, y: np.ndarray) -> float:
        raise NotImplementedError

    def _floors(self, y: np.ndarray, weights: np.ndarray | None) -> ClassFloors | None:
        return None

    # -- fitting --------------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _BaseSubquantileMeta:
        """Fit the estimator on the (1 - epsilon) fraction of rows it explains best.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
            Training data, in whatever form the estimator accepts (it is indexed by rows,
            never converted).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets (regressor) or labels (classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: the kept rows are those of smallest loss until their weight reaches
            (1 - epsilon) of the total, and the estimator is fitted with the kept rows'
            weights (it must accept ``sample_weight``). Rows of weight 0 are left out, as if
            absent.

        Returns
        -------
        self : object
            The fitted meta-estimator.
        """
        estimator = self._unfitted_estimator()
        self._check_estimator(estimator)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        validate_data(self, X, skip_check_array=True)
        X, y = indexable(X, y)
        if _num_samples(X) == 0:
            raise ValueError(
                f"{type(self).__name__} needs at least one sample; X has 0 rows "
                f"(shape={getattr(X, 'shape', (0,))})."
            )
        y = self._encode_target(y)
        check_consistent_length(X, y)
        weighted = sample_weight is not None
        if weighted and not has_fit_parameter(estimator, "sample_weight"):
            raise ValueError(
                f"{type(estimator).__name__}.fit does not accept sample_weight; fit without "
                "sample_weight or use an estimator that takes it."
            )
        weights = _check_sample_weight(sample_weight, np.ones(len(y)), ensure_non_negative=True)
        if not np.any(weights > 0):
            raise ValueError("sample_weight must have at least one positive entry.")
        with np.errstate(over="ignore"):
            total = float(np.sum(weights))
        if not np.isfinite(total):
            raise ValueError(
                "sample_weight sums to more than the largest float64; divide the weights by a "
                "constant."
            )
        self._check_targets(y, weights > 0)
        self._seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        self._estimator, self._weighted, self._fits = estimator, weighted, 0
        present = weights > 0
        if self.epsilon == "auto":
            result = self._estimate_epsilon(X, y, weights, present)
        else:
            result = self._alternate(X, y, weights, present, float(self.epsilon))
        self._set_fitted(result, weights, self._intervals_after_fit(X, y, result))
        return self

    def _intervals_after_fit(self, X: Any, y: np.ndarray, result: _Trimmed) -> dict | None:
        """What prediction intervals need (the regressor's ``interval_calibration_``; None
        for a classifier)."""
        return None

    def _set_fitted(
        self, result: _Trimmed, weights: np.ndarray, calibration: dict | None = None
    ) -> None:
        """Store ``result`` (and the intervals' ``calibration``): the one place ``fit``
        writes fitted attributes."""
        kept = result.row_weights > 0
        if calibration is not None:
            self.interval_calibration_ = calibration
        self.estimator_ = result.estimator
        self.inlier_mask_ = kept
        self.outlier_scores_ = result.losses
        self.row_weights_ = result.row_weights
        self.threshold_ = float(np.max(result.losses[kept]))
        self.epsilon_ = 1.0 - float(weights[kept].sum() / weights.sum())
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.n_fits_ = self._fits
        for name, value in self._task_attributes(result).items():
            setattr(self, name, value)

    def _task_attributes(self, result: _Trimmed) -> dict[str, Any]:
        """The fitted attributes of the task (the regressor's target scale, the classes)."""
        return {}

    def _fit(self, X: Any, y: np.ndarray, row_weights: np.ndarray) -> Any:
        self._fits += 1
        return fit_rows(self._estimator, X, y, row_weights, self._weighted)

    def _honest_losses(
        self,
        X: Any,
        y: np.ndarray,
        fitted: Any,
        row_weights: np.ndarray,
        row_values: Any = None,
    ):
        """Out-of-fold losses of the kept rows, out-of-sample losses of the others (or of
        ``row_values(fitted, X, y)``, another per-row quantity, in place of the losses)."""
        n_folds = self._n_folds
        n_kept = int(np.count_nonzero(row_weights > 0))
        if n_kept < n_folds:
            raise ValueError(
                f"{type(self).__name__} scores rows out of fold (epsilon={self.epsilon!r}, "
                f"n_folds={n_folds}), which needs at least n_folds={n_folds} kept rows of positive "
                f"weight; {n_kept} sample(s) are kept. Give more rows, a smaller n_folds (at least "
                "2), or a number as epsilon with n_folds=None."
            )
        self._fits += n_folds
        return out_of_fold_losses(
            self._estimator, fitted, X, y, row_weights, self._weighted,
            self._row_losses if row_values is None else row_values,
            n_folds, self._seed, stratify=isinstance(self, ClassifierMixin),
        )

    @property
    def _n_folds(self) -> int:
        """The folds of the out-of-fold losses (5 where ``n_folds`` is None)."""
        return 5 if self.n_folds is None else self.n_folds

    def _selection_losses(self, X: Any, y: np.ndarray, fitted: Any, row_weights: np.ndarray):
        """The losses the trim ranks: in-sample, or out of fold when ``n_folds`` is set."""
        if self.n_folds is None:
            return self._row_losses(fitted, X, y)
        return self._honest_losses(X, y, fitted, row_weights)

    def _alternate(
        self,
        X: Any,
        y: np.ndarray,
        weights: np.ndarray,
        start: np.ndarray,
        epsilon: float,
    ) -> _Trimmed:
        """Fit on the rows ``start``; then keep the subquantile of the losses and refit until
        the kept rows repeat (a fixed point: that fit is kept), or the objective (the sum of
        the kept losses) has not improved for ``PATIENCE`` fits, or ``max_iter`` fits (then the
        fit of smallest objective is kept): an estimator that does not minimize its loss
        exactly (boosting, networks) can swap a few rows at the boundary forever."""
        present = weights > 0
        floors = self._floors(y[present], weights[present] if self._weighted else None)
        best: _MetaFit | None = None  # the fit of smallest objective so far
        stalled = iteration = 0

        def refit(state: _MetaFit) -> _MetaFit:
            nonlocal iteration
            iteration += 1
            fitted = self._fit(X, y, state.selected)
            losses = self._selection_losses(X, y, fitted, state.selected)
            selected = np.zeros_like(weights)
            selected[present] = weighted_subquantile(
                losses[present], epsilon, weights[present] if self._weighted else None, floors
            )
            kept = selected > 0
            objective = float(selected[kept] @ losses[kept])
            if self.verbose:
                changed = int(np.count_nonzero(kept != (state.selected > 0)))
                print(
                    f"[{type(self).__name__}] fit {iteration}: objective {objective:.6g}, "
                    f"{changed} rows change"
                )
            return _MetaFit(state.selected, fitted, losses, selected, objective)

        def stop(state: _MetaFit) -> bool:
            nonlocal best, stalled
            if best is None or state.objective < best.objective:
                best, stalled = state, 0
                return False
            stalled += 1
            return stalled == PATIENCE

        start_fit = _MetaFit(None, None, None, np.where(start, weights, 0.0), np.inf)
        run = alternate(
            refit, lambda state: state.selected.tobytes(), start_fit, self.max_iter,
            repeat="last", stop=stop,
        )
        if not run.converged:
            warnings.warn(
                f"{type(self).__name__}: the kept rows still changed after max_iter="
                f"{self.max_iter} fits; increase max_iter.",
                ConvergenceWarning,
                stacklevel=3,
            )
        chosen = run.state if run.ended == "repeat" or best is None else best
        return _Trimmed(
            chosen.fitted, chosen.row_weights, chosen.losses, run.n_rounds, run.converged
        )

    def _estimate_epsilon(
        self, X: Any, y: np.ndarray, weights: np.ndarray, present: np.ndarray
    ) -> _Trimmed:
        """epsilon="auto": the reweighting step of least trimmed squares on out-of-fold losses.

        Keep the rows of smallest out-of-fold loss under the fit on every row, all but a
        generous start share; then fit on the kept rows, flag the rows whose out-of-fold loss
        is implausible under that fit, keep the others, and repeat until the flagged rows
        repeat (at most ``MAX_ROUNDS`` times; never more than ``MAX_EPSILON`` of the weight
        flagged; classifiers keep half of every class). Out-of-fold, not in-sample, so that an
        estimator that memorizes its rows (1-nearest neighbour, a large network) cannot
        explain away the rows it was fitted on.
        """
        floors = self._floors(y[present], None)  # whole rows: the flags are per row
        start = self._start_rows(X, y, weights, present, floors)
        fits = 0

        def fitted(row_weights: np.ndarray) -> tuple[np.ndarray, Any, np.ndarray]:
            nonlocal fits
            fits += 1
            estimator = self._fit(X, y, row_weights)
            return row_weights, estimator, self._honest_losses(X, y, estimator, row_weights)

        def flags(state: tuple[np.ndarray, Any, np.ndarray]) -> np.ndarray:
            row_weights, _, losses = state
            flagged = self._flags(losses, row_weights, weights) & present
            if weights[flagged].sum() > MAX_EPSILON * weights.sum():
                # The cap: the least suspect of the flagged rows are kept.
                kept = weighted_subquantile(
                    losses[present], MAX_EPSILON, weights[present] if self._weighted else None
                )
                flagged[present] = kept == 0
            if floors is not None:
                flagged[present] = floors.protect(
                    np.ones(present.sum(), dtype=bool), flagged[present], losses[present]
                )
            flagged &= present
            if self.verbose:
                share = weights[flagged].sum() / weights.sum()
                print(f"[{type(self).__name__}] round {fits}: {share:.1%} of the rows flagged")
            return flagged

        # the start's trimmed rows count as flags where the start keeps whole rows only
        whole = np.array_equal(start, np.where(start > 0, weights, 0.0))
        run = flag_rounds(
            flags,
            lambda flagged, _: fitted(np.where(present & ~flagged, weights, 0.0)),
            fitted(start),
            MAX_ROUNDS - 1,  # MAX_ROUNDS fits
            first=present & ~(start > 0) if whole else None,
        )
        row_weights, estimator, losses = run.state
        return _Trimmed(estimator, row_weights, losses, fits, run.ended == "repeat")

    def _start_rows(
        self,
        X: Any,
        y: np.ndarray,
        weights: np.ndarray,
        present: np.ndarray,
        floors: ClassFloors | None,
    ) -> np.ndarray:
        """The row weights the reweighting rounds of epsilon="auto" start from: the task's
        high-breakdown start where it has one (:meth:`_high_breakdown_rows`), else the rows of
        smallest out-of-fold loss under the fit on every row, all but the start share."""
        start = self._high_breakdown_rows(X, y, weights, present)
        if start is not None:
            return start
        row_weights = np.where(present, weights, 0.0)
        losses = self._honest_losses(X, y, self._fit(X, y, row_weights), row_weights)
        row_weights = np.zeros_like(weights)
        row_weights[present] = weighted_subquantile(
            losses[present],
            self._start_epsilon(y[present]),
            weights[present] if self._weighted else None,
            floors,
        )
        return row_weights

    def _high_breakdown_rows(
        self, X: Any, y: np.ndarray, weights: np.ndarray, present: np.ndarray
    ) -> np.ndarray | None:
        """The row weights of a high-breakdown start, or None where the task has none."""
        return None

    def _unfitted_estimator(self) -> Any:
        return self._default_estimator() if self.estimator is None else self.estimator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        estimator = self._unfitted_estimator()
        inner = estimator.__sklearn_tags__()
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.input_tags.string = inner.input_tags.string
        tags.input_tags.categorical = inner.input_tags.categorical
        tags.target_tags.multi_output = inner.target_tags.multi_output
        return tags


class SubquantileRegressor(IntervalRegressorMixin, RegressorMixin, _BaseSubquantileMeta):
    r"""Subquantile minimization around any regressor: fit on the rows it explains best.

    The estimator is fitted on the (1 - epsilon) fraction of the rows of smallest squared
    residual, alternating fits and re-ranking until the kept rows repeat; the rest are
    reported as suspects. Like :class:`~sklearn.linear_model.RANSACRegressor`, it takes the
    model as ``estimator``: gradient boosting, neural networks, pipelines.

    Parameters
    ----------
    estimator : estimator object, default=None
        The regressor to fit on the kept rows (scikit-learn's ``is_regressor``: a pipeline
        ending in one works); cloned, never modified. It must implement ``fit`` and
        ``predict``; it is fitted on y as given (its parameters are in the units of y).
        None: ``HistGradientBoostingRegressor()``.
    epsilon : float in [0, 0.5) or "auto", default="auto"
        Fraction of the rows (of the weight, with ``sample_weight``) left out. "auto"
        estimates it: start from the rows that the high-breakdown start of
        ``SubquantileKernelRegressor(kernel="auto")`` keeps (kernel least trimmed squares and
        an adaptive cutoff, on a sample of at most 500 rows; where X is numeric, dense and
        finite and there are no sample weights, else the 60% of the rows of smallest
        out-of-fold loss under the fit on every row), then refit on the kept rows and keep
        those whose out-of-fold squared residual is within 3 robust standard deviations,
        until the flagged rows repeat. The start finds groups of outliers that a fit on every
        row explains (a far cluster of bad leverage points).
    n_folds : int >= 2 or None, default=None
        Folds of the out-of-fold losses. None: a given epsilon ranks the rows by the loss of
        the model fitted on the kept rows (the papers' alternating algorithm), and
        epsilon="auto" uses 5 folds. An int: a given epsilon also ranks by out-of-fold
        losses (each kept row scored by the model fitted on the kept rows of the other folds),
        at ``n_folds`` extra fits per iteration. Set it with a given epsilon and an estimator
        that can memorize its training rows (neural networks, deep trees, nearest
        neighbours): it then explains the corrupted rows it was fitted on, and in-sample
        losses keep them.
    max_iter : int, default=100
        Most fits of the alternation (a given epsilon; "auto" stops after 20 rounds).
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffled folds of the out-of-fold losses.
    verbose : int, default=0
        Print the number of rows that changed at every iteration when positive.

    Attributes
    ----------
    estimator_ : estimator object
        The clone of ``estimator`` fitted on the kept rows.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        True for the rows of the final fit; False marks a suspected outlier (and a row of
        weight 0).
    outlier_scores_ : ndarray of shape (n_samples,)
        The squared residual (summed over outputs) of every row that the final selection
        ranked (out of fold with epsilon="auto" or ``n_folds``), in units of
        ``target_scale_`` squared: ``outlier_scores_ * target_scale_**2`` is the squared
        residual in the units of y. Larger is more suspect.
    threshold_ : float
        The largest loss among the kept rows (of the last trim's ranking), in the units of
        ``outlier_scores_``.
    target_scale_ : float
        The power of two nearest below the median abs(y) of the rows of positive weight: the
        losses are ranked as ``((y - prediction) / target_scale_) ** 2``, so that the squares
        neither overflow (abs(y) above ~1e154) nor underflow (below ~1e-154); the flags do not
        depend on the units of y.
    row_weights_ : ndarray of shape (n_samples,)
        Weight of each row in the final fit: 1 (its ``sample_weight``) for kept rows, 0 for
        the others, a part of its weight for the one row that completes (1 - epsilon).
    epsilon_ : float
        Share of the rows (of the weight) left out: the estimate with epsilon="auto".
    n_iter_ : int
        Fits of the alternation (rounds, with epsilon="auto").
    n_fits_ : int
        Fits of the estimator in all, fold fits included (not the intervals' calibration).
    interval_calibration_ : dict
        What :meth:`predict_interval` reads, computed at the end of ``fit`` from every row's
        honest residual (a kept row's from the estimator fitted on the kept rows of the other
        folds, a flagged row's from ``estimator_``): the kept rows' noise scale ``sigma``, the
        clean rows' standardized residuals ``scores``, the outlier ``cutoff`` and the
        ``local`` scale (None where the noise is homoscedastic); ``{"refused": reason}``
        where there are none (several targets, fewer than 10 kept rows).
    converged_ : bool
        Whether the kept rows repeated (or, for a given epsilon, the objective stopped
        decreasing) before the limit.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when X has string column names.

    See Also
    --------
    SubquantileClassifier : The same around a classifier.
    SubquantileKernelRegressor : Subquantile kernel ridge with its own solvers.
    sklearn.linear_model.RANSACRegressor : Fits on random subsets, keeps the largest consensus.

    Notes
    -----
    The objective is the Subquantile one: the sum of the losses of the
    :math:`k = \lceil (1 - \varepsilon) n \rceil` rows the model explains best,

    .. math::

        \min_f \; \sum_{i \in S(f)} \ell_i(f), \qquad
        \ell_i(f) = \Bigl(\frac{y_i - f(x_i)}{s}\Bigr)^2,

    with :math:`S(f)` the :math:`k` rows of smallest loss and :math:`s` the power of two
    ``target_scale_`` (with ``sample_weight``, the rows of smallest loss up to
    :math:`1 - \varepsilon` of the total weight, each loss weighted). The alternation (fit on
    the kept rows, rank every row's loss, keep the k smallest, refit until the kept rows
    repeat) never increases it for an estimator
    that minimizes its loss on the rows it is given; for other estimators (boosting, early
    stopping, neural networks) it is the papers' base-learner heuristic. The rows are indexed,
    not weighted, so an estimator that does not take ``sample_weight`` works (and a weight of 0
    is not the same as leaving a row out for every estimator, e.g. the binning of histogram
    gradient boosting sees every row).

    The rows are ranked by their squared residuals in units of ``target_scale_`` (exact: a
    power of two), so targets of any magnitude are trimmed alike. The estimator itself is fitted
    on y as given, not on y / ``target_scale_``: that would be exact only for estimators that
    scale with their targets (least squares, ridge, nearest neighbours, unregularized trees),
    and would change the meaning of the others' parameters (Lasso's alpha, SVR's epsilon,
    networks) and of ``estimator_``. An estimator that computes in float32 cannot fit targets
    beyond about 1e38 or below about 1e-38 in magnitude (histogram gradient boosting, the
    default, computes its gradients in float32 and then predicts a constant): divide y by a
    constant first (a power of two keeps it exact) and multiply the predictions back; for huge
    targets, ``TransformedTargetRegressor(estimator, transformer=MaxAbsScaler())`` does it
    (not for tiny ones: scikit-learn's scalers take a scale below ~1e-15 for 0).

    References
    ----------
    .. [1] A. Rathnashyam and A. Gittens, "Subquantile Minimization for Kernel Learning in
       the Huber epsilon-Contamination Model", 2023 (Algorithm 5: the base-learner variant).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from robustkernel import SubquantileRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=200)
    >>> y[:40] = 20.0  # 20% of the targets wrong
    >>> model = SubquantileRegressor(LinearRegression(), epsilon=0.2).fit(X, y)
    >>> int(model.inlier_mask_[:40].sum())
    0
    >>> np.round(model.estimator_.coef_, 1)
    array([ 1. , -2. ,  0.5])
    """

    _wraps = ("regressor", is_regressor, HistGradientBoostingRegressor, "SubquantileClassifier")

    def __init__(
        self,
        estimator: Any = None,
        *,
        epsilon: float | str = 'auto',
        n_folds: int | None = None,
        max_iter: int = 100,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_folds = n_folds
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose

    def _encode_target(self, y: Any) -> np.ndarray:
        y = check_array(y, ensure_2d=False, dtype="numeric", input_name="y")
        self._n_outputs = 1 if y.ndim == 1 else y.shape[1]
        return y

    def _check_targets(self, y: np.ndarray, present: np.ndarray) -> None:
        # A power of two: dividing by it is exact, and the squared residuals in its units
        # neither overflow (|y| above ~1e154) nor underflow (below ~1e-154).
        Y = y[present].reshape(int(np.count_nonzero(present)), -1)
        self._target_scale = SquaredLoss().target_scale(Y)

    def _task_attributes(self, result: _Trimmed) -> dict[str, Any]:
        return {"target_scale_": self._target_scale}

    def _intervals_after_fit(self, X: Any, y: np.ndarray, result: _Trimmed) -> dict:
        """``interval_calibration_``: the kept rows' honest residuals from clones of the
        estimator fitted on the kept rows of the other folds, the flagged rows' from the
        fitted one (:func:`~robustkernel.subquantile.calibrate_intervals`)."""
        return calibrate_intervals(
            self._estimator, result.estimator, X, y, result.row_weights, self._weighted,
            self._seed, numeric_rows(X),
        )

    def _row_losses(self, fitted: Any, X: Any, y: np.ndarray) -> np.ndarray:
        """Squared residuals in units of ``target_scale_`` squared (the estimator fits and
        predicts y itself)."""
        n, scale = len(y), self._target_scale
        predictions = self._finite(fitted, "predict", X).reshape(n, -1)
        with np.errstate(over="ignore"):  # a prediction beyond 1e154 scales: loss inf
            residuals = y.reshape(n, -1) / scale - predictions / scale
            return np.sum(residuals**2, axis=1)

    def _flags(self, losses: np.ndarray, row_weights: np.ndarray, weights: np.ndarray):
        return beyond_scale(losses, row_weights > 0, self._n_outputs, weights=weights)

    def _start_epsilon(self, y: np.ndarray) -> float:
        return REGRESSION_START

    def _high_breakdown_rows(
        self, X: Any, y: np.ndarray, weights: np.ndarray, present: np.ndarray
    ) -> np.ndarray | None:
        """The high-breakdown start of ``SubquantileKernelRegressor(kernel="auto")``
        (:func:`~robustkernel.subquantile.high_breakdown_start`) where it applies: numeric,
        finite, dense X, no sample weights, more rows than folds and a start that keeps as
        many; on at most ``START_ROWS`` rows (a random sample; then every row whose honest loss
        under the estimator fitted on the start's rows is at most the largest of theirs). A fit
        on every row is what a group of outliers masks itself in (30% of
        the rows a far cluster with a wrong target: the fit on every row explains it, and its
        rows rank among the best). Elsewhere None: the start of the base class."""
        numeric = numeric_rows(X)
        if numeric is None or self._weighted or present.sum() <= self._n_folds:
            return None
        rows = np.flatnonzero(present)
        if rows.size > START_ROWS:
            rows = np.sort(check_random_state(self._seed).choice(rows, START_ROWS, replace=False))
        Y = y[rows].reshape(rows.size, -1) / self._target_scale
        # in units of each feature's spread: the start's kernels neither overflow (features of
        # 1e150) nor depend on the units (the wrapped estimator sees X as given)
        Z = RobustScaler().fit_transform(numeric[rows])
        try:
            start = high_breakdown_start(Z, Y, True, robust_gamma(Z), self._seed)
        except LinAlgError:  # no start solvable (4 rows, 2 distinct): the fit on every row
            return None
        if start.kept.sum() < self._n_folds:  # too few for the folds of the first round
            return None
        row_weights = np.zeros_like(weights)
        row_weights[rows[start.kept]] = weights[rows[start.kept]]
        if rows.size < present.sum():
            # a sample: every row joins whose honest loss under the estimator fitted on the
            # start's rows is within theirs (the rounds read the kept share as the smallest
            # losses of every row: 400 rows of 12,000, read as their best 3%, inflated the
            # scale a thousandfold and no gross error was flagged)
            losses = self._honest_losses(X, y, self._fit(X, y, row_weights), row_weights)
            limit = float(np.max(losses[rows[start.kept]]))
            row_weights = np.where(present & (losses <= limit), weights, 0.0)
        return row_weights


class SubquantileClassifier(ClassifierMixin, _BaseSubquantileMeta):
    r"""Subquantile minimization around any classifier: fit on the rows it explains best.

    The estimator is fitted on the (1 - epsilon) fraction of the rows of smallest log loss
    (at least half of every class kept), alternating fits and re-ranking until the kept rows
    repeat; the rest are reported as suspects (e.g. flipped labels).

    Parameters
    ----------
    estimator : estimator object, default=None
        The classifier to fit on the kept rows (scikit-learn's ``is_classifier``: a pipeline
        ending in one works); cloned, never modified. It must implement ``fit`` and
        ``predict``, and ``predict_proba`` or ``decision_function`` to score the rows.
        None: ``HistGradientBoostingClassifier()``.
    epsilon : float in [0, 0.5) or "auto", default="auto"
        Fraction of the rows (of the weight, with ``sample_weight``) left out. "auto"
        estimates it by confident learning, as ``SubquantileKernelClassifier`` does: the
        out-of-fold class probabilities of the fit on every row flag the rows whose label
        the data contradict (a threshold per class, pruning by the estimated share of flips
        of each pair of classes), the estimator is refitted without them and flags again,
        until the flags repeat (at most 3 fits); at least half of every class is kept.
        Probabilities come from ``predict_proba``, or, for an estimator with
        ``decision_function`` only (``SVC()``), from a multinomial logistic regression of the
        given labels on its out-of-fold scores. Where they show no evidence about the labels
        (random labels), nothing is flagged, with a warning.
    n_folds : int >= 2 or None, default=None
        Folds of the out-of-fold losses. None: a given epsilon ranks the rows by the loss of
        the model fitted on the kept rows (the papers' alternating algorithm), and
        epsilon="auto" uses 5 folds. An int: a given epsilon also ranks by out-of-fold
        losses (each kept row scored by the model fitted on the kept rows of the other folds),
        at ``n_folds`` extra fits per iteration. Set it with a given epsilon and an estimator
        that can memorize its training rows (neural networks, deep trees, nearest
        neighbours): it then explains the corrupted rows it was fitted on, and in-sample
        losses keep them.
    max_iter : int, default=100
        Most fits of the alternation (a given epsilon; "auto" stops after 3 rounds).
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffled folds of the out-of-fold losses.
    verbose : int, default=0
        Print the number of rows that changed at every iteration (the share flagged at every
        round, with epsilon="auto") when positive.

    Attributes
    ----------
    estimator_ : estimator object
        The clone of ``estimator`` fitted on the kept rows.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        True for the rows of the final fit; False marks a suspected outlier (and a row of
        weight 0).
    outlier_scores_ : ndarray of shape (n_samples,)
        The log loss -log p(observed label) of every row that the final selection ranked
        (out of fold with epsilon="auto" or ``n_folds``), at least 1e-15; p from
        ``predict_proba``, else the sigmoid or softmax of ``decision_function`` (with
        epsilon="auto", the regression's probabilities of the flags). Larger is more
        suspect.
    threshold_ : float
        The largest loss among the kept rows (of the last trim's ranking).
    row_weights_ : ndarray of shape (n_samples,)
        Weight of each row in the final fit: 1 (its ``sample_weight``) for kept rows, 0 for
        the others, a part of its weight for the one row that completes (1 - epsilon).
    epsilon_ : float
        Share of the rows (of the weight) left out: the estimate with epsilon="auto".
    n_iter_ : int
        Fits of the alternation (rounds, with epsilon="auto").
    n_fits_ : int
        Fits of the estimator in all, fold fits included.
    converged_ : bool
        Whether the kept rows repeated (or, for a given epsilon, the objective stopped
        decreasing) before the limit.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when X has string column names.
    classes_ : ndarray of shape (n_classes,)
        The class labels, as ``estimator_.classes_``.

    See Also
    --------
    SubquantileRegressor : The same around a regressor.
    SubquantileKernelClassifier : Subquantile kernel logistic / softmax regression.
    sklearn.linear_model.RANSACRegressor : Fits on random subsets, keeps the largest consensus.

    Notes
    -----
    The objective is the Subquantile one: the sum of the losses of the
    :math:`k = \lceil (1 - \varepsilon) n \rceil` rows the model explains best,

    .. math::

        \min_f \; \sum_{i \in S(f)} \ell_i(f), \qquad
        \ell_i(f) = -\log p_f(y_i \mid x_i),

    with :math:`p_f` the estimator's probabilities and :math:`S(f)` the :math:`k` rows of
    smallest loss, at least half of every class among them (with ``sample_weight``, the rows of
    smallest loss up to :math:`1 - \varepsilon` of the total weight, each loss weighted). The
    alternation (fit on the kept rows, rank every row's loss, keep the k smallest, refit until
    the kept rows repeat) never increases it for an estimator
    that minimizes its loss on the rows it is given; for other estimators (boosting, early
    stopping, neural networks) it is the papers' base-learner heuristic. The rows are indexed,
    not weighted, so an estimator that does not take ``sample_weight`` works (and a weight of 0
    is not the same as leaving a row out for every estimator, e.g. the binning of histogram
    gradient boosting sees every row).

    References
    ----------
    .. [1] A. Rathnashyam and A. Gittens, "Subquantile Minimization for Kernel Learning in
       the Huber epsilon-Contamination Model", 2023 (Algorithm 5: the base-learner variant).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from robustkernel import SubquantileClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> y[:30] = 1 - y[:30]  # 10% of the labels flipped
    >>> model = SubquantileClassifier(LogisticRegression(), epsilon=0.1).fit(X, y)
    >>> bool(model.inlier_mask_[:30].mean() < 0.2)
    True
    """

    _wraps = ("classifier", is_classifier, HistGradientBoostingClassifier, "SubquantileRegressor")

    def __init__(
        self,
        estimator: Any = None,
        *,
        epsilon: float | str = 'auto',
        n_folds: int | None = None,
        max_iter: int = 100,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_folds = n_folds
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose

    def _check_estimator(self, estimator: Any) -> None:
        super()._check_estimator(estimator)
        if not (hasattr(estimator, "predict_proba") or hasattr(estimator, "decision_function")):
            raise InvalidParameterError(
                f"The 'estimator' parameter of {type(self).__name__} must be a classifier with "
                "predict_proba or decision_function (they score the observed label of each "
                f"row), got {estimator!r}, which has neither."
            )

    def _encode_target(self, y: Any) -> np.ndarray:
        y = column_or_1d(y, warn=True)
        class_labels(y, type(self).__name__)  # continuous or mixed-type labels: a clear error
        return y

    def _check_targets(self, y: np.ndarray, present: np.ndarray) -> None:
        classes = np.unique(y[present])
        if classes.size < 2:
            where = (
                "the rows of positive sample_weight contain"
                if np.unique(y).size > 1
                else "the data contains"
            )
            raise single_class_error(type(self).__name__, classes[0], where)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SubquantileClassifier:
        """Fit the classifier on the (1 - epsilon) fraction of rows it explains best.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, in any form the estimator takes.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights (see the regressor's ``fit``).

        Returns
        -------
        self : SubquantileClassifier
            The fitted estimator.
        """
        return super().fit(X, y, sample_weight)

    def _task_attributes(self, result: _Trimmed) -> dict[str, Any]:
        return {"classes_": result.estimator.classes_}

    def _row_losses(self, fitted: Any, X: Any, y: np.ndarray) -> np.ndarray:
        """-log of the probability of the observed label (probabilities from predict_proba,
        else the sigmoid / softmax of decision_function); labels the model never saw get
        ``PROBABILITY_FLOOR``."""
        if hasattr(fitted, "predict_proba"):
            P = self._finite(fitted, "predict_proba", X)
        else:
            scores = self._finite(fitted, "decision_function", X)
            P = softmax(scores, axis=1) if scores.ndim == 2 else expit(np.c_[-scores, scores])
        classes = fitted.classes_
        column = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
        seen = classes[column] == y
        p = np.where(seen, P[np.arange(len(y)), column], PROBABILITY_FLOOR)
        return -np.log(np.maximum(p, PROBABILITY_FLOOR))

    def _estimate_epsilon(
        self, X: Any, y: np.ndarray, weights: np.ndarray, present: np.ndarray
    ) -> _Trimmed:
        """epsilon="auto": confident learning on out-of-fold probabilities, in rounds.

        The estimator is fitted on every row; the out-of-fold class probabilities of the rows
        flag those whose label the data contradict (:func:`.label_issues`: a threshold per
        class, the calibrated confident joint, pruning by the noise rate of each pair; half
        of every class kept, at most ``MAX_EPSILON`` of the weight flagged); the estimator is
        fitted again without them, and its out-of-fold probabilities flag again, until the
        flags repeat (at most ``ROUNDS`` fits). Probabilities come from ``predict_proba``;
        an estimator with ``decision_function`` only (``SVC()``) has its out-of-fold scores
        calibrated by a multinomial logistic regression of the given labels on them, fitted
        on the kept rows (:func:`.regression_probabilities`, as the kernel classifier's
        hinge losses). Where the probabilities show no evidence about the labels
        (:func:`.unpredictable`), nothing is flagged, with a warning.
        """
        rows = np.flatnonzero(present)
        self._classes = np.unique(y[rows])
        labels = np.searchsorted(self._classes, y[rows])
        relative = weights[rows] / weights[rows].max()  # the same flags at any weight scale
        floors = ClassFloors.from_labels(labels)  # whole rows: the flags are per row
        every_row = np.where(present, weights, 0.0)
        estimator = self._fit(X, y, every_row)
        P, fitted = self._honest_probabilities(X, y, estimator, every_row, rows, labels)
        rounds = 1  # rounds of out-of-fold probabilities
        reason = label_flags.unpredictable(
            P[rows], labels, relative, fitted, lambda: P[rows].argmax(axis=1) != labels
        )
        if reason is not None:
            warnings.warn(f"{type(self).__name__}: {reason}", UserWarning, stacklevel=3)

        def flags(state: tuple[np.ndarray, Any, np.ndarray | None]) -> np.ndarray:
            nonlocal P, rounds
            row_weights, estimator, known = state
            if known is None:  # the probabilities of the estimator fitted on ``row_weights``
                P = self._honest_probabilities(X, y, estimator, row_weights, rows, labels)[0]
                rounds += 1
            flagged = np.zeros(len(weights), dtype=bool)
            flagged[rows] = label_flags.flagged_rows(P[rows], labels, relative, floors)
            if self.verbose:
                print(
                    f"[{type(self).__name__}] round {rounds}: "
                    f"{weights[flagged].sum() / weights.sum():.1%} of the rows flagged"
                )
            return flagged

        def refit(flagged: np.ndarray, _: Any) -> tuple[np.ndarray, Any, None]:
            row_weights = np.where(present & ~flagged, weights, 0.0)
            return row_weights, self._fit(X, y, row_weights), None

        run = flag_rounds(
            flags, refit, (every_row, estimator, P), 0 if reason else label_flags.ROUNDS,
            first=np.zeros(len(weights), dtype=bool),
        )
        row_weights, estimator, _ = run.state
        column = np.clip(np.searchsorted(self._classes, y), 0, self._classes.size - 1)
        given = np.where(self._classes[column] == y, P[np.arange(len(y)), column], 0.0)
        losses = -np.log(np.maximum(given, PROBABILITY_FLOOR))
        converged = reason is not None or run.ended == "repeat"
        return _Trimmed(estimator, row_weights, losses, rounds, converged)

    def _honest_probabilities(
        self, X: Any, y: np.ndarray, estimator: Any, row_weights: np.ndarray, rows: np.ndarray,
        labels: np.ndarray,
    ) -> tuple[np.ndarray, int]:
        """Class probabilities (n_samples, n_classes) of every row from models that never saw
        it (out of fold for the kept rows, ``estimator``, fitted on the kept rows, for the
        others), and the number of their parameters fitted on these rows (the calibration's)."""
        scores = self._honest_losses(X, y, estimator, row_weights, self._row_scores)
        if self._probabilistic:
            return scores, 0
        K = self._classes.size
        Z = scores[:, 1:] if K == 2 else scores  # two classes: the one decision value
        given = np.zeros(len(y), dtype=int)  # rows of weight 0 are scored, not regressed on
        given[rows] = labels
        P = regression_probabilities(Z, given, row_weights / row_weights.max(), K)
        return P, (Z.shape[1] + 1) * (1 if K == 2 else K)

    def _row_scores(self, fitted: Any, X: Any, y: np.ndarray) -> np.ndarray:
        """(n_samples, n_classes): ``predict_proba``'s columns (0 for a class the model never
        saw), or with ``decision_function`` only its columns (two classes: -f, f; a class the
        model never saw: the row's smallest score)."""
        if self._probabilistic or not hasattr(fitted, "decision_function"):
            values, fill = self._finite(fitted, "predict_proba", X), None
        else:
            values = self._finite(fitted, "decision_function", X).astype(float)
            if values.ndim == 1:
                values = np.c_[-values, values]
            fill = values.min(axis=1, keepdims=True)
        scores = np.zeros((values.shape[0], self._classes.size))
        if fill is not None:
            scores[:] = fill
        scores[:, np.searchsorted(self._classes, fitted.classes_)] = values
        return scores

    @property
    def _probabilistic(self) -> bool:
        return hasattr(self._estimator, "predict_proba")

    def _floors(self, y: np.ndarray, weights: np.ndarray | None) -> ClassFloors:
        """Half of every class's rows (of its weight), rounded up for whole rows."""
        return ClassFloors.from_labels(np.unique(y, return_inverse=True)[1].ravel(), weights)
