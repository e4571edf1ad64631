"""Kernel matrices with scikit-learn's KernelRidge conventions, and their top eigenvalue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS, pairwise_kernels

KERNELS = (*sorted(PAIRWISE_KERNEL_FUNCTIONS), "precomputed")

KernelSpec = str | Callable[..., float]


def kernel_params(
    kernel: KernelSpec,
    gamma: float | None,
    degree: float,
    coef0: float,
    kernel_params: dict[str, Any] | None,
) -> dict[str, Any]:
    """Keyword arguments for ``pairwise_kernels``, exactly as ``KernelRidge`` builds them."""
    if callable(kernel):
        return dict(kernel_params or {})
    return {"gamma": gamma, "degree": degree, "coef0": coef0}


def compute_kernel(
    X: np.ndarray,
    Y: np.ndarray | None,
    kernel: KernelSpec,
    params: dict[str, Any],
) -> np.ndarray:
    """Kernel matrix k(X, Y); for ``kernel="precomputed"`` X already is that matrix."""
    return pairwise_kernels(X, Y, metric=kernel, filter_params=True, **params)


def top_eigenvalue(K: np.ndarray, add_ones: bool = False) -> float:
    """Largest eigenvalue of the PSD matrix ``K`` (or of ``K + 1 1^T``).

    Dense ``eigvalsh`` for small matrices, a few Lanczos iterations otherwise. The rank-one term
    accounts for an unpenalized intercept in the smoothness constant of the gradient solvers.
    """
    n = K.shape[0]
    if n <= 256:
        M = K + 1.0 if add_ones else K
        return float(np.linalg.eigvalsh(M)[-1])

    def matvec(v: np.ndarray) -> np.ndarray:
        out = K @ v
        if add_ones:
            out = out + v.sum()
        return out

    op = LinearOperator((n, n), matvec=matvec, dtype=K.dtype)
    v0 = np.ones(n)
    value = eigsh(op, k=1, which="LA", v0=v0, tol=1e-6, return_eigenvectors=False)[0]
    return float(value)
