"""A metric from the average gradient outer product of kernel ridge fits.

The recursive feature machine (Radhakrishnan, Beaglehole, Pandit and Belkin, Science 2024)
estimates the directions a function varies along by the average outer product of its gradient,
``M = (1/n) sum_i grad f(x_i) grad f(x_i)^T``, where ``f`` is a kernel ridge fit with the kernel
``phi(||x - x'||^2_M)``, and iterates. `MetricKernelRidgeCV` scores the resulting metric, cut to
its leading directions (exactly low rank, like the learned ``Sigma``), beside the metrics of its
``lam`` path: the objective ``J_n`` of the paper has several stationary points, and its path
from the isotropic start can settle on a wrong subspace that this estimate does not.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import eigh

from ._objective import KernelFamily, centred, kernel_argument

__all__ = ["MAX_ITERATIONS", "PATIENCE", "RELATIVE_FLOOR", "gradient_outer_product_metric"]

MAX_ITERATIONS = 10
PATIENCE = 2
RELATIVE_FLOOR = 0.01

# (squared metric distances between the rows, targets, the previous round's s or None) -> the
# kernel ridge fit's bandwidth factor s, ridge mu and its leave-one-out mean squared error
Choice = Callable[[np.ndarray, np.ndarray, float | None], tuple[float, float, float]]


def gradient_outer_product_metric(
    X: np.ndarray,
    y: np.ndarray,
    family: KernelFamily,
    choose: Choice,
    max_iterations: int = MAX_ITERATIONS,
    patience: int = PATIENCE,
) -> np.ndarray:
    """The average gradient outer product metric, cut to its leading directions.

    From ``M = I / p``, up to ``max_iterations`` times: fit kernel ridge with an unpenalized
    intercept and the kernel ``phi(s ||x - x'||^2_M)``, ``(s, mu)`` given by ``choose``, and
    replace ``M`` by the average outer product of the fit's gradient at the rows, scaled to
    trace 1. The gradient of ``f(x) = sum_j a_j phi(s ||x - x_j||^2_M) + b`` at ``x_i`` is
    ``2 s M sum_j a_j phi'(s ||x_i - x_j||^2_M) (x_i - x_j)``. Of the metrics met (``I / p``
    included), the one whose fit has the lowest leave-one-out error (the third value ``choose``
    returns) is kept, as the recursive feature machine keeps its iteration of best validation
    error [1]_; the rounds stop after ``patience`` of them without a lower error. The directions
    whose eigenvalue is below ``RELATIVE_FLOOR`` times the largest are then dropped (the result
    has exactly that rank).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Rows.
    y : ndarray of shape (n_samples,)
        Targets.
    family : KernelFamily
        A distance kernel profile.
    choose : callable
        ``choose(argument, y, near) -> (s, mu, loo)`` for the squared metric distances
        ``argument``: the fit's bandwidth factor, ridge and leave-one-out mean squared error;
        ``near`` is the previous round's ``s`` (None in the first round), where the search may
        start.
    max_iterations : int, default=MAX_ITERATIONS
        Largest number of fit-and-gradient rounds.
    patience : int, default=PATIENCE
        Stop after this many rounds without a lower leave-one-out error.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        A positive semidefinite metric of trace at most 1.

    References
    ----------
    .. [1] A. Radhakrishnan, D. Beaglehole, P. Pandit and M. Belkin, "Mechanism for feature
       learning in neural networks and backpropagation-free machine learning models",
       Science 383 (2024).
    """
    n, p = X.shape
    metric = best = np.eye(p) / p
    lowest, stale, scale = np.inf, 0, None
    for round_ in range(max_iterations + 1):
        argument = kernel_argument(X, None, metric, family)
        scale, ridge, loo = choose(argument, y, scale)
        if loo < lowest:
            best, lowest, stale = metric, loo, 0
        else:
            stale += 1
        if stale >= patience or round_ == max_iterations:
            break
        system = centred(family.fn(scale * argument))
        system[np.diag_indices(n)] += n * ridge
        coef = np.linalg.solve(system, y - y.mean())
        coef -= coef.mean()
        slope = family.deriv(scale * argument)
        gradients = 2.0 * scale * (X * (slope @ coef)[:, None] - slope @ (coef[:, None] * X))
        outer = metric @ (gradients.T @ gradients) @ metric / n
        total = np.trace(outer)
        if not np.isfinite(total) or total <= 0.0:
            break  # a constant fit has no gradient: keep the best metric so far
        metric = outer / total
    values, vectors = eigh(best)
    keep = values >= RELATIVE_FLOOR * values.max()
    return (vectors[:, keep] * values[keep]) @ vectors[:, keep].T
