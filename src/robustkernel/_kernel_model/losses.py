"""Per-row losses of the Subquantile objective, written on the model outputs F (n x C)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp, softmax


def class_indices(Y: np.ndarray) -> np.ndarray:
    """Class index of every row of encoded labels: a {0, 1} column (binary) or one-hot rows."""
    return Y[:, 0].astype(int) if Y.shape[1] == 1 else np.argmax(Y, axis=1)


def predicted_classes(F: np.ndarray) -> np.ndarray:
    """Class index of every row of outputs F: logit > 0 for one column, else the largest."""
    return (F[:, 0] > 0).astype(int) if F.shape[1] == 1 else np.argmax(F, axis=1)


MAX_TARGET_RANGE = 1e100
"""Largest max |y| / median |y| a squared-loss fit accepts (squares and sums stay finite)."""


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

    def hessian_sum(self, F: np.ndarray) -> np.ndarray:
        """Sum over rows of the Hessian of l_i in F_i, shape (C, C)."""
        raise NotImplementedError

    def loss_and_gradient(self, F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``loss(F, Y)`` and ``gradient(F, Y)`` together (one pass where they share work)."""
        return self.loss(F, Y), self.gradient(F, Y)

    def target_scale(self, Y: np.ndarray) -> float:
        """The factor s a fit divides the targets by (and multiplies the model by): 1 here."""
        return 1.0

    def best_intercept(
        self, Kw: np.ndarray, Y: np.ndarray, b: np.ndarray, max_iter: int = 50
    ) -> np.ndarray:
        """argmin over b of sum_i l_i(Kw_i + b): damped Newton from ``b`` (one step if squared)."""
        value = self.loss(Kw + b, Y).sum()
        for _ in range(max_iter):
            F = Kw + b
            hessian = self.hessian_sum(F)
            step = np.linalg.lstsq(hessian, self.gradient(F, Y).sum(axis=0), rcond=1e-12)[0]
            shrink = 1.0
            while shrink > 1e-10:
                trial = b - shrink * step
                trial_value = self.loss(Kw + trial, Y).sum()
                if trial_value <= value:
                    break
                shrink *= 0.5
            else:
                return b
            b, value = trial, trial_value
            if np.max(np.abs(shrink * step)) <= 1e-12 * (1.0 + np.max(np.abs(b))):
                break
        return b


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """(f(x) - y)^2, summed over outputs."""

    name: str = "squared"
    curvature: float = 2.0

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum((F - Y) ** 2, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return 2.0 * (F - Y)

    def hessian_sum(self, F: np.ndarray) -> np.ndarray:
        return 2.0 * F.shape[0] * np.eye(F.shape[1])

    def target_scale(self, Y: np.ndarray) -> float:
        """A power of two s near the median |Y| (max |Y| if that is 0), so that Y / s ~ 1.

        A ridge fit of the squared loss is equivariant in the targets (fitting Y / s gives the
        model f / s, the same kept rows, losses / s^2), and dividing by a power of two is exact,
        so a fit on Y / s scaled back by s is the fit on Y, without squared residuals that
        overflow (|y| above ~1e154) or underflow (|y| below ~1e-154).

        Raises
        ------
        ValueError
            When max |Y| / s exceeds ``MAX_TARGET_RANGE``: squared losses of such targets
            would overflow whatever the scale.
        """
        magnitude = np.abs(Y)
        largest = float(magnitude.max(initial=0.0))
        typical = float(np.median(magnitude)) if magnitude.size else 0.0
        typical = typical if typical > 0.0 else largest
        if typical == 0.0:
            return 1.0
        scale = float(np.ldexp(1.0, int(np.frexp(typical)[1]) - 1))
        if largest / scale > MAX_TARGET_RANGE:
            raise ValueError(
                f"The regression targets span too wide a range for squared losses in float64: "
                f"max |y| / median |y| = {largest / typical:.3g} exceeds {MAX_TARGET_RANGE:.0e}; "
                "remove, clip or transform the extreme values of y."
            )
        return scale


@dataclass(frozen=True)
class BinaryLogLoss(Loss):
    """softplus(f) - y f, the binary cross-entropy on logits, y in {0, 1}."""

    name: str = "binary_log"
    curvature: float = 0.25

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum(np.logaddexp(0.0, F) - Y * F, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return expit(F) - Y

    def hessian_sum(self, F: np.ndarray) -> np.ndarray:
        p = expit(F)
        return np.atleast_2d(np.sum(p * (1.0 - p)))

    def loss_and_gradient(self, F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # softplus(f) = max(f, 0) + log1p(e^-|f|) and sigmoid(f) from the same e^-|f|
        e = np.exp(-np.abs(F))
        loss = np.sum(np.maximum(F, 0.0) + np.log1p(e) - Y * F, axis=1)
        p = np.where(F >= 0.0, 1.0, e) / (1.0 + e)
        return loss, p - Y


@dataclass(frozen=True)
class SoftmaxLoss(Loss):
    """logsumexp(f) - f[y], the softmax cross-entropy; Y is one-hot."""

    name: str = "softmax"
    curvature: float = 0.5

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return logsumexp(F, axis=1) - np.sum(F * Y, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return softmax(F, axis=1) - Y

    def hessian_sum(self, F: np.ndarray) -> np.ndarray:
        P = softmax(F, axis=1)
        return np.diag(P.sum(axis=0)) - P.T @ P

    def loss_and_gradient(self, F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # one exponential for both: logsumexp(f) = m + log(sum e^(f - m)), softmax = e^(f - m) / sum
        shifted = F - F.max(axis=1, keepdims=True)
        E = np.exp(shifted)
        total = E.sum(axis=1)
        loss = np.log(total) - np.sum(shifted * Y, axis=1)
        return loss, E / total[:, None] - Y
