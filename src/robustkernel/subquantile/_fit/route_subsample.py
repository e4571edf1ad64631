"""The subsample route of the in-memory fit: alpha / gamma "auto" of a regression of more than
``SELECTION_ROWS`` rows chosen on a subsample, confirmed on every row (a pilot fit, its inliers
on every row, alpha and gamma confirmed by leave-one-out on them, one round of flags)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils import _safe_indexing, check_random_state

from ..._fractions import n_kept, trimmed_fraction
from ..._kernel_model.kernels import compute_kernel, kernel_params
from ..._kernel_model.losses import LinkSquaredLoss, SquaredLoss
from ..._memory import row_chunks
from ...trimming import MAX_EPSILON, beyond_scale, smallest, truncated_variance
from .._automatic import auto_epsilon as _auto_epsilon
from .._automatic import hyperparameters as _hyperparameters
from .._automatic.high_breakdown import adaptive_flags
from .._automatic.hyperparameters import resolvable_alpha, squared_norm
from .._automatic.second_stage import (
    FLAG_LEVEL,
    LOCAL_X_ROWS,
    Evidence,
    judge,
    robust_z,
    x_distance,
)
from .._settings import FitSettings
from .._solve.features import predict_in_chunks
from .._solve.objective import FeatureProblem, Problem
from .._solve.refits import SubsetFit
from .core import InMemoryFit
from .stage import Candidates, Stage

SELECTION_ROWS = 2000
"""Above this many rows, alpha / gamma "auto" are chosen on a subsample of this many rows and
alpha confirmed on every row (:func:`fit_choosing_on_subsample`)."""
SCORED_ROWS = 5000
"""At most this many inliers, drawn once, count in the leave-one-out scores that confirm alpha
and gamma on every row (the fit is on all inliers; a row's leave-one-out residual costs O(m^2)
once the Gram matrix is factorized)."""


def chooses_on_subsample(fit: InMemoryFit) -> bool:
    """Whether alpha / gamma "auto" are chosen on a subsample
    (:func:`fit_choosing_on_subsample`): a regression (squared loss, no link) of more than
    ``SELECTION_ROWS`` rows without row weights, on the host."""
    loss = fit.target.loss
    return (
        fit.X.shape[0] > SELECTION_ROWS
        and isinstance(loss, SquaredLoss)
        and not isinstance(loss, LinkSquaredLoss)
        and fit.sample_weight is None
        and fit.settings.device is None
        and fit.settings.kernel != "precomputed"
    )


def fit_choosing_on_subsample(fit: InMemoryFit, candidates: Candidates) -> Stage:
    """alpha / gamma "auto" at any size, at the cost of a few fits on every row.

    1. On ``SELECTION_ROWS`` rows drawn at random, a pilot fit (at the given or estimated
       epsilon) at the starting alpha and the middle gamma of the grid (``robust_gamma``)
       finds the inliers; every (gamma, alpha) is scored by leave-one-out on those fixed
       rows (:func:`.hyperparameters.select` with ``kept_only``: one eigendecomposition
       per gamma). Scoring each gamma on the rows its own trimmed fit keeps lets a smooth,
       biased fit trim its own errors (20,000 rows: test RMSE 0.64 against 0.49).
    2. Every row is scored by its residual under the pilot model; the share of the rows the
       pilot kept, those of smallest residual, are the inliers.
    3. On every row at the chosen gamma, alpha is chosen again by leave-one-out on the
       inliers (the best penalty grows with the rows; one eigendecomposition serves the
       grid), and the model is fitted once on them.
    4. One more round at that model: the rows flagged by its studentized residuals
       (:func:`_reflagged`) replace the inliers, and the model is refitted on them.

    No trimmed solver runs on every row: at a small alpha it fits a share of the outliers
    by their own coefficients and keeps them (the same 20,000 rows: 0.58 after step 1's
    choice, against 0.49 on the fixed rows).
    """
    alphas, gammas = candidates
    settings = fit.settings
    if settings.n_components is None:
        fit.check_memory(fit.X.shape[0])  # before the subsample's work, not after it
    rng = check_random_state(settings.random_state)
    subsample = subsample_of(fit, rng, settings)
    start_alpha = fit.task.start_alpha if len(alphas) > 1 else alphas[0]
    start_gamma = gammas[len(gammas) // 2]  # the grid's middle: robust_gamma itself
    pilot = subsample.fit_at(settings.epsilon, ([start_alpha], [start_gamma]), None)

    def on_pilot_rows(gamma: float | None) -> tuple[Problem | FeatureProblem, np.ndarray]:
        return subsample.build_problem(start_alpha, gamma, pilot.epsilon)[0], pilot.kept

    gamma, alpha, scores, _ = _hyperparameters.select(
        gammas, alphas, _hyperparameters.MIN_TRIM, on_pilot_rows, kept_only=True
    )
    return fit_from_pilot(fit, subsample, pilot, alpha, gamma, scores, candidates, rng)[0]


def fit_from_pilot(
    fit: InMemoryFit,
    subsample: InMemoryFit,
    pilot: Stage,
    alpha: float,
    gamma: float | None,
    scores: np.ndarray | None,
    candidates: Candidates,
    rng: np.random.RandomState,
) -> tuple[Stage, Evidence | None]:
    """Steps 2-4 of :func:`fit_choosing_on_subsample` from the ``pilot`` fitted on the
    rows of ``subsample``, at its choice of ``alpha`` and ``gamma`` (both callers check the
    memory of an exact fit on every row before the subsample's work). Returns the stage and
    the evidence of every row from the last round of flags (None unless ``fit`` flags by the
    adaptive cutoff and epsilon is "auto")."""
    alphas, gammas = candidates
    n = fit.X.shape[0]
    residuals = np.sum((fit.Y - _outputs(subsample, pilot, fit.X) / fit.scale) ** 2, axis=1)
    kept = smallest(residuals, n_kept(n, pilot.epsilon))
    first, feature_map = fit.build_problem(alpha, gamma, trimmed_fraction(kept))
    fit_subset = SubsetFit(fit.subset_fitter(first), first)
    stage = fit.refit_on_rows(first, feature_map, kept, alpha, gamma, False, fit_subset)
    kept, _ = _reflagged(fit, stage)
    counted = kept.copy()  # the rows every gamma's score counts: the same for all
    inliers = np.flatnonzero(kept)
    if inliers.size > SCORED_ROWS:
        counted[:] = False
        counted[rng.choice(inliers, SCORED_ROWS, replace=False)] = True
    start = [first, feature_map, gamma, fit_subset]
    del first, stage, fit_subset  # the confirmation frees them once it moves away
    problem, feature_map, alpha, gamma, confirmed_fit = _confirmed(
        fit, kept, counted, alphas, gammas, start
    )
    fit_subset = confirmed_fit  # the start's fitter where its problem was kept
    if fit_subset is None:  # another gamma or alpha: another system to factorize
        fit_subset = SubsetFit(fit.subset_fitter(problem), problem)
    stage = fit.refit_on_rows(problem, feature_map, kept, alpha, gamma, True, fit_subset)
    reflagged, evidence = _reflagged(fit, stage)
    if not np.array_equal(reflagged, kept):
        stage = fit.refit_on_rows(
            problem, feature_map, reflagged, alpha, gamma, True, fit_subset
        )
    return replace(stage, scores=scores), evidence


def subsample_of(
    fit: InMemoryFit,
    rng: np.random.RandomState,
    settings: FitSettings,
    size: int = SELECTION_ROWS,
) -> InMemoryFit:
    """The fit of ``size`` rows of ``fit`` drawn with ``rng`` (every row where there are
    fewer) with ``settings``; its gamma grid is that of ``fit`` (the scale of every row)."""
    n = fit.X.shape[0]
    rows = np.arange(n)
    if n > size:
        rows = np.sort(rng.choice(n, size, replace=False))
    return InMemoryFit(
        settings,
        fit.task,
        _safe_indexing(fit.X, rows),
        replace(fit.target, Y=fit.target.Y[rows]),
        fit.check_memory,
        gamma_scale=fit.gamma_scale(),
    )


def _confirmed(
    fit: InMemoryFit,
    kept: np.ndarray,
    counted: np.ndarray,
    alphas: list[float],
    gammas: list[float | None],
    start: list[Any],
) -> tuple[Problem | FeatureProblem, TransformerMixin | None, float, float | None, Any]:
    """The problem on every row at the gamma of least leave-one-out score of the fit on
    the rows ``kept``, counted on the rows ``counted`` (over every alpha: one
    eigendecomposition per gamma), searched from the subsample's choice to the neighbouring
    gammas of the grid while the score falls, up first (more rows support a less smooth
    model: the best width of kernel ridge shrinks as the rows grow); its best alpha; and
    the start's subset fitter where the start's problem is the one returned, else None.

    ``start`` holds the start's problem, feature map, gamma and subset fitter; it is
    emptied, so that at most two problems on every row are alive at once (the best and the
    one scored: at 10^6 rows x 1000 float32 features, 4 GB each).
    """

    def scored(
        problem: Problem | FeatureProblem, feature_map: Any, gamma: Any, fit: Any = None
    ) -> tuple:
        scores = np.zeros(1)
        if len(alphas) > 1:
            scores = _hyperparameters.honest_scores(
                problem, kept, alphas, _hyperparameters.MIN_TRIM, counted
            )
        alpha = alphas[int(np.argmin(scores))]
        resolvable = resolvable_alpha(alpha, squared_norm(problem))
        if resolvable != problem.alpha:  # else the same problem, its factorization reused
            problem, fit = replace(problem, alpha=resolvable), None
        return float(scores.min()), problem, feature_map, alpha, gamma, fit

    start_gamma = start[2]
    best = scored(*start)
    start.clear()
    index = gammas.index(start_gamma)
    for step in (1, -1):
        position = index + step
        while 0 <= position < len(gammas):
            candidate = gammas[position]
            trial = scored(*fit.build_problem(alphas[0], candidate, 0.0), candidate)
            if trial[0] >= best[0]:
                del trial  # before the next direction builds its problem
                break
            best, position = trial, position + step
        if best[4] != start_gamma:  # moved up: no need to look down
            break
    return best[1:]


def _reflagged(fit: InMemoryFit, stage: Stage) -> tuple[np.ndarray, Evidence | None]:
    """The inliers under the model of ``stage``: the rows epsilon="auto" does not flag (at
    most ``MAX_EPSILON`` of them flagged: then those of largest studentized residual), or
    at a given epsilon the (1 - epsilon) n rows of smallest studentized residual, less
    those refine="reject" drops; and the rows' evidence where the second stage judged them
    (:func:`_second_stage`), else None."""
    problem, evaluation = stage.problem, stage.result.evaluation
    n, epsilon = problem.n_samples, fit.settings.epsilon
    # the regression flags (``_auto_epsilon.regression_flags``) from the losses computed once
    studentized = _auto_epsilon.studentized_losses(problem, evaluation)
    evidence = None
    if isinstance(epsilon, str):
        if fit.adaptive_cutoff:
            variance = truncated_variance(
                studentized, evaluation.mask, problem.n_outputs
            )
            flagged, evidence = _second_stage(
                fit, stage, studentized, adaptive_flags(studentized, variance, problem.n_outputs)
            )
        else:
            flagged = beyond_scale(
                studentized, evaluation.mask, problem.n_outputs
            )
        if flagged.mean() <= MAX_EPSILON:
            return ~flagged, evidence
        epsilon = MAX_EPSILON
    kept = smallest(studentized, n_kept(n, float(epsilon)))
    if fit.rejects(epsilon):
        kept &= ~fit.task.rejections(problem, replace(evaluation, mask=kept))
    return kept, evidence


def _second_stage(
    fit: InMemoryFit, stage: Stage, studentized: np.ndarray, flagged: np.ndarray
) -> tuple[np.ndarray, Evidence]:
    """The flags of kernel="auto" on every row, as its second stage gives them
    (:mod:`.second_stage`, one round: no refit): of the rows the adaptive cutoff
    ``flagged``, those whose p-value under the fit of ``stage`` is below ``FLAG_LEVEL``.
    The local scale follows x up to ``LOCAL_X_ROWS`` dense rows, the fitted value beyond.
    Returns the flags and the rows' evidence (residuals of the fit: in sample for the rows
    it kept; the x-distance NaN where the local scale does not follow x)."""
    problem, result = stage.problem, stage.result
    fitted = problem.apply(result.w) + result.b
    dense = not hasattr(fit.X, "toarray") and stage.feature_map is None
    X = fit.X if dense and fit.X.shape[0] <= LOCAL_X_ROWS else None
    pvalues, reference = judge(X, fitted, studentized, ~flagged)
    flagged = flagged & (pvalues < FLAG_LEVEL)
    residuals = problem.Y - fitted
    z = robust_z(residuals, pvalues)
    distance = x_distance(X, ~flagged) if X is not None else np.full(flagged.size, np.nan)
    return flagged, Evidence(~flagged, pvalues, z, residuals, fitted, distance, reference)


def _outputs(fit: InMemoryFit, stage: Stage, X: Any) -> np.ndarray:
    """The model of ``stage`` (fitted on this fit's rows) at the rows ``X``, in this fit's
    scaled units times its scale: the original units."""
    w, b = stage.result.w, stage.result.b
    if stage.feature_map is not None:
        return (predict_in_chunks(stage.feature_map, X, w) + b) * fit.scale
    settings = fit.settings
    params = kernel_params(
        settings.kernel, stage.gamma, settings.degree, settings.coef0, settings.kernel_params
    )
    outputs = np.empty((X.shape[0], w.shape[1]))
    for rows in row_chunks(X.shape[0], fit.X.shape[0]):
        outputs[rows] = compute_kernel(X[rows], fit.X, settings.kernel, params) @ w
    return (outputs + b) * fit.scale
