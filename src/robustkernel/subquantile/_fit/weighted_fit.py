"""The weighted front of the in-memory fit: :func:`fit_in_memory` leaves rows of weight 0 out,
fits exact copies of rows once with their summed weights, and gives other weights the weighted
subquantile (integer weights fit as repeated rows), around :func:`.in_memory.run`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.utils import _safe_indexing

from ..._fractions import trimmed_fraction
from ..._kernel_model.losses import (
    power_of_two_below,
)
from ...trimming import (
    MAX_EPSILON,
    weighted_subquantile,
)
from .._automatic.second_stage import flag_kinds
from .._result import FitResult
from .._settings import FitSettings, unsupported
from .._tasks import Task
from .core import InMemoryFit
from .in_memory import run
from .stage import MemoryCheck
from .unique_rows import spread_kept_weight, unique_rows


def fit_in_memory(
    settings: FitSettings,
    task: Task,
    X: Any,
    y: np.ndarray,
    check_memory: MemoryCheck,
    sample_weight: np.ndarray | None = None,
) -> FitResult:
    """The fit of validated rows ``X`` and targets ``y``, with optional row weights.

    Rows of weight 0 are left out (``FitResult.rows`` names the others). With weights, or
    exact duplicate rows, the fit runs on the distinct rows weighing the weight of their copies
    (:mod:`.unique_rows`), so that integer weights fit exactly as repeated rows, whatever the
    configuration; the per-row results are then spread back to the given rows. (A precomputed
    kernel, and the options the weighted fit does not support, fit the given rows. kernel="auto"
    runs its high-breakdown start on the distinct rows, each once: copies would predict one
    another in its leave-one-out residuals.)
    """
    rows = None
    if sample_weight is not None:
        rows = np.flatnonzero(sample_weight > 0)
        if rows.size == 0:
            raise ValueError("sample_weight must give at least one row a positive weight.")
        X, y, sample_weight = _safe_indexing(X, rows), y[rows], sample_weight[rows]
        if np.all(sample_weight == 1.0):
            sample_weight = None
        elif _uniform(sample_weight) and settings.is_auto("alpha"):
            # uniform weights are no weights (alpha "auto" follows the weight per row); the
            # weighted fit would see the rows in their canonical order, and a classifier's
            # folds, dealt in row order, would differ from the unweighted fit's
            plain = fit_in_memory(settings, task, X, y, check_memory)
            c = float(sample_weight[0])
            with np.errstate(over="ignore"):
                history = plain.objective_history * c
            return replace(
                plain,
                rows=rows,
                alpha=plain.alpha * c,
                objective_history=history,
                row_weights=plain.row_weights * c,
            )
    distinct = settings.kernel != "precomputed" and not unsupported(
        settings.params, task, "weighted"
    )
    if distinct:
        result = _fit_distinct_rows(settings, task, X, y, check_memory, sample_weight)
    else:
        result = _fit_rows(settings, task, X, y, check_memory, sample_weight)
    return result if rows is None else replace(result, rows=rows)


def _uniform(weights: np.ndarray) -> bool:
    """Whether every weight is the same and their sum is finite (a sum beyond the largest
    float is refused by the weighted fit, with the message that says so)."""
    with np.errstate(over="ignore"):
        return bool(np.all(weights == weights[0]) and np.isfinite(np.sum(weights)))


def _fit_distinct_rows(
    settings: FitSettings,
    task: Task,
    X: Any,
    y: np.ndarray,
    check_memory: MemoryCheck,
    sample_weight: np.ndarray | None,
) -> FitResult:
    """The fit on the distinct rows (each weighing its copies), spread back to every row; the
    plain fit where there are neither weights nor copies."""
    unique = unique_rows(X, y, sample_weight)
    if sample_weight is None and not unique.has_copies:
        return _fit_rows(settings, task, X, y, check_memory, None)
    first = unique.first
    result = _fit_rows(
        settings, task, _safe_indexing(X, first), y[first], check_memory, unique.weights, X
    )
    kept = spread_kept_weight(unique, result.row_weights, sample_weight)
    losses = result.scaled_losses
    evidence = None
    if result.evidence is not None:  # each given row takes its distinct row's evidence
        evidence = {name: column[unique.inverse] for name, column in result.evidence.items()}
        evidence["flagged"] = kept == 0
        evidence["kind"] = flag_kinds(kept == 0, evidence["x_distance"])
    return replace(
        result,
        inlier_mask=kept > 0,
        outlier_scores=result.outlier_scores[unique.inverse],
        scaled_losses=None if losses is None else losses[unique.inverse],
        row_weights=kept,
        evidence=evidence,
    )


def _fit_rows(
    settings: FitSettings,
    task: Task,
    X: Any,
    y: np.ndarray,
    check_memory: MemoryCheck,
    weights: np.ndarray | None,
    map_rows: Any = None,
) -> FitResult:
    """The fit of every given row with positive ``weights`` (None: each counts 1); the
    feature map fitted on ``map_rows`` (:class:`InMemoryFit`).

    Weights other than 1 give the weighted subquantile: epsilon, alpha and gamma "auto", and
    the trim of refine="reject", are chosen by the fit without weights (which sees each row
    once); the weighted fit then runs the alternating solver with its gamma, its alpha times
    the mean weight (the same penalty per unit of weight: uniform weights give the fit without
    weights, whatever their scale) or the given alpha, refine=None, trimming the weight of the
    rows it trimmed, or a given epsilon of the weight where nothing rejects (refine="auto" or
    None: a given epsilon is the fraction trimmed, of the weight as of the rows; kernel="auto"
    then keeps the rows its start kept, or trimmed, first: :func:`_kept_by_start`). Weights of
    extreme magnitude are fitted divided by a power of two, with alpha divided by the same (the
    same minimizer, exactly), so that no sum overflows.
    """
    target = task.encode(y, settings.params, settings.estimator)
    if weights is None or np.all(weights == 1.0):
        return run(InMemoryFit(settings, task, X, target, check_memory, map_rows=map_rows))
    scale = _weight_scale(weights)
    weights = weights / scale  # exact: a power of two
    chosen = None
    weighted = settings.replace(refine=None)
    # a given epsilon that nothing rejects beyond is the share of the weight trimmed
    counted = not settings.is_auto("epsilon") and settings.refine is None
    automatic = [
        name for name in ("epsilon", "alpha", "gamma", "kernel") if settings.is_auto(name)
    ]
    if automatic or settings.refine is not None:
        chosen = run(
            InMemoryFit(
                settings.replace(verbose=0), task, X, target, check_memory, map_rows=map_rows
            )
        )
        # the weight of the rows it trimmed: the trim in the weighted fit's units
        trimmed = trimmed_fraction(chosen.inlier_mask * weights, weights)
        alpha = chosen.alpha
        if settings.is_auto("alpha"):  # the same penalty per unit of weight
            alpha *= float(np.mean(weights)) * scale
        if not counted:
            weighted = weighted.replace(epsilon=min(trimmed, MAX_EPSILON))
        weighted = weighted.replace(alpha=alpha, gamma=chosen.gamma)
        if chosen.loss is not None and "loss" in settings.params:  # loss="auto": its choice
            weighted = weighted.replace(loss=chosen.loss)
            target = task.encode(y, weighted.params, settings.estimator)
        if settings.kernel == "auto":  # the kernel its start chose
            weighted = weighted.replace(
                kernel=chosen.kernel, degree=chosen.degree, coef0=chosen.coef0
            )
    inner = weighted.replace(alpha=float(weighted.alpha) / scale)
    if chosen is not None and settings.kernel == "auto":
        # kernel="auto": the weighted model on the rows the start kept, which stay fixed, as
        # without weights (the alternating solver from every row took hbk's bad leverage
        # points back in with integer weights 1-3), and on a majority row
        kept = _kept_by_start(chosen, weights, float(settings.epsilon) if counted else None)
        fit_weights = np.where(kept > 0, kept, weights)  # a row cut by the count: its part
        fit = InMemoryFit(inner, task, X, target, check_memory, fit_weights, map_rows)
        result = fit.fit_on_fixed_rows(kept > 0, float(inner.alpha), chosen.gamma)
        result = replace(result, evidence=chosen.evidence)
        if counted:  # the share of the weight trimmed (else that of the distinct rows)
            result = replace(result, epsilon=trimmed_fraction(kept, weights))
    else:
        result = run(InMemoryFit(inner, task, X, target, check_memory, weights, map_rows))
    with np.errstate(over="ignore"):
        history = result.objective_history * scale
        kept = result.row_weights * scale  # each row's kept weight, in the given units
    result = replace(
        result, alpha=float(weighted.alpha), objective_history=history, row_weights=kept
    )
    if automatic:
        result = replace(result, hyperparameter_scores=chosen.hyperparameter_scores)
    return result


def _kept_by_start(
    chosen: FitResult, weights: np.ndarray, epsilon: float | None
) -> np.ndarray:
    """kernel="auto" with weights: each row's kept weight in the weighted model on fixed rows.

    Parameters
    ----------
    chosen : FitResult
        The fit without weights (each row once): the rows its start kept, and their losses.
    weights : ndarray of shape (n_samples,)
        The positive row weights.
    epsilon : float or None
        A given epsilon, the share of the weight to trim; None keeps the rows ``chosen`` kept.

    Returns
    -------
    ndarray of shape (n_samples,)
        Each row's whole weight where kept, 0 where trimmed; with ``epsilon``, the weighted
        subquantile of a ranking that puts a majority row (:func:`_majority_row`) first, then
        the rows ``chosen`` kept, then the others, each group by its loss: (1 - epsilon) of
        the weight kept (integer weights: ceil((1 - epsilon) W) of the total W, as the
        repeated rows), at most one row in part.
    """
    majority = _majority_row(weights)
    if epsilon is None:
        return np.where(chosen.inlier_mask | majority, weights, 0.0)
    # by the losses that cannot overflow: the squared residuals of targets beyond 1e154, in
    # the given units, are all inf and would tie
    losses = chosen.outlier_scores if chosen.scaled_losses is None else chosen.scaled_losses
    order = np.lexsort((losses, ~chosen.inlier_mask, ~majority))
    rank = np.empty(weights.size)
    rank[order] = np.arange(weights.size)
    return weighted_subquantile(rank, epsilon, weights)


def _majority_row(weights: np.ndarray) -> np.ndarray:
    """The row (at most one) whose weight exceeds the sum of the others', as a mask.

    A row that carries more than half of the total weight is a majority on its own: a trim of
    less than half of the weight (the weighted subquantile's, at most ``MAX_EPSILON``) cannot
    remove it, so it cannot be an outlier of a fit of 50% breakdown. kernel="auto"'s start,
    which sees each distinct row once, may flag it (one row of weight 1e300 off the trend of
    60 others was left out, and the fit missed its target by 5.4); the weighted fit keeps it
    and follows it, as the weighted subquantile and scikit-learn's ``KernelRidge`` do.

    Parameters
    ----------
    weights : ndarray of shape (n_samples,)
        Positive, finite row weights whose sum is finite.

    Returns
    -------
    ndarray of bool, shape (n_samples,)
        True for the row of more than half of the total weight, if there is one.
    """
    return 2.0 * weights > weights.sum()


def _weight_scale(weights: np.ndarray) -> float:
    """A power of two near the largest weight, by which the weighted fit divides the weights
    (and alpha): sums of weights and of weighted losses stay far from overflow and underflow.
    1 for integer weights up to 2^50, whose subquantile keeps whole repeated rows."""
    scale = power_of_two_below(weights.max())
    if scale <= 2.0**50 and np.all(weights == np.round(weights)):
        return 1.0
    return scale
