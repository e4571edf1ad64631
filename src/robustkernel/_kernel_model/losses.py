"""Per-row losses of the Subquantile objective, written on the model outputs F (n x C)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logsumexp, softmax

from .pairwise import ovr_decision, pair_signs


def class_indices(Y: np.ndarray) -> np.ndarray:
    """Class index of every row of encoded labels: a {0, 1} column (binary) or one-hot rows."""
    return Y[:, 0].astype(int) if Y.shape[1] == 1 else np.argmax(Y, axis=1)


def predicted_classes(F: np.ndarray) -> np.ndarray:
    """Class index of every row of outputs F: logit > 0 for one column, else the largest."""
    return (F[:, 0] > 0).astype(int) if F.shape[1] == 1 else np.argmax(F, axis=1)


def class_probabilities(F: np.ndarray) -> np.ndarray:
    """Class probabilities (n, K) of outputs F: the sigmoid of one logit column (two classes,
    [1 - p, p]) or the softmax of K."""
    if F.shape[1] == 1:
        positive = expit(F[:, 0])
        return np.column_stack([1.0 - positive, positive])
    return softmax(F, axis=1)


MAX_TARGET_RANGE = 1e100
"""Largest max |y| / median |y| a squared-loss fit accepts (squares and sums stay finite)."""


def power_of_two_below(values: float | np.ndarray) -> float | np.ndarray:
    """The largest power of two at most each positive value (1 for 0): dividing by it is exact,
    and brings values of any magnitude to [1, 2) (target scales, weights of any magnitude)."""
    values = np.asarray(values, dtype=float)
    powers = np.where(values > 0, np.ldexp(1.0, np.frexp(values)[1] - 1), 1.0)
    return float(powers) if powers.ndim == 0 else powers


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

    def n_outputs(self, Y: np.ndarray) -> int:
        """The number of model outputs (columns of F) for the encoded targets ``Y``."""
        return Y.shape[1]

    def predicted_classes(self, F: np.ndarray) -> np.ndarray:
        """Class index of every row of outputs F (classification losses)."""
        return predicted_classes(F)

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
        scale = power_of_two_below(typical)
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


@dataclass(frozen=True, eq=False)
class ForwardCorrectedLoss(Loss):
    """The log loss of the *given* labels under a model of the *true* ones (Patrini et al.
    2017, forward correction): -log (T^T p)_y, p the class probabilities of F (a sigmoid for one
    logit column, else a softmax) and T[i, j] the probability that a row of true class i is
    given label j (rows sum to 1). The model's outputs then estimate the true classes: with
    T = I it is the plain log loss. ``curvature`` is the log loss's (T mixes probabilities;
    the fits that use this loss are L-BFGS's, which need no bound)."""

    name: str = "forward_log"
    curvature: float = 0.5
    transition: np.ndarray = field(default_factory=lambda: np.eye(2))

    def _given_probabilities(self, F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, ...]:
        """p (n, K), the given labels' columns of T (n, K) and (T^T p)_y (n,)."""
        P = class_probabilities(F)
        columns = self.transition[:, class_indices(Y)].T
        return P, columns, np.maximum(np.sum(P * columns, axis=1), np.finfo(float).tiny)

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return -np.log(self._given_probabilities(F, Y)[2])

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return self.loss_and_gradient(F, Y)[1]

    def loss_and_gradient(self, F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        P, columns, given = self._given_probabilities(F, Y)
        dP = -columns / given[:, None]  # d/dp of -log sum_j p_j T[j, y]
        if F.shape[1] == 1:  # p = (1 - s, s), ds/df = s (1 - s)
            return -np.log(given), (P[:, :1] * P[:, 1:]) * (dP[:, 1:] - dP[:, :1])
        return -np.log(given), P * (dP - np.sum(P * dP, axis=1, keepdims=True))


@dataclass(frozen=True)
class HingeLoss(Loss):
    """The hinge loss max(0, 1 - s f) (``squared``: its square) of a support vector machine
    per pair of classes, one-vs-one as libsvm: F has one column per pair (a, b), a < b
    (:mod:`.pairwise`), s = +1 for rows of class b, -1 for rows of class a; a row's loss sums
    over the K - 1 pairs of its class. Y is encoded as for the log losses ({0, 1} column or
    one-hot rows). The hinge loss has no gradient where s f = 1: ``gradient`` is a subgradient,
    and only the subset fitters that solve it exactly (libsvm) fit it; the squared
    hinge is smooth (curvature 2)."""

    name: str = "hinge"
    squared: bool = False

    @classmethod
    def named(cls, name: str) -> HingeLoss:
        """The loss of scikit-learn's name: "hinge" or "squared_hinge"."""
        squared = name == "squared_hinge"
        return cls(name=name, curvature=2.0 if squared else 0.0, squared=squared)

    def n_outputs(self, Y: np.ndarray) -> int:
        K = max(Y.shape[1], 2)
        return K * (K - 1) // 2

    def _margins(self, F: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """max(0, 1 - s f) per pair (0 for pairs the row is not in), and the signs s."""
        signs = pair_signs(class_indices(Y), max(Y.shape[1], 2))
        return np.maximum(0.0, 1.0 - signs * F) * (signs != 0), signs

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        margins = self._margins(F, Y)[0]
        return np.sum(margins**2 if self.squared else margins, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        margins, signs = self._margins(F, Y)
        return -2.0 * signs * margins if self.squared else -signs * (margins > 0)

    def predicted_classes(self, F: np.ndarray) -> np.ndarray:
        return np.argmax(ovr_decision(F), axis=1)


@dataclass(frozen=True)
class Link:
    """A link omega of the generalized linear model y ~ omega(f(x)), with its derivatives.

    ``second`` (omega'') may be None: it is then taken by central differences of ``derivative``
    where a smoothness bound needs it. ``low`` and ``high`` bound the targets the link can reach
    (omega's range, closed: a proportion may be 0 or 1); a link given as functions has none.
    """

    name: str
    inverse: Callable[[np.ndarray], np.ndarray]
    derivative: Callable[[np.ndarray], np.ndarray]
    second: Callable[[np.ndarray], np.ndarray] | None = None
    low: float = -np.inf
    high: float = np.inf

    def second_derivative(self, F: np.ndarray) -> np.ndarray:
        if self.second is not None:
            return self.second(F)
        step = 1e-5 * (1.0 + np.abs(F))
        return (self.derivative(F + step) - self.derivative(F - step)) / (2.0 * step)


def _logistic_second(F: np.ndarray) -> np.ndarray:
    p = expit(F)
    return p * (1.0 - p) * (1.0 - 2.0 * p)


def _sigmoid_slope(F: np.ndarray) -> np.ndarray:
    p = expit(F)
    return p * (1.0 - p)


LINKS: dict[str, Link] = {
    "identity": Link("identity", lambda F: F, np.ones_like, np.zeros_like),
    "logistic": Link("logistic", expit, _sigmoid_slope, _logistic_second, low=0.0, high=1.0),
    "softplus": Link("softplus", lambda F: np.logaddexp(0.0, F), expit, _sigmoid_slope, low=0.0),
}
"""The named links: omega(f) = f, 1 / (1 + e^-f) (targets in (0, 1)), log(1 + e^f) (positive
targets)."""

# Outputs over which the smoothness bound of a link is taken: beyond |f| = 40 the named links
# are flat or linear to double precision, and a fit that reaches them has diverged anyway.
CURVATURE_GRID = np.linspace(-40.0, 40.0, 8001)


def _link_values(
    function: Callable[[np.ndarray], np.ndarray], F: np.ndarray, name: str
) -> np.ndarray:
    """``function(F)``, checked: a finite float array of F's shape (a link's functions must be
    vectorized); ValueError naming the link function otherwise."""
    with np.errstate(all="ignore"):
        try:
            values = np.asarray(function(F), dtype=float)
        except (TypeError, ValueError, ArithmeticError) as error:
            raise ValueError(f"link: {name}(F) failed on an array of outputs F: {error}") from error
    if values.shape != F.shape:
        raise ValueError(
            f"link: {name}(F) must return an array of F's shape {F.shape} (a vectorized "
            f"function), got shape {values.shape}."
        )
    if not np.all(np.isfinite(values)):
        bad = F[~np.isfinite(values)][0]
        raise ValueError(
            f"link: {name}(F) is not finite at F = {bad:g}; a link must be finite on the "
            f"outputs [{F.min():g}, {F.max():g}]."
        )
    return values


@dataclass(frozen=True)
class LinkSquaredLoss(Loss):
    """(omega(f(x)) - y)^2, summed over outputs: least squares through a link omega.

    The gradient in F is 2 (omega(F) - Y) omega'(F). ``hessian_sum`` is the Gauss-Newton part
    2 sum omega'(F)^2 (positive semidefinite; the intercept's Newton steps are line-searched).
    ``curvature`` must bound 2 (omega'^2 + abs(omega - y) abs(omega'')) over the outputs and the
    targets: :meth:`for_targets` computes it on ``CURVATURE_GRID`` for the targets' range.
    """

    name: str = "link_squared"
    link: Link = field(default_factory=lambda: LINKS["identity"])

    @classmethod
    def for_targets(cls, link: Link, Y: np.ndarray) -> LinkSquaredLoss:
        """The loss with its smoothness bound for targets ``Y`` (the gradient solvers' step).

        Raises
        ------
        ValueError
            If a target lies outside the link's range (no output reaches it), or if the link's
            functions do not return finite arrays of their argument's shape on the outputs
            ``CURVATURE_GRID`` (a link given as functions).
        """
        outside = (Y < link.low) | (Y > link.high)
        if outside.any():
            raise ValueError(
                f"y has values outside the range [{link.low:g}, {link.high:g}] of "
                f"link={link.name!r} (e.g. {float(Y[outside][0]):g}): no model output reaches "
                "them. Use the identity link, or transform the targets into the link's range."
            )
        grid = CURVATURE_GRID
        omega, slope = _link_values(link.inverse, grid, "omega"), _link_values(
            link.derivative, grid, "omega'"
        )
        second = _link_values(link.second_derivative, grid, "omega''")
        reach = np.maximum(np.abs(omega - Y.min()), np.abs(omega - Y.max()))
        bound = 2.0 * np.max(slope**2 + reach * np.abs(second))
        if not np.isfinite(bound):
            raise ValueError(
                f"link={link.name!r}: the smoothness bound of the loss over the targets' range "
                "overflows; scale the targets."
            )
        return cls(curvature=float(bound), link=link)

    def loss(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum((self.link.inverse(F) - Y) ** 2, axis=1)

    def gradient(self, F: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return 2.0 * (self.link.inverse(F) - Y) * self.link.derivative(F)

    def hessian_sum(self, F: np.ndarray) -> np.ndarray:
        return np.diag(2.0 * np.sum(self.link.derivative(F) ** 2, axis=0))
