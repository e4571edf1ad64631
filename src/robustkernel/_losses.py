"""Per-row losses of the Subquantile objective, written on the model outputs F (n x C)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp, softmax


@dataclass(frozen=True)
class Loss:
    """Base class: a loss l_i(F_i, Y_i) summed over the C output columns of row i.

    ``curvature`` bounds the second derivative of l_i along any unit direction of F_i; times the
    largest eigenvalue of the kernel matrix it gives the smoothness constant of the objective.
    """

    name: str = ""
    curvature: float = 0.0

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Per-row loss, shape (n,)."""
        raise NotImplementedError

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Derivative of each row's loss with respect to its outputs, shape (n, C)."""
        raise NotImplementedError


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """(f(x) - y)^2, summed over outputs."""

    name: str = "squared"
    curvature: float = 2.0

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum((F - Y) ** 2, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return 2.0 * (F - Y)


@dataclass(frozen=True)
class BinaryLogLoss(Loss):
    """softplus(f) - y f, the binary cross-entropy on logits, y in {0, 1}."""

    name: str = "binary_log"
    curvature: float = 0.25

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum(np.logaddexp(0.0, F) - Y * F, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return expit(F) - Y


@dataclass(frozen=True)
class SoftmaxLoss(Loss):
    """logsumexp(f) - f[y], the softmax cross-entropy; Y is one-hot."""

    name: str = "softmax"
    curvature: float = 0.5

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return logsumexp(F, axis=1) - np.sum(F * Y, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return softmax(F, axis=1) - Y
