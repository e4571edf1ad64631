"""Kernel matrices with scikit-learn's KernelRidge conventions, and their top eigenvalue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS, pairwise_kernels

KERNELS = (*sorted(PAIRWISE_KERNEL_FUNCTIONS), "precomputed")

KernelSpec = str | Callable[..., float]

NON_FINITE_KERNEL = "kernel matrix"
NON_FINITE_FEATURES = "kernel features"


def non_finite_error(what: str = NON_FINITE_KERNEL) -> ValueError:
    """The error of a kernel matrix (or block, or kernel features) holding NaN or infinity.

    X itself is checked finite by validation, so a non-finite value comes from the kernel: a
    callable kernel returning NaN, or a kernel overflowing on inputs of huge magnitude.
    """
    return ValueError(
        f"NaN or infinity in the {what}; check X and the kernel (a callable kernel must "
        "return finite values, and features of huge magnitude can overflow a kernel)."
    )


def check_finite(values: np.ndarray, what: str = NON_FINITE_KERNEL) -> None:
    """Raise :func:`non_finite_error` if ``values`` hold NaN or infinity."""
    if not np.all(np.isfinite(values)):
        raise non_finite_error(what)


# Kernel entries beyond this overflow the sums of products a fit forms (Cholesky, K @ w):
# features of order 1e50 and more under an unbounded kernel (linear, polynomial, sigmoid).
KERNEL_MAGNITUDE_LIMIT = 1e100


def check_fit_kernel(K: np.ndarray, X: Any, kernel: KernelSpec) -> None:
    """A fit's check of its kernel matrix: finite (:func:`check_finite`), and entries small
    enough for float64 sums of products (:data:`KERNEL_MAGNITUDE_LIMIT`). A named kernel that
    overflows or grows beyond the limit gets a message naming the feature scale."""
    with np.errstate(invalid="ignore"):
        # the larger of the extremes: no n x n temporary, as abs(K) would allocate
        largest = float(max(K.max(), -K.min())) if np.size(K) else 0.0
    named = isinstance(kernel, str) and kernel != "precomputed"
    if np.isfinite(largest) and largest <= KERNEL_MAGNITUDE_LIMIT:
        return
    if not named:
        check_finite(K)
        raise ValueError(
            f"The kernel matrix has entries of {largest:.1e}: sums of their products overflow "
            "float64; scale the kernel (or the features it is computed from)."
        )
    size = "beyond float64" if not np.isfinite(largest) else f"of {largest:.1e}"
    features = f"features up to {float(abs(X).max()):.1e} in magnitude"
    if kernel in ("rbf", "laplacian"):  # bounded: the distances (or their scale) overflowed
        raise ValueError(
            f"The {kernel} kernel matrix is not finite ({features}: their distances overflow "
            "float64). Scale the features (e.g. sklearn.preprocessing.StandardScaler or "
            "RobustScaler)."
        )
    raise ValueError(
        f"The {kernel} kernel matrix has entries {size} ({features}): sums of their products "
        "overflow float64. Scale the features (e.g. sklearn.preprocessing.StandardScaler or "
        "RobustScaler) or use a bounded kernel such as 'rbf'."
    )


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
    """Kernel matrix k(X, Y); for ``kernel="precomputed"`` X already is that matrix.

    Overflow is not warned about: callers check the result with :func:`check_finite`.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return pairwise_kernels(X, Y, metric=kernel, filter_params=True, **params)


def top_eigenvalue(K: np.ndarray | LinearOperator) -> float:
    """Largest eigenvalue of the PSD matrix or operator ``K``: dense for small n, else Lanczos."""
    if K.shape[0] <= 256:
        dense = K if isinstance(K, np.ndarray) else K @ np.eye(K.shape[0])
        return float(np.linalg.eigvalsh(dense)[-1])
    value = eigsh(K, k=1, which="LA", v0=np.ones(K.shape[0]), tol=1e-6, return_eigenvectors=False)
    return float(value[0])
