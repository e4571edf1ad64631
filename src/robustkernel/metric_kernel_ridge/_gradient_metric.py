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

__all__ = ["ITERATIONS", "RELATIVE_FLOOR", "gradient_outer_product_metric"]

ITERATIONS = 3
RELATIVE_FLOOR = 0.01

# (squared metric distances between the rows, targets) -> the kernel ridge fit's bandwidth
# factor s and ridge mu
Choice = Callable[[np.ndarray, np.ndarray], tuple[float, float]]


def gradient_outer_product_metric(
    X: np.ndarray,
    y: np.ndarray,
    family: KernelFamily,
    choose: Choice,
    iterations: int = ITERATIONS,
) -> np.ndarray:
    """The average gradient outer product metric, cut to its leading directions.

    From ``M = I / p``, ``iterations`` times: fit kernel ridge with an unpenalized intercept and
    the kernel ``phi(s ||x - x'||^2_M)``, ``(s, mu)`` given by ``choose``, and replace ``M`` by
    the average outer product of the fit's gradient at the rows, scaled to trace 1. The
    gradient of ``f(x) = sum_j a_j phi(s ||x - x_j||^2_M) + b`` at ``x_i`` is
    ``2 s M sum_j a_j phi'(s ||x_i - x_j||^2_M) (x_i - x_j)``. The directions whose eigenvalue
    is below ``RELATIVE_FLOOR`` times the largest are then dropped (the result has exactly
    that rank).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Rows.
    y : ndarray of shape (n_samples,)
        Targets.
    family : KernelFamily
        A distance kernel profile.
    choose : callable
        ``choose(argument, y) -> (s, mu)`` for the squared metric distances ``argument``.
    iterations : int, default=ITERATIONS
        Number of fit-and-gradient rounds.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        A positive semidefinite metric of trace at most 1.
    """
    n, p = X.shape
    metric = np.eye(p) / p
    for _ in range(iterations):
        argument = kernel_argument(X, None, metric, family)
        scale, ridge = choose(argument, y)
        system = centred(family.fn(scale * argument))
        system[np.diag_indices(n)] += n * ridge
        coef = np.linalg.solve(system, y - y.mean())
        coef -= coef.mean()
        slope = family.deriv(scale * argument)
        gradients = 2.0 * scale * (X * (slope @ coef)[:, None] - slope @ (coef[:, None] * X))
        outer = metric @ (gradients.T @ gradients) @ metric / n
        total = np.trace(outer)
        if not np.isfinite(total) or total <= 0.0:
            break  # a constant fit has no gradient: keep the last metric
        metric = outer / total
    values, vectors = eigh(metric)
    keep = values >= RELATIVE_FLOOR * values.max()
    return (vectors[:, keep] * values[keep]) @ vectors[:, keep].T
