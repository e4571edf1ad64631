"""The in-memory backends of a Subquantile fit: the exact kernel model, or its features.

:class:`InMemoryFit` runs one fit from validated settings (:mod:`._settings`), the task's rules
(:mod:`._tasks`) and the encoded targets, and returns a :class:`._result.FitResult`; it never
touches the estimator. The steps, in order:

1. alpha / gamma "auto": a trimmed fit per candidate gamma, every (gamma, alpha) scored by honest
   residuals (:func:`._hyperparameters.select`); with epsilon="auto" the whole fit runs twice
   (the second time at the first fit's estimate, from the rows it kept);
2. the objective (:class:`._objective.Problem` on the kernel matrix, or
   :class:`._objective.FeatureProblem` on Nystroem / random Fourier features);
3. the start (``init``, or the rows the selection kept), the solver from the registry
   (:data:`._solvers.SOLVERS`) and the ``n_init - 1`` random starts;
4. epsilon="auto": flag, refit, until the flagged set repeats; or refine="reject": drop the kept
   rows implausible under the fit (:func:`._refine.drop_implausible`);
5. refine="biweight": the M-step (:func:`._refine.biweight_refinement`).

:func:`fit_in_memory` adds row weights: rows of weight 0 are left out of the fit, and other
weights give the weighted subquantile (integer weights fit as repeated rows).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from types import ModuleType
from typing import Any

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing, check_random_state
from tqdm.auto import tqdm

from .._fractions import n_kept
from .._kernel_model.estimator import EncodedTarget
from .._kernel_model.kernels import (
    NON_FINITE_FEATURES,
    check_fit_kernel,
    compute_kernel,
    kernel_params,
    non_finite_error,
)
from .._kernel_model.losses import (
    ForwardCorrectedLoss,
    HingeLoss,
    LinkSquaredLoss,
    SquaredLoss,
    class_indices,
    class_probabilities,
    power_of_two_below,
)
from .._kernel_model.pairwise import PairwisePlatt
from .._memory import row_chunks
from . import _auto_epsilon, _hyperparameters, _label_noise
from ._features import fit_feature_map, predict_in_chunks, transform_in_chunks
from ._folds import flag_probabilities, fold_probabilities, out_of_fold_outputs
from ._high_breakdown import (
    START_MATRICES,
    Start,
    adaptive_flags,
    high_breakdown_start,
    smallest,
)
from ._objective import ClassFloors, FeatureProblem, Problem, subquantile
from ._refine import BIWEIGHT_C, Refinement, biweight_refinement, drop_implausible
from ._refits import SubsetFit, SvmSubsetFitter
from ._result import FitResult
from ._settings import FitSettings, unsupported
from ._solvers import SolverResult, fit_rows, initial_coefficients
from ._tasks import Task
from ._unique_rows import spread_kept_weight, unique_rows

Candidates = tuple[list[float], list[float | None]]
"""The alphas and the gammas a fit chooses from (one each where given)."""
SELECTION_ROWS = 2000
"""Above this many rows, alpha / gamma "auto" are chosen on a subsample of this many rows and
alpha confirmed on every row (:meth:`InMemoryFit._fit_choosing_on_subsample`)."""
START_ROWS = 1000
"""kernel="auto" on more than ``SELECTION_ROWS`` rows (or with features): its high-breakdown
start runs on this many rows drawn at random (FAST-LTS's nested subsamples stop at 1500 rows;
the start's trimmed fits cost O(h^3) each, 41 of a 51 s fit at 3000 rows with 2000 rows)."""
SCORED_ROWS = 5000
"""At most this many inliers, drawn once, count in the leave-one-out scores that confirm alpha
and gamma on every row (the fit is on all inliers; a row's leave-one-out residual costs O(m^2)
once the Gram matrix is factorized)."""
MemoryCheck = Callable[..., None]
"""``check(n_samples, n_matrices=None)``: refuse an exact fit whose n x n matrices (the
estimator's count where None) do not fit in memory."""


@dataclass(frozen=True)
class Stage:
    """One fit at one epsilon (a fraction, or "auto"): what :meth:`InMemoryFit.run` keeps."""

    problem: Problem | FeatureProblem
    feature_map: TransformerMixin | None
    result: SolverResult
    refinement: Refinement | None
    best_start: int
    alpha: float
    gamma: float | None
    scores: np.ndarray | None
    epsilon: float  # the fraction of the rows (of their weight) trimmed
    # the hinge losses: Platt's sigmoids of the pairs (None: computed by ``_result``)
    calibration: PairwisePlatt | None = None
    # the label-noise route: the out-of-fold outputs of the chosen model, fold fits on the kept
    # rows (what loss="auto" compares)
    fold_outputs: np.ndarray | None = None
    # forward correction: T[true, given] of the loss every row was fitted with (the log loss's
    # label-noise route, flips into one class); None: the kept rows were fitted plainly
    transition: np.ndarray | None = None

    @property
    def kept(self) -> np.ndarray:
        """The rows of the final model (the biweight's rows of positive weight)."""
        if self.refinement is not None:
            return self.refinement.weights > 0
        return self.result.evaluation.mask


@dataclass(frozen=True)
class OutOfFoldChoice:
    """The classifier's (gamma, alpha) of least out-of-fold error, its out-of-fold outputs
    (n, n_outputs), the errors of every pair (n_gammas, n_alphas) and the problem at that
    gamma, so that the rounds refit its folds without building its kernel matrix again."""

    error: float
    alpha: float
    gamma: float | None
    outputs: np.ndarray
    scores: np.ndarray
    problem: Problem | FeatureProblem  # at the chosen gamma (its alpha: the grid's first)


class InMemoryFit:
    """One Subquantile fit of ``X`` (rows in memory) and the encoded targets.

    Parameters
    ----------
    settings : FitSettings
        The validated parameters.
    task : Task
        The loss-specific rules.
    X : ndarray or sparse matrix
        Validated training rows (the kernel matrix with kernel="precomputed").
    target : EncodedTarget
        The encoded targets and their loss.
    check_memory : callable
        The estimator's memory guard of exact fits.
    sample_weight : ndarray, default=None
        Positive row weights (the weighted subquantile), or None.
    map_rows : ndarray or sparse matrix, default=None
        The rows the feature map is fitted on (Nystroem draws its landmarks from them): the
        rows as given where X holds their distinct rows, so that the features do not depend on
        whether copies were collapsed (and equal those of a Dask fit of the same rows); X where
        None.
    """

    def __init__(
        self,
        settings: FitSettings,
        task: Task,
        X: Any,
        target: EncodedTarget,
        check_memory: MemoryCheck,
        sample_weight: np.ndarray | None = None,
        map_rows: Any = None,
    ) -> None:
        self.settings, self.task, self.X, self.target = settings, task, X, target
        self.check_memory = check_memory
        self.sample_weight = sample_weight
        self.map_rows = X if map_rows is None else map_rows
        # Squared-loss targets are fitted divided by a power of two (exact) and the model
        # scaled back: no squared residual overflows, whatever the targets' magnitude.
        self.scale = target.loss.target_scale(target.Y)
        self.Y = target.Y / self.scale
        self.gamma_scale: float | None = None  # robust_gamma of the rows: _gamma_scale()
        # epsilon="auto" flags by the high-breakdown start's adaptive cutoff (kernel="auto"),
        # else by the fixed chi^2 level (:meth:`_reflagged`)
        self.adaptive_cutoff = False

    # -- the fit -------------------------------------------------------------------------------

    def run(self) -> FitResult:
        """The fitted model (see the module docstring for the steps)."""
        if self.settings.kernel == "auto":
            return self._run_from_high_breakdown()
        candidates = alphas, gammas = self._candidates()
        epsilon, estimated = self.settings.epsilon, None
        choices = len(alphas) * len(gammas)
        if choices > 1 and self._chooses_on_subsample():
            return self._result(self._fit_choosing_on_subsample(candidates))
        if self.settings.is_auto("epsilon") and self.task.classifier:
            return self._result(self._label_noise_stage(candidates))
        if self.settings.is_auto("epsilon") and self.task.reselects and choices > 1:
            # alpha and gamma chosen at the starting trim first estimate epsilon; then they
            # are chosen again, and the model fitted, at that estimate (a 40% trim chooses for
            # the hardest 60% of clean rows, e.g. a smoother kernel than the data need). The
            # second choice's trimmed fits start from the rows the estimate kept: from the
            # ordinary fit, a cluster of rows sharing a wrong target (zero loss once fitted)
            # would be kept again, and clean rows trimmed in its place.
            first = self._fit_at("auto", candidates, None)
            epsilon, estimated = first.epsilon, first.kept
            del first  # its kernel matrix: the second fit builds its own
        return self._result(self._fit_at(epsilon, candidates, estimated))

    def _run_from_high_breakdown(self) -> FitResult:
        """kernel="auto": the kernel and the inliers from the high-breakdown start, then the
        model on those rows. On at most ``SELECTION_ROWS`` rows of the exact model, the start
        runs on every row (:meth:`_high_breakdown_stage`); on more rows, or with features
        (``n_components``), it runs on a sample and the model on every row follows from it
        (:meth:`_fit_from_sampled_start`)."""
        if self.X.shape[0] > SELECTION_ROWS or self.settings.n_components is not None:
            stage, start = self._fit_from_sampled_start()
        else:
            stage, start = self._high_breakdown_stage()
        return replace(
            self._result(stage),
            kernel=start.kernel,
            degree=start.degree,
            coef0=start.kernel_settings.get("coef0"),
        )

    def _high_breakdown_stage(self) -> tuple[Stage, Start]:
        """The start on every row of the exact model
        (:func:`._high_breakdown.high_breakdown_start`): the kernel it chooses replaces "auto"
        in the settings, and the model is fitted on the rows it keeps (:meth:`_fit_on_rows`):
        its reweighting's rows where epsilon="auto", else the (1 - epsilon) n rows of smallest
        standardized residual."""
        settings = self.settings
        gamma = self._gamma_scale()
        if not settings.is_auto("gamma") and settings.gamma is not None:
            gamma = float(settings.gamma)
        self.check_memory(self.X.shape[0], START_MATRICES)
        dense = self.X.toarray() if hasattr(self.X, "toarray") else np.asarray(self.X)
        with tqdm(
            desc="SubQ high-breakdown start", unit="kernel", disable=not settings.verbose
        ) as bar:

            def on_family(name: str) -> None:
                bar.update(1)
                bar.set_postfix(kernel=name)

            start = high_breakdown_start(
                dense, self.Y, settings.fit_intercept, gamma, settings.random_state, on_family
            )
        self.settings = settings.replace(**start.kernel_settings)
        kept, epsilon = start.kept, None
        if not isinstance(settings.epsilon, str):
            epsilon = float(settings.epsilon)
        elif 1.0 - kept.mean() > _auto_epsilon.MAX_EPSILON:
            epsilon = _auto_epsilon.MAX_EPSILON
        if epsilon is not None:
            trimmed = smallest(start.standardized, n_kept(kept.size, epsilon))
            # a given epsilon trims at least that fraction: refine="reject" also drops the
            # rows the reweighting flags (one row scaled x100 / y1e4 of diabetes' 20% that the
            # count kept took the test RMSE from 0.72 to 0.86)
            if isinstance(settings.epsilon, str) or settings.refine is None:
                kept = trimmed
            else:
                kept = trimmed & start.kept
        return self._fit_on_rows(kept, self._candidates()), start

    def _fit_from_sampled_start(self) -> tuple[Stage, Start]:
        """kernel="auto" at any size: the high-breakdown start on ``START_ROWS`` rows drawn at
        random (every row where there are fewer) on the exact model, which chooses the
        kernel, its inliers, alpha and gamma; then the model on every row, exact or on
        features, from that pilot (:meth:`_fit_from_pilot`: every row scored by its residual
        under the pilot, alpha and gamma confirmed on every row, the flags of every row from
        the honest residuals of the fit on the inliers, by the start's adaptive cutoff)."""
        if self.settings.n_components is None:
            self.check_memory(self.X.shape[0])  # before the start's work, not after it
        rng = check_random_state(self.settings.random_state)
        subsample = self._subsample(rng, self.settings.replace(n_components=None), START_ROWS)
        pilot, start = subsample._high_breakdown_stage()
        self.settings = self.settings.replace(**start.kernel_settings)
        self.adaptive_cutoff = True
        stage = self._fit_from_pilot(
            subsample, pilot, pilot.alpha, pilot.gamma, pilot.scores, self._candidates(), rng
        )
        return stage, start

    def _subsample(
        self, rng: np.random.RandomState, settings: FitSettings, size: int = SELECTION_ROWS
    ) -> InMemoryFit:
        """The fit of ``size`` rows drawn with ``rng`` (every row where there are fewer) with
        ``settings``; its gamma grid is this fit's (the scale of every row)."""
        n = self.X.shape[0]
        rows = np.arange(n)
        if n > size:
            rows = np.sort(rng.choice(n, size, replace=False))
        subsample = InMemoryFit(
            settings,
            self.task,
            _safe_indexing(self.X, rows),
            replace(self.target, Y=self.target.Y[rows]),
            self.check_memory,
        )
        subsample.gamma_scale = self._gamma_scale()
        return subsample

    def _gamma_scale(self) -> float:
        """The robust gamma of the rows (:func:`._hyperparameters.robust_gamma`), the middle of
        the gamma grid: of every row of the fit a subsample was drawn from."""
        if self.gamma_scale is None:
            self.gamma_scale = _hyperparameters.robust_gamma(self.X)
        return self.gamma_scale

    def fit_on_fixed_rows(
        self, kept: np.ndarray, alpha: float, gamma: float | None
    ) -> FitResult:
        """The model at ``alpha`` and ``gamma`` fitted once on the rows ``kept`` (with their
        weights where the fit has them)."""
        problem, feature_map = self._build_problem(alpha, gamma, 1.0 - float(kept.mean()))
        return self._result(
            self._refit_on_rows(problem, feature_map, kept, alpha, gamma, refine=False)
        )

    def _fit_on_rows(self, kept: np.ndarray, candidates: Candidates) -> Stage:
        """The model on the rows ``kept``, which stay fixed: alpha and gamma of least
        leave-one-out score on those rows (:func:`._hyperparameters.select`, the least trim),
        then one fit on them. No solver runs and nothing is refined: the in-sample trimmed
        objective a solver lowers prefers a flexible kernel that also fits a tight group of
        outliers (a sine, 30% of its rows a far cluster: the rbf fit on the clean rows the
        start kept took 73 of the 90 cluster rows back in six alternating steps), and the
        start's reweighting has already won back the efficiency that refine is for."""
        epsilon = 1.0 - float(kept.mean())
        alphas, gammas = candidates
        alpha, gamma, scores = alphas[0], gammas[0], None
        if len(alphas) > 1 or len(gammas) > 1:
            start_alpha = self.task.start_alpha if len(alphas) > 1 else alphas[0]

            def on_kept_rows(gamma: float | None) -> tuple[Problem | FeatureProblem, np.ndarray]:
                return self._build_problem(start_alpha, gamma, epsilon)[0], kept

            gamma, alpha, scores, _ = _hyperparameters.select(
                gammas, alphas, _hyperparameters.MIN_TRIM, on_kept_rows, kept_only=True
            )
        problem, feature_map = self._build_problem(alpha, gamma, epsilon)
        stage = self._refit_on_rows(problem, feature_map, kept, alpha, gamma, refine=False)
        return replace(stage, scores=scores)

    def _refit_on_rows(
        self,
        problem: Problem | FeatureProblem,
        feature_map: TransformerMixin | None,
        kept: np.ndarray,
        alpha: float,
        gamma: float | None,
        refine: bool = True,
        fit_subset: SubsetFit | None = None,
    ) -> Stage:
        """The model of ``problem`` (at ``alpha``), fitted once on the rows ``kept`` (by
        ``fit_subset``, the problem's subset fitter, where one exists); refine="biweight" then
        runs from them where ``refine``."""
        if fit_subset is None:
            fit_subset = SubsetFit(self._subset_fitter(problem), problem)
        problem = replace(problem, k=int(kept.sum()))
        # with row weights, each kept row's weight (a float mask: the weighted fit)
        rows = kept if self.sample_weight is None else kept * self.sample_weight
        w, b = fit_rows(problem, fit_subset, rows)
        evaluation = problem.evaluate(w, b)
        objective = problem.subset_objective(w, b, kept)
        if self.sample_weight is not None:
            objective += float(evaluation.losses[kept] @ (rows[kept] - 1.0))
        evaluation = replace(
            evaluation,
            mask=kept,
            threshold=float(evaluation.losses[kept].max()),
            objective=objective,
            weights=None if self.sample_weight is None else rows,
        )
        result = SolverResult(w, b, evaluation, 1, [objective], True)  # one exact fit
        epsilon = 1.0 - float(kept.mean())
        refinement = None
        if refine and self.settings.refine == "biweight" and epsilon:
            refinement = biweight_refinement(problem, kept)
        return Stage(problem, feature_map, result, refinement, 0, alpha, gamma, None, epsilon)

    def _fit_at(
        self, epsilon: float | str, candidates: Candidates, estimated: np.ndarray | None
    ) -> Stage:
        """One fit at ``epsilon`` (a fraction, or "auto"); ``estimated``: the inliers of an
        earlier estimate of epsilon, where the selection's trimmed fits start."""
        settings = self.settings
        alpha, gamma, scores, selected = self._hyperparameters(epsilon, candidates, estimated)
        if selected is None:  # nothing to choose: start from the given inliers, if any
            selected = estimated
        start = self._start(epsilon)
        problem, feature_map = self._build_problem(alpha, gamma, start)
        fit_subset = SubsetFit(self._subset_fitter(problem), problem)
        init = settings.init
        if not isinstance(init, str):
            init = np.asarray(init, dtype=float) / self.scale
        if selected is None or not (isinstance(init, str) and init == "erm"):
            w, b = initial_coefficients(problem, init, fit_subset.loosened(), settings.random_state)
        else:  # alpha / gamma "auto" and init="erm": start from the rows their selection kept
            w, b = fit_rows(problem, fit_subset.loosened(), selected)
        result, best_start = self._best_start(problem, fit_subset, w, b)
        if isinstance(epsilon, str):
            problem, result = self._estimate_epsilon(problem, fit_subset, result)
        elif self._rejects(epsilon):
            result = self._reject_implausible(problem, fit_subset, result)
        kept = result.evaluation.fit_rows
        total = kept.size if self.sample_weight is None else self.sample_weight.sum()
        refinement = None
        if settings.refine == "biweight" and epsilon != 0:
            refinement = biweight_refinement(problem, result.evaluation.mask)
        return Stage(
            problem, feature_map, result, refinement, best_start, alpha, gamma, scores,
            1.0 - float(kept.sum() / total),
        )

    def _start(self, epsilon: float | str) -> float:
        """The trimmed fraction a fit at ``epsilon`` starts from."""
        return self.task.auto_start(self.Y) if isinstance(epsilon, str) else epsilon

    def _rejects(self, epsilon: float | str) -> bool:
        """Whether a fit at ``epsilon`` drops the implausible kept rows (refine="reject")."""
        return self.settings.refine == "reject" and not isinstance(epsilon, str) and epsilon > 0

    # -- alpha and gamma "auto" ----------------------------------------------------------------

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
           rows (:func:`._hyperparameters.select` with ``kept_only``: one eigendecomposition
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
        subsample: InMemoryFit,
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

    def _label_noise_stage(self, candidates: Candidates) -> Stage:
        """The label-noise route (:meth:`_fit_label_noise`) with the given loss; with
        loss="auto" (and alpha and gamma "auto": a given alpha is a penalty of the log loss,
        which then fits), with the hinge loss (its square with features) and with the log loss.
        Two classes: the hinge loss's fit is returned only where its out-of-fold error on the
        rows both keep is below the log loss's by more than ``LOSS_STANDARD_ERRORS`` standard
        errors (:func:`._label_noise.clearly_fewer_errors`); three or more: the log loss's
        where its flips go into one class (its forward-corrected fit: the hinge has no
        correction) or where its error is so much below the hinge loss's."""
        settings = self.settings
        automatic = all(settings.is_auto(name) for name in ("alpha", "gamma"))
        if settings.params.get("loss") != "auto" or not automatic:
            return self._fit_label_noise(candidates)
        # the hinge by libsvm on the kernel matrix; on features its square by L-BFGS (libsvm's
        # linear kernel costs O(n^2) per pair, liblinear's hinge did not converge)
        name = "hinge" if settings.n_components is None else "squared_hinge"
        hinge_fit = InMemoryFit(
            self.settings,
            self.task,
            self.X,
            replace(self.target, loss=HingeLoss.named(name)),
            self.check_memory,
            self.sample_weight,
            self.map_rows,
        )
        hinge = hinge_fit._fit_label_noise(hinge_fit._candidates())
        if hinge.fold_outputs is None:  # no evidence about the labels: nothing to compare
            return hinge
        log = self._fit_label_noise(candidates, warn=False)
        if log.fold_outputs is None:  # the log loss finds no evidence where the hinge did
            return hinge
        if log.transition is not None:  # flips into one class: the corrected log loss
            return log
        labels = class_indices(self.Y)
        both = hinge.kept & log.kept
        # the side kept unless the other is clearly better: the hinge for three or more classes
        default, other = (hinge, log) if labels.max() >= 2 else (log, hinge)
        wrong = [
            stage.problem.loss.predicted_classes(stage.fold_outputs)[both] != labels[both]
            for stage in (other, default)
        ]
        weights = np.ones(int(both.sum())) if self.sample_weight is None else (
            self.sample_weight[both]
        )
        return other if _label_noise.clearly_fewer_errors(*wrong, weights) else default

    def _fit_label_noise(self, candidates: Candidates, warn: bool = True) -> Stage:
        """Classifier, epsilon, alpha and gamma "auto": confident learning, then the model.

        1. Every (gamma, alpha) is scored by its out-of-fold error against the given labels
           (:meth:`_out_of_fold_choice`), its fold models fitted on every row of the other
           folds.
        2. The best pair's out-of-fold probabilities flag the rows whose label the data
           contradict (:func:`._label_noise.label_issues`; each class keeps at least half of
           its rows, and at most ``MAX_EPSILON`` of the rows are flagged).
        3. The pair's fold models are fitted again without the flagged rows, and their
           out-of-fold probabilities flag again; until the flags repeat or a round flags
           more than the one before (:func:`._label_noise.rounds_end`; the previous round's
           flags stay), at most ``_label_noise.ROUNDS`` times (a model fitted on cleaner rows
           contradicts the flipped labels more clearly).
        4. alpha and gamma are chosen again with the flagged rows out of the fold fits and of
           the score, and the model is fitted once on the unflagged rows;
        5. where the loss is the log loss, there are three or more classes and the flips
           that the out-of-fold probabilities of step 4 estimate go mostly into one class
           (:func:`._label_noise.flips_into_one_class`), the model of the true classes is
           instead fitted on every row by the log loss corrected with their transition
           matrix (:meth:`_forward_corrected`; the flagged rows stay flagged).

        The hinge losses' flags read a multinomial regression on the pairs' out-of-fold votes
        (:func:`._folds.flag_probabilities`); the no-signal guard and ``predict_proba`` read
        Platt's sigmoids of the pairs' outputs, coupled (:func:`._folds.fold_probabilities`,
        those of the final choice). Where the labels are unpredictable nothing is flagged, with
        a warning (``warn``), and the stage has no ``fold_outputs``.
        """
        n = self.X.shape[0]
        labels = class_indices(self.Y)
        weights = np.ones(n)
        if self.sample_weight is not None:  # relative weights: the same choices at any scale
            weights = self.sample_weight / self.sample_weight.max()
        floors = ClassFloors.half_of_each_class(self.Y, self.sample_weight)
        every_row = np.ones(n, dtype=bool)
        first = self._out_of_fold_choice(candidates, every_row, labels, weights)
        outputs, kept = first.outputs, every_row
        # calibrated probabilities: Platt's (hinge losses) or the logits' temperature
        P, calibration = fold_probabilities(self.target.loss, outputs, labels, weights)
        if calibration is None:
            P = _label_noise.tempered(outputs, labels, weights)
        fitted = 1 if calibration is None else 2 * calibration.A.size
        reason = _label_noise.unpredictable(
            P, labels, weights, fitted, partial(self._fresh_fold_errors, first, labels)
        )
        at_chance = reason is not None
        if at_chance and warn:
            warnings.warn(f"{self.settings.estimator}: {reason}", UserWarning, stacklevel=2)
        rounds = 0 if at_chance else _label_noise.ROUNDS
        for round_ in range(rounds):
            if round_:
                outputs = out_of_fold_outputs(first.problem, kept, [first.alpha])[0]
            P = flag_probabilities(self.target.loss, outputs, labels, weights * kept)
            flagged = _label_noise.flagged_rows(P, labels, weights, floors)
            if _label_noise.rounds_end(~kept if round_ else None, flagged, weights):
                break
            kept = ~flagged
        del first  # its problem, before the second choice builds every gamma's
        best = self._out_of_fold_choice(candidates, kept, labels, weights)
        epsilon = float(weights @ ~kept / weights.sum())
        problem, feature_map = self._build_problem(best.alpha, best.gamma, epsilon)
        transition = None if at_chance else self._one_class_flips(best.outputs, labels, weights)
        if transition is None:
            stage = self._refit_on_rows(
                problem, feature_map, kept, best.alpha, best.gamma, refine=False
            )
        else:
            stage = self._forward_corrected(problem, feature_map, kept, best, transition)
        calibration = fold_probabilities(self.target.loss, best.outputs, labels, weights * kept)[1]
        return replace(
            stage,
            scores=best.scores if best.scores.size > 1 else None,
            calibration=calibration,
            fold_outputs=None if at_chance else best.outputs,
        )

    def _one_class_flips(
        self, outputs: np.ndarray, labels: np.ndarray, weights: np.ndarray
    ) -> np.ndarray | None:
        """The transition matrix T[true, given] of the calibrated confident joint of the
        out-of-fold ``outputs`` on every row, where the log loss is fitted and the estimated
        flips go mostly into one class (:func:`._label_noise.flips_into_one_class`); else
        None."""
        if isinstance(self.target.loss, HingeLoss):
            return None
        Q = _label_noise.confident_joint(class_probabilities(outputs), labels, weights)
        if not _label_noise.flips_into_one_class(Q):
            return None
        return _label_noise.transition_matrix(Q)

    def _forward_corrected(
        self,
        problem: Problem | FeatureProblem,
        feature_map: TransformerMixin | None,
        kept: np.ndarray,
        best: OutOfFoldChoice,
        transition: np.ndarray,
    ) -> Stage:
        """The model of the true classes fitted on every row by the forward-corrected log loss
        (:class:`ForwardCorrectedLoss` with ``transition``), at the choice ``best``: the
        flagged rows stay flagged (``kept`` is the stage's mask, the plain log loss of the
        given labels its losses), every row has its weight in the fit; the objective is the
        corrected one of every row."""
        every_row = np.ones(kept.size, dtype=bool)
        corrected = replace(problem, loss=ForwardCorrectedLoss(transition=transition))
        fitted = self._refit_on_rows(
            corrected, feature_map, every_row, best.alpha, best.gamma, refine=False
        )
        result = fitted.result
        evaluation = problem.evaluate(result.w, result.b)
        evaluation = replace(
            evaluation,
            mask=kept,
            threshold=float(evaluation.losses[kept].max()),
            objective=result.evaluation.objective,
            # every row is in the fit: weight 1 (or its sample weight)
            weights=result.evaluation.fit_rows.astype(float),
        )
        return replace(
            fitted,
            problem=problem,
            result=replace(result, evaluation=evaluation),
            epsilon=1.0 - float(kept.mean()),
            transition=transition,
        )

    def _fresh_fold_errors(self, choice: OutOfFoldChoice, labels: np.ndarray) -> np.ndarray:
        """Whether each row's out-of-fold prediction at ``choice``'s (gamma, alpha) misses its
        label, on folds dealt in an order drawn from ``FRESH_FOLDS_SEED``: the least error of
        the grid is biased low."""
        every_row = np.ones(labels.size, dtype=bool)
        fresh = out_of_fold_outputs(
            choice.problem, every_row, [choice.alpha], seed=_label_noise.FRESH_FOLDS_SEED
        )[0]
        return self.target.loss.predicted_classes(fresh) != labels

    def _out_of_fold_choice(
        self, candidates: Candidates, kept: np.ndarray, labels: np.ndarray, weights: np.ndarray
    ) -> OutOfFoldChoice:
        """The (gamma, alpha) of least out-of-fold error against the given labels (weighted
        share of the rows), the fold models fitted on the rows ``kept`` of the other folds.
        Only the rows ``kept`` count in the error: the others' given labels are thought
        wrong."""
        alphas, gammas = candidates
        scores = np.empty((len(gammas), len(alphas)))
        outputs, held = [], None
        for row, gamma in enumerate(gammas):
            problem = self._build_problem(alphas[0], gamma, 0.0)[0]
            outputs.append(out_of_fold_outputs(problem, kept, alphas))
            predicted = np.array([self.target.loss.predicted_classes(F) for F in outputs[-1]])
            wrong = (predicted != labels) & kept
            scores[row] = wrong @ weights / (weights @ kept)
            if held is None or scores[row].min() < scores[:row].min():
                held = problem  # at most two problems alive: the best so far and this one
            del problem
        # among equal errors the first in the grids' order: the smallest gamma (the smoothest
        # kernel), then the smallest alpha. Preferring the smallest alpha over every gamma
        # instead took breast cancer with 30% of one class's labels flipped from 0.851 to
        # 0.623 test accuracy (bench_robust.py, median of 3 seeds).
        row, column = np.unravel_index(int(np.argmin(scores)), scores.shape)
        return OutOfFoldChoice(
            float(scores[row, column]),
            alphas[column],
            gammas[row],
            outputs[row][column],
            scores,
            held,
        )

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
                variance = _auto_epsilon.truncated_variance(
                    studentized, evaluation.mask, problem.n_outputs
                )
                flagged = adaptive_flags(studentized, variance, problem.n_outputs)
            else:
                flagged = _auto_epsilon.beyond_scale(
                    studentized, evaluation.mask, problem.n_outputs
                )
            if flagged.mean() <= _auto_epsilon.MAX_EPSILON:
                return ~flagged
            epsilon = _auto_epsilon.MAX_EPSILON
        kept = smallest(studentized, n_kept(n, float(epsilon)))
        if self._rejects(epsilon):
            kept &= ~self.task.rejections(problem, replace(evaluation, mask=kept))
        return kept

    def _candidates(self) -> Candidates:
        """The alphas and gammas to choose from: the task's grids where "auto", else one."""
        settings, task = self.settings, self.task
        alpha_grid, gamma_factors = task.grids(self.target.loss)
        alphas = list(alpha_grid) if settings.is_auto("alpha") else [float(settings.alpha)]
        if not settings.is_auto("gamma"):
            return alphas, [settings.gamma]
        if settings.kernel == "precomputed" or not _hyperparameters.takes_gamma(settings.kernel):
            return alphas, [None]
        return alphas, [factor * self._gamma_scale() for factor in gamma_factors]

    def _hyperparameters(
        self, epsilon: float | str, candidates: Candidates, estimated: np.ndarray | None
    ) -> tuple[float, float | None, np.ndarray | None, np.ndarray | None]:
        """alpha, gamma, the scores of every pair (None without a choice) and the rows the
        chosen pair's trimmed fit kept (None without a choice)."""
        alphas, gammas = candidates
        if len(alphas) == 1 and len(gammas) == 1:
            return alphas[0], gammas[0], None, None
        start = self._start(epsilon)
        start_alpha = self.task.start_alpha if len(alphas) > 1 else alphas[0]

        def trimmed_fit(gamma: float | None) -> tuple[Problem | FeatureProblem, np.ndarray]:
            problem, _ = self._build_problem(start_alpha, gamma, start)
            fit_subset = SubsetFit(self._subset_fitter(problem), problem)
            if estimated is None:
                w, b = initial_coefficients(
                    problem, "erm", fit_subset.loosened(), self.settings.random_state
                )
                if self.task.honest_losses is not None:
                    losses = self.task.honest_losses(problem, problem.evaluate(w, b))
                    rows, _ = subquantile(losses, problem.k, problem.floors)
                    w, b = fit_rows(problem, fit_subset, rows)
            else:
                w, b = fit_rows(problem, fit_subset.loosened(), estimated)
            result, _ = self._best_start(problem, fit_subset, w, b)
            if self._rejects(epsilon):
                result = self._reject_implausible(problem, fit_subset, result)
            return problem, result.evaluation.mask

        gamma, alpha, scores, selected = _hyperparameters.select(
            gammas, alphas, start, trimmed_fit
        )
        return alpha, gamma, scores, selected

    # -- the objective -------------------------------------------------------------------------

    def _build_problem(
        self, alpha: float, gamma: float | None, epsilon: float
    ) -> tuple[Problem | FeatureProblem, TransformerMixin | None]:
        """The objective on the exact kernel matrix of X, or on its approximate features, and
        the fitted feature map (None for the exact kernel model)."""
        settings, X = self.settings, self.X
        params = kernel_params(
            settings.kernel, gamma, settings.degree, settings.coef0, settings.kernel_params
        )
        common = {
            "Y": self.Y,
            "loss": self.target.loss,
            "alpha": alpha,
            "k": n_kept(X.shape[0], epsilon),
            "fit_intercept": settings.fit_intercept,
            "radius": None if settings.radius is None else settings.radius / self.scale,
            "floors": (
                ClassFloors.half_of_each_class(self.Y, self.sample_weight)
                if self.task.keeps_every_class
                else None
            ),
            "sample_weight": self.sample_weight,
            "epsilon": epsilon,
        }
        if settings.n_components is None:
            if settings.device is None:
                self.check_memory(X.shape[0])
                K = compute_kernel(X, None, settings.kernel, params)
                check_fit_kernel(K, X, settings.kernel)
                given = settings.kernel == "precomputed" or not isinstance(settings.kernel, str)
                if given and SvmSubsetFitter.fits(self.target.loss):
                    SvmSubsetFitter.check_kernel(K)  # the L-BFGS fitter factorizes K anyway
                common["alpha"] = resolvable_alpha(alpha, float(np.trace(K)))
            else:
                K = load_torch_backend().DeviceKernel.compute(
                    X, settings.kernel, params, settings.device
                )
                if not K.all_finite():
                    raise non_finite_error()
            return Problem(K=K, **common), None
        try:
            feature_map = fit_feature_map(
                settings.approximation,
                settings.n_components,
                settings.kernel,
                params,
                settings.random_state,
                self.map_rows,
            )
        except np.linalg.LinAlgError as error:  # the SVD of a landmark block with NaN or inf
            raise non_finite_error(NON_FINITE_FEATURES) from error
        Z = transform_in_chunks(feature_map, X, np.dtype(settings.dtype))
        self._check_landmark_kernel(feature_map, params, common)
        problem = FeatureProblem(Z=Z, **common)
        return replace(problem, alpha=resolvable_alpha(alpha, squared_norm(problem))), feature_map

    def _check_landmark_kernel(
        self, feature_map: TransformerMixin, params: dict[str, Any], common: dict[str, Any]
    ) -> None:
        """The exact model's positive-definiteness check, on the m x m landmark kernel block.

        The exact path refuses a kernel that is not positive semidefinite when its subset fitter
        factorizes the kernel matrix; Nystroem features run the same fitter's check on the
        landmark rows, where they use the kernel (random Fourier features are PSD by design).
        """
        landmarks = getattr(feature_map, "component_indices_", None)
        if landmarks is None:
            return
        X, kernel = self.map_rows, self.settings.kernel
        if kernel == "precomputed":
            K = X[np.ix_(landmarks, landmarks)]
        else:
            K = compute_kernel(X[landmarks], None, kernel, params)
        check_fit_kernel(K, X, kernel)
        landmark_common = {
            **common,
            "Y": np.zeros((landmarks.size, common["Y"].shape[1])),  # the check needs no targets
            "k": landmarks.size,
            "floors": None,
            "alpha": resolvable_alpha(common["alpha"], float(np.trace(K))),
        }
        self.task.exact_fitter(Problem(K=np.asarray(K, dtype=float), **landmark_common))

    def _subset_fitter(self, problem: Problem | FeatureProblem) -> Any:
        """The exact subset fitter of the problem: features, device kernel or kernel matrix."""
        fitter = self.task.fitter(problem)
        if self.settings.device is not None and isinstance(problem, Problem):
            return load_torch_backend().device_subset_fitter(fitter, problem)
        return fitter(problem)

    # -- solving -------------------------------------------------------------------------------

    def _best_start(
        self, problem: Problem | FeatureProblem, fit_subset: SubsetFit, w: np.ndarray, b: np.ndarray
    ) -> tuple[SolverResult, int]:
        """The solver from (w, b) and from the ``n_init - 1`` random subsets: the fit of lowest
        objective and its start (0 for (w, b), i for the i-th subset)."""
        result, best = self._run_solver(problem, fit_subset, w, b), 0
        for start, subset in enumerate(self._random_subsets(problem), start=1):
            w, b = fit_rows(problem, fit_subset.loosened(), subset)
            candidate = self._run_solver(problem, fit_subset, w, b)
            if candidate.evaluation.objective < result.evaluation.objective:
                result, best = candidate, start
        return result, best

    def _random_subsets(self, problem: Problem | FeatureProblem) -> list[np.ndarray]:
        """Masks of the ``n_init - 1`` random starting subsets of ``init_size`` rows.

        Classifiers draw one row of every class first, so that each start sees every class.
        """
        n, settings = problem.n_samples, self.settings
        rng = check_random_state(settings.random_state)
        classes = []
        if self.task.classifier:
            labels = np.unique(problem.Y, axis=0, return_inverse=True)[1].ravel()
            classes = [np.flatnonzero(labels == label) for label in np.unique(labels)]
        masks = []
        for _ in range(settings.n_init - 1):
            mask = np.zeros(n, dtype=bool)
            mask[[rng.choice(rows) for rows in classes]] = True
            missing = max(min(settings.init_size, n) - int(mask.sum()), 0)
            mask[rng.choice(np.flatnonzero(~mask), missing, replace=False)] = True
            masks.append(mask)
        return masks

    def _run_solver(
        self, problem: Problem | FeatureProblem, fit_subset: SubsetFit, w: np.ndarray, b: np.ndarray
    ) -> SolverResult:
        """The registry's solver from (w, b), with a progress bar when ``verbose``."""
        settings = self.settings
        options = replace(settings.options, smoothing=self._scaled_smoothing())
        name = settings.params["solver"]
        with tqdm(total=options.max_iter, desc=f"SubQ {name}", disable=not settings.verbose) as bar:

            def progress(iteration: int, objective: float) -> None:
                bar.update(1)
                bar.set_postfix(objective=f"{objective:.6g}")

            result = settings.solver_spec.run(problem, fit_subset, w, b, options, progress)
        if not result.converged:
            warnings.warn(
                f"SubQ solver {name!r} reached max_iter={options.max_iter} before the kept "
                "subset settled; increase max_iter (or tol for the gradient solvers).",
                ConvergenceWarning,
                stacklevel=4,
            )
        return result

    def _scaled_smoothing(self) -> float | None:
        """``smoothing`` in the units of the scaled losses (losses / target_scale^2)."""
        if self.settings.smoothing is None:
            return None
        with np.errstate(over="ignore"):
            value = np.float64(self.settings.smoothing) * np.float64(self.scale) ** 2
        return float(min(value, np.finfo(float).max))

    # -- after the solver ----------------------------------------------------------------------

    def _estimate_epsilon(
        self, problem: Problem | FeatureProblem, fit_subset: SubsetFit, result: SolverResult
    ) -> tuple[Problem | FeatureProblem, SolverResult]:
        """Refit on the unflagged rows until the flagged set repeats (a fixed point, or a cycle:
        on 1442 digits two sets one row apart alternated for all ``MAX_ROUNDS`` rounds) or
        moves by at most ``SETTLED_FRACTION`` of the rows."""
        n = problem.n_samples
        seen: set[bytes] = set()
        previous = None
        for _ in range(_auto_epsilon.MAX_ROUNDS):
            flagged = self.task.outlier_flags(problem, result.evaluation)
            if flagged.tobytes() in seen or (
                previous is not None
                and np.sum(flagged != previous) <= _auto_epsilon.SETTLED_FRACTION * n
            ):
                break
            seen.add(flagged.tobytes())
            previous = flagged
            epsilon = min(flagged.mean(), _auto_epsilon.MAX_EPSILON)
            problem = replace(problem, k=n_kept(n, epsilon))
            # From the fit without the flagged rows: from the current fit, rows it explains
            # by their own coefficients (a cluster sharing a wrong target) would be kept again.
            w, b = result.w, result.b
            if n - flagged.sum() >= problem.k:
                w, b = fit_subset.loosened()(~flagged, w, b)
            result = self._run_solver(problem, fit_subset, w, b)
        return problem, result

    def _reject_implausible(
        self, problem: Problem | FeatureProblem, fit_subset: SubsetFit, result: SolverResult
    ) -> SolverResult:
        """Drop kept rows whose loss is implausible under the fit; refit until none is left.

        The task's rule like epsilon="auto"'s (``rejections``), applied to the kept rows only:
        the trim still removes at least epsilon of the rows, and a corrupted row that the count
        forced into the kept set (or that a flexible kernel fits by its own coefficient) is
        dropped instead of dragging the fit. Classifiers keep their class floors.
        """
        history = list(result.history)

        def implausible(mask: np.ndarray, state: SolverResult) -> np.ndarray:
            dropped = mask & self.task.rejections(problem, state.evaluation)
            if problem.floors is not None:
                dropped = problem.floors.protect(mask, dropped, state.evaluation.losses)
            return dropped

        def refit(mask: np.ndarray, state: SolverResult) -> SolverResult:
            w, b = fit_subset(mask, state.w, state.b)
            full = problem.evaluate(w, b)
            evaluation = replace(full, mask=mask, objective=problem.subset_objective(w, b, mask))
            history.append(evaluation.objective)
            return replace(state, w=w, b=b, evaluation=evaluation)

        state = drop_implausible(result.evaluation.mask, result, implausible, refit)
        return replace(state, history=history)

    def _result(self, stage: Stage) -> FitResult:
        """The final stage in the original targets' units."""
        result, problem, scale = stage.result, stage.problem, self.scale
        evaluation, refinement = result.evaluation, stage.refinement
        w, b = result.w, result.b
        losses, threshold = evaluation.losses, evaluation.threshold
        row_weights = evaluation.fit_rows.astype(float)
        if refinement is not None:
            w, b = refinement.w, refinement.b
            losses = problem.loss.loss(problem.apply(w) + b, problem.Y)
            threshold = (BIWEIGHT_C * refinement.scale) ** 2
            row_weights = refinement.weights
        with np.errstate(over="ignore"):  # losses of targets beyond 1e154 overflow to inf
            scale = np.float64(scale)  # twice by the scale: a loss of 0 stays 0, never 0 x inf
            scores = losses * scale * scale
            threshold = float(threshold * scale * scale)
            history = np.asarray(result.history) * scale * scale
        return FitResult(
            coef=w * scale,
            intercept=np.atleast_1d(b * scale),
            feature_map=stage.feature_map,
            X_fit=self.X if stage.feature_map is None else None,
            classes=self.target.classes,
            single_output=self.target.single_output,
            inlier_mask=stage.kept,
            outlier_scores=scores,
            threshold=threshold,
            row_weights=row_weights,
            objective_history=history,
            n_iter=result.n_iter,
            converged=result.converged,
            best_start=stage.best_start,
            epsilon=stage.epsilon,
            alpha=stage.alpha,
            gamma=stage.gamma,
            hyperparameter_scores=stage.scores,
            loss=self._loss_name(problem),
            calibration=self._calibration(stage),
            noise_transition=stage.transition,
        )

    def _loss_name(self, problem: Problem | FeatureProblem) -> str | None:
        """The classifier's loss as ``loss_`` reports it (None for a regression)."""
        if not self.task.classifier:
            return None
        return problem.loss.name if isinstance(problem.loss, HingeLoss) else "log"

    def _calibration(self, stage: Stage) -> PairwisePlatt | None:
        """The hinge losses' Platt sigmoids: the stage's, or fitted on the out-of-fold outputs
        of the model at its alpha, fold fits on its kept rows (a fit at a given epsilon)."""
        problem = stage.problem
        if not isinstance(problem.loss, HingeLoss) or stage.calibration is not None:
            return stage.calibration
        kept = stage.kept.astype(float)
        if self.sample_weight is not None:
            kept *= self.sample_weight
        outputs = out_of_fold_outputs(problem, stage.kept, [problem.alpha])[0]
        return fold_probabilities(problem.loss, outputs, class_indices(problem.Y), kept)[1]


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
    (:mod:`._unique_rows`), so that integer weights fit exactly as repeated rows, whatever the
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
    return replace(
        result,
        inlier_mask=kept > 0,
        outlier_scores=result.outlier_scores[unique.inverse],
        row_weights=kept,
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
    rows it trimmed. Weights of extreme magnitude are fitted divided by a power of two, with
    alpha divided by the same (the same minimizer, exactly), so that no sum overflows.
    """
    target = task.encode(y, settings.params, settings.estimator)
    if weights is None or np.all(weights == 1.0):
        return InMemoryFit(settings, task, X, target, check_memory, map_rows=map_rows).run()
    scale = _weight_scale(weights)
    weights = weights / scale  # exact: a power of two
    chosen = None
    weighted = settings.replace(refine=None)
    automatic = [
        name for name in ("epsilon", "alpha", "gamma", "kernel") if settings.is_auto(name)
    ]
    if automatic or settings.refine is not None:
        chosen = InMemoryFit(
            settings.replace(verbose=0), task, X, target, check_memory, map_rows=map_rows
        ).run()
        # the weight of the rows it trimmed: the trim in the weighted fit's units
        trimmed = float(weights[~chosen.inlier_mask].sum() / weights.sum())
        alpha = chosen.alpha
        if settings.is_auto("alpha"):  # the same penalty per unit of weight
            alpha *= float(np.mean(weights)) * scale
        weighted = weighted.replace(
            epsilon=min(trimmed, _auto_epsilon.MAX_EPSILON), alpha=alpha, gamma=chosen.gamma
        )
        if chosen.loss is not None and "loss" in settings.params:  # loss="auto": its choice
            weighted = weighted.replace(loss=chosen.loss)
            target = task.encode(y, weighted.params, settings.estimator)
        if chosen.kernel is not None:  # kernel="auto"
            weighted = weighted.replace(
                kernel=chosen.kernel,
                degree=chosen.degree or settings.degree,
                coef0=settings.coef0 if chosen.coef0 is None else chosen.coef0,
            )
    inner = weighted.replace(alpha=float(weighted.alpha) / scale)
    fit = InMemoryFit(inner, task, X, target, check_memory, weights, map_rows)
    if chosen is not None and chosen.kernel is not None:
        # kernel="auto": the weighted model on the rows the start kept, which stay fixed, as
        # without weights (the alternating solver from every row took hbk's bad leverage
        # points back in with integer weights 1-3)
        result = fit.fit_on_fixed_rows(chosen.inlier_mask, float(inner.alpha), chosen.gamma)
    else:
        result = fit.run()
    with np.errstate(over="ignore"):
        history = result.objective_history * scale
        kept = result.row_weights * scale  # each row's kept weight, in the given units
    result = replace(
        result, alpha=float(weighted.alpha), objective_history=history, row_weights=kept
    )
    if chosen is not None and chosen.kernel is not None:
        result = replace(
            result, kernel=chosen.kernel, degree=chosen.degree, coef0=chosen.coef0
        )
    if automatic:
        result = replace(result, hyperparameter_scores=chosen.hyperparameter_scores)
    return result


def _weight_scale(weights: np.ndarray) -> float:
    """A power of two near the largest weight, by which the weighted fit divides the weights
    (and alpha): sums of weights and of weighted losses stay far from overflow and underflow.
    1 for integer weights up to 2^50, whose subquantile keeps whole repeated rows."""
    scale = power_of_two_below(weights.max())
    if scale <= 2.0**50 and np.all(weights == np.round(weights)):
        return 1.0
    return scale


def squared_norm(problem: Problem | FeatureProblem) -> float:
    """The trace of the kernel matrix on the host: of K, or ||Z||_F^2 of features."""
    if isinstance(problem, FeatureProblem):
        return float(np.sum(np.square(problem.Z, dtype=float)))
    return float(np.trace(problem.K))


def resolvable_alpha(alpha: float, trace: float) -> float:
    """alpha, or the smallest ridge float64 resolves on a Gram matrix of this trace where alpha
    is below it: 10 eps tr(K). A smaller ridge is lost to rounding (a positive semidefinite
    kernel then factorizes as indefinite); raising it to this level changes the fit by less than
    the rounding does (for an RBF kernel on n rows the level is 2.2e-15 n)."""
    return max(alpha, 10.0 * np.finfo(float).eps * trace)


def load_torch_backend() -> ModuleType:
    """The PyTorch backend of ``device=``, imported on first use; a clear error without torch."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "device= needs PyTorch, which is not installed: pip install robustkernel[gpu] "
            "(or use device=None for the NumPy path)."
        ) from error
    from . import _torch_backend

    return _torch_backend
