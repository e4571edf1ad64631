"""The Subquantile objective on a fixed kernel matrix: one object every solver works on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._losses import Loss
from ._trimming import subquantile


@dataclass(frozen=True)
class Evaluation:
    """Everything the solvers need to know about one model (w, b)."""

    F: np.ndarray  # outputs on the training rows, (n, C)
    Kw: np.ndarray  # K @ w, (n, C)
    losses: np.ndarray  # per-row losses, (n,)
    mask: np.ndarray  # rows in the subquantile S(f), (n,) bool
    threshold: float  # the k-th smallest loss
    objective: float  # sum of the losses over S(f) + alpha ||f||_H^2


@dataclass(frozen=True)
class Problem:
    """F(f) = sum_{i in S(f)} l_i(f) + alpha ||f||_H^2 with f = K w + b and ||f||_H^2 = w^T K w.

    ``Y`` is (n, C): regression targets, a {0, 1} column (binary) or one-hot rows (multiclass).
    """

    K: np.ndarray
    Y: np.ndarray
    loss: Loss
    alpha: float
    k: int
    fit_intercept: bool
    radius: float | None = None

    @property
    def n_samples(self) -> int:
        return self.K.shape[0]

    @property
    def n_outputs(self) -> int:
        return self.Y.shape[1]

    def evaluate(self, w: np.ndarray, b: np.ndarray, Kw: np.ndarray | None = None) -> Evaluation:
        """Outputs, losses, subquantile and objective of the model (w, b); pass K @ w if known."""
        if Kw is None:
            Kw = self.K @ w
        F = Kw + b
        losses = self.loss.loss(F, self.Y)
        mask, threshold = subquantile(losses, self.k)
        objective = float(losses[mask].sum() + self.alpha * np.sum(w * Kw))
        return Evaluation(F, Kw, losses, mask, threshold, objective)

    def subset_objective(self, w: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
        """The objective with the kept rows fixed to ``mask``."""
        Kw = self.K @ w
        losses = self.loss.loss(Kw + b, self.Y)
        return float(losses[mask].sum() + self.alpha * np.sum(w * Kw))

    def project(self, w: np.ndarray, Kw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project f onto the RKHS ball ||f||_H <= radius (scales w, never b)."""
        if self.radius is None:
            return w, Kw
        norm = float(np.sqrt(max(np.sum(w * Kw), 0.0)))
        if norm <= self.radius:
            return w, Kw
        scale = self.radius / norm
        return w * scale, Kw * scale
