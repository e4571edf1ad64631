"""kernel="auto" in units of each column's spread: a fit that does not depend on the units of X.

The kernels kernel="auto" chooses among are isotropic (rbf, and the polynomials of degree 2
and 3 with coef0 = 1) or penalize every coefficient alike (linear), so a column given in millimetres
instead of metres would change the fit: the start's kept rows, the kernel chosen, the flags and
the model (y = sin(x1) + x2^2 / 2 on 300 normal rows of 3 columns, 10% vertical outliers: one
column in units of 1e3 took the clean rows flagged from 5 to 30 of 270 and the test error from
0.061 to 0.72). Features of 1e-80 overflowed the start's linear fits (nothing flagged). The
linear kernel's alpha grid is absolute, so even scaling every column alike moved the model
(Hawkins-like data at 1e-3: 0.39 from the clean rows' least squares, 0.16 at unit scale).

kernel="auto" therefore fits ``(x - centre) / scale`` column by column, the centre the median
and the scale the larger of 1.4826 times the median absolute deviation and the interquartile
range over 1.349 (each the standard deviation of a normal column); the range of the 5% to 95%
quantiles over 3.29 where the middle half of the column is nearly one value; the standard
deviation where all of these are 0, and 1 where that is 0 too (a constant column). Where the
middle half is nearly one value (a column mostly one value: rain, a capped reading, a
zero-inflated count, a rare dummy), the scale is at least the column's whole range over
``RARE_SPAN``, so that no rare value lies more than ``RARE_SPAN`` units from the others. A row
of weight w counts as w copies (integer weights scale as the repeated rows do).

Sparse X takes the same centre and scale as its dense form, and stays sparse: the columns whose
median is 0 (most of a document-term table's) keep their stored entries, and only those of
another median are filled. Without weights such a column already stores at least about half of
its rows (a median that is not 0 is a value of the middle of the column), so centring at most
about doubles the stored entries (with integer weights counted as copies, a heavy row can move
the median: at most the dense size). Scaling only (centre 0), as an earlier version did, saved
that memory but changed the fit: the degree-2 polynomial kernel is not translation invariant,
and its fit of the same rows as CSR and as a dense array differed in the rows it kept and in
its predictions (0.02 on outputs of order 1 in ``tests/test_default_kernel.py``); the linear
and rbf kernels, which a translation does not change, agreed.

:func:`feature_scaling` is called once per fit (``BaseSubquantile.fit``), on the rows the fit
sees; the centre and scale are stored as ``feature_center_`` and ``feature_scale_``, the fitted
rows ``X_fit_`` (or the feature map) are in those units, and prediction brings every query row
into them (``BaseSubquantile._fitted_units``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

MAD_TO_SD = 1.4826  # the MAD of a normal column times this is its standard deviation
IQR_TO_SD = 1.349  # and its interquartile range divided by this
WIDE_TO_SD = 3.290  # and the range of its 5% to 95% quantiles divided by this
POINT_MASS = 20.0  # a middle half this many times narrower than the 5-95% range is one value
RARE_SPAN = 4.0
"""A column whose middle half is one value spans at most this many units. Its rare values
otherwise lie far from every row, and the rbf kernel isolates them: a weather table
(nycflights13, 1500 rows; precipitation 0 in 94% of the rows, visibility at its cap in 88%)
put rainy rows 15.5 units out, and hazy ones 10.9; the default fit's CV RMSE was 3.0x that of
KernelRidge + GridSearchCV (median of 3 folds), 0.79x at this span, 1.54x at 8, 1.10x with a
rank map of those columns and 4.65x in their standard-deviation units
(``benchmarks/bench_column_units.py``, which also runs MASS's Boston and Ecdat's Housing). A
binary column with 5% ones or fewer sits 4 units apart (its standard deviation put it 4.4 to
10 apart)."""
MAX_COPIES = 2.0**50  # integer weights up to this count as copies of the rows


UNIT_DECIMALS = 10
"""Decimals kept of a value in units of its column's spread: 1e-10 spreads, far below any
signal, and far above the last bits in which the same table in other units differs (milk,
86 rows with many ties: 28, 8 and 8 rows flagged for X, X x (1 + 1e-9) and X x 1000 before)."""


@dataclass(frozen=True)
class FeatureScaling:
    """Per-column centre and scale: the rows as ``(x - center) / scale``.

    Attributes
    ----------
    center : ndarray of shape (n_features,)
        The column medians (sparse X: counting its zeros, as its dense form).
    scale : ndarray of shape (n_features,)
        Per column the larger of 1.4826 MAD and IQR / 1.349, the 5-95% quantile range / 3.29
        where the middle half is nearly one value, else the standard deviation, else 1; where
        the middle half is nearly one value, at least the range / ``RARE_SPAN``: positive and
        finite.
    """

    center: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(
        cls, X: Any, sample_weight: np.ndarray | None = None, robust: bool = True
    ) -> FeatureScaling:
        """The centre and scale of the columns of ``X`` (finite values).

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            The rows the fit sees, at least one.
        sample_weight : ndarray of shape (n_samples,), default=None
            Positive row weights, a row of weight w counting as w copies in the quantiles and
            the standard deviation; None: each row once.
        robust : bool, default=True
            True: the robust centre and scale below (the regressor's kernel="auto", whose
            rows may hold gross errors in x). False: centre 0 and each column's standard
            deviation (1 where it is 0), the classifier's units: label noise leaves x clean,
            and the robust scale of a skewed or mostly-zero column (digits' pixels) weighs
            it far above its share of the distances (20% flipped labels on digits: 0.862
            accuracy in robust units against 0.914 standardized, ``bench_robust.py``). Not
            centred, so that sparse X stays sparse and fits as its dense form; the rbf
            kernel does not see a shift.

        Returns
        -------
        FeatureScaling
            Per column the median and the larger of 1.4826 MAD and IQR / 1.349 (sparse X: the
            quantiles count the zeros, the same numbers as for its dense form); or, not
            ``robust``, centre 0 and the standard deviation.
        """
        n, p = X.shape
        weights = np.ones(n)
        if sample_weight is not None and _copies(sample_weight):
            weights = np.asarray(sample_weight, dtype=float)
        columns = sparse.csc_matrix(X, dtype=float) if sparse.issparse(X) else np.asarray(X, float)
        center, scale = np.empty(p), np.empty(p)
        for j in range(p):
            values = columns[:, [j]].toarray().ravel() if sparse.issparse(X) else columns[:, j]
            if robust:
                center[j], scale[j] = _column_centre_and_scale(values, weights)
            else:
                deviation = _standard_deviations(values[:, None], weights)[0]
                center[j], scale[j] = 0.0, _positive(deviation)
        return cls(center, scale)

    def transform(self, X: Any) -> Any:
        """``(X - center) / scale`` column by column; sparse X (CSR) stays sparse.

        Parameters
        ----------
        X : ndarray or sparse matrix of shape (n_samples, n_features)
            Rows in the units given.

        Returns
        -------
        ndarray or CSR matrix
            The rows in units of each column's spread, the same values for sparse X as for
            its dense form (the columns of centre 0 keep their stored entries, the others are
            filled). A value beyond float64 in those units becomes inf (the kernel checks then
            refuse it, naming the feature scale). Values are rounded to ``UNIT_DECIMALS``
            decimals, so that the same table in other units (X x 1000, X x (1 + 1e-9)) gives
            the same bits, and rows that tie break their ties the same way.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            if sparse.issparse(X):
                Z = _minus_centre(sparse.csr_matrix(X, dtype=float, copy=True), self.center)
                Z.data = np.round(Z.data / self.scale[Z.indices], UNIT_DECIMALS)
                return Z
            return np.round((np.asarray(X, dtype=float) - self.center) / self.scale, UNIT_DECIMALS)


def _minus_centre(X: sparse.csr_matrix, center: np.ndarray) -> sparse.csr_matrix:
    """``X - center`` row by row, as CSR: the columns of centre 0 keep their stored entries,
    the others hold every row. Each entry is ``x - c`` (``0 - c`` where none was stored), the
    same floating-point operation as the dense form's, so that both give the same bits."""
    columns = np.flatnonzero(center)
    if columns.size == 0:
        return X
    n = X.shape[0]
    shift = sparse.csr_matrix(
        (
            np.tile(center[columns], n),
            np.tile(columns, n),
            np.arange(0, n * columns.size + 1, columns.size),
        ),
        shape=X.shape,
    )
    Z = sparse.csr_matrix(X - shift)
    Z.eliminate_zeros()  # values equal to their column's centre
    return Z


def _column_centre_and_scale(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """One column's median and scale: the larger of 1.4826 MAD and IQR / 1.349 (both the
    standard deviation of a normal column), else its standard deviation, else 1.

    The IQR guards the MAD where more than half of the rows sit at or near one value (a binary
    column with a majority value; sklearn's diabetes with 20% of its rows copied onto one row
    and jittered by 0.01: the MAD of "sex" was 0.003, and the jitter took each copy 2 units
    from the others, so that the copies were no longer near-duplicates and predicted one
    another). Neither is inflated by a minority of outlying values (the MAD up to half the
    rows, the IQR up to a quarter: beyond, that column's scale grows and its weight in the
    isotropic kernels shrinks; the linear start does not depend on it).

    Where the middle half of the rows is itself nearly one value (the IQR under 1/20 of the
    range of the 5% to 95% quantiles, 1/2.4 for a normal column), the scale is that wider
    range over 3.29: Boston housing's "zn" (73% zeros) with 20% of the rows copied onto one
    row and jittered by 0.01 had an IQR of 0.005 standard deviations, which made the jitter 2.5
    units and the copies' cluster a spread of far rows (test RMSE 2.3x the oracle's; the rbf
    kernel without the scaling 1.1x).

    Where the middle half is nearly one value, the scale is at least the column's range over
    ``RARE_SPAN``: its rare values stay within that many units of the others."""
    with np.errstate(over="ignore", invalid="ignore"):  # 1e308 - (-1e308): inf, left to the
        low, lower, centre, upper, high = _weighted_quantiles(  # standard deviation below
            values, weights, [0.05, 0.25, 0.5, 0.75, 0.95]
        )
        mad = _weighted_quantiles(np.abs(values - centre), weights, [0.5])[0]
        scale = max(MAD_TO_SD * mad, (upper - lower) / IQR_TO_SD)
        wide = (high - low) / WIDE_TO_SD
        point_mass = not scale >= wide / POINT_MASS or not scale > 0
        if scale < wide / POINT_MASS:
            scale = wide
    if not (scale > 0 and np.isfinite(scale)):
        scale = _positive(_standard_deviations(values[:, None], weights)[0])
    if point_mass:
        with np.errstate(over="ignore", invalid="ignore"):
            span = (float(np.max(values)) - float(np.min(values))) / RARE_SPAN
        if np.isfinite(span) and span > scale:
            scale = span
    return float(centre), float(scale)


def _positive(scale: float) -> float:
    """``scale`` where it is positive and finite, else 1 (a constant column)."""
    return float(scale) if scale > 0 and np.isfinite(scale) else 1.0


def _copies(weights: np.ndarray) -> bool:
    """Whether the weights count as copies of the rows: integers up to ``MAX_COPIES`` (as the
    weighted fit treats them). Other weights leave each row counted once: a weight of 1e300
    would otherwise be the whole column's median and MAD, and its standard deviation 1e-150."""
    return bool(np.all(weights == np.round(weights)) and weights.max() <= MAX_COPIES)


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: list[float]) -> np.ndarray:
    """The q-quantiles of ``values`` for each q of ``qs`` where a value of weight w counts as w
    copies: NumPy's linear interpolation on the repeated values (``np.quantile``), the same
    numbers whether integer weights are given or the rows repeated. One sort for all of them."""
    order = np.argsort(values, kind="stable")
    ordered, cumulative = values[order], np.cumsum(weights[order])
    positions = np.asarray(qs, dtype=float) * (cumulative[-1] - 1.0)
    low = np.floor(positions)

    def copies(index: np.ndarray) -> np.ndarray:  # the index-th of the repeated values
        found = np.searchsorted(cumulative, index, side="right")
        return ordered[np.minimum(found, values.size - 1)]

    below, above = copies(low), copies(low + 1.0)
    return below + (positions - low) * (above - below)


def _standard_deviations(X: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each column's weighted standard deviation, computed in units of its largest deviation
    from the mean so that the squares neither overflow (values beyond 1e154) nor underflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        share = weights / weights.sum()
        deviations = X - share @ X
        largest = np.max(np.abs(deviations), axis=0)
        unit = np.where((largest > 0) & np.isfinite(largest), largest, 1.0)
        return unit * np.sqrt(share @ (deviations / unit) ** 2)


def feature_scaling(
    X: Any, sample_weight: np.ndarray | None, robust: bool = True
) -> FeatureScaling | None:
    """The :class:`FeatureScaling` of the rows a fit sees: those of positive weight, each
    counting its weight; None where there are none (the fit refuses them itself).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The validated training rows.
    sample_weight : ndarray of shape (n_samples,) or None
        The row weights (rows of weight 0 are left out of the fit, and of the scaling).
    robust : bool, default=True
        The robust units, or the standard deviations (:meth:`FeatureScaling.fit`).

    Returns
    -------
    FeatureScaling or None
    """
    if sample_weight is None:
        return FeatureScaling.fit(X, robust=robust)
    rows = np.flatnonzero(sample_weight > 0)
    if rows.size == 0:
        return None
    weights = sample_weight[rows]
    same = np.all(weights == weights[0])
    return FeatureScaling.fit(X[rows], None if same else weights, robust=robust)
