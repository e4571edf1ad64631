"""The subsample route of the in-memory fit: alpha / gamma "auto" of a regression of more than
``SELECTION_ROWS`` rows chosen on a subsample, confirmed on every row (a pilot fit, its inliers
on every row, alpha and gamma confirmed by leave-one-out on them, one round of flags)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils import _safe_indexing, check_random_state

from ..._fractions import n_kept
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
from .stage import Candidates, Stage

if TYPE_CHECKING:
    from typing import Self  # the host the routes are mixed into (InMemoryFit)

SELECTION_ROWS = 2000
"""Above this many rows, alpha / gamma "auto" are chosen on a subsample of this many rows and
alpha confirmed on every row (:meth:`InMemoryFit._fit_choosing_on_subsample`)."""
SCORED_ROWS = 5000
"""At most this many inliers, drawn once, count in the leave-one-out scores that confirm alpha
and gamma on every row (the fit is on all inliers; a row's leave-one-out residual costs O(m^2)
once the Gram matrix is factorized)."""


class SubsampleRoute:
    """The subsample route's steps, mixed into :class:`.in_memory.InMemoryFit` (they use its
    settings, rows and core steps); the high-breakdown route's sampled start ends with its pilot
    steps (:meth:`_fit_from_pilot`)."""

    def _chooses_on_subsample(self) -> bool:
        """Whether alpha / gamma "auto" are chosen on a subsample (:meth:`_fit_choosing_on_
        subsample`): a regression (squared loss, no link) of more than ``SELECTION_ROWS`` rows
        without row weights, on the host."""
        loss = self.target.loss
        return (
            self.X.shape[0] > SELECTION_ROWS
            and isinstance(loss, SquaredLoss)
            and not isinstance(loss, LinkSquaredLoss)
            and self.sample_weight is None
            and self.settings.device is None
            and self.settings.kernel != "precomputed"
        )

    def _fit_choosing_on_subsample(self, candidates: Candidates) -> Stage:
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
           (:meth:`_reflagged`) replace the inliers, and the model is refitted on them.

        No trimmed solver runs on every row: at a small alpha it fits a share of the outliers
        by their own coefficients and keeps them (the same 20,000 rows: 0.58 after step 1's
        choice, against 0.49 on the fixed rows).
        """
        alphas, gammas = candidates
        settings = self.settings
        if settings.n_components is None:
            self.check_memory(self.X.shape[0])  # before the subsample's work, not after it
        rng = check_random_state(settings.random_state)
        subsample = self._subsample(rng, settings)
        start_alpha = self.task.start_alpha if len(alphas) > 1 else alphas[0]
        start_gamma = gammas[len(gammas) // 2]  # the grid's middle: robust_gamma itself
        pilot = subsample._fit_at(settings.epsilon, ([start_alpha], [start_gamma]), None)

        def on_pilot_rows(gamma: float | None) -> tuple[Problem | FeatureProblem, np.ndarray]:
            return subsample._build_problem(start_alpha, gamma, pilot.epsilon)[0], pilot.kept

        gamma, alpha, scores, _ = _hyperparameters.select(
            gammas, alphas, _hyperparameters.MIN_TRIM, on_pilot_rows, kept_only=True
        )
        return self._fit_from_pilot(subsample, pilot, alpha, gamma, scores, candidates, rng)

    def _fit_from_pilot(
        self,
        subsample: Self,
        pilot: Stage,
        alpha: float,
        gamma: float | None,
        scores: np.ndarray | None,
        candidates: Candidates,
        rng: np.random.RandomState,
    ) -> Stage:
        """Steps 2-4 of :meth:`_fit_choosing_on_subsample` from the ``pilot`` fitted on the
        rows of ``subsample``, at its choice of ``alpha`` and ``gamma`` (both callers check the
        memory of an exact fit on every row before the subsample's work)."""
        alphas, gammas = candidates
        n = self.X.shape[0]
        residuals = np.sum((self.Y - subsample._outputs(pilot, self.X) / self.scale) ** 2, axis=1)
        kept = smallest(residuals, n_kept(n, pilot.epsilon))
        first, feature_map = self._build_problem(alpha, gamma, 1.0 - float(kept.mean()))
        fit_subset = SubsetFit(self._subset_fitter(first), first)
        stage = self._refit_on_rows(first, feature_map, kept, alpha, gamma, False, fit_subset)
        kept = self._reflagged(stage)
        counted = kept.copy()  # the rows every gamma's score counts: the same for all
        inliers = np.flatnonzero(kept)
        if inliers.size > SCORED_ROWS:
            counted[:] = False
            counted[rng.choice(inliers, SCORED_ROWS, replace=False)] = True
        start = [first, feature_map, gamma, fit_subset]
        del first, stage, fit_subset  # the confirmation frees them once it moves away
        problem, feature_map, alpha, gamma, confirmed_fit = self._confirmed(
            kept, counted, alphas, gammas, start
        )
        fit_subset = confirmed_fit  # the start's fitter where its problem was kept
        if fit_subset is None:  # another gamma or alpha: another system to factorize
            fit_subset = SubsetFit(self._subset_fitter(problem), problem)
        stage = self._refit_on_rows(problem, feature_map, kept, alpha, gamma, True, fit_subset)
        reflagged = self._reflagged(stage)
        if not np.array_equal(reflagged, kept):
            stage = self._refit_on_rows(
                problem, feature_map, reflagged, alpha, gamma, True, fit_subset
            )
        return replace(stage, scores=scores)

    def _subsample(
        self, rng: np.random.RandomState, settings: FitSettings, size: int = SELECTION_ROWS
    ) -> Self:
        """The fit of ``size`` rows drawn with ``rng`` (every row where there are fewer) with
        ``settings``; its gamma grid is this fit's (the scale of every row)."""
        n = self.X.shape[0]
        rows = np.arange(n)
        if n > size:
            rows = np.sort(rng.choice(n, size, replace=False))
        subsample = type(self)(
            settings,
            self.task,
            _safe_indexing(self.X, rows),
            replace(self.target, Y=self.target.Y[rows]),
            self.check_memory,
        )
        subsample.gamma_scale = self._gamma_scale()
        return subsample

    def _confirmed(
        self,
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
                trial = scored(*self._build_problem(alphas[0], candidate, 0.0), candidate)
                if trial[0] >= best[0]:
                    del trial  # before the next direction builds its problem
                    break
                best, position = trial, position + step
            if best[4] != start_gamma:  # moved up: no need to look down
                break
        return best[1:]

    def _reflagged(self, stage: Stage) -> np.ndarray:
        """The inliers under the model of ``stage``: the rows epsilon="auto" does not flag (at
        most ``MAX_EPSILON`` of them flagged: then those of largest studentized residual), or
        at a given epsilon the (1 - epsilon) n rows of smallest studentized residual, less
        those refine="reject" drops."""
        problem, evaluation = stage.problem, stage.result.evaluation
        n, epsilon = problem.n_samples, self.settings.epsilon
        # the regression flags (``_auto_epsilon.regression_flags``) from the losses computed once
        studentized = _auto_epsilon.studentized_losses(problem, evaluation)
        if isinstance(epsilon, str):
            if self.adaptive_cutoff:
                variance = truncated_variance(
                    studentized, evaluation.mask, problem.n_outputs
                )
                flagged = self._second_stage(
                    stage, studentized, adaptive_flags(studentized, variance, problem.n_outputs)
                )
            else:
                flagged = beyond_scale(
                    studentized, evaluation.mask, problem.n_outputs
                )
            if flagged.mean() <= MAX_EPSILON:
                return ~flagged
            epsilon = MAX_EPSILON
        kept = smallest(studentized, n_kept(n, float(epsilon)))
        if self._rejects(epsilon):
            kept &= ~self.task.rejections(problem, replace(evaluation, mask=kept))
        return kept

    def _second_stage(
        self, stage: Stage, studentized: np.ndarray, flagged: np.ndarray
    ) -> np.ndarray:
        """The flags of kernel="auto" on every row, as its second stage gives them
        (:mod:`.second_stage`, one round: no refit): of the rows the adaptive cutoff
        ``flagged``, those whose p-value under the fit of ``stage`` is below ``FLAG_LEVEL``.
        The local scale follows x up to ``LOCAL_X_ROWS`` dense rows, the fitted value beyond.
        Keeps the rows' evidence in ``self.row_evidence`` (residuals of the fit: in sample
        for the rows it kept; the x-distance NaN where the local scale does not follow x)."""
        problem, result = stage.problem, stage.result
        fitted = problem.apply(result.w) + result.b
        dense = not hasattr(self.X, "toarray") and stage.feature_map is None
        X = self.X if dense and self.X.shape[0] <= LOCAL_X_ROWS else None
        pvalues, reference = judge(X, fitted, studentized, ~flagged)
        flagged = flagged & (pvalues < FLAG_LEVEL)
        residuals = problem.Y - fitted
        z = robust_z(residuals, pvalues)
        distance = x_distance(X, ~flagged) if X is not None else np.full(flagged.size, np.nan)
        self.row_evidence = Evidence(
            ~flagged, pvalues, z, residuals, fitted, distance, reference
        )
        return flagged

    def _outputs(self, stage: Stage, X: Any) -> np.ndarray:
        """The model of ``stage`` (fitted on this fit's rows) at the rows ``X``, in this fit's
        scaled units times its scale: the original units."""
        w, b = stage.result.w, stage.result.b
        if stage.feature_map is not None:
            return (predict_in_chunks(stage.feature_map, X, w) + b) * self.scale
        settings = self.settings
        params = kernel_params(
            settings.kernel, stage.gamma, settings.degree, settings.coef0, settings.kernel_params
        )
        outputs = np.empty((X.shape[0], w.shape[1]))
        for rows in row_chunks(X.shape[0], self.X.shape[0]):
            outputs[rows] = compute_kernel(X[rows], self.X, settings.kernel, params) @ w
        return (outputs + b) * self.scale
