"""One-vs-one outputs of the hinge-loss classifier: class pairs, votes, calibrated probabilities.

A classifier of K classes fitted with the hinge loss has one output per pair of classes
(a, b), a < b, in libsvm's order (0, 1), (0, 2), ..., (0, K - 1), (1, 2), ...: a binary support
vector machine on the rows of the two classes, positive for b. Two classes have one output,
positive for the second class, as a logit is.

* :func:`ovr_decision`: the per-class decision of scikit-learn's ``SVC`` with
  ``decision_function_shape="ovr"``, the votes of the pairs plus their summed confidences
  squashed into (-1/3, 1/3), so that the confidences only break ties of votes;
* :class:`PairwisePlatt`: class probabilities, each pair's output mapped through Platt's
  sigmoid (fitted on out-of-fold outputs, Platt's smoothed targets) and the pairs coupled by the
  second method of Wu, Lin & Weng (JMLR 2004), which libsvm uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

# libsvm's clip of the pairwise probabilities before coupling (no pair is certain)
MIN_PAIR_PROBABILITY = 1e-7


def class_pairs(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The first and second class of every pair, in libsvm's order."""
    return np.triu_indices(n_classes, k=1)


def n_classes_of(n_pairs: int) -> int:
    """The number of classes K with K (K - 1) / 2 = ``n_pairs``."""
    return round((1.0 + np.sqrt(1.0 + 8.0 * n_pairs)) / 2.0)


def pair_signs(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """+1 where a row's label is the second class of the pair, -1 where the first, 0 where the
    row is in neither; shape (n_samples, n_pairs)."""
    first, second = class_pairs(n_classes)
    return (labels[:, None] == second).astype(float) - (labels[:, None] == first)


def ovr_decision(F: np.ndarray) -> np.ndarray:
    """Per-class decision (n_samples, K) of the pairwise outputs F: votes plus the summed
    confidences s scaled to s / (3 (|s| + 1)) (scikit-learn's ``SVC`` with
    ``decision_function_shape="ovr"``); its argmax is the predicted class."""
    K = n_classes_of(F.shape[1])
    first, second = class_pairs(K)
    votes = np.zeros((F.shape[0], K))
    confidence = np.zeros((F.shape[0], K))
    for pair, (a, b) in enumerate(zip(first, second, strict=True)):
        positive = F[:, pair] > 0
        votes[:, b] += positive
        votes[:, a] += ~positive
        confidence[:, b] += F[:, pair]
        confidence[:, a] -= F[:, pair]
    return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))


def _platt(f: np.ndarray, positive: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """Platt's (A, B), P(positive | f) = 1 / (1 + exp(A f + B)), by weighted cross-entropy
    against Platt's smoothed targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2)."""
    n_positive, n_negative = weights[positive].sum(), weights[~positive].sum()
    target = np.where(positive, (n_positive + 1.0) / (n_positive + 2.0), 1.0 / (n_negative + 2.0))
    scale = max(float(np.max(np.abs(f), initial=0.0)), 1.0)  # A found on f / scale

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        z = params[0] * f / scale + params[1]
        # -log P = softplus(z) for targets t, -log(1 - P) = softplus(-z) for 1 - t
        value = weights @ (target * np.logaddexp(0.0, z) + (1.0 - target) * np.logaddexp(0.0, -z))
        residual = weights * (expit(z) - (1.0 - target))
        return float(value), np.array([residual @ f / scale, residual.sum()])

    start = np.array([0.0, np.log((n_negative + 1.0) / (n_positive + 1.0))])
    solution = minimize(objective, start, jac=True, method="L-BFGS-B", options={"gtol": 1e-10})
    return float(solution.x[0] / scale), float(solution.x[1])


@dataclass(frozen=True)
class PairwisePlatt:
    """Platt's sigmoid of every pair's output, and the class probabilities they couple to.

    Attributes
    ----------
    A, B : ndarray of shape (n_pairs,)
        P(second class | pair, f) = 1 / (1 + exp(A f + B)); scikit-learn's ``SVC`` stores the
        same numbers (with its sign of f) as ``probA_`` and ``probB_``.
    """

    A: np.ndarray
    B: np.ndarray

    @classmethod
    def fit(cls, F: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> PairwisePlatt:
        """The sigmoids of out-of-fold outputs ``F`` (n_samples, n_pairs), each pair's fitted
        on the rows of positive weight labelled with one of its classes (a pair without such
        rows: 1/2 everywhere)."""
        K = n_classes_of(F.shape[1])
        A, B = np.zeros(F.shape[1]), np.zeros(F.shape[1])
        for pair, (a, b) in enumerate(zip(*class_pairs(K), strict=True)):
            rows = np.flatnonzero((weights > 0) & ((labels == a) | (labels == b)))
            if rows.size:
                A[pair], B[pair] = _platt(F[rows, pair], labels[rows] == b, weights[rows])
        return cls(A, B)

    def probabilities(self, F: np.ndarray) -> np.ndarray:
        """Class probabilities (n_samples, K) of the pairwise outputs F (rows sum to 1)."""
        R = expit(-(F * self.A + self.B))  # P(second class | pair)
        if F.shape[1] == 1:
            return np.column_stack([1.0 - R[:, 0], R[:, 0]])
        return coupled(R)


def coupled(R: np.ndarray) -> np.ndarray:
    """Class probabilities p from pairwise ones R[:, (a, b)] = P(b | a or b): the minimizer of
    sum_t sum_(s != t) (r_st p_t - r_ts p_s)^2 with sum p = 1 (Wu, Lin & Weng 2004, method 2:
    one (K + 1)-square linear system per row; its solution is non-negative)."""
    n = R.shape[0]
    K = n_classes_of(R.shape[1])
    first, second = class_pairs(K)
    R = np.clip(R, MIN_PAIR_PROBABILITY, 1.0 - MIN_PAIR_PROBABILITY)
    r = np.zeros((n, K, K))  # r[:, s, t] = P(s | s or t)
    r[:, second, first] = R
    r[:, first, second] = 1.0 - R
    system = np.zeros((n, K + 1, K + 1))
    system[:, :K, :K] = -r * np.swapaxes(r, 1, 2)
    diagonal = np.arange(K)
    system[:, diagonal, diagonal] = np.sum(r**2, axis=1)
    system[:, :K, K] = system[:, K, :K] = 1.0
    rhs = np.zeros((n, K + 1, 1))
    rhs[:, K] = 1.0
    p = np.clip(np.linalg.solve(system, rhs)[:, :K, 0], 0.0, None)
    return p / p.sum(axis=1, keepdims=True)
