"""The Subquantile objective on a fixed model space: one object every solver works on.

Two model spaces share the objective, the subquantile and the solvers:

* :class:`Problem` — the exact kernel model f = K w + b, ||f||_H^2 = w^T K w, with w the n dual
  coefficients;
* :class:`FeatureProblem` — an approximate kernel model f = Z theta + b, ||f||^2 = ||theta||^2,
  with Z the n x m matrix of Nystroem or random Fourier features.

The solvers only use the small interface below (``apply``, ``squared_norm``, ``backward``,
``metric``, ``top_eigenvalue``), so they never know which model space they work in.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.sparse.linalg import LinearOperator
from scipy.special import expit

from ..._kernel_model.kernels import top_eigenvalue
from ..._kernel_model.losses import Loss
from ...trimming import ClassFloors, subquantile, weighted_subquantile
from .features import chunked_product, chunked_transpose_product

Coefficients = tuple[np.ndarray, np.ndarray]
"""Dual coefficients (or feature weights) w of shape (n, C) and intercept b of shape (C,)."""


def smooth_weights(losses: np.ndarray, threshold: float, smoothing: float) -> np.ndarray:
    """Softplus-smoothed membership sigma(s (t - l_i)) of each row in the subquantile."""
    return expit(smoothing * (threshold - losses))


@dataclass(frozen=True)
class Evaluation:
    """Everything the solvers need to know about one model (w, b)."""

    F: np.ndarray  # outputs on the training rows, (n, C)
    Kw: np.ndarray  # outputs without the intercept, K @ w or Z @ theta, (n, C)
    losses: np.ndarray  # per-row losses, (n,)
    mask: np.ndarray  # rows in the subquantile S(f), (n,) bool
    threshold: float  # the k-th smallest loss (with sample weights: the largest kept loss)
    objective: float  # sum of the losses over S(f) + alpha ||f||^2
    weights: np.ndarray | None = None  # with sample weights: each row's weight in the fit

    @property
    def fit_rows(self) -> np.ndarray:
        """What a subset fitter takes: the kept rows (bool), or each row's weight (float)."""
        return self.mask if self.weights is None else self.weights


@dataclass(frozen=True)
class _Objective:
    """The objective and the subquantile, written on the model-space interface.

    ``Y`` is (n, C): regression targets, a {0, 1} column (binary) or one-hot rows (multiclass);
    k rows are kept (with ``sample_weight``: (1 - ``epsilon``) of the weight, the weighted
    subquantile); ``radius`` bounds ||f||, ``floors`` keep part of every class. The model
    space's matrix (``K`` or ``Z``) is a keyword-only field of the subclass.
    """

    Y: np.ndarray
    loss: Loss
    alpha: float
    k: int
    fit_intercept: bool
    radius: float | None = None
    floors: ClassFloors | None = None
    sample_weight: np.ndarray | None = None  # with it, the subquantile is weighted (epsilon)
    epsilon: float = 0.0

    @property
    def n_samples(self) -> int:
        return self.Y.shape[0]

    @property
    def n_outputs(self) -> int:
        """Columns of F: one per target column, or per pair of classes (hinge losses)."""
        return self.loss.n_outputs(self.Y)

    @property
    def n_coefficients(self) -> int:
        """Number of rows of the coefficient matrix w."""
        raise NotImplementedError

    def apply(self, w: np.ndarray) -> np.ndarray:
        """Outputs of the coefficients w on the training rows, without intercept, (n, C)."""
        raise NotImplementedError

    def squared_norm(self, w: np.ndarray, Kw: np.ndarray) -> float:
        """||f||^2 of the model with coefficients w and outputs ``Kw = apply(w)``."""
        raise NotImplementedError

    def backward(self, G: np.ndarray) -> np.ndarray:
        """Coefficients of the gradient in f of sum_i <G_i, f(x_i)>.

        G itself for dual coefficients (the RKHS gradient sum_i G_i k(x_i, .)), Z^T G for
        features; the gradient of the objective is ``backward(G) + 2 alpha w`` with G the
        derivative of the kept losses in the outputs.
        """
        raise NotImplementedError

    def metric(self, v: np.ndarray) -> np.ndarray:
        """Gram operator of the coefficients: <v, u>_H = sum(u * metric(v))."""
        raise NotImplementedError

    def top_eigenvalue(self) -> float:
        """Largest eigenvalue of the Gram operator of the outputs (K, or Z^T Z)."""
        raise NotImplementedError

    def evaluate(self, w: np.ndarray, b: np.ndarray, Kw: np.ndarray | None = None) -> Evaluation:
        """Outputs, losses, subquantile and objective of (w, b); pass ``apply(w)`` if known."""
        if Kw is None:
            Kw = self.apply(w)
        F = Kw + b
        losses = self.loss.loss(F, self.Y)
        penalty = self.alpha * self.squared_norm(w, Kw)
        if self.sample_weight is None:
            mask, threshold = subquantile(losses, self.k, self.floors)
            return Evaluation(F, Kw, losses, mask, threshold, float(losses[mask].sum() + penalty))
        weights = weighted_subquantile(losses, self.epsilon, self.sample_weight, self.floors)
        mask = weights > 0
        objective = float(losses[mask] @ weights[mask] + penalty)
        return Evaluation(F, Kw, losses, mask, float(losses[mask].max()), objective, weights)

    def subset_objective(self, w: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
        """The objective with the kept rows fixed to ``mask``."""
        Kw = self.apply(w)
        losses = self.loss.loss(Kw + b, self.Y)
        return float(losses[mask].sum() + self.alpha * self.squared_norm(w, Kw))

    def project(self, w: np.ndarray, Kw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project f onto the ball ||f|| <= radius (scales w, never b)."""
        if self.radius is None:
            return w, Kw
        norm = float(np.sqrt(max(self.squared_norm(w, Kw), 0.0)))
        if norm <= self.radius:
            return w, Kw
        scale = self.radius / norm
        return w * scale, Kw * scale


@dataclass(frozen=True)
class Problem(_Objective):
    """F(f) = sum_{i in S(f)} l_i(f) + alpha ||f||_H^2 with f = K w + b and ||f||_H^2 = w^T K w.

    The gradient in f is taken in the RKHS (functional gradient), so ``backward`` is the identity.
    ``K`` is an ndarray, or any n x n matrix object whose ``@`` takes and returns ndarrays and
    that SciPy accepts as a linear operator (the device kernel of ``torch_backend``).
    """

    K: np.ndarray = field(kw_only=True)

    @property
    def n_coefficients(self) -> int:
        return self.K.shape[0]

    def apply(self, w: np.ndarray) -> np.ndarray:
        return self.K @ w

    def squared_norm(self, w: np.ndarray, Kw: np.ndarray) -> float:
        return float(np.sum(w * Kw))

    def backward(self, G: np.ndarray) -> np.ndarray:
        return G

    def metric(self, v: np.ndarray) -> np.ndarray:
        return self.K @ v

    def top_eigenvalue(self) -> float:
        return top_eigenvalue(self.K)

    def restricted(self, rows: np.ndarray) -> Problem:
        """The objective on the given rows alone (all of them kept, no class floors)."""
        K = self.K[np.ix_(rows, rows)]
        return replace(self, K=K, Y=self.Y[rows], k=K.shape[0], floors=None, sample_weight=None)

    def predict_rows(self, rows: np.ndarray, fitted_rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Outputs K w (no intercept) at ``rows`` of a model on ``restricted(fitted_rows)``."""
        return self.K[np.ix_(rows, fitted_rows)] @ w


@dataclass(frozen=True)
class FeatureProblem(_Objective):
    """The objective on features: f = Z theta + b, ||f||^2 = ||theta||^2, Z of shape (n, m).

    Products with Z run over row chunks, so no temporary exceeds a chunk of rows even when Z is
    stored in float32.
    """

    Z: np.ndarray = field(kw_only=True)

    @property
    def n_coefficients(self) -> int:
        return self.Z.shape[1]

    def apply(self, w: np.ndarray) -> np.ndarray:
        return chunked_product(self.Z, w)

    def squared_norm(self, w: np.ndarray, Kw: np.ndarray) -> float:
        return float(np.sum(w * w))

    def backward(self, G: np.ndarray) -> np.ndarray:
        return chunked_transpose_product(self.Z, G)

    def metric(self, v: np.ndarray) -> np.ndarray:
        return v

    def top_eigenvalue(self) -> float:
        m = self.Z.shape[1]
        gram = LinearOperator(
            (m, m),
            matvec=lambda v: self.backward(self.apply(v.reshape(m, -1))).ravel(),
            matmat=lambda V: self.backward(self.apply(V)),
            dtype=np.float64,
        )
        return top_eigenvalue(gram)

    def restricted(self, rows: np.ndarray) -> FeatureProblem:
        """The objective on the given rows alone (all of them kept, no class floors)."""
        Z = self.Z[rows]
        return replace(self, Z=Z, Y=self.Y[rows], k=Z.shape[0], floors=None, sample_weight=None)

    def predict_rows(self, rows: np.ndarray, fitted_rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Outputs Z theta (no intercept) at ``rows`` of a model on the same features."""
        return chunked_product(self.Z[rows], w)
