"""Binary classification with a learned metric: the logistic loss in the inner problem."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from scipy.special import expit
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils.validation import validate_data

from .._kernel_model.estimator import class_labels
from ._estimator import MetricKernelModel
from ._objective import KernelFamily

__all__ = ["MetricKernelLogisticRegression"]


class MetricKernelLogisticRegression(ClassifierMixin, MetricKernelModel):
    """Kernel logistic regression that also learns the metric ``Sigma`` of its kernel.

    Solves :math:`\\min_{f, \\gamma, \\Sigma \\succeq 0} \\frac{1}{n} \\sum_i \\log(1 + e^{-y_i
    (f(x_i) + \\gamma)}) + \\frac{\\lambda}{2} \\|f\\|_{\\mathcal{H}_\\Sigma}^2` over the RKHS of
    :math:`k_\\Sigma(x, x') = \\phi(\\|x - x'\\|_\\Sigma^2)`, labels encoded as
    :math:`y_i = \\pm 1`: the objective of `MetricKernelRidge` with the logistic loss in place of
    the squared error (see Notes). For fixed ``Sigma`` the inner problem is solved by Newton's
    method; at its solution the derivative of the optimal value in the kernel matrix is
    :math:`-\\frac{\\lambda}{2} a a^\\top` as for the squared loss, so ``Sigma`` is learned by the
    same solvers (and ``kkt_residual_`` means the same). As for regression, ``Sigma`` comes out
    exactly low rank and ``transform`` projects on its column space: supervised dimension reduction
    for a binary label.

    Parameters
    ----------
    lam : float, default=0.01
        Ridge parameter :math:`\\lambda > 0` (the penalty :math:`\\frac{\\lambda}{2}
        \\|f\\|_{\\mathcal{H}_\\Sigma}^2` sits next to the *mean* log-loss, so ``lam`` corresponds
        to ``C = 1 / (n lam)`` of ``sklearn.linear_model.LogisticRegression`` with a linear kernel).
        Smaller than the regressor's default: the log-loss is of order 0.5 where squared errors of a
        standardized target are of order 1 (on two Gaussian directions in 10 features,
        ``lam = 0.01`` recovered the two directions; ``lam = 0.003`` added a third).
    kernel : {"gaussian", "rbf", "gaussian_mixture", "linear", "cubic"} or (callable, callable), \
default="gaussian"
        As in :class:`MetricKernelRidge`.
    kernel_params : dict, default=None
        As in :class:`MetricKernelRidge`.
    diagonal : bool, default=False
        As in :class:`MetricKernelRidge`.
    random_state : int, RandomState instance or None, default=None
        As in :class:`MetricKernelRidge`. A mini-batch should hold both classes.
    verbose : int, default=0
        As in :class:`MetricKernelRidge`.
    solver : {"auto", "lbfgs", "projected_gradient"}, default="auto"
        As in :class:`MetricKernelRidge`.
    lr : float, default=0.1
        As in :class:`MetricKernelRidge`.
    armijo_c : float, default=0.001
        As in :class:`MetricKernelRidge`.
    beta : float, default=0.5
        As in :class:`MetricKernelRidge`.
    tol : float, default=None
        As in :class:`MetricKernelRidge`.
    max_iter : int, default=2000
        As in :class:`MetricKernelRidge`.
    init : None, "identity" or array-like of shape (n_features, n_features), default=None
        As in :class:`MetricKernelRidge`.
    op_norm_bound : float, default=None
        As in :class:`MetricKernelRidge`.
    batch_size : int, default=None
        As in :class:`MetricKernelRidge`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two class labels; the second is the positive class (``y = +1``).
    Sigma_, eigenvalues_, components_, rank_, numerical_rank_, dual_coef_, intercept_, \
X_fit_, n_iter_, objective_history_, objective_, kkt_residual_, converged_
        As in `MetricKernelRidge` (``objective_`` is the penalized mean log-loss).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when X has string feature names.

    See Also
    --------
    MetricKernelRidge : The same with the squared error (regression).
    sklearn.linear_model.LogisticRegression : The linear model with a fixed metric.

    Notes
    -----
    With :math:`\\|v\\|_\\Sigma^2 = v^\\top \\Sigma v` and :math:`\\mathcal{H}_\\Sigma` the RKHS of
    :math:`k_\\Sigma(x, x') = \\phi(\\|x - x'\\|_\\Sigma^2)`, the metric minimizes

    .. math::

        J_n(\\Sigma) = \\min_{f \\in \\mathcal{H}_\\Sigma, \\, \\gamma} \\;
        \\frac{1}{n} \\sum_{i=1}^n \\log\\bigl(1 + e^{-y_i (f(x_i) + \\gamma)}\\bigr)
        + \\frac{\\lambda}{2} \\|f\\|_{\\mathcal{H}_\\Sigma}^2
        \\quad \\text{over } \\Sigma \\succeq 0 .

    The inner minimizer is :math:`f = \\sum_j a_j k_\\Sigma(x_j, \\cdot)` with
    :math:`a = -\\ell'(f) / (n \\lambda)`, :math:`\\ell'` the derivatives of the log-loss at the
    rows, so that :math:`\\partial J_n / \\partial K = -\\frac{\\lambda}{2} a a^\\top` and the
    gradient in :math:`\\Sigma` has the form of the squared loss's:
    :math:`\\nabla J_n(\\Sigma) = -\\frac{\\lambda}{2} \\sum_{i,j} a_i a_j \\,
    \\phi'(\\|x_i - x_j\\|_\\Sigma^2) \\, (x_i - x_j)(x_i - x_j)^\\top`.

    References
    ----------
    Y. Chen, Y. Li, K. Liu and F. Ruan, "Kernel Learning in Ridge Regression 'Automatically'
    Yields Exact Low Rank Solution", arXiv:2310.11736 (the squared-loss objective and its
    analysis; the logistic loss is this library's extension).

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel.metric_kernel_ridge import MetricKernelLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 6))
    >>> y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4, "outer", "inner")
    >>> model = MetricKernelLogisticRegression().fit(X, y)
    >>> model.rank_
    2
    >>> model.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **MetricKernelModel._parameter_constraints
    }

    def __init__(
        self,
        lam: float = 0.01,
        *,
        kernel: str | tuple[Any, Any] = 'gaussian',
        kernel_params: dict[str, Any] | None = None,
        diagonal: bool = False,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        solver: str = 'auto',
        lr: float = 0.1,
        armijo_c: float = 0.001,
        beta: float = 0.5,
        tol: float | None = None,
        max_iter: int = 2000,
        init: str | np.ndarray | None = None,
        op_norm_bound: float | None = None,
        batch_size: int | None = None,
    ) -> None:
        self.lam = lam
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.diagonal = diagonal
        self.random_state = random_state
        self.verbose = verbose
        self.solver = solver
        self.lr = lr
        self.armijo_c = armijo_c
        self.beta = beta
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.op_norm_bound = op_norm_bound
        self.batch_size = batch_size

    def _family(self) -> KernelFamily:
        return replace(super()._family(), loss="logistic")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any) -> MetricKernelLogisticRegression:
        """Learn ``Sigma`` and the kernel logistic regression that goes with it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Labels of exactly two classes.

        Returns
        -------
        self : MetricKernelLogisticRegression
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, encoded = class_labels(y, type(self).__name__)
        if self.classes_.size != 2:
            raise ValueError(
                "Only binary classification is supported. "
                f"{type(self).__name__} got {self.classes_.size} class(es): "
                f"{self.classes_.tolist()[:10]}."
            )
        self._fit_metric(X, np.where(encoded == 1, 1.0, -1.0), self._family())
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """The log-odds ``f(x) + gamma`` of the positive class ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        ndarray of shape (n_samples,)
            The decision values f(x): the log-odds of the positive class ``classes_[1]``.
        """
        return self._decision(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``(1 - p, p)`` with ``p = 1 / (1 + exp(-f(x) - gamma))``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.
        """
        positive = expit(self._decision(X))
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X: Any) -> np.ndarray:
        """The class of larger probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        positive = self._decision(X) > 0
        return self.classes_[positive.astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
