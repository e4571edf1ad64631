"""Kernel ridge regression (and kernelized GLMs) fitted on the subquantile of squared errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import StrOptions

from ..._kernel_model.estimator import KernelRegressorMixin
from ..._kernel_model.losses import LINKS
from .._intervals import (
    IntervalRegressorMixin,
    InUnits,
    calibrate_intervals,
    numeric_rows,
)
from .._tasks import REGRESSION, link_of
from .base import BaseSubquantile


class SubquantileKernelRegressor(IntervalRegressorMixin, KernelRegressorMixin, BaseSubquantile):
    r"""Kernel ridge regression fitted on the (1 - epsilon) subquantile of squared errors.

    Minimizes :math:`\sum_{i \in S(f)} (f(x_i) - y_i)^2 + \alpha \|f\|_{\mathcal{H}}^2`, where
    :math:`S(f)` holds the :math:`k = \lceil (1 - \varepsilon) n \rceil` rows with the smallest
    squared error (see Notes). With epsilon=0 and fit_intercept=False (and alpha, gamma given) this
    is :class:`sklearn.kernel_ridge.KernelRidge`. With no arguments every knob is chosen on the
    data: epsilon, alpha and gamma ("auto"), and the kernel (kernel="auto": a high-breakdown
    start that finds groups of outliers masking one another); a given epsilon is the fraction
    trimmed (refine="auto"). The papers' estimator is
    ``SubquantileKernelRegressor(epsilon, kernel="rbf", alpha=1.0, gamma=None, refine=None)``.

    Parameters
    ----------
    epsilon : float or "auto", default="auto"
        Assumed fraction of corrupted training rows, in [0, 0.5). The objective keeps the
        k = ceil((1 - epsilon) n) rows with the smallest loss; epsilon=0 is the ordinary fit.
        "auto" estimates it (``epsilon_``): fit keeping 60% of the rows, flag the rows whose
        loss is implausible under that fit (studentized abs(residual) > 3 sigma with a
        truncation-corrected robust scale), refit without them, and repeat until the flagged
        set is stable.
    alpha : float or "auto", default="auto"
        Ridge penalty on the RKHS norm, :math:`\alpha \|f\|_{\mathcal{H}}^2` (the convention of
        sklearn's KernelRidge: the loss is summed, not averaged, over the kept rows). "auto": chosen
        on the training rows themselves, see ``gamma``.
    kernel : str or callable, default="auto"
        Kernel as in :class:`sklearn.kernel_ridge.KernelRidge`: a name from
        ``sklearn.metrics.pairwise.PAIRWISE_KERNEL_FUNCTIONS``, "precomputed" (X is then the
        n x n kernel matrix at fit and the n_test x n_train matrix at predict), or a callable.
        "auto" (the default): a high-breakdown start -- kernel least trimmed squares at about
        half the rows from many cheap starts with the linear kernel, Gervini and Yohai's
        adaptive cutoff instead of a fixed k-sigma rule, and a move to the polynomial kernel of
        degree 2 or 3 or the rbf kernel (with its own trimmed start) only where it beats the
        simpler kernels by two paired standard errors of leave-one-out loss on the rows kept
        (and back to a polynomial the move stepped over where it is adequate on the rows the
        more flexible kernel then keeps and keeps as many: the SubQ papers' cubic, tried with
        ten rows per monomial). The model is then kernel
        ridge with that kernel on the rows the reweighting keeps (a given epsilon: exactly the
        ceil((1 - epsilon) n) rows of smallest standardized residual, at any size), alpha and
        gamma chosen by leave-one-out on them; no solver
        moves those rows. Every column is first brought to units of its spread (the median,
        and the larger of 1.4826 MAD and IQR / 1.349: ``feature_center_``,
        ``feature_scale_``), so the fit does not depend on the units of X. At any size: on
        more than 2000 rows, or with features (``n_components``), the start runs on 1000 rows
        drawn at random, every row is scored under its model, alpha and gamma are confirmed on
        every row, and the flags come from the honest residuals of the fit on the inliers; on
        a Dask array the in-memory sample's fit gives the kernel and the starting rows; with
        ``sample_weight`` (and exact copies of rows) the start runs on the distinct rows and
        the model is the weighted ridge on the rows kept; with a ``link`` the start runs on
        the targets and the link model is fitted on the rows it keeps. It refuses the solvers'
        options (``solver``, ``init``, ``n_init``, ``radius``, ``smoothing``, ``line_search``,
        refine="reject" or "biweight") and ``device``: give a kernel for those (the papers'
        estimator: kernel="rbf"). With approximation="rff", which approximates the rbf kernel only,
        "auto" is kernel="rbf" at any size (the same fit: no start, no column scaling, the
        solvers' options taken). ``kernel_`` reports the choice.
    gamma : float, "auto" or None, default="auto"
        Kernel parameter, passed to ``pairwise_kernels`` as KernelRidge does; None means 1 /
        n_features for the kernels that take it. "auto" with alpha="auto": for each gamma of a
        grid around 1 / (n_features sigma^2) (sigma^2 a robust feature variance; factors
        1/8 ... 8), a trimmed fit at alpha = 0.1 gives kept rows S (started from the rows of
        smallest studentized leave-one-out residual of the ordinary fit, near duplicates deleted
        together, so that a cluster sharing a wrong target is not kept); the closed-form
        leave-one-out residuals of kernel ridge on S (one eigendecomposition of :math:`K_{SS}`, or
        of :math:`Z_S^\top Z_S` with ``n_components``, serves alphas 1e-4 ... 10) and the
        out-of-sample residuals of the other rows are scored by their mean after dropping the
        largest epsilon (at least 10%) of them, which the corrupted rows cannot steer; the best pair
        is fitted, starting from its S; with epsilon="auto" this runs twice, the second time at the
        first fit's ``epsilon_``. Kernels without a gamma (linear, cosine, "precomputed", callables)
        choose alpha only. Chosen values in ``alpha_`` and ``gamma_``, every score in
        ``hyperparameter_scores_``. (The classifier chooses them by out-of-fold error: see
        :class:`~robustkernel.SubquantileKernelClassifier`.) Not available with ``device`` (give
        alpha and gamma).
    degree, coef0 : float, default=3, 1
        Parameters of the polynomial and sigmoid kernels.
    kernel_params : dict, default=None
        Extra keyword arguments of a callable kernel.
    link : {"identity", "logistic", "softplus"} or (callable, callable), default="identity"
        The kernelized generalized linear model :math:`y \sim \omega(f(x))`: the loss of a row is
        :math:`(\omega(f(x_i)) - y_i)^2` and ``predict`` returns :math:`\omega(f(x))`. "logistic" is
        :math:`1 / (1 + e^{-f})` for targets in (0, 1) (proportions, rates), "softplus" is
        :math:`\log(1 + e^f)` for positive targets; a pair :math:`(\omega, \omega')` of vectorized
        functions gives any other link whose derivative is bounded away from 0 and infinity on the
        data. "identity" is kernel ridge (the closed-form solvers). With another link the
        "alternating" solver refits by L-BFGS, the gradient solvers take their step from the loss's
        smoothness bound :math:`2 \sup (\omega'^2 + |\omega - y| \, |\omega''|)` over the targets'
        range, and the honest losses of epsilon, alpha and gamma "auto" and of refine="reject" are
        out of fold (three folds, models fitted on the kept rows of the other folds) instead of
        leave-one-out; refine="biweight" is for the identity link only.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept b, :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b`.
    refine : {"auto", "reject", "biweight"} or None, default="auto"
        What follows the trimmed fit. "auto": "reject" where epsilon="auto" (in the fits at its
        estimate: the second fit of alpha / gamma "auto", the passes on a Dask array), nothing
        at a given epsilon, which is then the fraction trimmed, as in the papers: exactly
        k = ceil((1 - epsilon) n) rows kept (epsilon=0: every row) and ``epsilon_`` = 1 - k / n,
        whatever the kernel. Nothing rejects in the trimmed fits that choose alpha / gamma
        "auto" at a given epsilon either, so the fit is refine=None's: the model is fitted on
        k rows whatever they hold, and the honest scores of the choice already leave out the
        largest epsilon (at least 10%) of the residuals. None: nothing, the papers' estimator.
        "reject": kept rows whose loss is implausible under the fit (studentized
        abs(residual) > 5 sigma, the rule of epsilon="auto" with 5 for 3) are trimmed too and
        the model refitted, until no kept row is implausible, in the trimmed fits of alpha /
        gamma "auto" too: a given epsilon is then the least fraction trimmed, and no corrupted
        row that the count forced into the kept set (or that a flexible kernel explains by its
        own coefficient) drags the fit (sklearn's diabetes, 20% of the rows scaled
        x -> 100 x, y -> 1e4 y, kernel="rbf", epsilon=0.2: test RMSE 1.16-1.95x the oracle's
        with None, 0.98-1.01x with "reject", tests/test_given_epsilon.py). kernel="auto" takes
        "auto" or None, the same fit (its reweighting flags the rows of epsilon="auto", a given
        epsilon is the count it trims); "reject" and "biweight" need a kernel. "biweight": an
        M-step instead, as MM-estimators follow a high-breakdown start: iteratively reweighted
        kernel ridge with
        Tukey's biweight (c = 4.685) on honest residuals (leave-one-out for the rows the fit
        sees) scaled by 1.4826 x their median under the trimmed fit; clean rows the trim
        dropped come back, but where the model's bias dominates the residuals it down-weights
        clean rows too (measured in the module docstring of
        ``robustkernel.subquantile._solve.refine``); ``row_weights_`` then holds the weights and
        ``threshold_`` the squared residual (c x scale)^2 beyond which a row has weight 0; not
        available with ``radius`` or ``device``. Nothing runs at epsilon=0 (the ordinary fit).
    n_components : int, "auto" or None, default="auto"
        "auto": the exact kernel model up to 4000 rows (and always for kernel="precomputed"
        or a ``device``), beyond it ceil(5 sqrt(n)) Nystroem features, at most 1000
        and at most what four n x m float64 arrays leave of the available memory (``n_components_``
        says which). None fits the exact kernel model (O(n^2) memory). An integer m fits the
        approximate model :math:`f(x) = z(x)^\top \theta + b` on m kernel features z
        (``feature_map_``) with penalty :math:`\alpha \|\theta\|^2`, in O(n m) memory: every solver
        then works in the m-dimensional feature space ("alternating" is trimmed ridge / logistic
        regression on the features; the ridge updates :math:`Z_S^\top Z_S` by the rows entering and
        leaving S). With Nystroem on all n rows (m >= n; larger m is capped at n) this is the exact
        model.
    approximation : {"nystroem", "rff"}, default="nystroem"
        Features when ``n_components`` is set: :class:`sklearn.kernel_approximation.Nystroem`
        (m landmark rows drawn with ``random_state``; any kernel but "precomputed") or random
        Fourier features :class:`sklearn.kernel_approximation.RBFSampler` (kernel="rbf" only;
        with kernel="auto", "rff" makes the kernel rbf, ``kernel_`` "rbf", whether or not
        ``n_components`` resolves to features).
    dtype : {"float64", "float32"}, default="float64"
        Storage type of the n x m feature matrix when ``n_components`` is set; "float32"
        halves its memory. Sums and solves stay in float64.
    device : str, default=None
        None runs in NumPy / SciPy. A torch device string ("cuda", "cuda:0", "cpu") runs the
        exact kernel model's O(n^2) and O(n^3) work in PyTorch float64 on that device (needs
        the ``gpu`` extra: ``pip install robustkernel[gpu]``): the kernel matrix, every product
        with it, the Cholesky solves of the alternating ridge solver and the whitening of the
        classifier's L-BFGS; the O(n) per-iteration work (losses, subquantile, intercept,
        L-BFGS updates) stays on the host. Results match device=None to float tolerance.
        Kernels: "rbf", "laplacian", "linear", "polynomial", "sigmoid", "cosine",
        "precomputed"; only with a given epsilon, alpha and gamma and refine=None (not with
        ``n_components``). The fitted attributes are NumPy arrays and prediction runs in
        NumPy.
    random_state : int, RandomState instance or None, default=None
        Seed of the "glorot" initialisation, of the random starts (``n_init``) and of the
        features (landmarks or random frequencies) when ``n_components`` is set.
    verbose : int, default=0
        Show progress bars when positive (scikit-learn's convention: 0 says nothing): over the
        solver's iterations, and with kernel="auto" one over the steps of the fit, naming the
        running one (the kernel's trimmed start, the second stage's held-out folds, the misfit
        rule's flexible fits, the model on the kept rows) with the time elapsed.
    solver : {"alternating", "gd", "momentum", "nesterov"}, default="alternating"
        "alternating" repeats {keep the k best-explained rows; refit exactly on them} until the kept
        set repeats: the objective never increases and it converges in a handful of iterations. "gd"
        is the papers' functional gradient descent with step 1/L from the smoothness constant
        :math:`L = c \, \lambda_{\max}(K) + 2 \alpha` (c = 2, 1/4, 1/2 for the squared, logistic and
        softmax losses); after each step the unpenalized intercept is set to its exact minimizer on
        the kept rows. "momentum" (heavy ball) and "nesterov" accelerate it.
    max_iter : int, default=None
        Iteration cap: 100 for "alternating", 1000 for the gradient solvers when None.
    tol : float, default=1e-6
        Gradient solvers: stop when the kept set has not changed for ``n_iter_no_change``
        iterations and the relative change of the objective is at most tol.
    init : {"erm", "zeros", "glorot"} or array of shape (n_samples,) or (n_samples, n_outputs)
        Starting coefficients: the ordinary fit on all rows (default), zeros, Glorot
        uniform on [-sqrt(6/n), sqrt(6/n)], or given values. With ``n_components`` the
        coefficients are theta, n_components rows instead of n_samples.
    n_init : int, default=1
        Number of starts. The objective is not convex, and a solver converges to a local
        minimum near its start; with ``n_init > 1`` the solver also runs from ``n_init - 1``
        random starts, each the ordinary fit on a random subset of ``init_size`` rows (the
        elemental starts of FAST-LTS, Rousseeuw and Van Driessen 2006), and the fit with the
        lowest objective is kept (``best_start_``). A start from a small subset is often free
        of outliers even when the fit on all rows is pulled towards them, e.g. by rows with
        huge feature values under an unbounded (linear) kernel. Costs ``n_init`` fits; the
        trimmed fits that choose alpha and gamma ("auto") use the same starts.
    init_size : int, default=20
        Rows of each random start (classifiers: one row of every class among them; all rows
        if fewer).
    radius : float, default=None
        Optional constraint :math:`\|f\|_{\mathcal{H}} \le` radius (:math:`\|\theta\| \le` radius
        with ``n_components``; projection for the gradient solvers, exact constrained refit for
        "alternating").
    smoothing : float, default=None
        Gradient solvers only: replace the hard subquantile by the weights
        sigmoid(smoothing * (threshold - loss_i)); larger is closer to the hard version.
    momentum : float, default=0.9
        Momentum coefficient mu of "momentum" and "nesterov".
    line_search : bool, default=False
        "gd" only: Armijo backtracking instead of the fixed step 1/L.
    n_iter_no_change : int, default=5
        See ``tol``.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Coefficients w of :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b` (exact model,
        n_components=None).
    n_components_ : int or None
        The features the fit used: ``n_components`` with "auto" resolved (None: the exact
        kernel model).
    coef_ : ndarray of shape (n_components,) or (n_components, n_outputs)
        Weights :math:`\theta` of :math:`f(x) = z(x)^\top \theta + b` (only when
        ``n_components`` is set).
    feature_map_ : Nystroem or RBFSampler
        The fitted feature map z (only when ``n_components`` is set).
    intercept_ : float or ndarray of shape (n_outputs,)
        The intercept b (0 when ``fit_intercept=False``).
    X_fit_ : ndarray or CSR sparse matrix of shape (n_samples, n_features)
        Training data (the kernel matrix for kernel="precomputed"; exact model only); sparse
        when X was. With kernel="auto", in the units the model was fitted in:
        ``(X - feature_center_) / feature_scale_``.
    feature_center_, feature_scale_ : ndarray of shape (n_features,)
        kernel="auto" only: the model is fitted, and predicts, on ``(x - feature_center_) /
        feature_scale_``: each column's median and the larger of 1.4826 times its median
        absolute deviation and its interquartile range / 1.349 (its standard deviation where
        both are 0, and 1 where that is too; sparse X the same as its dense form, kept sparse:
        only the columns of median other than 0 are filled), so that the fit does not depend
        on the units of X. ``gamma_``, and a
        given ``gamma``, are in those units.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        True for the rows of the final fit (the k rows of the subquantile, less those
        ``refine="reject"`` dropped: with epsilon="auto", or where given); False marks a
        suspected outlier. After a fit on Dask
        arrays this and the other per-row attributes (``outlier_scores_``, ``row_weights_``)
        are Dask arrays persisted on the cluster: compute or save them before it closes.
    outlier_scores_ : ndarray of shape (n_samples,)
        Final per-row training loss; larger is more suspect. Regression fits the targets
        divided by a power of two near their median magnitude and scales the model back
        (exact), so targets of any magnitude fit alike; losses of targets beyond ~1e154 are
        then inf here and in ``threshold_`` and ``objective_history_`` (the squares overflow
        float64), which does not affect the fit.
    outlier_pvalues_ : ndarray of shape (n_samples,) or None
        kernel="auto" (the default): each row's p-value, the chance that a correct row has an
        honest residual (held out twice: predicted by a fit on four fifths of the rows, those
        rows chosen again without it) this large under the noise the rows show: a local scale
        (in x or in the fitted value) and the normal's or a Student's t's tails fitted to the
        rows. A row is flagged where the high-breakdown start flags it and
        its p-value is below 0.01 (the second stage gives the others back); a given epsilon
        trims its count whatever the p-values. On more than 2000 rows or with features
        (``n_components``): one round on every row from the fit on the sampled start's
        inliers, the residuals in sample for the rows kept, the local scale in the fitted
        value only (and ``x_distance`` NaN) with features or beyond 20,000 rows. None with a
        given kernel.
    outlier_evidence_ : dict of ndarray or None
        kernel="auto": the evidence of every row, ``pandas.DataFrame(outlier_evidence_)`` shows
        it: ``flagged`` (``~inlier_mask_``), ``kind`` ("wrong y": a flagged row among the kept
        rows in x; "unusual x": one more than 3 typical spacings from the kept rows, where the
        fit extrapolates; "" for a kept row), ``residual`` y - f(x) and ``fitted`` f(x) in the
        target's units (honest), ``robust_z`` (the normal quantile of the p-value, signed as the
        residual), ``pvalue`` and ``x_distance`` (to the 5th nearest kept row, in units of the
        kept rows' own). None where ``outlier_pvalues_`` is.
    interval_calibration_ : dict
        What :meth:`predict_interval` reads: the kept rows' noise scale ``sigma``, the clean
        rows' standardized honest residuals ``scores`` (sorted; every training row's residual
        out of fold for a kept row, out of sample for a flagged one, those beyond the
        outlier ``cutoff`` left out) and the ``local`` scale (None where the noise is
        homoscedastic); ``{"refused": reason}`` where the fit cannot give intervals (a Dask
        fit, several targets, a precomputed kernel, fewer than 10 kept rows).
    threshold_ : float
        The k-th smallest loss: rows scoring above it are flagged (``refine="reject"`` may flag
        rows below it too; with ``refine="biweight"``: the loss beyond which a row gets
        weight 0).
    row_weights_ : ndarray of shape (n_samples,)
        Weight of each row in the final fit: 1 for kept rows and 0 for trimmed ones, or the
        biweight weights in [0, 1] with ``refine="biweight"``.
    n_iter_ : int
        Iterations run (subset refits for "alternating").
    objective_history_ : ndarray of shape (``n_iter_`` + 1,)
        The objective :math:`F(f)` of the Notes (the sum of the kept losses plus
        :math:`\alpha \|f\|_{\mathcal{H}}^2`), from the initial model on.
    converged_ : bool
        Whether the stopping rule was met before ``max_iter`` (in the kept start).
    best_start_ : int
        The start whose fit was kept: 0 for ``init``, i >= 1 for the i-th random subset.
    kernel_, degree_, coef0_ : str or callable, float, float
        The kernel fitted and the polynomial kernel's degree and coef0: the parameters as
        given, or the kernel="auto" choice (its polynomials: degree 2 or 3 and coef0 1,
        whatever ``degree`` and ``coef0``).
    alpha_, gamma_ : float
        The alpha and gamma of the fit (the chosen ones with "auto", else the given ones).
    hyperparameter_scores_ : ndarray of shape (n_gammas, n_alphas)
        With alpha or gamma "auto": the score of every pair (regressor: the trimmed mean
        squared honest residual; classifier: the out-of-fold misclassification rate).
    epsilon_ : float
        Fraction of the rows trimmed, 1 - (rows kept) / n: the estimate when epsilon="auto";
        a given epsilon's 1 - ceil((1 - epsilon) n) / n, at least that with an explicit
        ``refine="reject"`` (classifiers: less where keeping half of every class required more
        than k rows).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when X has string column names.

    See Also
    --------
    SubquantileKernelClassifier : The same objective for logistic / softmax losses.
    robustkernel.SubquantileRegressor : The subquantile fit around any regressor.
    sklearn.kernel_ridge.KernelRidge : The ordinary fit (epsilon=0).
    sklearn.linear_model.HuberRegressor : A linear fit with a bounded-influence loss.

    Notes
    -----
    The objective is the papers' subquantile risk [1]_, [2]_. The model is

    .. math::

        f(x) = \sum_{j=1}^n w_j \, \kappa(x_j, x) + b, \qquad
        \|f\|_{\mathcal{H}}^2 = w^\top K w,

    with :math:`\kappa` the kernel, :math:`K` its matrix on the training rows and :math:`b`
    the unpenalized intercept. With :math:`\ell_i(f) = (f(x_i) - y_i)^2` the loss of row :math:`i`
    (:math:`(\omega(f(x_i)) - y_i)^2` with a ``link`` :math:`\omega`), and
    :math:`k = \lceil (1 - \varepsilon) n \rceil`, the fit minimizes

    .. math::

        F(f) = \sum_{i \in S(f)} \ell_i(f) + \alpha \|f\|_{\mathcal{H}}^2
        = \max_{t} \Bigl\{ k t - \sum_{i=1}^n \bigl(t - \ell_i(f)\bigr)_+ \Bigr\}
        + \alpha \|f\|_{\mathcal{H}}^2,

    where :math:`S(f)` holds the :math:`k` rows of smallest loss (ties to the lower row index) and
    the maximizing :math:`t` is the :math:`k`-th smallest loss (``threshold_``). With
    ``n_components``, :math:`f(x) = z(x)^\top \theta + b` and the penalty is
    :math:`\alpha \|\theta\|^2`. :math:`F` is not convex; every solver here decreases it and stops
    at a point where the kept set is stable. "alternating" is the trimmed-fit iteration of least
    trimmed squares (C-steps [3]_) with exact refits, the papers' solvers are "gd", "momentum" and
    "nesterov".

    With the defaults the fit configures itself on the training rows: epsilon by the LTS
    reweighting step [3]_ (regression: a three-sigma rule on studentized residuals;
    classification: out-of-fold label probabilities below 0.2), alpha and gamma by honest
    (leave-one-out or out-of-fold) scores of the trimmed fits, and refine="auto" (that is
    "reject" with epsilon="auto") drops kept rows that a fit at the estimate finds implausible.
    No clean validation rows are needed.

    References
    ----------
    .. [1] A. Rathnashyam and A. Gittens, "Subquantile Minimization for Kernel Learning in the
       Huber epsilon-Contamination Model", preprint, 2023 (the alternating and gradient
       solvers, the kernel ridge and classification losses, momentum and Nesterov).
    .. [2] A. Rathnashyam and A. Gittens, "Kernel Learning in the Huber epsilon-Contamination
       Model", preprint (the ridge term, kernelized GLMs with a link, two-layer networks).
    .. [3] P. J. Rousseeuw and K. Van Driessen, "Computing LTS Regression for Large Data Sets",
       Data Mining and Knowledge Discovery 12, 29-45, 2006 (the random elemental starts of
       ``n_init`` and the reweighting step behind epsilon="auto").

    Examples
    --------
    >>> import numpy as np
    >>> from robustkernel import SubquantileKernelRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(200, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    >>> y[:40] = rng.normal(5, np.sqrt(5), size=40)  # 20% of the labels replaced
    >>> model = SubquantileKernelRegressor().fit(X, y)  # no knobs
    >>> bool((~model.inlier_mask_[:40]).mean() > 0.9)
    True
    >>> bool(abs(model.epsilon_ - 0.2) < 0.05)
    True
    """

    _task = REGRESSION
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **BaseSubquantile._parameter_constraints,
        "link": [StrOptions(set(LINKS)), tuple],
    }

    def __init__(
        self,
        epsilon: float | str = "auto",
        *,
        alpha: float | str = "auto",
        kernel: str | Callable[..., Any] = "auto",
        gamma: float | str | None = "auto",
        degree: float = 3,
        coef0: float = 1,
        kernel_params: dict[str, Any] | None = None,
        link: str | tuple[Callable[..., Any], Callable[..., Any]] = "identity",
        fit_intercept: bool = True,
        refine: str | None = "auto",
        n_components: int | str | None = "auto",
        approximation: str = "nystroem",
        dtype: str | type = "float64",
        device: str | None = None,
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        solver: str = "alternating",
        max_iter: int | None = None,
        tol: float = 1e-6,
        init: str | np.ndarray = "erm",
        n_init: int = 1,
        init_size: int = 20,
        radius: float | None = None,
        smoothing: float | None = None,
        momentum: float = 0.9,
        line_search: bool = False,
        n_iter_no_change: int = 5,
    ) -> None:
        self.epsilon = epsilon
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.link = link
        self.fit_intercept = fit_intercept
        self.refine = refine
        self.n_components = n_components
        self.approximation = approximation
        self.dtype = dtype
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.n_init = n_init
        self.init_size = init_size
        self.radius = radius
        self.smoothing = smoothing
        self.momentum = momentum
        self.line_search = line_search
        self.n_iter_no_change = n_iter_no_change

    def _response(self, F: np.ndarray) -> np.ndarray:
        """omega(F): the predictions of the link model (F for the identity link)."""
        return link_of(self.link).inverse(F)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SubquantileKernelRegressor:
        """Fit the model; rows outside the final subquantile are flagged in ``inlier_mask_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, or the n x n kernel matrix for kernel="precomputed". Sparse rows
            (CSR, CSC) fit as the dense array does, wherever the kernel takes them. A
            ``dask.array`` (with y one too) is fitted as passes over its chunks, never held in
            one process: see the user guide, section "9. Data larger than a machine: one fit
            on a Dask cluster".
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: the subquantile keeps the rows of smallest loss until their weight
            reaches (1 - epsilon) of the total (integer weights fit as repeated rows; rows of
            weight 0 are left out of the fit and flagged), with every configuration. The fit
            runs on the distinct rows, each weighing its copies; epsilon, alpha and gamma "auto"
            and the trim of refine="reject" are chosen by the fit without weights on them,
            then the weighted fit runs at them (the "alternating" solver; not with
            refine="biweight" or device). A row whose weight exceeds the sum of the others'
            is a majority on its own, which no trim of less than half of the weight removes
            (the rule of a fit of 50% breakdown): it is kept. kernel="auto", whose start sees
            each row once and may flag it, fits its model on the rows the start kept and on
            that row with its whole weight, which the fit then follows (one row of weight
            1e300 off the trend: its residual 0, as under scikit-learn's KernelRidge).

        Returns
        -------
        self : SubquantileKernelRegressor
            The fitted estimator.
        """
        return super().fit(X, y, sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        # the named links other than the identity reach non-negative targets only
        tags.target_tags.positive_only = isinstance(self.link, str) and self.link != "identity"
        return tags

    def _intervals_after_fit(
        self, X: Any, y: Any, sample_weight: np.ndarray | None
    ) -> dict[str, Any]:
        """``interval_calibration_`` (:func:`._intervals.calibrate_intervals`): the kept rows'
        honest residuals from this configuration (kernel, alpha, gamma, features and units as
        fitted; epsilon 0, the exact solver) fitted on the kept rows of the other folds, the
        flagged rows' from the fitted model."""
        if X is None:
            return {"refused": (
                "it was fitted on Dask arrays, whose rows no process holds; fit on a NumPy "
                "sample of them for intervals"
            )}
        if self.kernel_ == "precomputed":
            return {"refused": "kernel='precomputed' has no rows to refit on out of fold"}
        fixed = clone(self).set_params(
            kernel=self.kernel_, degree=self.degree_, coef0=self.coef0_, alpha=self.alpha_,
            gamma=self.gamma_, epsilon=0.0, n_components=self.n_components_, refine=None,
            solver="alternating", smoothing=None, max_iter=None, init="erm", n_init=1,
            verbose=0,
        )
        center = getattr(self, "feature_center_", None)
        scale = getattr(self, "feature_scale_", None)
        kept = np.asarray(self.inlier_mask_)
        weights = kept.astype(float) if sample_weight is None else sample_weight * kept
        coordinates = None
        if self.n_components_ is None:  # features: the local scale in the fitted value only
            coordinates = numeric_rows(self._fitted_units(X))
        return calibrate_intervals(
            InUnits(fixed, center, scale), self, X, y, weights, sample_weight is not None,
            self.random_state if isinstance(self.random_state, int) else 0, coordinates,
        )

    def _interval_coordinates(self, X: Any) -> Any:
        local = self.interval_calibration_.get("local")
        if local is None or local["kind"] != "x":
            return None
        return self._fitted_units(self._validated_X(X, reset=False))

    def _row_losses(self, X: Any, y: np.ndarray) -> np.ndarray:
        residuals = self.predict(X) - y
        with np.errstate(over="ignore"):  # beyond ~1e154 the square is inf, as in the fit
            return np.sum(residuals.reshape(residuals.shape[0], -1) ** 2, axis=1)
