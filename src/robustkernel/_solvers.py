"""Solvers of the Subquantile objective: alternating (trimmed full solves) and gradient methods.

Every solver works on a :class:`~robustkernel._problem.Problem` and returns a
:class:`SolverResult`; the estimators only choose the loss and the subset fitter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ._kernels import top_eigenvalue
from ._problem import Evaluation, Problem
from ._trimming import smooth_weights

Coefficients = tuple[np.ndarray, np.ndarray]
SubsetFit = Callable[[np.ndarray, np.ndarray, np.ndarray], Coefficients]
Progress = Callable[[int, float], None]


@dataclass(frozen=True)
class SolverResult:
    """The fitted coefficients and how the solver got there."""

    w: np.ndarray
    b: np.ndarray
    evaluation: Evaluation
    n_iter: int
    history: list[float]
    converged: bool


def initial_coefficients(
    problem: Problem,
    init: str | np.ndarray,
    fit_subset: SubsetFit,
    random_state: int | np.random.RandomState | None,
) -> Coefficients:
    """Starting point: ``"erm"`` (fit on all rows), ``"zeros"``, ``"glorot"`` or given w."""
    n, C = problem.n_samples, problem.n_outputs
    zeros_b = np.zeros(C)
    if isinstance(init, str) and init == "erm":
        return fit_subset(np.ones(n, dtype=bool), np.zeros((n, C)), zeros_b)
    if isinstance(init, str) and init == "zeros":
        return np.zeros((n, C)), zeros_b
    if isinstance(init, str) and init == "glorot":
        limit = np.sqrt(6.0 / n)
        return check_random_state(random_state).uniform(-limit, limit, size=(n, C)), zeros_b
    w = np.asarray(init, dtype=float).reshape(n, -1) if np.size(init) == n * C else None
    if w is None or not np.all(np.isfinite(w)):
        raise ValueError(
            f"init given as an array must hold {n * C} finite dual coefficients "
            f"(n_samples x n_outputs), got shape {np.shape(init)}."
        )
    return w.reshape(n, C), zeros_b


def alternating(
    problem: Problem,
    fit_subset: SubsetFit,
    w: np.ndarray,
    b: np.ndarray,
    max_iter: int,
    progress: Progress | None = None,
) -> SolverResult:
    """Repeat {S <- the k rows of smallest loss; f <- argmin of the objective on S}.

    The objective never increases; the loop stops when S repeats (a fixed point, or a cycle at
    constant objective) or after ``max_iter`` subset fits.
    """
    w, b = problem.project(w, problem.K @ w)[0], b
    evaluation = problem.evaluate(w, b)
    history = [evaluation.objective]
    seen = {evaluation.mask.tobytes()}
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        w, b = fit_subset(evaluation.mask, w, b)
        evaluation = problem.evaluate(w, b)
        history.append(evaluation.objective)
        if progress is not None:
            progress(n_iter, evaluation.objective)
        key = evaluation.mask.tobytes()
        if key in seen:
            converged = True
            break
        seen.add(key)
    return SolverResult(w, b, evaluation, n_iter, history, converged)


def lipschitz_constant(problem: Problem) -> float:
    """Smoothness constant of the objective in (f, b): curvature * lambda_max + 2 alpha."""
    top = top_eigenvalue(problem.K, add_ones=problem.fit_intercept)
    return problem.loss.curvature * top + 2.0 * problem.alpha


def gradient_method(
    problem: Problem,
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

    The step is 1 / L (:func:`lipschitz_constant`), or Armijo backtracking with ``line_search``.
    Stops when S has not changed for ``n_iter_no_change`` iterations and the relative change of
    the objective is below ``tol``.
    """
    step = 1.0 / lipschitz_constant(problem)
    w, Kw = problem.project(w, problem.K @ w)
    evaluation = problem.evaluate(w, b, Kw)
    history = [evaluation.objective]
    velocity_w, velocity_b = np.zeros_like(w), np.zeros_like(b)
    previous_w, previous_b = w, b
    unchanged, converged, n_iter = 0, False, 0
    while n_iter < max_iter:
        n_iter += 1
        if method == "nesterov":
            look_w = w + momentum * (w - previous_w)
            look_b = b + momentum * (b - previous_b)
            grad_w, grad_b = _gradient(problem, look_w, problem.evaluate(look_w, look_b), smoothing)
            previous_w, previous_b = w, b
            new_w, new_b = look_w - step * grad_w, look_b - step * grad_b
            new_Kw = None
        else:
            grad_w, grad_b = _gradient(problem, w, evaluation, smoothing)
            if method == "momentum":
                velocity_w = momentum * velocity_w + grad_w
                velocity_b = momentum * velocity_b + grad_b
                grad_w, grad_b = velocity_w, velocity_b
            K_grad = problem.K @ grad_w
            if line_search:
                step = _armijo_step(problem, w, b, evaluation, grad_w, grad_b, K_grad, 2.0 * step)
            new_w, new_b = w - step * grad_w, b - step * grad_b
            new_Kw = evaluation.Kw - step * K_grad
        if new_Kw is None:
            new_Kw = problem.K @ new_w
        new_w, new_Kw = problem.project(new_w, new_Kw)
        new_evaluation = problem.evaluate(new_w, new_b, new_Kw)
        history.append(new_evaluation.objective)
        if progress is not None:
            progress(n_iter, new_evaluation.objective)
        same_subset = np.array_equal(new_evaluation.mask, evaluation.mask)
        unchanged = unchanged + 1 if same_subset else 0
        change = abs(evaluation.objective - new_evaluation.objective)
        w, b, evaluation = new_w, new_b, new_evaluation
        if unchanged >= n_iter_no_change and change <= tol * max(abs(evaluation.objective), 1e-300):
            converged = True
            break
    # K @ w was updated by linearity; evaluate once more exactly for the reported model.
    evaluation = problem.evaluate(w, b)
    return SolverResult(w, b, evaluation, n_iter, history, converged)


def _gradient(
    problem: Problem, w: np.ndarray, evaluation: Evaluation, smoothing: float | None
) -> Coefficients:
    """RKHS gradient of the objective at (w, b), in dual coefficients, and its intercept part."""
    if smoothing is None:
        weights = evaluation.mask.astype(float)
    else:
        weights = smooth_weights(evaluation.losses, evaluation.threshold, smoothing)
    G = problem.loss.gradient(evaluation.F, problem.Y) * weights[:, None]
    grad_b = G.sum(axis=0) if problem.fit_intercept else np.zeros(problem.n_outputs)
    return G + 2.0 * problem.alpha * w, grad_b


def _armijo_step(
    problem: Problem,
    w: np.ndarray,
    b: np.ndarray,
    evaluation: Evaluation,
    grad_w: np.ndarray,
    grad_b: np.ndarray,
    K_grad: np.ndarray,
    step: float,
    shrink: float = 0.5,
    c: float = 1e-4,
) -> float:
    """Largest step from ``step`` halved until F decreases by c * step * ||grad||_H^2."""
    squared_norm = float(np.sum(grad_w * K_grad) + np.sum(grad_b**2))
    for _ in range(60):
        trial_w, trial_Kw = problem.project(w - step * grad_w, evaluation.Kw - step * K_grad)
        trial = problem.evaluate(trial_w, b - step * grad_b, trial_Kw)
        if trial.objective <= evaluation.objective - c * step * squared_norm:
            return step
        step *= shrink
    return step
