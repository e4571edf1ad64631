"""SEVER (Diakonikolas, Kamath, Kane, Li, Steinhardt, Stewart, ICML 2019), kernelised."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.sparse.linalg import eigsh
from sklearn.base import _fit_context, is_classifier
from sklearn.utils._param_validation import Interval

from .._fractions import rows_in_fraction
from .._kernel_model.losses import class_indices
from ..subquantile import LbfgsSubsetFitter, Problem, RidgeSubsetFitter
from ._common import (
    KERNEL_CONSTRAINTS,
    KERNEL_PARAMETERS_DOC,
    KernelBaseline,
    KernelBaselineClassifier,
    KernelBaselineRegressor,
)


def sever_scores(K_grad: np.ndarray, G: np.ndarray) -> np.ndarray:
    """SEVER outlier scores of rows whose loss gradients are G_i (x) phi(x_i).

    The gradient of row i with respect to the model is the tensor product of its output
    gradient G_i (length C) and its feature vector phi(x_i), whose inner products are the kernel
    ``K_grad``. The Gram matrix of the centred gradients is M = H (K_grad o G G^T) H (H the
    centring matrix; for one output this is H D K D H with D = diag(G)). With (lambda, u) its top
    eigenpair, the projection of row i's centred gradient on the top right singular vector of the
    gradient matrix is sqrt(lambda) u_i, so the score is lambda u_i^2. No n x n SVD of explicit
    features is needed.
    """
    M = K_grad * (G @ G.T)
    M = M - M.mean(axis=0, keepdims=True)
    M = M - M.mean(axis=1, keepdims=True)
    M = 0.5 * (M + M.T)
    if M.shape[0] <= 256:
        values, vectors = np.linalg.eigh(M)
        value, vector = values[-1], vectors[:, -1]
    else:
        values, vectors = eigsh(M, k=1, which="LA", v0=np.ones(M.shape[0]), tol=1e-8)
        value, vector = values[0], vectors[:, 0]
    return max(float(value), 0.0) * vector**2


class _BaseSever(KernelBaseline):
    # K, K + 1 for the scores, the ridge fitter's factor and a kept-row refit (measured 6.0).
    _fit_memory_matrices = 7
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **KERNEL_CONSTRAINTS,
        "fraction": [Interval(Real, 0.0, 1.0, closed="left")],
        "n_rounds": [Interval(Integral, 0, None, closed="left")],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> _BaseSever:
        """Fit the base learner, filter by SEVER's scores ``n_rounds`` times, refit.

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
        n, C = Y.shape
        problem = Problem(
            K=K, Y=Y, loss=loss, alpha=float(self.alpha), k=n, fit_intercept=self.fit_intercept
        )
        fitter = (LbfgsSubsetFitter if is_classifier(self) else RidgeSubsetFitter)(problem)
        K_grad = K + 1.0 if self.fit_intercept else K  # the intercept's gradient coordinate
        groups = [Y[:, 0] >= -np.inf] if not is_classifier(self) else self._class_groups(Y)
        fraction = self._fraction()
        keep = np.ones(n, dtype=bool)
        removal_round = np.full(n, -1)
        scores = np.zeros(n)
        w, b = np.zeros((n, C)), np.zeros(C)
        for round_ in range(self.n_rounds + 1):
            w, b = fitter.fit(keep, w, b, problem.alpha)
            if round_ == self.n_rounds:
                break
            G = loss.gradient(K @ w + b, Y)
            for group in groups:
                rows = np.flatnonzero(keep & group)
                n_remove = min(rows_in_fraction(fraction, rows.size), rows.size - 1)
                if rows.size < 2 or n_remove <= 0:
                    continue
                group_scores = sever_scores(K_grad[np.ix_(rows, rows)], G[rows])
                scores[rows] = group_scores
                # Largest scores first; ties go to the lower row index.
                worst = rows[np.argsort(-group_scores, kind="stable")[:n_remove]]
                keep[worst] = False
                removal_round[worst] = round_
        self._set_dual_model(X, w, b)
        self.inlier_mask_ = keep
        self.removal_round_ = removal_round
        self.outlier_scores_ = scores
        self.n_iter_ = self.n_rounds
        return self

    @staticmethod
    def _class_groups(Y: np.ndarray) -> list[np.ndarray]:
        labels = class_indices(Y)
        return [labels == value for value in np.unique(labels)]


_ATTRIBUTES = """
    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Coefficients of the final fit (zero on removed rows).
    intercept_ : float or ndarray of shape (n_classes,)
        The intercept b.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training data.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        Rows kept after the last round.
    removal_round_ : ndarray of int, shape (n_samples,)
        Round (from 0) in which each row was removed; -1 for kept rows.
    outlier_scores_ : ndarray of shape (n_samples,)
        Each row's SEVER score in the last round it was scored (0 if never scored).
    n_iter_ : int
        Filtering rounds run.
    """

_CITATION = """Diakonikolas, Kamath, Kane, Li, Steinhardt and Stewart, "Sever: A Robust
    Meta-Algorithm for Stochastic Optimization", ICML 2019 (Algorithm 1 with the practical filter
    of their experiments), kernelised: rounds of fitting, scoring each row by how much its loss
    gradient lines up with the direction in which the gradients vary most, and removing the rows
    of largest score."""

# LEARNER and WHICH are replaced by each class (str.format would need every brace of the
# LaTeX doubled).
_NOTES = r"""
    Notes
    -----
    Each round fits the base learner (here kernel LEARNER with an unpenalized intercept, the
    library's ERM: the core's exact subset fit) on the kept rows :math:`S`,

    .. math::

        \min_f \; \sum_{i \in S} \ell_i(f) + \alpha \|f\|_{\mathcal{H}}^2, \qquad
        f(x) = \sum_{j=1}^n w_j \, \kappa(x_j, x) + b,

    with :math:`\kappa` the kernel and :math:`\ell_i` the loss of row :math:`i`. It then takes each
    kept row's gradient :math:`g_i` of its loss with respect to the model (:math:`f` in the RKHS and
    the intercept), centres the gradients, and scores each row by the squared projection of its
    centred gradient on the top right singular vector :math:`v` of the gradient matrix,
    :math:`\tau_i = \langle g_i - \bar g, v \rangle^2`; the ``fraction`` :math:`p` of WHICH with the
    largest scores are removed (:math:`\lceil p\, m \rceil` of the :math:`m` rows currently kept,
    ties to the lower row index). After ``n_rounds`` rounds the learner is refitted on the rows
    left.

    Kernel form: with :math:`G` the matrix of the loss derivatives in the outputs (one column
    per output), :math:`\tilde K = K + \mathbf{1}\mathbf{1}^\top` with the intercept (:math:`K`
    without) and :math:`H` the centring matrix, the top eigenpair :math:`(\lambda, u)` of

    .. math::

        M = H \bigl(\tilde K \circ G G^\top\bigr) H

    (:math:`H D \tilde K D H` with :math:`D = \operatorname{diag}(G)` for one output) gives
    the scores :math:`\tau_i = \lambda u_i^2`, never an SVD of explicit features.
    """


def _notes(learner: str, which: str) -> str:
    return _NOTES.replace("LEARNER", learner).replace("WHICH", which)


class SeverKernelRegressor(KernelBaselineRegressor, _BaseSever):
    __doc__ = (
        """SEVER with kernel ridge regression as the base learner.

    """
        + _CITATION
        + """

    Defaults follow the authors' public regression code: 4 rounds removing p = epsilon / 2 of
    the rows per round. The Subquantile paper's polynomial experiment used 16 rounds and
    p = 0.02 (Rathnashyam and Gittens 2023, Table 1).

    Parameters
    ----------
    epsilon : float, default=0.1
        Assumed corrupted fraction; sets the default ``fraction``.
    """
        + KERNEL_PARAMETERS_DOC
        + """
    fraction : float, default=None
        Fraction p of the kept rows removed per round; None means epsilon / 2.
    n_rounds : int, default=4
        Filtering rounds (0 gives plain kernel ridge).
"""
        + _ATTRIBUTES
        + """
    See Also
    --------
    SeverKernelClassifier : The same filter around kernel logistic / softmax regression.
    """
        + _notes("ridge regression", "the kept rows")
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.baselines import SeverKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(100, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=100)
    >>> y[:10] += 10.0  # 10% of the targets corrupted
    >>> model = SeverKernelRegressor(epsilon=0.1, alpha=0.1).fit(X, y)
    >>> bool(model.removal_round_[:10].min() >= 0)  # every corrupted row was removed
    True
    >>> bool(model.score(X[10:], y[10:]) > 0.95)
    True
    """
    )

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **_BaseSever._parameter_constraints,
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left")],
        "fraction": [Interval(Real, 0.0, 1.0, closed="left"), None],
    }

    def __init__(
        self,
        epsilon: float = 0.1,
        *,
        alpha: float = 1.0,
        kernel: str | Any = 'rbf',
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        fit_intercept: bool = True,
        fraction: float | None = None,
        n_rounds: int = 4,
    ) -> None:
        self.epsilon = epsilon
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.fit_intercept = fit_intercept
        self.fraction = fraction
        self.n_rounds = n_rounds

    def _fraction(self) -> float:
        return self.epsilon / 2.0 if self.fraction is None else float(self.fraction)


class SeverKernelClassifier(KernelBaselineClassifier, _BaseSever):
    __doc__ = (
        """SEVER with kernel logistic (binary) / softmax (multiclass) regression.

    """
        + _CITATION
        + """

    As in SEVER's classification experiments the filter runs on each class separately. Defaults
    follow the authors' public classification code: p = 0.025 per round, 4 rounds.

    Parameters
    ----------
    fraction : float, default=0.025
        Fraction p of each class's kept rows removed per round.
    """
        + KERNEL_PARAMETERS_DOC
        + """
    n_rounds : int, default=4
        Filtering rounds (0 gives plain kernel logistic / softmax regression).
"""
        + _ATTRIBUTES
        + """classes_ : ndarray of shape (n_classes,)
        Class labels.

    See Also
    --------
    SeverKernelRegressor : The same filter around kernel ridge regression.
    """
        + _notes("logistic / softmax regression", "each class's kept rows, class by class")
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from robustkernel.baselines import SeverKernelClassifier
    >>> X, y = make_moons(200, noise=0.1, random_state=0)
    >>> y_noisy = y.copy()
    >>> y_noisy[:20] = 1 - y_noisy[:20]  # 10% of the labels flipped
    >>> model = SeverKernelClassifier(fraction=0.05, alpha=0.1, gamma=2.0).fit(X, y_noisy)
    >>> bool((~model.inlier_mask_[:20]).all())  # every flipped row was removed
    True
    >>> bool(model.score(X, y) > 0.9)  # accuracy on the true labels
    True
    """
    )

    def __init__(
        self,
        fraction: float = 0.025,
        *,
        alpha: float = 1.0,
        kernel: str | Any = 'rbf',
        gamma: float | None = None,
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        fit_intercept: bool = True,
        n_rounds: int = 4,
    ) -> None:
        self.fraction = fraction
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.fit_intercept = fit_intercept
        self.n_rounds = n_rounds

    def _fraction(self) -> float:
        return float(self.fraction)
