"""Solvers of the Subquantile objective: alternating (trimmed full solves) and gradient methods.

Every solver works on a :class:`~robustkernel.subquantile._solve.objective.Problem` (exact
kernel model) or a :class:`~robustkernel.subquantile._solve.objective.FeatureProblem`
(approximate features) through their shared interface, and returns a :class:`SolverResult`;
the estimators only choose the loss and the subset fitter. :data:`SOLVERS` is the registry: a
solver's name, its default iteration cap, which options it takes and how it runs; the parameter
validation and the fit read it, so a new solver is one function and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from sklearn.utils import check_random_state

from ...trimming import alternate
from .objective import Coefficients, Evaluation, FeatureProblem, Problem, smooth_weights

Refit = Callable[[np.ndarray, np.ndarray, np.ndarray], Coefficients]
"""``fit_subset(mask, w0, b0)``: the minimizer on the kept rows under the problem's constraint."""
Progress = Callable[[int, float], None]


@dataclass(frozen=True)
class SolverOptions:
    """The solver parameters of one fit, validated (``smoothing`` in the scaled losses' units)."""

    max_iter: int
    tol: float
    n_iter_no_change: int
    momentum: float
    smoothing: float | None
    line_search: bool


@dataclass(frozen=True)
class SolverResult:
    """The fitted coefficients and how the solver got there."""

    w: np.ndarray
    b: np.ndarray
    evaluation: Evaluation
    n_iter: int
    history: list[float]
    converged: bool


def fit_rows(
    problem: Problem | FeatureProblem, fit_subset: Refit, rows: np.ndarray
) -> Coefficients:
    """The fit on the rows of the mask ``rows``, started from zero coefficients."""
    n, C = problem.n_coefficients, problem.n_outputs
    return fit_subset(rows, np.zeros((n, C)), np.zeros(C))


def initial_coefficients(
    problem: Problem | FeatureProblem,
    init: str | np.ndarray,
    fit_subset: Refit,
    random_state: int | np.random.RandomState | None,
) -> Coefficients:
    """Starting point: ``"erm"`` (fit on all rows), ``"zeros"``, ``"glorot"`` or given w."""
    n, C = problem.n_coefficients, problem.n_outputs
    zeros_b = np.zeros(C)
    if isinstance(init, str) and init == "erm":  # every row, with its weight if it has one
        every_row = np.ones(problem.n_samples, dtype=bool)
        weights = every_row if problem.sample_weight is None else problem.sample_weight
        return fit_rows(problem, fit_subset, weights)
    if isinstance(init, str) and init == "zeros":
        return np.zeros((n, C)), zeros_b
    if isinstance(init, str) and init == "glorot":
        limit = np.sqrt(6.0 / n)
        return check_random_state(random_state).uniform(-limit, limit, size=(n, C)), zeros_b
    w = np.asarray(init, dtype=float).reshape(n, -1) if np.size(init) == n * C else None
    if w is None or not np.all(np.isfinite(w)):
        raise ValueError(
            f"init given as an array must hold {n * C} finite coefficients (n_samples, or "
            f"n_components with features, x n_outputs), got shape {np.shape(init)}."
        )
    return w.reshape(n, C), zeros_b


def alternating(
    problem: Problem | FeatureProblem,
    fit_subset: Refit,
    w: np.ndarray,
    b: np.ndarray,
    max_iter: int,
    progress: Progress | None = None,
    rough: Refit | None = None,
) -> SolverResult:
    """Repeat {S <- the k rows of smallest loss; f <- argmin of the objective on S}.

    The objective never increases; the loop stops when S repeats (a fixed point, or a cycle at
    constant objective) or after ``max_iter`` subset fits. With ``rough`` (an inexact
    ``fit_subset``, e.g. L-BFGS to a loose tolerance) the loop runs on it first, then goes on
    from its result with ``fit_subset``: intermediate subsets only need their losses ranked.
    """
    if rough is not None:
        first = alternating(problem, rough, w, b, max_iter, progress)
        result = alternating(problem, fit_subset, first.w, first.b, max_iter, progress)
        return replace(
            result,
            n_iter=first.n_iter + result.n_iter,
            history=first.history + result.history[1:],
        )
    history: list[float] = []

    def evaluated(w: np.ndarray, b: np.ndarray) -> SolverResult:
        evaluation = problem.evaluate(w, b)
        history.append(evaluation.objective)
        if progress is not None and len(history) > 1:
            progress(len(history) - 1, evaluation.objective)
        return SolverResult(w, b, evaluation, len(history) - 1, history, False)

    def refit(state: SolverResult) -> SolverResult:
        return evaluated(*fit_subset(state.evaluation.fit_rows, state.w, state.b))

    start = evaluated(problem.project(w, problem.apply(w))[0], b)
    run = alternate(refit, lambda state: state.evaluation.fit_rows.tobytes(), start, max_iter)
    return replace(run.state, converged=run.converged)


def lipschitz_constant(problem: Problem | FeatureProblem) -> float:
    """Smoothness constant of the objective in f: curvature * lambda_max(K or Z^T Z) + 2 alpha.

    The intercept is minimized exactly after every step, and partial minimization does not
    increase the smoothness constant, so the intercept adds nothing here.
    """
    return problem.loss.curvature * problem.top_eigenvalue() + 2.0 * problem.alpha


def gradient_method(
    problem: Problem | FeatureProblem,
    w: np.ndarray,
    b: np.ndarray,
    *,
    method: str,
    max_iter: int,
    tol: float,
    n_iter_no_change: int,
    momentum: float,
    smoothing: float | None,
    line_search: bool,
    progress: Progress | None = None,
) -> SolverResult:
    """Functional gradient descent in the RKHS (``"gd"``), heavy ball or Nesterov momentum.

    Each iteration takes a step in f (dual coefficients w, or feature weights theta) of size
    1 / L (:func:`lipschitz_constant`), or found by Armijo backtracking with ``line_search``,
    then sets the unpenalized intercept to its exact minimizer on the kept rows. Outputs are
    updated by linearity: one product with K (n x n) or with Z and Z^T (n x m) per iteration.
    Stops when S has not changed for ``n_iter_no_change`` iterations and the relative change of
    the objective is below ``tol``.
    """
    step = 1.0 / lipschitz_constant(problem)
    w, Kw = problem.project(w, problem.apply(w))
    b, evaluation = _exact_intercept(problem, w, Kw, b, problem.evaluate(w, b, Kw).mask)
    history = [evaluation.objective]
    velocity, K_velocity = np.zeros_like(w), np.zeros_like(Kw)
    previous_w, previous_Kw = w, Kw
    unchanged, converged, n_iter = 0, False, 0
    while n_iter < max_iter:
        n_iter += 1
        if method == "nesterov":
            base_w = w + momentum * (w - previous_w)
            base_Kw = Kw + momentum * (Kw - previous_Kw)
            base = problem.evaluate(base_w, b, base_Kw)
        else:
            base_w, base_Kw, base = w, Kw, evaluation
        direction = _gradient(problem, base_w, base, smoothing)
        K_direction = problem.apply(direction)
        if method == "momentum":
            velocity = momentum * velocity + direction
            K_velocity = momentum * K_velocity + K_direction
            direction, K_direction = velocity, K_velocity
        if line_search:
            step = _armijo_step(problem, base_w, b, base, direction, K_direction, 2.0 * step)
        previous_w, previous_Kw = w, Kw
        w, Kw = problem.project(base_w - step * direction, base_Kw - step * K_direction)
        b, new_evaluation = _exact_intercept(problem, w, Kw, b, problem.evaluate(w, b, Kw).mask)
        history.append(new_evaluation.objective)
        if progress is not None:
            progress(n_iter, new_evaluation.objective)
        same_subset = np.array_equal(new_evaluation.mask, evaluation.mask)
        unchanged = unchanged + 1 if same_subset else 0
        change = abs(evaluation.objective - new_evaluation.objective)
        evaluation = new_evaluation
        if unchanged >= n_iter_no_change and change <= tol * max(abs(evaluation.objective), 1e-300):
            converged = True
            break
    # The outputs were updated by linearity; evaluate once more exactly for the reported model.
    evaluation = problem.evaluate(w, b)
    return SolverResult(w, b, evaluation, n_iter, history, converged)


def _exact_intercept(
    problem: Problem | FeatureProblem,
    w: np.ndarray,
    Kw: np.ndarray,
    b: np.ndarray,
    mask: np.ndarray,
) -> tuple[np.ndarray, Evaluation]:
    """The intercept minimizing the loss on the rows ``mask``, and the resulting evaluation."""
    if problem.fit_intercept:
        b = problem.loss.best_intercept(Kw[mask], problem.Y[mask], b)
    return b, problem.evaluate(w, b, Kw)


def _gradient(
    problem: Problem | FeatureProblem,
    w: np.ndarray,
    evaluation: Evaluation,
    smoothing: float | None,
) -> np.ndarray:
    """Gradient of the objective in f at (w, b), as coefficients (RKHS gradient if exact)."""
    if smoothing is None:
        weights = evaluation.mask.astype(float)
    else:
        weights = smooth_weights(evaluation.losses, evaluation.threshold, smoothing)
    G = problem.loss.gradient(evaluation.F, problem.Y) * weights[:, None]
    return problem.backward(G) + 2.0 * problem.alpha * w


def _armijo_step(
    problem: Problem | FeatureProblem,
    w: np.ndarray,
    b: np.ndarray,
    evaluation: Evaluation,
    direction: np.ndarray,
    K_direction: np.ndarray,
    step: float,
    shrink: float = 0.5,
    c: float = 1e-4,
) -> float:
    """Largest step from ``step`` halved until F decreases by c * step * ||direction||_H^2."""
    squared_norm = problem.squared_norm(direction, K_direction)
    for _ in range(60):
        trial_w, trial_Kw = problem.project(
            w - step * direction, evaluation.Kw - step * K_direction
        )
        trial = problem.evaluate(trial_w, b, trial_Kw)
        if trial.objective <= evaluation.objective - c * step * squared_norm:
            return step
        step *= shrink
    return step


SolverRun = Callable[
    [Problem | FeatureProblem, Callable, np.ndarray, np.ndarray, SolverOptions, Progress | None],
    SolverResult,
]
"""``run(problem, fit_subset, w, b, options, progress)``: the solver from (w, b)."""


@dataclass(frozen=True)
class Solver:
    """One entry of :data:`SOLVERS`: how a solver runs and which options it takes."""

    run: SolverRun
    max_iter: int  # the iteration cap when ``max_iter=None``
    smoothing: bool = False  # takes ``smoothing`` (the soft subquantile), tol and momentum
    line_search: bool = False  # takes ``line_search=True``


def _run_alternating(problem, fit_subset, w, b, options, progress) -> SolverResult:
    """:func:`alternating`, on rough subset fits first where the fitter has them."""
    rough = fit_subset.loosened()
    rough = None if rough is fit_subset else rough
    return alternating(problem, fit_subset, w, b, options.max_iter, progress, rough)


def _gradient_solver(method: str) -> SolverRun:
    """:func:`gradient_method` with ``method`` ("gd", "momentum" or "nesterov")."""

    def run(problem, fit_subset, w, b, options, progress) -> SolverResult:
        return gradient_method(
            problem,
            w,
            b,
            method=method,
            max_iter=options.max_iter,
            tol=options.tol,
            n_iter_no_change=options.n_iter_no_change,
            momentum=options.momentum,
            smoothing=options.smoothing,
            line_search=options.line_search,
            progress=progress,
        )

    return run


SOLVERS: dict[str, Solver] = {
    "alternating": Solver(_run_alternating, max_iter=100),
    "gd": Solver(_gradient_solver("gd"), max_iter=1000, smoothing=True, line_search=True),
    "momentum": Solver(_gradient_solver("momentum"), max_iter=1000, smoothing=True),
    "nesterov": Solver(_gradient_solver("nesterov"), max_iter=1000, smoothing=True),
}
"""The solvers by name (the ``solver`` parameter's values)."""
