"""Prediction intervals that stay valid when some training rows are wrong.

Split conformal prediction and CV+ (Barber, Candes, Ramdas & Tibshirani, "Predictive inference
with the jackknife+", Ann. Statist. 49(1), 2021) cover a new row at the nominal rate where the
calibration residuals are drawn as the new row's are. Calibrated on contaminated rows they are
not: outlying targets widen the intervals, and a bad-leverage group that a fit of every row
follows fills the bottom of the scores. The fit of a robust regressor knows which rows it kept;
:func:`calibrate` uses that:

1. every training row gets an **honest residual** (:func:`honest_residuals`): a kept row's from
   the model of the same configuration fitted on the kept rows of the other ``FOLDS`` folds, a
   flagged row's from the fitted model, which never saw it. A clean row the fit flagged (the
   clean tail) keeps its residual in the scores; an outlier never trains the model that scores
   anybody;
2. the residuals are put on one scale: sigma from the kept rows (their median squared residual
   over the chi^2(1) median), times a **local scale** that follows the noise where it grows with
   x or with the fitted value (:func:`.second_stage.local_variance`: from kept rows only, so a
   group of outliers cannot widen its own scale; shrunk to 1 where the noise is homoscedastic);
3. the **clean rows' quantile** of the standardized scores |r| / (sigma s(x)): the reference
   distribution of the clean residuals (:func:`.second_stage.fit_reference`, Student's t or the
   normal, fitted to every row's score within 3 sigma: gross outliers do not enter) sets a
   cutoff c that a clean score exceeds with probability ``TAIL``; the scores beyond c are taken
   for outliers, and the interval's quantile at coverage 1 - a is the conformal order statistic
   ceil((m + 1)(1 - a) / (1 - TAIL)) of the m scores within c (c itself where that exceeds m).

An interval at x is f(x) +- q sigma s(x). Assumptions of the guarantee: the clean rows (training
and new) are exchangeable, the outliers' honest scores lie beyond c (gross errors; milder ones
within c count as clean rows and widen the interval, never narrow it), and the clean scores'
tail beyond c is the reference's (``TAIL`` of them). Like CV+, each kept row is scored by a model
fitted on 80% of the kept rows, which is slightly worse than the model on every row: the
coverage errs high.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Real
from typing import Any

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import check_array, check_is_fitted

from ..trimming.out_of_fold import fit_rows, out_of_fold_losses
from ._automatic.feature_scaling import FeatureScaling
from ._automatic.second_stage import (
    LOCAL_X_ROWS,
    LocalVariance,
    fit_reference,
    local_variance,
)

FOLDS = 5
"""Folds of the kept rows' honest residuals (CV+'s 5)."""
SPLIT_ROWS = 5000
"""Beyond this many rows, one split (:func:`honest_residuals`)."""
CALIBRATION_ROWS = 2000
"""The rows scored beyond ``SPLIT_ROWS``."""
TAIL = 0.002
"""The share of clean scores the reference puts beyond the outlier cutoff c."""
LOCAL_LIMIT = 1e3
"""The local variance stays within [1 / 1000, 1000] times the kept rows' mean: wider than the
second stage's 25, so that a group the fit keeps with a tiny noise of its own (a tight
bad-leverage cluster that an rbf fit follows) is put on the scale of its own noise instead of
filling the bottom of the scores."""
ROUNDS = 3
"""The local scale is estimated again from the rows within the cutoff at most this many times."""
PASSES = 5
NEIGHBOUR_SHARE = 0.05
MIN_NEIGHBOURS = 30
MAX_NEIGHBOURS = 200
"""Passes of the local variance's clipping (:func:`.second_stage.local_variance`)."""
MIN_KEPT_ROWS = 2 * FOLDS
"""Fewer kept rows: no calibration (``predict_interval`` says why)."""
_INTERNAL = ContextVar("robustkernel_internal_fit", default=False)


@contextmanager
def internal_fits() -> Iterator[None]:
    """Fits inside it are another computation's steps (a calibration's fold models, a Dask
    fit's sample, a metric learner's start): they calibrate no intervals
    (:func:`calibrates`)."""
    token = _INTERNAL.set(True)
    try:
        yield
    finally:
        _INTERNAL.reset(token)


def calibrates() -> bool:
    """Whether a fit that ends now calibrates its intervals (not inside :func:`internal_fits`)."""
    return not _INTERNAL.get()


def interval_neighbours(rows: int) -> int:
    """The rows the intervals' local scale averages: ``NEIGHBOUR_SHARE`` of ``rows``, within
    [``MIN_NEIGHBOURS``, ``MAX_NEIGHBOURS``]."""
    return int(np.clip(np.ceil(NEIGHBOUR_SHARE * rows), MIN_NEIGHBOURS, MAX_NEIGHBOURS))


def check_coverage(coverage: Any) -> tuple[np.ndarray, bool]:
    """The coverages asked for, as an array (k,), and whether one number was given.

    Raises
    ------
    ValueError
        Naming ``coverage`` where it is not a number in (0, 1) or a non-empty list of them.
    """
    scalar = np.ndim(coverage) == 0
    values = np.atleast_1d(np.asarray(coverage, dtype=object))
    message = (
        "coverage must be a number strictly between 0 and 1 (0.9: intervals that hold 90% of "
        f"new clean rows) or a non-empty list of them; got {coverage!r}."
    )
    if values.ndim != 1 or values.size == 0:
        raise ValueError(message)
    if not all(isinstance(v, Real) and not isinstance(v, bool) for v in values):
        raise ValueError(message)
    values = values.astype(float)
    if not np.all((values > 0.0) & (values < 1.0)):
        raise ValueError(message)
    return values, scalar


def honest_residuals(
    estimator: Any,
    fitted: Any,
    X: Any,
    y: np.ndarray,
    row_weights: np.ndarray,
    weighted: bool,
    random_state: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The rows scored (indices) and their residuals y - f(x) under a model not fitted on them.

    Up to ``SPLIT_ROWS`` rows, every row: the kept rows' (``row_weights`` > 0) from clones of
    ``estimator`` fitted on the kept rows of the other ``FOLDS`` folds, the others' from
    ``fitted``. Beyond, ``CALIBRATION_ROWS`` rows drawn at random: their kept rows' from one
    clone fitted on the other kept rows, the others' from ``fitted`` (one refit instead of five
    at the sizes where a refit costs most; the drawn rows keep the share of flagged rows)."""

    def residuals(model: Any, rows: Any, targets: np.ndarray) -> np.ndarray:
        return targets - np.asarray(model.predict(rows), dtype=float).reshape(targets.shape)

    n = y.size
    with internal_fits():
        if n <= SPLIT_ROWS:
            every = out_of_fold_losses(
                estimator, fitted, X, y, row_weights, weighted, residuals, FOLDS, random_state,
                stratify=False,
            )
            return np.arange(n), every
        scored = np.sort(np.random.default_rng(random_state).choice(n, CALIBRATION_ROWS, False))
        training = np.array(row_weights, dtype=float)
        training[scored] = 0.0
        model = fit_rows(estimator, X, y, training, weighted)
        rows, targets = _safe_indexing(X, scored), y[scored]
        kept = np.asarray(row_weights)[scored] > 0
        scores = np.where(kept, residuals(model, rows, targets), residuals(fitted, rows, targets))
        return scored, scores


def calibrate_intervals(
    estimator: Any,
    fitted: Any,
    X: Any,
    y: Any,
    row_weights: np.ndarray,
    weighted: bool,
    random_state: int,
    coordinates: np.ndarray | None,
) -> dict[str, Any]:
    """A robust regressor's ``interval_calibration_`` after its fit: :func:`calibrate` on
    :func:`honest_residuals` (``estimator``, the configuration that ``fitted`` ran, refitted
    out of fold; ``coordinates``: X as :func:`numeric_rows` gives it), or ``{"refused":
    reason}`` inside :func:`internal_fits`, with several targets or fewer than
    ``MIN_KEPT_ROWS`` kept rows."""
    if not calibrates():
        return {"refused": "it was fitted as a step of another computation"}
    y = np.asarray(y, dtype=float)
    if y.ndim > 1 and y.shape[1] != 1:
        return {"refused": "it was fitted on several targets; fit one target at a time"}
    y = y.reshape(-1)
    kept = np.asarray(row_weights) > 0
    if kept.sum() < MIN_KEPT_ROWS:
        return {"refused": f"it kept {int(kept.sum())} rows, fewer than the {MIN_KEPT_ROWS} needed"}
    try:
        scored, residuals = honest_residuals(
            estimator, fitted, X, y, row_weights, weighted, random_state
        )
        coordinates = None if coordinates is None else coordinates[scored]
        return calibrate(residuals, kept[scored], y[scored] - residuals, coordinates)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as error:
        # the fit stands; predict_interval says why it has no intervals
        return {"refused": f"its calibration failed ({type(error).__name__}: {error})"}


def numeric_rows(X: Any) -> np.ndarray | None:
    """X as a dense, finite float array where it is one (else None: a sparse matrix, text or
    categorical columns, missing values)."""
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return check_array(X, dtype=np.float64, ensure_all_finite=True, ensure_2d=True)
    except (TypeError, ValueError):
        return None


def _robust_units(values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's median and 1.4826 MAD over ``rows`` (1 where that is 0)."""
    center = np.median(values[rows], axis=0)
    spread = 1.4826 * np.median(np.abs(values[rows] - center), axis=0)
    spread = np.where(spread > 0, spread, np.std(values[rows], axis=0))
    return center, np.where(spread > 0, spread, 1.0)


def calibrate(
    residuals: np.ndarray, kept: np.ndarray, fitted: np.ndarray, X: np.ndarray | None
) -> dict[str, Any]:
    """The calibration of the intervals (a dict of arrays and numbers, which model files
    save) from every training row's honest ``residuals`` (n,), the rows ``kept``, the fitted
    values (n,) and X as :func:`numeric_rows` gives it (None, or more than ``LOCAL_X_ROWS``
    rows: the local scale follows the fitted value only; else x and the fitted value)."""
    finite = np.isfinite(residuals)
    kept = kept & finite
    # in units of the kept rows' median residual: squares of targets near 1e200 do not overflow
    unit = float(np.median(np.abs(residuals[kept]))) if kept.any() else 1.0
    unit = unit if np.isfinite(unit) and unit > 0 else 1.0
    residuals, fitted = residuals / unit, fitted / unit
    with np.errstate(over="ignore"):
        squared = np.where(finite, residuals, np.inf) ** 2
    variance = float(np.median(squared[kept])) / stats.chi2.ppf(0.5, df=1)
    if not variance > 0:
        variance = float(np.mean(squared[kept]))
    if not variance > 0:  # the kept rows fitted exactly: intervals of width 0 there
        return {"sigma": 0.0, "scores": np.zeros(1), "cutoff": 0.0, "local": None}
    scaled = squared / variance
    if X is not None and X.shape[0] <= LOCAL_X_ROWS:  # x and the fitted value: near in both
        kind, coordinates = "x", np.column_stack([X, fitted])
    else:
        kind, coordinates = "fitted", fitted[:, None]
    center, scale = _robust_units(coordinates, kept)
    coordinates = (coordinates - center) / scale
    # the local scale from the kept rows, then from the rows within the outlier cutoff: a clean
    # row the fit flagged (the tail where the noise is large) belongs to its region's scale
    rows, used = kept, kept
    for _ in range(ROUNDS):
        used = rows
        model = local_variance(
            coordinates, scaled, used, LOCAL_LIMIT, PASSES, interval_neighbours(int(used.sum())),
            geometric=True,
        )
        with np.errstate(invalid="ignore"):
            z = np.sqrt(scaled / model.factors)
        reference = fit_reference(z)
        distribution = stats.norm if np.isinf(reference.dof) else stats.t(reference.dof)
        cutoff = float(reference.scale * distribution.isf(TAIL / 2.0))
        within = kept | (z <= cutoff)  # a row the fit kept is never an outlier here
        if np.array_equal(within, rows):
            break
        rows = within
    local = None
    if model.shrink > 0:
        local = {
            "kind": kind,
            "unit": unit,
            "center": center,
            "scale": scale,
            "coordinates": coordinates[used],
            "clipped": model.clipped,
            "mean": model.mean,
            "shrink": model.shrink,
            "neighbours": model.neighbours,
            "limit": model.limit,
            "geometric": model.geometric,
        }
    scores = np.sort(z[within])
    return {
        "sigma": float(np.sqrt(variance)) * unit,
        "scores": scores,
        "cutoff": max(cutoff, float(scores[-1])),
        "local": local,
    }


def half_widths(calibration: dict[str, Any], coverages: np.ndarray) -> np.ndarray:
    """q sigma for each coverage: the conformal order statistic of the clean scores
    (the m scores within the cutoff, at level coverage / (1 - ``TAIL``); the cutoff where the
    rank passes m)."""
    scores = calibration["scores"]
    m = scores.size
    ranks = np.ceil((m + 1) * coverages / (1.0 - TAIL)).astype(int)
    quantiles = np.where(ranks <= m, scores[np.clip(ranks, 1, m) - 1], calibration["cutoff"])
    return quantiles * calibration["sigma"]


def local_scale(calibration: dict[str, Any], X: Any, prediction: np.ndarray) -> np.ndarray:
    """s(x) of every query row (1 where the noise was found homoscedastic): the square root of
    the local variance factor from its nearest kept training rows, in x or in the fitted
    value as the calibration chose."""
    local = calibration["local"]
    if local is None:
        return np.ones(prediction.shape[0])
    prediction = prediction / local["unit"]
    if local["kind"] == "x":
        X = X.toarray() if hasattr(X, "toarray") else X
        coordinates = np.column_stack([np.asarray(X, dtype=float), prediction])
    else:
        coordinates = prediction[:, None]
    coordinates = (coordinates - local["center"]) / local["scale"]
    reference, clipped = local["coordinates"], local["clipped"]
    k = int(local["neighbours"])
    if reference.shape[1] == 1:
        means = nearest_window_means(reference[:, 0], clipped, coordinates[:, 0], k)
    else:
        # brute force: in the p + 1 dimensions of x and the fitted value a k-d tree is slower
        # (5000 queries, 30 neighbours among 320 rows in 9 dimensions: 0.029 s against 0.046 s)
        search = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(reference)
        means = clipped[search.kneighbors(coordinates, return_distance=False)].mean(axis=1)
    variance = LocalVariance(
        np.empty(0), 0.0, clipped, local["mean"], local["shrink"], k, local["limit"],
        local["geometric"],
    )
    return np.sqrt(variance.of_means(means))


def nearest_window_means(
    reference: np.ndarray, values: np.ndarray, queries: np.ndarray, k: int
) -> np.ndarray:
    """The mean of ``values`` over the k rows of ``reference`` (1-d) nearest each query.

    In one dimension the k nearest rows are k neighbours in sorted order; the window's start
    is found by bisection (the first start whose row is no farther than the row past its end),
    so the cost is O(q log k) after one sort, where a search tree costs O(q k log m)
    (5000 queries, 80 neighbours among 1596 rows: under a millisecond against a k-d tree's
    0.023 s). Ties at equal distance may be broken otherwise than by a tree.
    """
    order = np.argsort(reference, kind="stable")
    points = reference[order]
    sums = np.concatenate([[0.0], np.cumsum(values[order])])
    m = points.size
    insert = np.searchsorted(points, queries)
    low = np.clip(insert - k, 0, m - k)
    high = np.clip(insert, 0, m - k)
    while np.any(active := low < high):
        middle = (low + high) // 2
        # the window from `middle` is worse than the next one: its first row is farther
        # than the row after its end (`middle + k` < m wherever the search is active)
        after = points[np.minimum(middle + k, m - 1)]
        further = active & (queries - points[middle] > after - queries)
        low = np.where(further, middle + 1, low)
        high = np.where(active & ~further, middle, high)
    return (sums[low + k] - sums[low]) / k


def bounds(
    calibration: dict[str, Any], X: Any, prediction: np.ndarray, coverage: Any
) -> np.ndarray:
    """Lower and upper bounds (n, 2), or (n, 2, k) for a list of k coverages."""
    coverages, scalar = check_coverage(coverage)
    width = local_scale(calibration, X, prediction)[:, None] * half_widths(calibration, coverages)
    result = np.stack([prediction[:, None] - width, prediction[:, None] + width], axis=1)
    return result[:, :, 0] if scalar else result


class IntervalRegressorMixin:
    """``predict_interval`` for a robust regressor whose fit stored ``interval_calibration_``
    (:func:`calibrate`; a dict with "refused", the reason, where it could not)."""

    def predict_interval(self, X: Any, coverage: Any = 0.9) -> np.ndarray:
        """Prediction intervals for new rows, valid for clean rows when training rows are wrong.

        Each interval is ``predict(X)`` plus and minus a half-width calibrated at fit time on
        every training row's honest residual (out of fold for the kept rows, out of sample for
        the flagged ones), with the contamination left out: the quantile is taken from the
        residuals the clean rows' reference distribution explains, and the width follows the
        local scale of the noise where it varies with x or with the fitted value. See the
        user guide, section "Prediction intervals", for the method and its assumptions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Query rows.
        coverage : float in (0, 1) or list of them, default=0.9
            The share of new clean rows whose target the interval should hold.

        Returns
        -------
        intervals : ndarray of shape (n_samples, 2) or (n_samples, 2, n_coverages)
            Lower and upper bounds (``[:, 0]``, ``[:, 1]``); a list of coverages gives one
            pair per coverage along the last axis (MAPIE 1.x's layout).

        Raises
        ------
        ValueError
            Where ``coverage`` is not a number in (0, 1), or the fit could not calibrate
            intervals (the message says why: a Dask fit, several targets, too few kept rows,
            a precomputed kernel).
        """
        check_coverage(coverage)  # before any work: a wrong coverage is named first
        calibration = self._interval_calibration()
        prediction = np.asarray(self.predict(X), dtype=float).reshape(-1)
        return bounds(calibration, self._interval_coordinates(X), prediction, coverage)

    def _interval_calibration(self) -> dict[str, Any]:
        """The fit's calibration, or the error that says why it has none."""
        check_is_fitted(self)
        calibration = getattr(self, "interval_calibration_", None)
        if calibration is None:
            calibration = {"refused": "the model was fitted before intervals existed; fit it again"}
        if "refused" in calibration:
            raise ValueError(
                f"{type(self).__name__}.predict_interval is not available for this fit: "
                f"{calibration['refused']}."
            )
        return calibration

    def _interval_coordinates(self, X: Any) -> Any:
        """Query rows in the coordinates the local scale was calibrated in (x as given)."""
        return X


class InUnits(RegressorMixin, BaseEstimator):
    """``estimator`` fitted and queried on X in a fit's units, (X - center) / scale (as given
    where ``scale`` is None): the out-of-fold models of a fit that works in its own units."""

    def __init__(
        self,
        estimator: Any = None,
        center: np.ndarray | None = None,
        scale: np.ndarray | None = None,
    ) -> None:
        self.estimator = estimator
        self.center = center
        self.scale = scale

    def _units(self, X: Any) -> Any:
        if self.scale is None:
            return X
        return FeatureScaling(self.center, self.scale).transform(X)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> InUnits:
        params = {} if sample_weight is None else {"sample_weight": sample_weight}
        self.estimator_ = clone(self.estimator).fit(self._units(X), y, **params)
        return self

    def predict(self, X: Any) -> np.ndarray:
        return self.estimator_.predict(self._units(X))
