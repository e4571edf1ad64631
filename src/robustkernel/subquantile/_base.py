"""Shared estimator core of the Subquantile regressor and classifier."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from numbers import Integral, Real
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
from sklearn.base import TransformerMixin, clone, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted
from tqdm.auto import tqdm

from .._fractions import n_kept
from .._kernel_model.estimator import KERNEL_CONSTRAINTS, KernelModel
from .._kernel_model.kernels import (
    NON_FINITE_FEATURES,
    check_finite,
    compute_kernel,
    kernel_params,
    non_finite_error,
)
from .._kernel_model.losses import Loss
from . import _auto_epsilon, _hyperparameters
from ._features import APPROXIMATIONS, fit_feature_map, predict_in_chunks, transform_in_chunks
from ._objective import ClassFloors, Evaluation, FeatureProblem, Problem, subquantile
from ._refine import BIWEIGHT_C, Refinement, biweight_refinement
from ._refits import SubsetFit
from ._solvers import (
    SolverResult,
    alternating,
    fit_rows,
    gradient_method,
    initial_coefficients,
)

SOLVERS = ("alternating", "gd", "momentum", "nesterov")
Candidates = tuple[list[float], list[float | None]]
"""The alphas and the gammas an estimator chooses from (one each where given)."""
HonestLosses = Callable[[Problem | FeatureProblem, Evaluation], np.ndarray]
"""``honest_losses(problem, evaluation of a fit on every row)``: per-row losses, shape (n,)."""
DEFAULT_MAX_ITER = {"alternating": 100, "gd": 1000, "momentum": 1000, "nesterov": 1000}


class BaseSubquantile(KernelModel):
    """Kernel model fitted on the (1 - epsilon) fraction of rows it explains best.

    Subclasses choose the loss, encode the target and set ``_subset_fitter`` (exact kernel
    model) and ``_feature_subset_fitter`` (approximate features, ``n_components`` set).
    """

    _accepts_sparse = True
    # Row weights of the fit running now (``fit(..., sample_weight=)``); None: every row counts 1.
    _sample_weight: np.ndarray | None = None

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **KERNEL_CONSTRAINTS,
        "alpha": [*KERNEL_CONSTRAINTS["alpha"], StrOptions({"auto"})],
        "gamma": [*KERNEL_CONSTRAINTS["gamma"], StrOptions({"auto"})],
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left"), StrOptions({"auto"})],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "approximation": [StrOptions(set(APPROXIMATIONS))],
        "dtype": [StrOptions({"float64", "float32"}), Options(type, {np.float64, np.float32})],
        "solver": [StrOptions(set(SOLVERS))],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "init": [StrOptions({"erm", "zeros", "glorot"}), "array-like"],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "init_size": [Interval(Integral, 2, None, closed="left")],
        "radius": [Interval(Real, 0.0, None, closed="neither"), None],
        "refine": [StrOptions({"reject", "biweight"}), None],
        "smoothing": [Interval(Real, 0.0, None, closed="neither"), None],
        "momentum": [Interval(Real, 0.0, 1.0, closed="left")],
        "line_search": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "device": [str, None],
    }
    _subset_fitter: ClassVar[type]
    _feature_subset_fitter: ClassVar[type]
    _outlier_flags: ClassVar[Callable[[Problem, Evaluation], np.ndarray]]
    _rejections: ClassVar[Callable[[Problem, Evaluation], np.ndarray]]
    _auto_start: ClassVar[Callable[[np.ndarray], float]]
    # Honest per-row losses of the ordinary fit (not in-sample): the selection's trimmed fits
    # start from their subquantile. None: from the ordinary fit's in-sample losses.
    _honest_losses: ClassVar[HonestLosses | None] = None
    _refinements: ClassVar[frozenset[str]] = frozenset({"reject"})
    _keeps_every_class: ClassVar[bool] = False
    _alpha_grid: ClassVar[tuple[float, ...]]
    _gamma_factors: ClassVar[tuple[float, ...]]
    _start_alpha: ClassVar[float]
    _reselects: ClassVar[bool] = True

    def __init__(
        self,
        epsilon: float | str = "auto",
        *,
        alpha: float | str = "auto",
        kernel: str | Any = "rbf",
        gamma: float | str | None = "auto",
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        n_components: int | None = None,
        approximation: str = "nystroem",
        dtype: str | type = "float64",
        fit_intercept: bool = True,
        solver: str = "alternating",
        max_iter: int | None = None,
        tol: float = 1e-6,
        init: str | np.ndarray = "erm",
        n_init: int = 1,
        init_size: int = 20,
        radius: float | None = None,
        refine: str | None = "reject",
        smoothing: float | None = None,
        momentum: float = 0.9,
        line_search: bool = False,
        n_iter_no_change: int = 5,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        device: str | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.approximation = approximation
        self.dtype = dtype
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.n_init = n_init
        self.init_size = init_size
        self.radius = radius
        self.refine = refine
        self.smoothing = smoothing
        self.momentum = momentum
        self.line_search = line_search
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

    # -- fitting -----------------------------------------------------------------------------

    def _check_solver_options(self) -> None:
        if self.smoothing is not None and self.solver == "alternating":
            raise ValueError(
                "smoothing applies to the gradient solvers ('gd', 'momentum', 'nesterov'); "
                "the 'alternating' solver uses the hard subquantile."
            )
        if self.line_search and self.solver != "gd":
            raise ValueError(
                f"line_search=True is only available with solver='gd', got {self.solver!r}."
            )
        if self.refine is not None and self.refine not in self._refinements:
            raise ValueError(
                f"refine={self.refine!r} is not available for {type(self).__name__}; "
                f"choose from {sorted(self._refinements) or 'none'} or None."
            )
        if self.refine == "biweight" and (self.radius is not None or self.device is not None):
            raise ValueError(
                'refine="biweight" runs on the CPU without the norm-ball constraint: it is not '
                "available with radius or device."
            )
        if self.device is not None:
            automatic = {
                name: value
                for name, value in (
                    ("epsilon", self.epsilon),
                    ("alpha", self.alpha),
                    ("gamma", self.gamma),
                    ("refine", self.refine),
                )
                if value == "auto" or (name == "refine" and value is not None)
            }
            if self.n_components is not None or automatic:
                raise ValueError(
                    "device= runs the papers' estimator on the exact kernel model: give epsilon "
                    "(a number), alpha and gamma, and refine=None, without n_components "
                    f"(got {automatic or {'n_components': self.n_components}}); use device=None "
                    "for the automatic configuration."
                )

    def _candidates(self, X: np.ndarray) -> Candidates:
        """The alphas and gammas to choose from: the class's grids where "auto", else one."""
        alphas = list(self._alpha_grid) if self.alpha == "auto" else [float(self.alpha)]
        if self.gamma != "auto":
            return alphas, [self.gamma]
        if self.kernel == "precomputed" or not _hyperparameters.takes_gamma(self.kernel):
            return alphas, [None]
        return alphas, _hyperparameters.gamma_grid(X, self._gamma_factors)

    def _hyperparameters(
        self, X: np.ndarray, Y: np.ndarray, loss: Loss, candidates: Candidates
    ) -> tuple[float, float | None]:
        """alpha and gamma of this fit among the candidates (``_candidates``): the only pair, or
        the one ``_hyperparameters.select`` chooses."""
        self.__dict__.pop("hyperparameter_scores_", None)
        self._selected_rows = None
        alphas, gammas = candidates
        if len(alphas) == 1 and len(gammas) == 1:
            return alphas[0], gammas[0]
        start = type(self)._auto_start(Y) if self._epsilon == "auto" else self._epsilon
        start_alpha = self._start_alpha if len(alphas) > 1 else alphas[0]

        def trimmed_fit(gamma: float | None) -> tuple[Problem | FeatureProblem, np.ndarray]:
            problem, _ = self._build_problem(X, Y, loss, start_alpha, gamma, start)
            fit_subset = SubsetFit(self._subset_fitter_for(problem), problem)
            if self._estimated_inliers is None:
                w, b = initial_coefficients(
                    problem, "erm", fit_subset.loosened(), self.random_state
                )
                if self._honest_losses is not None:
                    losses = type(self)._honest_losses(problem, problem.evaluate(w, b))
                    rows, _ = subquantile(losses, problem.k, problem.floors)
                    w, b = fit_rows(problem, fit_subset, rows)
            else:
                w, b = fit_rows(problem, fit_subset.loosened(), self._estimated_inliers)
            result, _ = self._best_start(problem, fit_subset, w, b)
            if self._rejects():
                result = self._reject_implausible(problem, fit_subset, result)
            return problem, result.evaluation.mask

        gamma, alpha, self.hyperparameter_scores_, self._selected_rows = _hyperparameters.select(
            gammas, alphas, start, trimmed_fit
        )
        return alpha, gamma

    def _fit_weighted(self, X: Any, y: np.ndarray, sample_weight: np.ndarray) -> None:
        """The fit with row weights: the weighted subquantile (rows of smallest loss kept until
        their weight reaches (1 - epsilon) of the total; integer weights fit as repeated rows,
        rows of weight 0 are left out of everything).

        epsilon, alpha and gamma "auto", and the trim of refine="reject", are chosen by the fit
        without weights on the rows of positive weight (which sees each of them once): the
        weighted fit then runs the alternating solver with its ``alpha_`` and ``gamma_``,
        refine=None, trimming the weight of the rows it trimmed. Weights of 0 and 1 only give
        the fit (any configuration) on the rows of weight 1.
        """
        present = sample_weight > 0
        if not present.any():
            raise ValueError("sample_weight must give at least one row a positive weight.")
        rows = np.flatnonzero(present)
        X_kept, y_kept = _safe_indexing(X, rows), y[rows]
        if np.all(sample_weight[rows] == 1.0):  # weights of 0 and 1: the fit without the 0s
            self._fit_coefficients(X_kept, *self._encode_target(y_kept))
            self._spread_to_every_row(X, y, rows)
            return
        automatic = [
            name for name in ("epsilon", "alpha", "gamma")
            if isinstance(getattr(self, name), str) and getattr(self, name) == "auto"
        ]
        problems = [
            f"{name}={getattr(self, name)!r}"
            for name, allowed in (("solver", "alternating"), ("device", None))
            if getattr(self, name) != allowed
        ]
        if self.refine == "biweight":
            problems.append("refine='biweight'")
        if problems:
            raise ValueError(
                f"{type(self).__name__}.fit with sample_weight runs the alternating solver on "
                "the weighted subquantile; not with " + ", ".join(problems) + "."
            )
        settings = {"refine": None}
        if automatic or self.refine is not None:
            chosen = clone(self).set_params(verbose=0).fit(X_kept, y_kept)
            # the weight of the rows it trimmed: the trim in the weighted fit's units
            weights = sample_weight[rows]
            trimmed = float(weights[~chosen.inlier_mask_].sum() / weights.sum())
            epsilon = min(trimmed, _auto_epsilon.MAX_EPSILON)
            settings.update(epsilon=epsilon, alpha=chosen.alpha_, gamma=chosen.gamma_)
        weighted = clone(self).set_params(**settings)
        weighted._sample_weight = sample_weight[rows]
        weighted._fit_coefficients(X_kept, *weighted._encode_target(y_kept))
        parameters = self.get_params(deep=False)
        for name, value in vars(weighted).items():
            if name not in parameters and name != "_sample_weight":
                setattr(self, name, value)
        if automatic:
            self.hyperparameter_scores_ = chosen.__dict__.get("hyperparameter_scores_")
        self._spread_to_every_row(X, y, rows)

    def _spread_to_every_row(self, X: Any, y: np.ndarray, rows: np.ndarray) -> None:
        """The per-row attributes of a fit on ``rows`` extended to every row of X: the others
        (weight 0) are not kept, have weight 0 and score their loss under the fit."""
        n = y.shape[0]
        left_out = np.setdiff1d(np.arange(n), rows)
        inlier, scores, weights = np.zeros(n, dtype=bool), np.empty(n), np.zeros(n)
        inlier[rows], scores[rows], weights[rows] = (
            self.inlier_mask_, self.outlier_scores_, self.row_weights_
        )
        if left_out.size:
            scores[left_out] = self._row_losses(_safe_indexing(X, left_out), y[left_out])
        self.inlier_mask_, self.outlier_scores_, self.row_weights_ = inlier, scores, weights

    def _row_losses(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Each row's loss under the fitted model, as ``outlier_scores_`` scores it."""
        raise NotImplementedError

    def _fit_coefficients(self, X: np.ndarray, Y: np.ndarray, loss: Loss) -> None:
        """Fit the coefficients on the kernel (or features) of X and set the fitted attributes.

        Squared-loss targets are fitted divided by a power of two (``Loss.target_scale``) and
        the model scaled back in ``_set_fitted``: exact, and no squared residual overflows.
        """
        self._check_solver_options()
        self._target_scale = loss.target_scale(Y)
        Y = Y / self._target_scale
        self._epsilon = self.epsilon
        self._estimated_inliers = None
        candidates = alphas, gammas = self._candidates(X)
        if self.epsilon == "auto" and self._reselects and len(alphas) * len(gammas) > 1:
            # alpha and gamma chosen at the starting trim first estimate epsilon; then they
            # are chosen again, and the model fitted, at that estimate (a 40% trim chooses for
            # the hardest 60% of clean rows, e.g. a smoother kernel than the data need). The
            # second choice's trimmed fits start from the rows the estimate kept: from the
            # ordinary fit, a cluster of rows sharing a wrong target (zero loss once fitted)
            # would be kept again, and clean rows trimmed in its place.
            self._fit_model(X, Y, loss, candidates)
            self._epsilon = self.epsilon_
            self._estimated_inliers = self.inlier_mask_
        self._fit_model(X, Y, loss, candidates)

    def _fit_model(self, X: np.ndarray, Y: np.ndarray, loss: Loss, candidates: Candidates) -> None:
        """One fit at ``self._epsilon`` (a fraction, or "auto"), targets already scaled."""
        self.alpha_, self.gamma_ = self._hyperparameters(X, Y, loss, candidates)
        start = type(self)._auto_start(Y) if self._epsilon == "auto" else self._epsilon
        problem, feature_map = self._build_problem(X, Y, loss, self.alpha_, self.gamma_, start)
        fit_subset = SubsetFit(self._subset_fitter_for(problem), problem)
        init = self.init
        if not isinstance(init, str):
            init = np.asarray(init, dtype=float) / self._target_scale
        if self._selected_rows is None or not (isinstance(init, str) and init == "erm"):
            w, b = initial_coefficients(problem, init, fit_subset.loosened(), self.random_state)
        else:  # alpha / gamma "auto" and init="erm": start from the rows their selection kept
            w, b = fit_rows(problem, fit_subset.loosened(), self._selected_rows)
        result, self.best_start_ = self._best_start(problem, fit_subset, w, b)
        if self._epsilon == "auto":
            problem, result = self._estimate_epsilon(problem, fit_subset, result)
        elif self._rejects():
            result = self._reject_implausible(problem, fit_subset, result)
        kept = result.evaluation.fit_rows
        total = kept.size if self._sample_weight is None else self._sample_weight.sum()
        self.epsilon_ = 1.0 - float(kept.sum() / total)
        refinement = None
        if self.refine == "biweight" and self._epsilon != 0:
            refinement = biweight_refinement(problem, result.evaluation.mask)
        self._set_fitted(X, problem, result, feature_map, refinement)

    def _best_start(
        self, problem: Problem | FeatureProblem, fit_subset, w: np.ndarray, b: np.ndarray
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

    def _subset_fitter_for(self, problem: Problem | FeatureProblem) -> Any:
        """The exact subset fitter of the problem: features, device kernel or kernel matrix."""
        if isinstance(problem, FeatureProblem):
            return self._feature_subset_fitter(problem)
        if self.device is not None:
            return _load_torch_backend().device_subset_fitter(self._subset_fitter, problem)
        return self._subset_fitter(problem)

    def _random_subsets(self, problem: Problem | FeatureProblem) -> list[np.ndarray]:
        """Masks of the ``n_init - 1`` random starting subsets of ``init_size`` rows.

        Classifiers draw one row of every class first, so that each start sees every class.
        """
        n = problem.n_samples
        rng = check_random_state(self.random_state)
        classes = []
        if is_classifier(self):
            labels = np.unique(problem.Y, axis=0, return_inverse=True)[1].ravel()
            classes = [np.flatnonzero(labels == label) for label in np.unique(labels)]
        masks = []
        for _ in range(self.n_init - 1):
            mask = np.zeros(n, dtype=bool)
            mask[[rng.choice(rows) for rows in classes]] = True
            missing = max(min(self.init_size, n) - int(mask.sum()), 0)
            mask[rng.choice(np.flatnonzero(~mask), missing, replace=False)] = True
            masks.append(mask)
        return masks

    def _build_problem(
        self,
        X: np.ndarray,
        Y: np.ndarray,
        loss: Loss,
        alpha: float,
        gamma: float | None,
        epsilon: float,
    ) -> tuple[Problem | FeatureProblem, TransformerMixin | None]:
        """The objective on the exact kernel matrix of X, or on its approximate features.

        Returns the problem and the fitted feature map (None for the exact kernel model).
        """
        params = kernel_params(self.kernel, gamma, self.degree, self.coef0, self.kernel_params)
        common = {
            "Y": Y,
            "loss": loss,
            "alpha": alpha,
            "k": n_kept(X.shape[0], epsilon),
            "fit_intercept": self.fit_intercept,
            "radius": None if self.radius is None else self.radius / self._target_scale,
            "floors": (
                ClassFloors.half_of_each_class(Y, self._sample_weight)
                if self._keeps_every_class
                else None
            ),
            "sample_weight": self._sample_weight,
            "epsilon": epsilon,
        }
        if self.n_components is None:
            if self.device is None:
                self._check_fit_memory(X.shape[0])
                K = compute_kernel(X, None, self.kernel, params)
                check_finite(K)
            else:
                K = _load_torch_backend().DeviceKernel.compute(X, self.kernel, params, self.device)
                if not K.all_finite():
                    raise non_finite_error()
            return Problem(K=K, **common), None
        try:
            feature_map = fit_feature_map(
                self.approximation, self.n_components, self.kernel, params, self.random_state, X
            )
        except np.linalg.LinAlgError as error:  # the SVD of a landmark block with NaN or inf
            raise non_finite_error(NON_FINITE_FEATURES) from error
        Z = transform_in_chunks(feature_map, X, np.dtype(self.dtype))
        self._check_landmark_kernel(X, feature_map, params, common)
        return FeatureProblem(Z=Z, **common), feature_map

    def _check_landmark_kernel(
        self,
        X: np.ndarray,
        feature_map: TransformerMixin,
        params: dict[str, Any],
        common: dict[str, Any],
    ) -> None:
        """The exact model's positive-definiteness check, on the m x m landmark kernel block.

        The exact path refuses a kernel that is not positive semidefinite when its subset fitter
        factorizes the kernel matrix; Nystroem features run the same fitter's check on the
        landmark rows, where they use the kernel (random Fourier features are PSD by design).
        """
        landmarks = getattr(feature_map, "component_indices_", None)
        if landmarks is None:
            return
        if self.kernel == "precomputed":
            K = X[np.ix_(landmarks, landmarks)]
        else:
            K = compute_kernel(X[landmarks], None, self.kernel, params)
        check_finite(K)
        landmark_common = {
            **common,
            "Y": common["Y"][landmarks],
            "k": landmarks.size,
            "floors": None,
        }
        self._subset_fitter(Problem(K=np.asarray(K, dtype=float), **landmark_common))

    def _estimate_epsilon(
        self, problem: Problem | FeatureProblem, fit_subset, result: SolverResult
    ) -> tuple[Problem | FeatureProblem, SolverResult]:
        """Refit on the unflagged rows until the flagged set repeats (a fixed point, or a cycle:
        on 1442 digits two sets one row apart alternated for all ``MAX_ROUNDS`` rounds)."""
        n = problem.n_samples
        seen: set[bytes] = set()
        for _ in range(_auto_epsilon.MAX_ROUNDS):
            flagged = type(self)._outlier_flags(problem, result.evaluation)
            if flagged.tobytes() in seen:
                break
            seen.add(flagged.tobytes())
            epsilon = min(flagged.mean(), _auto_epsilon.MAX_EPSILON)
            problem = replace(problem, k=n_kept(n, epsilon))
            # From the fit without the flagged rows: from the current fit, rows it explains
            # by their own coefficients (a cluster sharing a wrong target) would be kept again.
            w, b = result.w, result.b
            if n - flagged.sum() >= problem.k:
                w, b = fit_subset.loosened()(~flagged, w, b)
            result = self._run_solver(problem, fit_subset, w, b)
        return problem, result

    def _rejects(self) -> bool:
        """Whether this fit (at a given epsilon > 0) drops the implausible kept rows."""
        return self.refine == "reject" and self._epsilon != "auto" and self._epsilon > 0

    def _reject_implausible(
        self, problem: Problem | FeatureProblem, fit_subset, result: SolverResult
    ) -> SolverResult:
        """Drop kept rows whose loss is implausible under the fit; refit until none is left.

        A rule like epsilon="auto"'s (``_rejections``), applied to the kept rows only: the
        trim still removes at least epsilon of the rows, and a corrupted row that the count
        forced into the kept set (or that a flexible kernel fits by its own coefficient) is
        dropped instead of dragging the fit. Classifiers keep their class floors.
        """
        evaluation = result.evaluation
        w, b, history = result.w, result.b, list(result.history)
        mask = evaluation.mask
        minimum_kept = n_kept(problem.n_samples, _auto_epsilon.MAX_EPSILON)
        for _ in range(_auto_epsilon.MAX_ROUNDS):
            dropped = mask & type(self)._rejections(problem, evaluation)
            if problem.floors is not None:
                dropped = problem.floors.protect(mask, dropped, evaluation.losses)
            if not dropped.any() or mask.sum() - dropped.sum() < minimum_kept:
                break
            mask = mask & ~dropped
            w, b = fit_subset(mask, w, b)
            full = problem.evaluate(w, b)
            evaluation = replace(full, mask=mask, objective=problem.subset_objective(w, b, mask))
            history.append(evaluation.objective)
        return replace(result, w=w, b=b, evaluation=evaluation, history=history)

    def _run_solver(
        self, problem: Problem, fit_subset, w: np.ndarray, b: np.ndarray
    ) -> SolverResult:
        max_iter = self.max_iter if self.max_iter is not None else DEFAULT_MAX_ITER[self.solver]
        with tqdm(total=max_iter, desc=f"SubQ {self.solver}", disable=not self.verbose) as bar:

            def progress(iteration: int, objective: float) -> None:
                bar.update(1)
                bar.set_postfix(objective=f"{objective:.6g}")

            if self.solver == "alternating":
                rough = fit_subset.loosened()
                rough = None if rough is fit_subset else rough
                result = alternating(problem, fit_subset, w, b, max_iter, progress, rough)
            else:
                result = gradient_method(
                    problem,
                    w,
                    b,
                    method=self.solver,
                    max_iter=max_iter,
                    tol=self.tol,
                    n_iter_no_change=self.n_iter_no_change,
                    momentum=self.momentum,
                    smoothing=self._scaled_smoothing(),
                    line_search=self.line_search,
                    progress=progress,
                )
        if not result.converged:
            warnings.warn(
                f"SubQ solver {self.solver!r} reached max_iter={max_iter} before the kept subset "
                "settled; increase max_iter (or tol for the gradient solvers).",
                ConvergenceWarning,
                stacklevel=4,
            )
        return result

    def _scaled_smoothing(self) -> float | None:
        """``smoothing`` in the units of the scaled losses (losses / target_scale^2)."""
        if self.smoothing is None:
            return None
        with np.errstate(over="ignore"):
            value = np.float64(self.smoothing) * np.float64(self._target_scale) ** 2
        return float(min(value, np.finfo(float).max))

    def _set_fitted(
        self,
        X: np.ndarray,
        problem: Problem | FeatureProblem,
        result: SolverResult,
        feature_map: TransformerMixin | None,
        refinement: Refinement | None = None,
    ) -> None:
        evaluation = result.evaluation
        for stale in ("X_fit_", "dual_coef_", "feature_map_", "coef_"):
            self.__dict__.pop(stale, None)
        scale = self._target_scale
        w, b = result.w, result.b
        losses, threshold, kept = evaluation.losses, evaluation.threshold, evaluation.mask
        self.row_weights_ = evaluation.fit_rows.astype(float)
        if refinement is not None:
            w, b = refinement.w, refinement.b
            losses = problem.loss.loss(problem.apply(w) + b, problem.Y)
            threshold = (BIWEIGHT_C * refinement.scale) ** 2
            kept, self.row_weights_ = refinement.weights > 0, refinement.weights
        w, b = w * scale, b * scale
        if feature_map is None:
            self._set_dual_model(X, w, b)
        else:
            self.feature_map_ = feature_map
            self.coef_, self.intercept_ = self._output_shapes(w, b)
        with np.errstate(over="ignore"):  # losses of targets beyond 1e154 overflow to inf
            squared_scale = np.float64(scale) ** 2
            self.outlier_scores_ = losses * squared_scale
            self.threshold_ = float(threshold * squared_scale)
            self.objective_history_ = np.asarray(result.history) * squared_scale
        self.inlier_mask_ = kept
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged

    # -- prediction --------------------------------------------------------------------------

    def _decision(self, X: Any) -> np.ndarray:
        """Model outputs f(X), shape (n_samples, n_outputs): exact kernel or features."""
        if not hasattr(self, "feature_map_"):
            return super()._decision(X)
        check_is_fitted(self)
        X = self._validated_X(X, reset=False)
        coef = self.coef_.reshape(self.coef_.shape[0], -1)
        return predict_in_chunks(self.feature_map_, X, coef) + np.atleast_1d(self.intercept_)


def _load_torch_backend() -> ModuleType:
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
