"""The inner problem with the logistic loss: kernel logistic regression at a fixed metric.

``min_{a, gamma} (1/n) sum_i log(1 + exp(-y_i (K a + gamma)_i)) + (lam/2) a^T K a`` for labels
``y_i`` in ``{-1, +1}``, solved by damped Newton steps on its optimality conditions
``l'(f) + n lam a = 0`` and ``sum_i l'(f_i) = 0`` (``f = K a + gamma``). With ``W`` the
diagonal of ``l''`` and ``mu = n lam``, every step solves ``(W K + mu I) x = v`` through the
symmetric positive definite ``B = mu I + W^(1/2) K W^(1/2)`` (one Cholesky factorization per
step; ``B >= mu I``, so confident rows with ``W`` near 0 do no harm):
``x = (v - W^(1/2) B^(-1) W^(1/2) K v) / mu``.

At the solution ``a = -l'(f) / (n lam)``, so the derivative of the optimal value in ``K`` is
``-(lam/2) a a^T``, as for the squared loss: the gradient in ``Sigma`` and everything built on it
are shared with kernel ridge regression.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit

MAX_NEWTON_STEPS = 100
NEWTON_TOL = 1e-12  # on max |l'(f) + n lam a| and |mean l'(f)|, relative to the largest |l'|
ARMIJO = 1e-4


def _value(K: np.ndarray, y: np.ndarray, a: np.ndarray, b: float, lam: float) -> float:
    Ka = K @ a
    return float(np.mean(np.logaddexp(0.0, -y * (Ka + b))) + 0.5 * lam * (a @ Ka))


def logistic_inner(K: np.ndarray, y: np.ndarray, lam: float) -> tuple[float, np.ndarray, float]:
    """Optimal value, dual coefficients ``a`` and intercept of kernel logistic regression.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Kernel matrix (positive semidefinite).
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    lam : float
        Ridge parameter (penalty ``(lam/2) ||f||^2`` next to the *mean* loss).

    Returns
    -------
    value, a, intercept

    Raises
    ------
    numpy.linalg.LinAlgError
        If a Newton system is not numerically positive definite (a kernel that is not PSD).
    ValueError
        If Newton's method does not converge within ``MAX_NEWTON_STEPS`` steps.
    """
    n = y.size
    mu = n * lam
    a = np.zeros(n)
    positive = float(np.mean(y > 0))
    b = float(np.log(positive / (1.0 - positive))) if 0.0 < positive < 1.0 else 0.0
    value = _value(K, y, a, b, lam)
    for _ in range(MAX_NEWTON_STEPS):
        f = K @ a + b
        p = expit(-y * f)  # sigma(-y f)
        d1 = -y * p  # l'(f)
        residual = d1 + mu * a
        if max(np.max(np.abs(residual)), abs(d1.sum()) / n) <= NEWTON_TOL * max(
            np.max(np.abs(d1)), mu * np.max(np.abs(a)), np.finfo(float).tiny
        ):
            return value, a, b
        s = np.sqrt(p * (1.0 - p))  # W^(1/2), W = l''(f)
        B = (s[:, None] * K) * s[None, :]
        B.flat[:: n + 1] += mu
        factor = cho_factor(B, lower=True, overwrite_a=True, check_finite=False)

        def solve(v: np.ndarray, factor=factor, s=s) -> np.ndarray:
            return (v - s * cho_solve(factor, s * (K @ v), check_finite=False)) / mu

        x0 = solve(-residual)
        x1 = solve(s * s)
        db = (a.sum() + x0.sum()) / x1.sum()
        da = x0 - db * x1
        slope = float(residual @ (K @ da) + d1.sum() * db) / n  # directional derivative
        step = 1.0
        while True:
            candidate = _value(K, y, a + step * da, b + step * db, lam)
            if candidate <= value + ARMIJO * step * slope or step < 1e-10:
                break
            step *= 0.5
        if not candidate < value:
            return value, a, b  # no decrease left at float64 precision
        a, b, value = a + step * da, b + step * db, candidate
    raise ValueError(
        f"kernel logistic regression did not converge in {MAX_NEWTON_STEPS} Newton steps."
    )
