"""Metric learning on the subquantile of the rows: ``MetricKernelRidge(epsilon=...)``.

The trimmed objective ``min_{S, Sigma, f} (1/2k) sum_{i in S} (y_i - f(x_i) - gamma)^2
+ (lam/2) ||f||^2`` over sets ``S`` of ``k`` rows is minimized by alternation: for fixed ``S``
learn ``Sigma`` and ``f`` on the rows of ``S`` (warm-started from the previous ``Sigma``), for
fixed ``f`` take as ``S`` the ``k`` rows of smallest squared residual, until ``S`` repeats. Both
steps lower the objective (the first because both solvers only accept descent steps from their
start), so the alternation ends.

The first ``S`` comes from `SubquantileKernelRegressor` with the same ``epsilon`` (its automatic
alpha and gamma, and for ``"auto"`` its estimate of the contaminated fraction): an
isotropic kernel finds the gross outliers, and the metric is learned on the rows it keeps. The
number of rows ``k`` is fixed by that start; the learned metric only changes *which* rows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from ..subquantile import SubquantileKernelRegressor, internal_fits
from ..trimming import MAX_ROUNDS, alternate, smallest


@dataclass
class TrimmedFit:
    """A metric fit on the kept rows and what the alternation knows about every row.

    Attributes
    ----------
    model : MetricKernelRidge
        Fitted on the rows of ``mask`` (in the last round).
    mask : ndarray of bool, shape (n_samples,)
        The kept rows ``S``.
    losses : ndarray of shape (n_samples,)
        Squared residual of every row under ``model``.
    epsilon : float
        Fraction of the rows left out.
    n_rounds : int
        Metric fits done (one per round).
    converged : bool
        Whether ``S`` repeated within ``MAX_ROUNDS`` rounds.
    """

    model: Any
    mask: np.ndarray
    losses: np.ndarray
    epsilon: float
    n_rounds: int
    converged: bool


def initial_rows(
    X: np.ndarray, y: np.ndarray, epsilon: float | str, random_state: Any
) -> np.ndarray:
    """Rows kept by `SubquantileKernelRegressor` with the rbf kernel, ``epsilon`` and automatic
    alpha and gamma.

    A given fraction keeps exactly ``ceil((1 - epsilon) n)`` rows; ``"auto"`` also drops the
    kept rows its rejection step finds implausible (the regressor's default refine="auto").
    """
    start = SubquantileKernelRegressor(epsilon=epsilon, kernel="rbf", random_state=random_state)
    with internal_fits():  # its rows only: no intervals
        return np.asarray(start.fit(X, y).inlier_mask_, dtype=bool)


def trimmed_metric_fit(template: Any, X: np.ndarray, y: np.ndarray, mask: np.ndarray) -> TrimmedFit:
    """Alternate metric fits on the kept rows and reselection of the ``mask.sum()`` best rows.

    Parameters
    ----------
    template : MetricKernelRidge
        Unfitted estimator with ``epsilon=None``, cloned for every round; from the second round
        on its ``init`` is the previous round's ``Sigma_``.
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    mask : ndarray of bool, shape (n_samples,)
        The first kept set; its size is kept throughout.

    Returns
    -------
    TrimmedFit
    """
    k = int(mask.sum())

    def refit(state: _Round) -> _Round:
        init = template.init if state.model is None else state.model.Sigma_
        model = clone(template).set_params(init=init).fit(X[state.reselected], y[state.reselected])
        losses = (model.predict(X) - y) ** 2
        return _Round(model, state.reselected, losses, smallest(losses, k))

    run = alternate(
        refit, lambda state: state.reselected.tobytes(), _Round(None, mask, None, mask),
        MAX_ROUNDS, repeat="last",
    )
    if not run.converged:
        warnings.warn(
            f"MetricKernelRidge: the kept rows still changed after {MAX_ROUNDS} rounds of "
            "alternation; the fit on the last kept set is returned.",
            ConvergenceWarning,
            stacklevel=3,
        )
    last = run.state
    return TrimmedFit(
        last.model, last.mask, last.losses, 1.0 - k / y.size, run.n_rounds, run.converged
    )


@dataclass(frozen=True)
class _Round:
    """One metric fit of the alternation: the model, the rows it was fitted on, every row's
    squared residual under it and the ``k`` rows it explains best (the next round's)."""

    model: Any
    mask: np.ndarray
    losses: np.ndarray | None
    reselected: np.ndarray
