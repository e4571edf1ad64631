"""The core of the in-memory fit: one Subquantile fit of rows held in memory, at fixed settings.

In: validated settings (:mod:`.._settings`), the task's rules (:mod:`.._tasks`), the rows and
their encoded targets. Out: :class:`.._result.FitResult` (:meth:`InMemoryFit.result`). An
:class:`InMemoryFit` never changes its settings: a step that resolves one (the kernel the
high-breakdown start chose) continues on a new fit of the same rows
(:meth:`InMemoryFit.replaced`). Its steps are those the routes share
(:mod:`.in_memory` picks the route):

1. alpha / gamma "auto": a trimmed fit per candidate gamma, every (gamma, alpha) scored by honest
   residuals (:func:`.hyperparameters.select`);
2. the objective (:class:`.objective.Problem` on the kernel matrix, or
   :class:`.objective.FeatureProblem` on Nystroem / random Fourier features);
3. the start (``init``, or the rows the selection kept), the solver from the registry
   (:data:`.solvers.SOLVERS`) and the ``n_init - 1`` random starts;
4. epsilon="auto": flag, refit, until the flagged set repeats
   (:func:`robustkernel.trimming.flag_rounds`); or refine="reject" (refine="auto" with
   epsilon="auto": the second fit of two passes, at the first's estimate): drop the kept rows
   implausible under the fit (:func:`robustkernel.trimming.drop_implausible`);
5. refine="biweight": the M-step (:func:`.refine.biweight_refinement`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np
from sklearn.base import TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from tqdm.auto import tqdm

from ..._fractions import n_kept, trimmed_fraction
from ..._kernel_model.estimator import EncodedTarget
from ..._kernel_model.kernels import (
    NON_FINITE_FEATURES,
    check_fit_kernel,
    compute_kernel,
    kernel_params,
    non_finite_error,
)
from ..._kernel_model.losses import (
    HingeLoss,
    class_indices,
)
from ..._kernel_model.pairwise import PairwisePlatt
from ...trimming import (
    MAX_EPSILON,
    MAX_ROUNDS,
    SETTLED_FRACTION,
    ClassFloors,
    drop_implausible,
    flag_rounds,
    subquantile,
)
from .._automatic import hyperparameters as _hyperparameters
from .._automatic.folds import fold_probabilities, out_of_fold_outputs
from .._automatic.hyperparameters import resolvable_alpha, squared_norm
from .._result import FitResult
from .._settings import FitSettings
from .._solve.features import fit_feature_map, transform_in_chunks
from .._solve.objective import FeatureProblem, Problem
from .._solve.refine import BIWEIGHT_C, biweight_refinement
from .._solve.refits import SubsetFit, SvmSubsetFitter
from .._solve.solvers import SolverResult, fit_rows, initial_coefficients
from .._tasks import Task
from .stage import Candidates, MemoryCheck, Stage


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
    gamma_scale : float, default=None
        The robust gamma of the rows the gamma grid is centred on (:meth:`gamma_scale`): that
        of every row where this fit is of a sample of them; None: of X, computed when needed.
    adaptive_cutoff : bool, default=False
        Whether epsilon="auto" flags by the high-breakdown start's adaptive cutoff and second
        stage (kernel="auto" on a sample), or else by the fixed chi^2 level.
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
        *,
        gamma_scale: float | None = None,
        adaptive_cutoff: bool = False,
    ) -> None:
        self.settings, self.task, self.X, self.target = settings, task, X, target
        self.check_memory = check_memory
        self.sample_weight = sample_weight
        self.map_rows = X if map_rows is None else map_rows
        # Squared-loss targets are fitted divided by a power of two (exact) and the model
        # scaled back: no squared residual overflows, whatever the targets' magnitude.
        self.scale = target.loss.target_scale(target.Y)
        self.Y = target.Y / self.scale
        self._robust_gamma = gamma_scale  # computed once where None (:meth:`gamma_scale`)
        self.adaptive_cutoff = adaptive_cutoff

    def replaced(
        self,
        *,
        settings: FitSettings | None = None,
        target: EncodedTarget | None = None,
        adaptive_cutoff: bool | None = None,
    ) -> InMemoryFit:
        """A fit of the same rows with other ``settings`` (e.g. the kernel a start chose), an
        other ``target`` encoding (e.g. another loss) or another ``adaptive_cutoff``, and this
        fit's gamma scale; this fit is left as it is."""
        return InMemoryFit(
            self.settings if settings is None else settings,
            self.task,
            self.X,
            self.target if target is None else target,
            self.check_memory,
            self.sample_weight,
            self.map_rows,
            gamma_scale=self._robust_gamma,
            adaptive_cutoff=self.adaptive_cutoff if adaptive_cutoff is None else adaptive_cutoff,
        )

    # -- the fit -------------------------------------------------------------------------------

    def gamma_scale(self) -> float:
        """The robust gamma of the rows (:func:`.hyperparameters.robust_gamma`), the middle of
        the gamma grid: of every row of the fit a subsample was drawn from."""
        if self._robust_gamma is None:
            self._robust_gamma = _hyperparameters.robust_gamma(self.X)
        return self._robust_gamma

    def fit_on_fixed_rows(
        self, kept: np.ndarray, alpha: float, gamma: float | None
    ) -> FitResult:
        """The model at ``alpha`` and ``gamma`` fitted once on the rows ``kept`` (with their
        weights where the fit has them)."""
        problem, feature_map = self.build_problem(alpha, gamma, trimmed_fraction(kept))
        return self.result(
            self.refit_on_rows(problem, feature_map, kept, alpha, gamma, refine=False)
        )

    def fit_on_rows(self, kept: np.ndarray, candidates: Candidates) -> Stage:
        """The model on the rows ``kept``, which stay fixed: alpha and gamma of least
        leave-one-out score on those rows (:func:`.hyperparameters.select`, the least trim),
        then one fit on them. No solver runs and nothing is refined: the in-sample trimmed
        objective a solver lowers prefers a flexible kernel that also fits a tight group of
        outliers (a sine, 30% of its rows a far cluster: the rbf fit on the clean rows the
        start kept took 73 of the 90 cluster rows back in six alternating steps), and the
        start's reweighting has already won back the efficiency that refine is for."""
        epsilon = trimmed_fraction(kept)
        alphas, gammas = candidates
        alpha, gamma, scores = alphas[0], gammas[0], None
        if len(alphas) > 1 or len(gammas) > 1:
            start_alpha = self.task.start_alpha if len(alphas) > 1 else alphas[0]

            def on_kept_rows(gamma: float | None) -> tuple[Problem | FeatureProblem, np.ndarray]:
                return self.build_problem(start_alpha, gamma, epsilon)[0], kept

            gamma, alpha, scores, _ = _hyperparameters.select(
                gammas, alphas, _hyperparameters.MIN_TRIM, on_kept_rows, kept_only=True
            )
        problem, feature_map = self.build_problem(alpha, gamma, epsilon)
        stage = self.refit_on_rows(problem, feature_map, kept, alpha, gamma, refine=False)
        return replace(stage, scores=scores)

    def refit_on_rows(
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
            fit_subset = SubsetFit(self.subset_fitter(problem), problem)
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
        epsilon = trimmed_fraction(kept)
        refinement = None
        if refine and self.settings.refine == "biweight" and epsilon:
            refinement = biweight_refinement(problem, kept)
        return Stage(problem, feature_map, result, refinement, 0, alpha, gamma, None, epsilon)

    def fit_at(
        self, epsilon: float | str, candidates: Candidates, estimated: np.ndarray | None
    ) -> Stage:
        """One fit at ``epsilon`` (a fraction, or "auto"); ``estimated``: the inliers of an
        earlier estimate of epsilon, where the selection's trimmed fits start."""
        settings = self.settings
        alpha, gamma, scores, selected = self._hyperparameters(epsilon, candidates, estimated)
        if selected is None:  # nothing to choose: start from the given inliers, if any
            selected = estimated
        start = self._start(epsilon)
        problem, feature_map = self.build_problem(alpha, gamma, start)
        fit_subset = SubsetFit(self.subset_fitter(problem), problem)
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
        elif self.rejects(epsilon):
            result = self._reject_implausible(problem, fit_subset, result)
        refinement = None
        if settings.refine == "biweight" and epsilon != 0:
            refinement = biweight_refinement(problem, result.evaluation.mask)
        return Stage(
            problem, feature_map, result, refinement, best_start, alpha, gamma, scores,
            trimmed_fraction(result.evaluation.fit_rows, self.sample_weight),
        )

    def _start(self, epsilon: float | str) -> float:
        """The trimmed fraction a fit at ``epsilon`` starts from."""
        return self.task.auto_start(self.Y) if isinstance(epsilon, str) else epsilon

    def rejects(self, epsilon: float | str) -> bool:
        """Whether a fit at ``epsilon`` drops the implausible kept rows (refine="reject"; the
        settings' refine is resolved: "auto" is "reject" where the parameter epsilon is "auto",
        including the fits at its estimate, and None at a given epsilon)."""
        return self.settings.refine == "reject" and not isinstance(epsilon, str) and epsilon > 0

    # -- alpha and gamma "auto" ----------------------------------------------------------------

    def candidates(self) -> Candidates:
        """The alphas and gammas to choose from: the task's grids where "auto", else one."""
        settings, task = self.settings, self.task
        alpha_grid, gamma_factors = task.grids(self.target.loss)
        alphas = list(alpha_grid) if settings.is_auto("alpha") else [float(settings.alpha)]
        if not settings.is_auto("gamma"):
            return alphas, [settings.gamma]
        if settings.kernel == "precomputed" or not _hyperparameters.takes_gamma(settings.kernel):
            return alphas, [None]
        return alphas, [factor * self.gamma_scale() for factor in gamma_factors]

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
            problem, _ = self.build_problem(start_alpha, gamma, start)
            fit_subset = SubsetFit(self.subset_fitter(problem), problem)
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
            if self.rejects(epsilon):
                result = self._reject_implausible(problem, fit_subset, result)
            return problem, result.evaluation.mask

        gamma, alpha, scores, selected = _hyperparameters.select(
            gammas, alphas, start, trimmed_fit
        )
        return alpha, gamma, scores, selected

    # -- the objective -------------------------------------------------------------------------

    def build_problem(
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

    def subset_fitter(self, problem: Problem | FeatureProblem) -> Any:
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

        def flags(state: tuple[Problem | FeatureProblem, SolverResult]) -> np.ndarray:
            return self.task.outlier_flags(state[0], state[1].evaluation)

        def refit(
            flagged: np.ndarray, state: tuple[Problem | FeatureProblem, SolverResult]
        ) -> tuple[Problem | FeatureProblem, SolverResult]:
            problem, result = state
            problem = replace(problem, k=n_kept(n, min(flagged.mean(), MAX_EPSILON)))
            # From the fit without the flagged rows: from the current fit, rows it explains
            # by their own coefficients (a cluster sharing a wrong target) would be kept again.
            w, b = result.w, result.b
            if n - flagged.sum() >= problem.k:
                w, b = fit_subset.loosened()(~flagged, w, b)
            return problem, self._run_solver(problem, fit_subset, w, b)

        def settled(previous: np.ndarray, flagged: np.ndarray) -> bool:
            return np.sum(flagged != previous) <= SETTLED_FRACTION * n

        return flag_rounds(flags, refit, (problem, result), MAX_ROUNDS, settled=settled).state

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

    def result(self, stage: Stage) -> FitResult:
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
        settings = self.settings
        return FitResult(
            kernel=settings.kernel,
            degree=settings.degree,
            coef0=settings.coef0,
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
            scaled_losses=losses,
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


def load_torch_backend() -> ModuleType:
    """The PyTorch backend of ``device=``, imported on first use; a clear error without torch."""
    try:
        import torch  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "device= needs PyTorch, which is not installed: pip install robustkernel[gpu] "
            "(or use device=None for the NumPy path)."
        ) from error
    from .._backends import torch_backend as _torch_backend

    return _torch_backend
