"""TERM: tilted empirical risk minimization (Li, Beirami, Sanjabi, Smith, ICLR 2021)."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.special import softmax
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from .._kernel_model.kernels import top_eigenvalue
from .._kernel_model.losses import Loss
from ._common import (
    KERNEL_CONSTRAINTS,
    KERNEL_PARAMETERS_DOC,
    KernelBaseline,
    KernelBaselineClassifier,
    KernelBaselineRegressor,
)


def tilted_weights(losses: np.ndarray, tilt: float) -> np.ndarray:
    """TERM's weights softmax(t l): exp(t l_i) / sum_j exp(t l_j), by log-sum-exp."""
    return softmax(tilt * losses)


def tilted_objective(losses: np.ndarray, tilt: float) -> float:
    """n times the tilted risk, (n / t) log((1 / n) sum_i exp(t l_i)); the sum of losses at t=0.

    Computed as n c + (n / t) log1p(mean(expm1(t (l - c)))) with c the loss that makes every
    t (l_i - c) <= 0 (the smallest loss for t < 0, the largest for t > 0): no overflow, and no
    cancellation as t -> 0, where ``logsumexp(t l) - log(n)`` divided by t would lose every digit.
    """
    n = losses.shape[0]
    if tilt == 0:
        return float(losses.sum())
    c = float(losses.min() if tilt < 0 else losses.max())
    return float(n * c + n / tilt * np.log1p(np.mean(np.expm1(tilt * (losses - c)))))


class _BaseTilted(KernelBaseline):
    _fit_memory_matrices = 3  # K and K + 1 for the step size (measured 2.0 n^2)
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **KERNEL_CONSTRAINTS,
        "tilt": [Real, None],
        "learning_rate": [Interval(Real, 0.0, None, closed="neither"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, None, closed="left")],
    }

    _default_tilt: ClassVar[float]


    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> _BaseTilted:
        """Fit by full-batch functional gradient descent on the tilted objective.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, or the n x n kernel matrix for kernel="precomputed".
        y : array-like of shape (n_samples,)
            Targets (regressor) or class labels (classifier).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, K, Y, loss = self._prepare(X, y)
        self.tilt_ = float(self._default_tilt if self.tilt is None else self.tilt)
        w, b = self._descend(K, Y, loss)
        self._set_dual_model(X, w, b)
        return self

    def _objective(self, loss: Loss, F: np.ndarray, Y: np.ndarray, w, Kw) -> tuple:
        losses = loss.loss(F, Y)
        value = tilted_objective(losses, self.tilt_) + self.alpha * float(np.sum(w * Kw))
        return value, losses

    def _descend(self, K: np.ndarray, Y: np.ndarray, loss: Loss) -> tuple[np.ndarray, np.ndarray]:
        n, C = Y.shape
        alpha, t = float(self.alpha), self.tilt_
        # Smoothness of the sum of losses in (w, b), functional metric: the intercept is a
        # constant feature, so it adds the all-ones matrix to K.
        lam = top_eigenvalue(K + 1.0 if self.fit_intercept else K)
        w, b = np.zeros((n, C)), np.zeros(C)
        Kw = np.zeros((n, C))
        value, losses = self._objective(loss, Kw + b, Y, w, Kw)
        history = [value]
        converged, n_iter = False, 0
        while n_iter < self.max_iter:
            n_iter += 1
            scaled = n * tilted_weights(losses, t)  # n softmax(t l): mean 1, all ones at t = 0
            G = scaled[:, None] * loss.gradient(Kw + b, Y)
            direction = G + 2.0 * alpha * w
            grad_b = G.sum(axis=0) if self.fit_intercept else np.zeros(C)
            K_direction = K @ direction
            slope = float(np.sum(direction * K_direction) + grad_b @ grad_b)
            if self.learning_rate is not None:
                step = float(self.learning_rate)
            else:
                step = 1.0 / (loss.curvature * max(scaled.max(), 1.0) * lam + 2.0 * alpha)
            # Armijo safeguard: the tilted weights move with f, so a step can overshoot.
            while True:
                new_w, new_Kw = w - step * direction, Kw - step * K_direction
                new_b = b - step * grad_b
                new_value, new_losses = self._objective(loss, new_Kw + new_b, Y, new_w, new_Kw)
                if new_value <= value - 1e-4 * step * slope or step < 1e-16:
                    break
                step *= 0.5
            change = abs(value - new_value)
            w, Kw, b, value, losses = new_w, new_Kw, new_b, new_value, new_losses
            history.append(value)
            if change <= self.tol * max(abs(value), 1e-300):
                converged = True
                break
        self.weights_ = tilted_weights(losses, t)
        self.outlier_scores_ = losses
        self.objective_history_ = np.asarray(history)
        self.n_iter_ = n_iter
        self.converged_ = converged
        return w, b


# The placeholders {summary}, {loss}, ... are filled by _fill (str.replace), so that the braces
# of the LaTeX need no doubling.
_DOC = r"""{summary}

    Li, Beirami, Sanjabi and Smith, "Tilted Empirical Risk Minimization", ICLR 2021, kernelised:
    the tilted risk with a negative tilt down-weights the rows of large loss, which makes the
    fit robust. Loss: {loss}.

    Defaults follow the authors' public code: full-batch gradient descent, 10,000 iterations,
    t = {tilt} ({tilt_source}). No ConvergenceWarning: the fixed iteration budget is the
    method.

    Parameters
    ----------
    tilt : float, default=None
        The tilt t; negative for robustness, 0 is ERM. None is {tilt}.
    {kernel_doc}
    learning_rate : float, default=None
        Fixed initial step (then backtracked); None uses the step :math:`1/L` of the Notes.
    max_iter : int, default=10000
        Gradient steps (the authors' budget).
    tol : float, default=1e-10
        Stop early when the relative change of J is at most tol.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Coefficients :math:`w` of :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b`.
    intercept_ : float or ndarray of shape (n_classes,)
        The intercept b.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training data.
    tilt_ : float
        The tilt used.
    weights_ : ndarray of shape (n_samples,)
        Final tilted weights :math:`q(t) = \operatorname{softmax}(t \ell)` (sum to 1).
    outlier_scores_ : ndarray of shape (n_samples,)
        Final per-row training losses.
    objective_history_ : ndarray of shape (``n_iter_`` + 1,)
        J from f = 0 on.
    n_iter_ : int
        Gradient steps taken.
    converged_ : bool
        Whether ``tol`` stopped the descent before ``max_iter``.{classes}

    Notes
    -----
    The tilted risk of the losses :math:`\ell_i(f)`,

    .. math::

        R_t(f) = \frac{1}{t} \log\Bigl(\frac{1}{n} \sum_{i=1}^n e^{t \ell_i(f)}\Bigr),

    interpolates between the average loss (:math:`t \to 0`), the maximum
    (:math:`t \to +\infty`) and the minimum (:math:`t \to -\infty`); a negative tilt
    down-weights the rows with large loss. Its gradient is
    :math:`\sum_i q_i(t) \nabla \ell_i` with the tilted weights
    :math:`q(t) = \operatorname{softmax}(t \ell)` (computed with log-sum-exp), and the paper's
    batch TERM (Algorithm 1) is gradient descent with those weights. Kernelised here, with
    :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b` (:math:`\kappa` the kernel), the objective is

    .. math::

        J(f) = \frac{n}{t} \log\Bigl(\frac{1}{n} \sum_{i=1}^n e^{t \ell_i(f)}\Bigr)
        + \alpha \|f\|_{\mathcal{H}}^2,

    :math:`n` times the tilted risk, so that :math:`t \to 0` is exactly the ridge ERM of this
    library (``Subquantile...(epsilon=0)``). Full-batch functional gradient descent from
    :math:`f = 0`, in coefficients:

    .. math::

        w \leftarrow w - \eta \bigl(n\, q(t) \circ \ell' + 2 \alpha w\bigr), \qquad
        b \leftarrow b - \eta \sum_{i=1}^n n\, q_i(t)\, \ell'_i .

    The authors' learning rate 0.1 is for a linear model with averaged loss and has no direct
    meaning for dual kernel coefficients, so the default step is :math:`\eta = 1/L` with

    .. math::

        L = c \, \max_i \bigl(n\, q_i(t)\bigr)
        \, \lambda_{\max}\bigl(K + \mathbf{1}\mathbf{1}^\top\bigr) + 2 \alpha

    (:math:`c` the loss curvature; the ones for the intercept), re-evaluated every iteration,
    with Armijo backtracking as a safeguard (the objective never increases).
{examples}"""


def _fill(template: str, **fields: str) -> str:
    """``template`` with every ``{name}`` of ``fields`` replaced by its value."""
    for name, value in fields.items():
        template = template.replace("{" + name + "}", value)
    return template


class TiltedKernelRegressor(KernelBaselineRegressor, _BaseTilted):
    _default_tilt = -2.0
    __doc__ = _fill(
        _DOC,
        summary="TERM kernel ridge regression: squared loss under a negative tilt.",
        loss=r":math:`\ell_i(f) = (f(x_i) - y_i)^2`",
        tilt="-2",
        tilt_source="their robust regression",
        kernel_doc=KERNEL_PARAMETERS_DOC,
        classes="",
        examples="""
    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.baselines import TiltedKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(100, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    >>> y[:10] += 10.0  # 10% of the targets corrupted
    >>> model = TiltedKernelRegressor(alpha=0.1).fit(X, y)  # tilt t = -2
    >>> bool(model.weights_[:10].max() < 1e-6)  # the corrupted rows weigh nothing
    True
    >>> bool(model.score(X[10:], y[10:]) > 0.95)
    True
""",
    )
    def __init__(
        self,
        tilt: float | None = None,
        *,
        alpha: float = 1.0,
        kernel: str | Any = 'rbf',
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        fit_intercept: bool = True,
        learning_rate: float | None = None,
        max_iter: int = 10000,
        tol: float = 1e-10,
    ) -> None:
        self.tilt = tilt
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.fit_intercept = fit_intercept
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol



class TiltedKernelClassifier(KernelBaselineClassifier, _BaseTilted):
    _default_tilt = -0.1
    __doc__ = _fill(
        _DOC,
        summary="TERM kernel logistic (binary) / softmax (multiclass) classification.",
        loss="the binary cross-entropy on logits (two classes) or the softmax cross-entropy",
        tilt="-0.1",
        tilt_source=(
            "their robust classification under label noise,\n    which anneals t from 0 to "
            "-0.1 over training; we keep -0.1 throughout. At the regression tilt\n    t = -2 "
            "the tilted logistic risk is lowest for one class predicted with infinite\n    "
            "confidence"
        ),
        kernel_doc=KERNEL_PARAMETERS_DOC,
        classes="\n    classes_ : ndarray of shape (n_classes,)\n        Class labels.",
        examples="""
    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from robustkernel.baselines import TiltedKernelClassifier
    >>> X, y = make_moons(200, noise=0.1, random_state=0)
    >>> y_noisy = y.copy()
    >>> y_noisy[:20] = 1 - y_noisy[:20]  # 10% of the labels flipped
    >>> model = TiltedKernelClassifier(gamma=2.0).fit(X, y_noisy)  # tilt t = -0.1
    >>> bool(model.weights_[:20].mean() < model.weights_[20:].mean())
    True
    >>> bool(model.score(X, y) > 0.9)  # accuracy on the true labels
    True
""",
    )
    def __init__(
        self,
        tilt: float | None = None,
        *,
        alpha: float = 1.0,
        kernel: str | Any = 'rbf',
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        fit_intercept: bool = True,
        learning_rate: float | None = None,
        max_iter: int = 10000,
        tol: float = 1e-10,
    ) -> None:
        self.tilt = tilt
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.fit_intercept = fit_intercept
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol

