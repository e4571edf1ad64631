"""Approximate kernel feature maps (Nystroem, random Fourier features) and chunked products.

The feature matrix Z (n x m) is the only O(n m) object of an approximate fit; every product with
it runs over blocks of rows (:func:`robustkernel._memory.row_chunks`), so temporaries stay at one
block whatever n is, and a float32 Z is promoted to float64 one block at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.utils import check_random_state

from ..._kernel_model.kernels import NON_FINITE_FEATURES, check_finite
from ..._memory import row_chunks
from ..._version_stamp import VersionStamped

APPROXIMATIONS = ("nystroem", "rff")


def chunked_product(Z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Z @ w in float64, block by block of rows of Z."""
    out = np.empty((Z.shape[0], w.shape[1]))
    for rows in row_chunks(*Z.shape):
        np.matmul(Z[rows], w, out=out[rows], dtype=np.float64)
    return out


def chunked_transpose_product(Z: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Z^T @ G in float64, summed block by block of rows of Z."""
    out = np.zeros((Z.shape[1], G.shape[1]))
    for rows in row_chunks(*Z.shape):
        out += np.matmul(Z[rows].T, G[rows], dtype=np.float64)
    return out


def fit_feature_map(
    approximation: str,
    n_components: int,
    kernel: Any,
    params: dict[str, Any],
    random_state: int | np.random.RandomState | None,
    X: np.ndarray,
) -> TransformerMixin:
    """A sklearn transformer fitted on X whose features satisfy z(x)^T z(x') ~ k(x, x').

    ``params`` are the keyword arguments of ``pairwise_kernels`` (see
    :func:`robustkernel._kernel_model.kernels.kernel_params`); for ``kernel="precomputed"`` X is
    the kernel matrix. More landmarks than rows are capped at the number of rows (Nystroem on
    every row represents the kernel exactly).
    """
    if approximation == "rff":
        if kernel != "rbf":
            raise ValueError(
                'approximation="rff" (random Fourier features) approximates kernel="rbf" '
                f'only, got kernel={kernel!r}; use approximation="nystroem".'
            )
        gamma = params["gamma"] if params["gamma"] is not None else 1.0 / X.shape[1]
        feature_map = RBFSampler(gamma=gamma, n_components=n_components, random_state=random_state)
    else:
        n_landmarks = min(n_components, X.shape[0])
        feature_map = _nystroem(n_landmarks, kernel, params, random_state)
    with np.errstate(over="ignore", invalid="ignore"):  # checked: transform_in_chunks
        return feature_map.fit(X)


def _nystroem(
    n_components: int, kernel: Any, params: dict[str, Any], random_state: Any
) -> TransformerMixin:
    """The unfitted Nystroem map of ``kernel`` (of a precomputed kernel matrix, a callable or a
    named kernel) with ``n_components`` landmarks."""
    if kernel == "precomputed":
        feature_map = PrecomputedNystroem(n_components=n_components, random_state=random_state)
    elif callable(kernel):
        feature_map = Nystroem(
            kernel=kernel,
            kernel_params=params,
            n_components=n_components,
            random_state=random_state,
        )
    else:
        feature_map = Nystroem(
            kernel=kernel, n_components=n_components, random_state=random_state, **params
        )
    return feature_map


def transform_in_chunks(feature_map: TransformerMixin, X: np.ndarray, dtype: Any) -> np.ndarray:
    """``feature_map.transform(X)`` built block by block of rows, stored in ``dtype``.

    Raises ValueError if the features hold NaN or infinity (e.g. a callable kernel).
    """
    n_components = feature_map.n_components
    Z = np.empty((X.shape[0], n_components), dtype=dtype)
    for rows in row_chunks(X.shape[0], max(n_components, X.shape[1])):
        with np.errstate(over="ignore", invalid="ignore"):
            Z[rows] = feature_map.transform(X[rows])
        check_finite(Z[rows], NON_FINITE_FEATURES)
    return Z


def predict_in_chunks(feature_map: TransformerMixin, X: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``feature_map.transform(X) @ coef`` block by block of rows, never holding all features.

    Raises ValueError if a block of features holds NaN or infinity (e.g. a callable kernel).
    """
    out = np.empty((X.shape[0], coef.shape[1]))
    for rows in row_chunks(X.shape[0], max(coef.shape[0], X.shape[1])):
        with np.errstate(over="ignore", invalid="ignore"):
            features = feature_map.transform(X[rows])
        check_finite(features, NON_FINITE_FEATURES)
        out[rows] = features @ coef
    return out


class PrecomputedNystroem(VersionStamped, TransformerMixin, BaseEstimator):
    """Nystroem features of a precomputed kernel.

    ``fit`` takes the n x n training kernel matrix and draws m landmark rows as
    :class:`sklearn.kernel_approximation.Nystroem` does; ``transform`` takes the kernel matrix
    between new rows and the n training rows and returns K[:, landmarks] K_LL^(-1/2).

    Parameters
    ----------
    n_components : int, default=100
        Number of landmarks m (at most n).
    random_state : int, RandomState instance or None, default=None
        Seed of the landmark draw.
    """

    def __init__(
        self, n_components: int = 100, random_state: int | np.random.RandomState | None = None
    ) -> None:
        self.n_components = n_components
        self.random_state = random_state

    def fit(self, K: np.ndarray, y: Any = None) -> PrecomputedNystroem:
        """Draw the landmarks and the inverse square root of their kernel matrix."""
        n = K.shape[0]
        landmarks = check_random_state(self.random_state).permutation(n)[: self.n_components]
        U, S, Vt = np.linalg.svd(K[np.ix_(landmarks, landmarks)])
        self.component_indices_ = landmarks
        self.normalization_ = (U / np.sqrt(np.clip(S, 1e-12, None))) @ Vt
        return self

    def transform(self, K: np.ndarray) -> np.ndarray:
        """Features of the rows of K (kernel values against the n training rows)."""
        return K[:, self.component_indices_] @ self.normalization_
