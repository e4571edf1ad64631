"""Kernel families, objective J_n, its gradient and the projections for `MetricKernelRidge`.

Notation of Chen, Li, Liu and Ruan (2023), eq. (1.5). For a PSD matrix ``Sigma`` (p x p) and a
kernel ``k_Sigma`` the kernel-learning objective is

    J_n(Sigma) = min_{a, gamma} (1/2n) ||y - K a - gamma 1||^2 + (lam/2) a^T K a
               = (lam/2) (H y)^T (K_c + n lam I)^{-1} (H y),

with ``H = I - 11^T/n`` and ``K_c = H K H``. The minimizer is ``a = (K_c + n lam I)^{-1} H y``
(which sums to zero), ``gamma = mean(y - K a)`` and the residual is ``r = n lam a``. The gradient
is ``-(lam/2) a^T (dK/dSigma) a``:

* translation-invariant kernels ``k = phi(||x - x'||^2_Sigma)``, ``W_ij = a_i a_j phi'(D_ij)``:
  ``grad = -(lam/2) sum_ij W_ij (x_i - x_j)(x_i - x_j)^T = -lam X^T (diag(W 1) - W) X``;
* inner-product kernels ``k = psi(x^T Sigma x')``, ``W_ij = a_i a_j psi'(x_i^T Sigma x_j)``:
  ``grad = -(lam/2) X^T W X``.

Both cost O(n^2 p + n p^2) time and O(n^2) memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh

from ._logistic import logistic_inner

__all__ = [
    "DISTANCE_KERNELS",
    "INNER_PRODUCT_KERNELS",
    "DescentResult",
    "InnerSolution",
    "KernelFamily",
    "centred",
    "factored_descent",
    "gradient",
    "inner_solution",
    "kernel_argument",
    "kernel_matrix",
    "kkt_residual",
    "objective",
    "project",
    "projected_gradient_descent",
    "projected_gradient_sq_norm",
    "resolve_kernel",
]

# "rbf" is "gaussian" under the SubQ engine's (scikit-learn's) name: exp(-gamma ||x - x'||^2) is
# exp(-||x - x'||^2_Sigma) with Sigma = gamma I, and the learned Sigma holds gamma
DISTANCE_KERNELS = ("gaussian", "rbf", "gaussian_mixture")
INNER_PRODUCT_KERNELS = ("linear", "cubic")
DEFAULT_INNER_PRODUCT_BOUND = 1e5
STALL_ULPS = 16  # a round of `factored_descent` that lowers J_n by less has stalled


@dataclass(frozen=True)
class KernelFamily:
    """A kernel profile ``phi`` (or ``psi``) with its derivative.

    Attributes
    ----------
    kind : {"distance", "inner"}
        ``"distance"``: ``k(x, x') = phi(||x - x'||^2_Sigma)``; ``"inner"``:
        ``k(x, x') = psi(x^T Sigma x')``.
    fn, deriv : callable
        Vectorised profile and its derivative, applied elementwise to an array.
    name : str
        A label for messages.
    deriv_factor : float or None, default=None
        ``c`` where ``phi' = c phi`` (``-1`` for ``exp(-z)``): the gradient then reuses the kernel
        matrix instead of evaluating ``deriv``.
    loss : {"squared", "logistic"}, default="squared"
        Loss of the inner problem solved at every ``Sigma``: kernel ridge regression, or kernel
        logistic regression on labels in ``{-1, +1}`` (`_logistic`).
    positive_definite : bool, default=False
        The profile gives a positive semidefinite kernel matrix for every metric (Gaussians and
        their mixtures with weights >= 0): a pivoted Cholesky factorization may then stand for
        an eigendecomposition (`leave_one_out_mse`).
    """

    kind: str
    fn: Callable[[np.ndarray], np.ndarray]
    deriv: Callable[[np.ndarray], np.ndarray]
    name: str
    deriv_factor: float | None = None
    loss: str = "squared"
    positive_definite: bool = False

    def evaluate(self, argument: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``phi(argument)``, written into ``out`` when given (in place for the Gaussian)."""
        if out is None:
            return self.fn(argument)
        if self.fn is _exp_of_minus:
            np.negative(argument, out=out)
            return np.exp(out, out=out)
        np.copyto(out, self.fn(argument))
        return out


def _exp_of_minus(z: np.ndarray) -> np.ndarray:
    out = np.negative(z)
    return np.exp(out, out=out)


def _gaussian() -> KernelFamily:
    return KernelFamily(
        "distance", _exp_of_minus, lambda z: -np.exp(-z), "gaussian", -1.0,
        positive_definite=True,
    )


def _gaussian_mixture(params: dict[str, Any]) -> KernelFamily:
    if "weights" not in params or "scales" not in params:
        raise ValueError(
            "kernel='gaussian_mixture' needs kernel_params={'weights': c, 'scales': t} "
            "(phi(z) = sum_m c_m exp(-t_m z))."
        )
    c = np.asarray(params["weights"], dtype=float).ravel()
    t = np.asarray(params["scales"], dtype=float).ravel()
    if c.shape != t.shape or c.size == 0:
        raise ValueError(
            f"gaussian_mixture weights and scales must be non-empty and of equal length; "
            f"got {c.size} and {t.size}."
        )
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(t))):
        raise ValueError("gaussian_mixture weights and scales must be finite.")
    if np.any(c < 0) or not np.any(c > 0) or np.any(t <= 0):
        raise ValueError(
            "gaussian_mixture needs weights c_m >= 0 (not all zero) and scales t_m > 0."
        )

    def fn(z: np.ndarray) -> np.ndarray:
        out = np.zeros_like(z)
        for cm, tm in zip(c, t, strict=True):
            out += cm * np.exp(-tm * z)
        return out

    def deriv(z: np.ndarray) -> np.ndarray:
        out = np.zeros_like(z)
        for cm, tm in zip(c, t, strict=True):
            out -= cm * tm * np.exp(-tm * z)
        return out

    return KernelFamily("distance", fn, deriv, "gaussian_mixture", positive_definite=True)


def _linear() -> KernelFamily:
    return KernelFamily("inner", lambda u: u.copy(), np.ones_like, "linear")


def _cubic() -> KernelFamily:
    return KernelFamily("inner", lambda u: u**3, lambda u: 3.0 * u**2, "cubic")


def resolve_kernel(kernel: Any, kernel_params: dict[str, Any] | None = None) -> KernelFamily:
    """Turn the ``kernel`` parameter of `MetricKernelRidge` into a `KernelFamily`.

    Parameters
    ----------
    kernel : {"gaussian", "rbf", "gaussian_mixture", "linear", "cubic"} or (callable, callable)
        A name ("rbf" is "gaussian"), or a pair ``(phi, dphi)`` of vectorised callables
        defining the translation-invariant kernel ``phi(||x - x'||^2_Sigma)`` and the
        derivative ``phi'``.
    kernel_params : dict, default=None
        ``{"weights": c, "scales": t}`` for ``"gaussian_mixture"``; ignored otherwise.

    Returns
    -------
    KernelFamily
    """
    if isinstance(kernel, str):
        if kernel in ("gaussian", "rbf"):
            return _gaussian()
        if kernel == "gaussian_mixture":
            return _gaussian_mixture(dict(kernel_params or {}))
        if kernel == "linear":
            return _linear()
        if kernel == "cubic":
            return _cubic()
        names = (*DISTANCE_KERNELS, *INNER_PRODUCT_KERNELS)
        raise ValueError(f"Unknown kernel {kernel!r}; expected one of {names} or (phi, dphi).")
    if (
        isinstance(kernel, tuple | list)
        and len(kernel) == 2
        and callable(kernel[0])
        and callable(kernel[1])
    ):
        phi, dphi = kernel

        def fn(z: np.ndarray) -> np.ndarray:
            return np.asarray(phi(z), dtype=float)

        def deriv(z: np.ndarray) -> np.ndarray:
            return np.asarray(dphi(z), dtype=float)

        return KernelFamily("distance", fn, deriv, getattr(phi, "__name__", "callable"))
    raise TypeError(
        f"kernel must be a string or a pair (phi, dphi) of callables; got {type(kernel).__name__}."
    )


class Scratch:
    """Three n x n buffers that one factored objective reuses at every evaluation.

    A fresh n x n array per step costs page faults (glibc serves arrays this large with a new
    ``mmap``) and cold caches; with the buffers an evaluation of ``J_n`` and its gradient at
    n = 300 takes about a third less time. The `InnerSolution` computed with them holds views
    that the next evaluation overwrites.
    """

    def __init__(self, n: int) -> None:
        self.argument = np.empty((n, n))
        self.kernel = np.empty((n, n))
        self.system = np.empty((n, n))


def kernel_argument(
    X: np.ndarray,
    Y: np.ndarray | None,
    Sigma: np.ndarray,
    family: KernelFamily,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The matrix the profile is applied to: squared Sigma-distances or Sigma-inner products.

    ``Sigma`` is a full (p, p) matrix or, for diagonal metrics, a (p,) vector of its diagonal.
    With ``Y=None`` the result is exactly symmetric and, for distances, has a zero diagonal.
    ``out`` (n x n), used for the squared distances of a diagonal metric, receives the result.
    """
    symmetric = Y is None
    if symmetric and family.kind == "distance" and Sigma.ndim == 1 and np.all(Sigma >= 0):
        # Z Z^T is computed by a symmetric rank-k update: exactly symmetric, half the work.
        Z = X * np.sqrt(Sigma)
        D = np.matmul(Z, Z.T, out=out)
        D *= -2.0
        sq = -0.5 * np.diag(D)
        D += sq[:, None]
        D += sq[None, :]
        np.maximum(D, 0.0, out=D)
        np.fill_diagonal(D, 0.0)
        return D
    Y = X if Y is None else Y
    XS = X * Sigma if Sigma.ndim == 1 else X @ Sigma
    inner = XS @ Y.T
    if family.kind == "inner":
        return 0.5 * (inner + inner.T) if symmetric else inner
    sq_x = np.einsum("ij,ij->i", XS, X)
    if symmetric:
        D = sq_x[:, None] + sq_x[None, :] - 2.0 * inner
        D = 0.5 * (D + D.T)
        np.fill_diagonal(D, 0.0)
        return D
    YS = Y * Sigma if Sigma.ndim == 1 else Y @ Sigma
    sq_y = np.einsum("ij,ij->i", YS, Y)
    # |x|^2 + |y|^2 - 2 x.y cancels: for nearby rows of large norm it can come out negative
    # (e.g. -1e2 for rows of norm 1e9), and phi of a negative distance can be astronomically
    # large (exp(1e2)); a squared distance is >= 0.
    D = sq_x[:, None] + sq_y[None, :]
    D -= 2.0 * inner
    return np.maximum(D, 0.0, out=D)


def kernel_matrix(
    X: np.ndarray, Y: np.ndarray | None, Sigma: np.ndarray, family: KernelFamily
) -> np.ndarray:
    """Kernel matrix ``k_Sigma(X, Y)`` (``Y=None``: ``k_Sigma(X, X)``)."""
    return family.fn(kernel_argument(X, Y, Sigma, family))


@dataclass
class InnerSolution:
    """The inner kernel ridge problem solved at one ``Sigma``.

    Attributes
    ----------
    objective : float
        ``J_n(Sigma)``.
    dual_coef : ndarray of shape (n,)
        ``a``; it sums to zero.
    intercept : float
        ``gamma``.
    argument : ndarray of shape (n, n)
        Squared distances or inner products the kernel was computed from (for the gradient).
    kernel : ndarray of shape (n, n)
        The kernel matrix (for the gradient of kernels with a ``deriv_factor``).
    """

    objective: float
    dual_coef: np.ndarray
    intercept: float
    argument: np.ndarray
    kernel: np.ndarray


def centred(K: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``H K H`` with ``H = I - 11^T / n``, as a new array (or in ``out``), in two passes.

    ``H K H = K - m 1^T - 1 m^T + mean(m)`` with ``m`` the row means of the symmetric ``K``.
    """
    shift = K.mean(axis=1)
    shift -= 0.5 * shift.mean()
    Kc = np.subtract(K, shift[:, None], out=out)
    Kc -= shift[None, :]
    return Kc


def inner_solution(
    X: np.ndarray,
    y: np.ndarray,
    Sigma: np.ndarray,
    lam: float,
    family: KernelFamily,
    with_intercept: bool = True,
    weights: np.ndarray | None = None,
    scratch: Scratch | None = None,
) -> InnerSolution:
    """Solve the inner problem over ``(a, gamma)``: in closed form with a Cholesky factorization
    (squared loss), or by Newton's method (``family.loss == "logistic"``, `logistic_inner`).

    ``with_intercept=False`` skips the O(n^2) intercept of the squared loss (``nan``), which
    ``J_n`` and its gradient do not need.

    ``weights`` (positive, squared loss) give row i the weight w_i in the mean of squared
    residuals, ``(1 / W) sum_i w_i r_i^2`` with ``W = sum_i w_i``: the optimality conditions are
    ``(K + lam W diag(1 / w)) a + gamma 1 = y`` and ``1^T a = 0``, solved with one Cholesky
    factor; ``J_n = lam / 2 a^T y`` and the gradient in ``Sigma`` keep their unweighted form in
    ``a``. Integer weights give the solution of the rows repeated (each copy holds a_i / w_i).

    ``scratch`` holds the n x n arrays instead of new ones.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``K_c + n lam I`` is not numerically positive definite (only possible for inner-product
        kernels with enormous ``Sigma``).
    """
    n = X.shape[0]
    argument_out, kernel_out, system_out = (
        (None, None, None)
        if scratch is None
        else (scratch.argument, scratch.kernel, scratch.system)
    )
    A = kernel_argument(X, None, Sigma, family, argument_out)
    K = family.evaluate(A, kernel_out)
    if family.loss == "logistic":
        return InnerSolution(*logistic_inner(K, y, lam), A, K)
    if weights is not None:
        M = np.empty_like(K) if system_out is None else system_out
        np.copyto(M, K)
        M.flat[:: n + 1] += lam * weights.sum() / weights
        factor = cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
        u, v = cho_solve(factor, np.column_stack([y, np.ones(n)]), check_finite=False).T
        intercept = float(u.sum() / v.sum())
        a = u - intercept * v
        return InnerSolution(0.5 * lam * float(a @ y), a, intercept, A, K)
    Kc = centred(K, system_out)
    Kc.flat[:: n + 1] += n * lam
    yc = y - y.mean()
    factor = cho_factor(Kc, lower=True, overwrite_a=True, check_finite=False)
    a = cho_solve(factor, yc, check_finite=False)
    a -= a.mean()  # exact in exact arithmetic; removes round-off
    objective = 0.5 * lam * float(yc @ a)
    intercept = float(np.mean(y - K @ a)) if with_intercept else np.nan
    return InnerSolution(objective, a, intercept, A, K)


def objective(
    X: np.ndarray, y: np.ndarray, Sigma: np.ndarray, lam: float, family: KernelFamily
) -> float:
    """``J_n(Sigma)``, eq. (1.5) of Chen, Li, Liu and Ruan (2023)."""
    return inner_solution(X, y, Sigma, lam, family).objective


def _gradient_weights(
    sol: InnerSolution, family: KernelFamily, out: np.ndarray | None = None
) -> np.ndarray:
    """``W_ij = a_i a_j phi'(A_ij)``: the n x n weights every gradient formula contracts
    (written into ``out`` when given)."""
    a = sol.dual_coef
    if family.deriv_factor is not None:
        W = np.multiply(sol.kernel, (family.deriv_factor * a)[:, None], out=out)
    else:
        W = family.deriv(sol.argument)
        W *= a[:, None]
    W *= a[None, :]
    return W


def gradient(
    X: np.ndarray,
    sol: InnerSolution,
    lam: float,
    family: KernelFamily,
    diagonal: bool = False,
) -> np.ndarray:
    """Gradient of ``J_n`` at the ``Sigma`` where ``sol`` was computed.

    Returns a symmetric (p, p) matrix, or its diagonal (p,) when ``diagonal`` is true. Never forms
    an n x n x p x p array: O(n^2 p + n p^2) time, O(n^2) memory.
    """
    W = _gradient_weights(sol, family)
    WX = W @ X
    if family.kind == "inner":
        if diagonal:
            return -0.5 * lam * np.einsum("ik,ik->k", X, WX)
        G = X.T @ WX
        return -0.25 * lam * (G + G.T)
    row = W.sum(axis=1)
    if diagonal:
        return -lam * (row @ (X * X) - np.einsum("ik,ik->k", X, WX))
    G = (X * row[:, None]).T @ X - X.T @ WX
    return -0.5 * lam * (G + G.T)


def project(
    S: np.ndarray, upper: float = np.inf
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Euclidean projection onto ``{Sigma PSD, ||Sigma||_op <= upper}`` (or onto the box).

    Parameters
    ----------
    S : ndarray of shape (p, p) or (p,)
        A symmetric matrix, or the diagonal of a diagonal matrix.
    upper : float, default=inf
        Upper bound on the eigenvalues.

    Returns
    -------
    Sigma : ndarray
        The projection, exactly symmetric: ``(V * D) @ V.T``.
    eigenvalues : ndarray of shape (p,)
        Clipped eigenvalues (diagonal entries for a vector input), ascending for matrices.
    eigenvectors : ndarray of shape (p, p) or None
        Orthonormal eigenvectors (``None`` for a vector input).

    Notes
    -----
    Eigenvalues within the eigensolver's round-off, ``p * eps * max |eigenvalue|``, count as zero:
    re-decomposing an exactly rank-r matrix (e.g. a warm start) returns its zero eigenvalues as
    +-1e-18 noise, which must neither raise the rank nor enter the column space of ``Sigma``.
    """
    if S.ndim == 1:
        d = np.clip(S, 0.0, upper)
        return d, d, None
    D, V = eigh(0.5 * (S + S.T))
    D[D <= D.size * np.finfo(D.dtype).eps * np.abs(D).max(initial=0.0)] = 0.0
    D = np.clip(D, 0.0, upper)
    Sigma = (V * D) @ V.T
    Sigma = 0.5 * (Sigma + Sigma.T)
    return Sigma, D, V


def projected_gradient_sq_norm(
    G: np.ndarray, eigenvalues: np.ndarray, eigenvectors: np.ndarray | None
) -> float:
    """``||U U^T G U U^T||_F^2`` with ``U`` an orthonormal basis of the current ``col(Sigma)``."""
    support = eigenvalues > 0
    if eigenvectors is None:
        return float(np.sum(G[support] ** 2))
    U = eigenvectors[:, support]
    return float(np.sum((U.T @ G @ U) ** 2))


@dataclass
class DescentResult:
    """Outcome of `projected_gradient_descent`.

    Attributes
    ----------
    Sigma : ndarray
        Final iterate ((p, p), or (p,) for diagonal metrics).
    eigenvalues : ndarray of shape (p,)
        Its eigenvalues as left by the last projection (ascending), or its diagonal.
    eigenvectors : ndarray of shape (p, p) or None
        Matching orthonormal eigenvectors (``None`` for diagonal metrics).
    solution : InnerSolution
        The inner problem solved at ``Sigma`` on all rows (also after mini-batch descent).
    n_iter : int
        Accepted gradient steps.
    objective_history : ndarray of shape (n_iter + 1,)
        ``J_n`` at the start and after every accepted step. With mini-batches: ``J`` on the batch
        of each step (the first entry on the first batch), so it is not monotone.
    converged : bool
        Whether the stopping rule was met (or the line search found no decrease above
        ``eta = min_step``, i.e. a numerically stationary point of the current batch).
    stop_reason : str
        ``"tol"``, ``"line_search"`` or ``"max_iter"``.
    kkt_residual : float
        `kkt_residual` at ``Sigma`` on all rows.
    """

    Sigma: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray | None
    solution: InnerSolution
    n_iter: int
    objective_history: np.ndarray
    converged: bool
    stop_reason: str
    kkt_residual: float = np.nan


def _try_solution(
    *args: Any, with_intercept: bool = True, **kwargs: Any
) -> InnerSolution | None:
    """``inner_solution(*args, with_intercept=with_intercept, **kwargs)``, or ``None`` when the
    kernel system is numerically singular / not finite."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            sol = inner_solution(*args, with_intercept=with_intercept, **kwargs)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.isfinite(sol.objective) or (with_intercept and not np.isfinite(sol.intercept)):
        return None
    return sol


def _solution_or_raise(
    X: np.ndarray,
    y: np.ndarray,
    Sigma: np.ndarray,
    lam: float,
    family: KernelFamily,
    weights: np.ndarray | None = None,
) -> InnerSolution:
    """`inner_solution` at a ``Sigma`` the descent must be able to evaluate (start or new batch)."""
    sol = _try_solution(X, y, Sigma, lam, family, weights=weights)
    if sol is None:
        raise ValueError(
            "J_n cannot be evaluated at the current Sigma: "
            + _failure_cause(X, y, Sigma, lam, family)
        )
    return sol


def _failure_cause(
    X: np.ndarray, y: np.ndarray, Sigma: np.ndarray, lam: float, family: KernelFamily
) -> str:
    """Why `inner_solution` failed: kernel overflow, lam too small, y too large, not PSD."""
    n = X.shape[0]
    with np.errstate(all="ignore"):
        K = kernel_matrix(X, None, Sigma, family)
        spread = float(np.max(np.abs(y - y.mean()), initial=0.0))
    if not np.all(np.isfinite(K)):
        return (
            "the kernel matrix overflows (NaN or infinity); rescale X (e.g. StandardScaler) "
            "or choose a smaller init."
        )
    kernel_scale = float(np.max(np.abs(K), initial=0.0))
    if n * lam <= n * np.finfo(float).eps * kernel_scale:
        return (
            f"K_c + n lam I is numerically singular: lam={lam:.3g} is too small next to the "
            f"kernel's scale (n lam = {n * lam:.3g}, max |K| = {kernel_scale:.3g}; the centred "
            "kernel K_c is singular); increase lam."
        )
    if not np.isfinite(spread**2 / (n * lam)):
        return (
            f"J_n overflows float64 for targets of this magnitude (max |y - mean(y)| = "
            f"{spread:.3g}, lam={lam:.3g}); rescale y (e.g. divide it by its standard "
            "deviation)."
        )
    return (
        "K_c + n lam I is not positive definite: the kernel is not positive semidefinite "
        "(check a callable (phi, dphi) kernel), or rescale X or choose a smaller init."
    )


def _rows(
    X: np.ndarray, y: np.ndarray, batch: Callable[[], np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray]:
    """All rows (``batch=None``) or the rows of the next mini-batch."""
    if batch is None:
        return X, y
    idx = batch()
    return X[idx], y[idx]


def projected_gradient_descent(
    X: np.ndarray,
    y: np.ndarray,
    Sigma0: np.ndarray,
    lam: float,
    family: KernelFamily,
    *,
    lr: float = 0.1,
    armijo_c: float = 1e-3,
    beta: float = 0.5,
    tol: float = 1e-3,
    max_iter: int = 2000,
    upper: float = np.inf,
    min_step: float = 1e-15,
    batch: Callable[[], np.ndarray] | None = None,
    window: int = 1,
    progress: Callable[[float], None] | None = None,
    weights: np.ndarray | None = None,
) -> DescentResult:
    """Minimize ``J_n`` over the PSD cone by projected gradient descent with Armijo backtracking.

    Every iteration starts at ``eta = lr`` and multiplies it by ``beta`` until
    ``J(P(Sigma - eta G)) <= J(Sigma) - armijo_c * eta * ||G_p||_F^2`` with ``G_p`` the gradient
    compressed to the current column space of ``Sigma`` (Chen, Li, Liu and Ruan 2023, Section 7.1).
    Stops when ``||Sigma_t - Sigma_{t-w}||_F / (eta_{t-w+1} + ... + eta_t) < tol`` with
    ``w = window`` (``w = 1``: the paper's ``||Sigma+ - Sigma||_F / eta < tol``), when no step above
    ``min_step`` decreases ``J``, or after ``max_iter`` steps. A ``(p,)`` ``Sigma0`` means a
    diagonal metric.

    ``batch``, when given, returns the row indices of a fresh mini-batch at every call: each
    iteration then computes ``J``, its gradient and the whole Armijo search on those rows only,
    and the returned `InnerSolution` is recomputed on all rows at the final ``Sigma``. A moving
    window ``w > 1`` averages the step over ``w`` iterations so that batch noise cancels in the
    stopping rule. ``progress``, when given, is called with ``J`` after every iteration.
    ``weights``: row weights of ``J_n`` (see `inner_solution`; not with ``batch``).
    """
    diagonal = Sigma0.ndim == 1
    Sigma, D, V = project(Sigma0, upper)
    Xb, yb = _rows(X, y, batch)
    sol = _solution_or_raise(Xb, yb, Sigma, lam, family, weights)
    history = [sol.objective]
    recent: deque[tuple[np.ndarray, float]] = deque(maxlen=window)
    stop_reason = "max_iter"
    n_iter = 0
    for _ in range(max_iter):
        if batch is not None and n_iter > 0:
            Xb, yb = _rows(X, y, batch)
            sol = _solution_or_raise(Xb, yb, Sigma, lam, family)
        G = gradient(Xb, sol, lam, family, diagonal=diagonal)
        decrease = armijo_c * projected_gradient_sq_norm(G, D, V)
        eta = lr
        while True:
            cand, cand_D, cand_V = project(Sigma - eta * G, upper)
            cand_sol = _try_solution(Xb, yb, cand, lam, family, weights=weights)
            if cand_sol is not None and cand_sol.objective <= sol.objective - eta * decrease:
                break
            eta *= beta
            if eta < min_step:
                cand_sol = None
                break
        if cand_sol is None:
            stop_reason = "line_search"
            break
        recent.append((Sigma, eta))
        Sigma, D, V, sol = cand, cand_D, cand_V, cand_sol
        history.append(sol.objective)
        n_iter += 1
        if progress is not None:
            progress(sol.objective)
        if len(recent) == window:
            step = float(np.linalg.norm(Sigma - recent[0][0])) / sum(e for _, e in recent)
            if step < tol:
                stop_reason = "tol"
                break
    if batch is not None:
        sol = _solution_or_raise(X, y, Sigma, lam, family)
    return _descent_result(X, (Sigma, D, V), sol, lam, family, history, stop_reason, upper)


def _descent_result(
    X: np.ndarray,
    metric: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    sol: InnerSolution,
    lam: float,
    family: KernelFamily,
    history: list[float],
    stop_reason: str,
    upper: float = np.inf,
) -> DescentResult:
    """The `DescentResult` of a finished descent, with the KKT residual at its last iterate."""
    Sigma, D, V = metric
    G = gradient(X, sol, lam, family, diagonal=Sigma.ndim == 1)
    return DescentResult(
        Sigma=Sigma,
        eigenvalues=D,
        eigenvectors=V,
        solution=sol,
        n_iter=len(history) - 1,
        objective_history=np.asarray(history),
        converged=stop_reason != "max_iter",
        stop_reason=stop_reason,
        kkt_residual=kkt_residual(G, Sigma, D, V, sol.objective, upper),
    )


def kkt_residual(
    G: np.ndarray,
    Sigma: np.ndarray,
    eigenvalues: np.ndarray,
    eigenvectors: np.ndarray | None,
    objective: float,
    upper: float = np.inf,
) -> float:
    """Violation of the first-order optimality conditions of ``min J_n`` over the feasible set.

    In the eigenbasis ``V`` of ``Sigma`` split the directions into those with eigenvalue 0
    (``N``), those at the bound ``upper`` (``B``) and the rest (``I``), and rotate the gradient,
    ``H = V^T G V``. ``Sigma`` is stationary iff every block of ``H`` but ``N x N`` and ``B x B``
    vanishes (no descent by moving the eigenvalues in ``I`` or rotating the eigenvectors),
    ``H_NN`` is positive semidefinite (no direction outside ``col(Sigma)`` must enter) and
    ``H_BB`` is negative semidefinite. The residual is the Frobenius norm of those violations
    (of the negative part of ``H_NN``, of the positive part of ``H_BB``), made scale free by
    the factor ``||Sigma||_F / J_n``: it does not change when ``y`` or ``X`` (with ``Sigma``
    inversely) is rescaled. For ``Sigma = 0`` or ``J_n = 0`` the unscaled norm is returned.
    For a diagonal metric (``G``, ``Sigma`` and ``eigenvalues`` of shape (p,)) the same
    conditions hold entrywise.

    Parameters
    ----------
    G : ndarray of shape (p, p) or (p,)
        Gradient of ``J_n`` at ``Sigma`` (its diagonal for diagonal metrics).
    Sigma : ndarray of shape (p, p) or (p,)
        The metric (or its diagonal).
    eigenvalues, eigenvectors : ndarray
        As returned by `project` for ``Sigma`` (exact zeros on the null space).
    objective : float
        ``J_n(Sigma)``.
    upper : float, default=inf
        Upper bound on the eigenvalues.

    Returns
    -------
    float
    """
    zero = eigenvalues <= 0
    at_bound = eigenvalues >= upper
    if eigenvectors is None:
        H = np.diag(G)
    else:
        H = eigenvectors.T @ G @ eigenvectors
        H = 0.5 * (H + H.T)
    free = np.ones_like(H, dtype=bool)
    violation = 0.0
    for block, sign in ((zero, -1.0), (at_bound, 1.0)):
        if np.any(block):
            free[np.ix_(block, block)] = False
            part = np.linalg.eigvalsh(H[np.ix_(block, block)])
            violation += float(np.sum(np.maximum(sign * part, 0.0) ** 2))
    violation += float(np.sum(H[free] ** 2))
    residual = np.sqrt(violation)
    scale = float(np.linalg.norm(Sigma))
    if scale > 0 and objective > 0:
        residual *= scale / objective
    return float(residual)


def _factor_of(eigenvalues: np.ndarray, eigenvectors: np.ndarray | None) -> np.ndarray:
    """``L`` with ``Sigma = L L^T`` on the support (diagonal metrics: ``l`` with ``l^2``)."""
    if eigenvectors is None:
        return np.sqrt(eigenvalues)
    support = eigenvalues > 0
    return eigenvectors[:, support] * np.sqrt(eigenvalues[support])


def _factored_objective(
    X: np.ndarray,
    y: np.ndarray,
    lam: float,
    family: KernelFamily,
    shape: tuple[int, ...],
    weights: np.ndarray | None = None,
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``J_n(L L^T)`` and its gradient ``2 G L`` in ``L`` (diagonal: ``J_n(l^2)``, ``2 g l``).

    The full case works in the learned coordinates ``Z = X L``: distances cost O(n^2 r) and the
    gradient ``-2 lam X^T ((diag(W 1) - W) Z)`` O(n^2 r + n p r), never a p x p matrix. Every
    evaluation reuses the same n x n buffers (`Scratch`).
    """
    scratch = Scratch(X.shape[0])

    def value_and_grad(flat: np.ndarray) -> tuple[float, np.ndarray]:
        L = flat.reshape(shape)
        if L.ndim == 1:
            sol = _try_solution(
                X, y, L * L, lam, family, with_intercept=False, weights=weights, scratch=scratch
            )
            if sol is None:
                return np.inf, np.zeros_like(flat)
            return sol.objective, 2.0 * gradient(X, sol, lam, family, diagonal=True) * L
        Z = X @ L
        sol = _try_solution(
            Z, y, np.ones(L.shape[1]), lam, family, with_intercept=False, weights=weights,
            scratch=scratch,
        )
        if sol is None:
            return np.inf, np.zeros_like(flat)
        W = _gradient_weights(sol, family, out=scratch.system)  # the factor is spent
        grad = -2.0 * lam * (X.T @ (Z * W.sum(axis=1)[:, None] - W @ Z))
        return sol.objective, grad.ravel()

    return value_and_grad


def _lbfgs_on_factor(
    X: np.ndarray,
    y: np.ndarray,
    L: np.ndarray,
    lam: float,
    family: KernelFamily,
    max_iter: int,
    tol: float,
    start_objective: float,
    progress: Callable[[float], None] | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, list[float]]:
    """L-BFGS on ``J_n(L L^T)`` from ``L``: the final factor and ``J_n`` after every iteration.

    The gradient in ``L`` is ``2 G L``: on an eigen-direction of ``Sigma`` with eigenvalue ``d``
    it is ``2 sqrt(d)`` times the gradient in ``Sigma``. L-BFGS therefore stops when its largest
    entry falls below ``0.5 tol J_n sqrt(d_min) / ||Sigma||_F``, where a KKT residual of ``tol``
    is in reach on every direction, at machine precision, or after ``max_iter`` iterations.
    Returns ``L`` unchanged and no iterations when L-BFGS did not decrease ``J_n``.
    """
    from scipy.optimize import minimize

    value_and_grad = _factored_objective(X, y, lam, family, L.shape, weights)
    last = {"value": start_objective}

    # L-BFGS-B measures progress against max(|J|, 1): hand it J / J(start), of order one.
    unit = max(abs(start_objective), np.finfo(float).tiny)

    def remember(flat: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = value_and_grad(flat)
        last["value"] = value
        return value / unit, grad / unit

    steps: list[float] = []

    def step(_x: np.ndarray) -> None:
        steps.append(last["value"])
        if progress is not None:
            progress(last["value"])

    lengths = np.abs(L) if L.ndim == 1 else np.linalg.norm(L, axis=0)
    size = float(np.linalg.norm(L * L if L.ndim == 1 else L.T @ L))
    gtol = 0.5 * tol * float(lengths.min()) / max(size, np.finfo(float).tiny)
    fit = minimize(
        remember,
        L.ravel(),
        jac=True,
        method="L-BFGS-B",
        callback=step,
        options={
            "maxiter": max(1, max_iter),
            "maxcor": 20,
            "gtol": gtol,
            "ftol": 10 * np.finfo(float).eps,
        },
    )
    if not fit.fun * unit < start_objective:
        return L, []
    return fit.x.reshape(L.shape), steps


def factored_descent(
    X: np.ndarray,
    y: np.ndarray,
    Sigma0: np.ndarray,
    lam: float,
    family: KernelFamily,
    *,
    tol: float = 1e-6,
    max_iter: int = 2000,
    lr: float = 0.1,
    armijo_c: float = 1e-3,
    beta: float = 0.5,
    max_rounds: int = 50,
    progress: Callable[[float], None] | None = None,
    weights: np.ndarray | None = None,
) -> DescentResult:
    """Minimize ``J_n`` over the PSD cone to a KKT residual of ``tol`` (distance kernels).

    Each round runs L-BFGS on a factor ``L`` (``Sigma = L L^T``, as many columns as the rank of
    the current ``Sigma``) and then takes one projected gradient step with Armijo backtracking
    (as `projected_gradient_descent`, from ``eta = lr``). L-BFGS converges fast on the smooth
    factored problem; the projected step sets the eigenvalues L-BFGS only drove towards zero
    exactly to zero and lets a direction with negative curvature of ``J_n`` enter. Rounds repeat
    until `kkt_residual` is at most ``tol``, ``max_iter`` L-BFGS iterations and projected steps
    are spent, or a round lowers ``J_n`` by less than 16 units in its last place (then ``J_n``
    is flat to rounding and the residual is as small as float64 resolves; on the paper's
    f = 0 data sets that happens near ``1e-6``). ``progress``, when given, is called with
    ``J_n`` after every L-BFGS iteration and projected step; ``weights`` are the rows' weights
    in ``J_n`` (see `inner_solution`).
    """
    diagonal = Sigma0.ndim == 1
    Sigma, D, V = project(Sigma0)
    sol = _solution_or_raise(X, y, Sigma, lam, family, weights)
    history = [sol.objective]
    n_iter, stop_reason = 0, "max_iter"
    G = gradient(X, sol, lam, family, diagonal=diagonal)
    residual = kkt_residual(G, Sigma, D, V, sol.objective)
    for _ in range(max_rounds):
        if residual <= tol:
            stop_reason = "tol"
            break
        if n_iter >= max_iter:
            break
        L = _factor_of(D, V)
        start_objective = sol.objective
        if L.size:
            L, steps = _lbfgs_on_factor(
                X, y, L, lam, family, max_iter - n_iter, tol, sol.objective, progress, weights
            )
            if steps:
                Sigma = L * L if diagonal else L @ L.T
                history.extend(steps)
                n_iter += len(steps)
        step = projected_gradient_descent(
            X, y, Sigma, lam, family, lr=lr, armijo_c=armijo_c, beta=beta, tol=0.0, max_iter=1,
            progress=progress, weights=weights,
        )
        Sigma, D, V, sol = step.Sigma, step.eigenvalues, step.eigenvectors, step.solution
        residual = step.kkt_residual  # at the step's iterate: the next round's test
        if step.n_iter:
            history.append(sol.objective)
            n_iter += 1
        if not sol.objective < start_objective - STALL_ULPS * np.spacing(abs(start_objective)):
            # J_n is flat to its rounding error: numerically stationary (first-order changes
            # of J_n at this residual are below what float64 resolves)
            stop_reason = "line_search"
            break
    return _descent_result(X, (Sigma, D, V), sol, lam, family, history, stop_reason)
