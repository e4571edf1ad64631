"""Subquantile kernel estimators: ridge regression and logistic / softmax classification."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin, clone
from sklearn.utils._param_validation import StrOptions

from .._extended_init import extended_init
from .._kernel_model.estimator import KernelRegressorMixin, LogitClassifierMixin
from .._kernel_model.losses import LINKS, HingeLoss
from .._kernel_model.pairwise import PairwisePlatt
from ._base import BaseSubquantile
from ._intervals import (
    IntervalRegressorMixin,
    InUnits,
    calibrate_intervals,
    numeric_rows,
)
from ._tasks import CLASSIFICATION, HINGE_LOSSES, REGRESSION, link_of


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
    fit_intercept : bool, default=True
        Fit an unpenalized intercept b, :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b`.
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
        ``robustkernel.subquantile._refine``); ``row_weights_`` then holds the weights and
        ``threshold_`` the squared residual (c x scale)^2 beyond which a row has weight 0; not
        available with ``radius`` or ``device``. Nothing runs at epsilon=0 (the ordinary fit).
    smoothing : float, default=None
        Gradient solvers only: replace the hard subquantile by the weights
        sigmoid(smoothing * (threshold - loss_i)); larger is closer to the hard version.
    momentum : float, default=0.9
        Momentum coefficient mu of "momentum" and "nesterov".
    line_search : bool, default=False
        "gd" only: Armijo backtracking instead of the fixed step 1/L.
    n_iter_no_change : int, default=5
        See ``tol``.
    random_state : int, RandomState instance or None, default=None
        Seed of the "glorot" initialisation, of the random starts (``n_init``) and of the
        features (landmarks or random frequencies) when ``n_components`` is set.
    verbose : int, default=0
        Show progress bars when positive (scikit-learn's convention: 0 says nothing): over the
        solver's iterations, and with kernel="auto" one over the steps of the fit, naming the
        running one (the kernel's trimmed start, the second stage's held-out folds, the misfit
        rule's flexible fits, the model on the kept rows) with the time elapsed.
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
        honest residual (leave-one-out for a kept row) this large under the noise the rows
        show: a local scale (in x or in the fitted value) and the normal's or a Student's t's
        tails fitted to the rows. A row is flagged where the high-breakdown start flags it and
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

    __init__ = extended_init(
        BaseSubquantile,
        added={"link": ("identity", "str | tuple[Callable, Callable]")},
        defaults={"kernel": "auto"},
    )

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


class SubquantileKernelClassifier(LogitClassifierMixin, ClassifierMixin, BaseSubquantile):
    r"""Kernel logistic (binary) or softmax (multiclass) regression on the loss subquantile.

    Minimizes :math:`\sum_{i \in S(f)} \ell_i(f) + \alpha \|f\|_{\mathcal{H}}^2` with the binary
    cross-entropy on logits (two classes) or the softmax cross-entropy (more classes) as
    :math:`\ell_i` (see Notes); :math:`S(f)` holds the :math:`k = \lceil (1 - \varepsilon) n \rceil`
    rows with the smallest loss, under one guard: S keeps at least half of the rows of every class
    (the smallest losses of each class first, then the smallest of the rest). Without it a misfit
    that gives every row of a class a low probability let epsilon="auto" trim the class away, and
    the fit never predicted it (digits, features in [0, 1], 30% random labels: 6 or 7 of the 10
    classes predicted in 6 of 6 fits; with the guard, all 10).

    Parameters
    ----------
    epsilon : float or "auto", default="auto"
        Assumed fraction of corrupted training rows, in [0, 0.5). The objective keeps the
        k = ceil((1 - epsilon) n) rows with the smallest loss; epsilon=0 is the ordinary fit.
        "auto" finds the rows whose label the data contradict by confident learning [4]_ and
        fits the model without them (``epsilon_`` is their share): every row gets class
        probabilities out of fold (stratified 3-fold; the fold models fitted on the other
        folds); each class j gets a threshold t_j, the mean probability of j over the rows
        labelled j; a row is confidently in class j when p_j >= t_j, which estimates the share
        of the rows labelled i that belong to j; for each pair (i, j) that many rows labelled
        i, those of largest p_j - p_i, are flagged. The fold models are then fitted without the
        flagged rows and the rows flagged again, until the flags repeat or a round flags more
        rows than the one before while dropping some of its flags (its flags are then dropped;
        at most 3 rounds).
        Each class keeps at least half of its rows, and at most 49% of the rows are flagged. The
        solver is not used: the model is fitted once on the rows kept.
    alpha : float or "auto", default="auto"
        Ridge penalty on the RKHS norm, :math:`\alpha \|f\|_{\mathcal{H}}^2` (the convention of
        sklearn's KernelRidge: the loss is summed, not averaged, over the kept rows). "auto": chosen
        on the training rows themselves, see ``gamma``.
    kernel : str or callable, default="rbf"
        Kernel as in :class:`sklearn.kernel_ridge.KernelRidge`: a name from
        ``sklearn.metrics.pairwise.PAIRWISE_KERNEL_FUNCTIONS``, "precomputed" (X is then the
        n x n kernel matrix at fit and the n_test x n_train matrix at predict), or a callable.
    gamma : float, "auto" or None, default="auto"
        Kernel parameter, passed to ``pairwise_kernels`` as KernelRidge does; None means 1 /
        n_features for the kernels that take it. "auto" with alpha="auto" (regressor): for each
        gamma of a grid around 1 / (n_features sigma^2) (sigma^2 a robust feature variance; factors
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
        ``hyperparameter_scores_``. Classifier: gammas 1/4, 1 and 4 times 1 / (n_features sigma^2)
        (scikit-learn's gamma="scale" with the robust variance) and alphas 0.01, 0.1, 1, each pair
        scored by its stratified 3-fold out-of-fold error against the given labels (ties: the
        smaller gamma, then the smaller alpha with epsilon="auto"; the smaller alpha with a given
        epsilon). With epsilon="auto" the pair of least error on every row gives the probabilities
        that flag rows (see ``epsilon``), and the pair is chosen again with the flagged rows out of
        the fold fits and of the score; with a given epsilon, for each gamma a trimmed fit at alpha
        = 1 gives S, the fold models are fitted on the rows of S in the other folds, and the error
        counts every row. Not available with ``device`` (give alpha and gamma). With gamma="auto"
        and a kernel that takes a gamma (rbf, polynomial, ...), the classifier fits in units of
        each column's standard deviation (``feature_scale_``; ``feature_center_`` is 0: label
        noise leaves X clean, and the regressor's robust spread weighed skewed, mostly-zero
        columns such as digits' pixels far too much), so that raw columns give the fit of
        standardized ones; ``gamma_`` is in those units. A given gamma is in the units of X,
        which are kept.
    degree, coef0 : float, default=3, 1
        Parameters of the polynomial and sigmoid kernels.
    kernel_params : dict, default=None
        Extra keyword arguments of a callable kernel.
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
        Fourier features :class:`sklearn.kernel_approximation.RBFSampler` (kernel="rbf" only).
    dtype : {"float64", "float32"}, default="float64"
        Storage type of the n x m feature matrix when ``n_components`` is set; "float32"
        halves its memory. Sums and solves stay in float64.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept b, :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b`.
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
    refine : {"auto", "reject"} or None, default="auto"
        What follows the trimmed fit at a given epsilon. "auto" (the same as None for a
        classifier: epsilon="auto" flags by confident learning, and nothing follows it): a
        given epsilon is the fraction trimmed, as in the papers: k = ceil((1 - epsilon) n) rows
        kept (epsilon=0: every row), more only where half of every class needs more
        (ceil(n_c / 2) rows of each class c), also in the trimmed fits that choose alpha /
        gamma "auto". None: nothing, the papers' estimator. "reject": kept rows whose label gets
        a probability below 0.2 out of fold (from models fitted on the kept rows of the other
        folds) are trimmed too and the model refitted, until no kept row is implausible, half of
        every class kept: a given epsilon is then the least fraction trimmed (unless the class
        floors keep more), in the trimmed fits of alpha / gamma "auto" too; in memory only (a
        Dask array takes it with epsilon="auto" only, where nothing follows). "biweight" is the
        regressor's.
    smoothing : float, default=None
        Gradient solvers only: replace the hard subquantile by the weights
        sigmoid(smoothing * (threshold - loss_i)); larger is closer to the hard version.
    momentum : float, default=0.9
        Momentum coefficient mu of "momentum" and "nesterov".
    line_search : bool, default=False
        "gd" only: Armijo backtracking instead of the fixed step 1/L.
    n_iter_no_change : int, default=5
        See ``tol``.
    random_state : int, RandomState instance or None, default=None
        Seed of the "glorot" initialisation, of the random starts (``n_init``) and of the
        features (landmarks or random frequencies) when ``n_components`` is set.
    verbose : int, default=0
        Show a progress bar over the iterations when positive.
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
    loss : {"log", "auto", "hinge", "squared_hinge"}, default="log"
        The per-row loss (scikit-learn's names). "log": the binary or softmax cross-entropy of
        the papers. "hinge": a support vector machine per pair of classes, one-vs-one as
        libsvm (two classes: one SVM); the subquantile keeps the rows of smallest hinge loss
        summed over their class's pairs, so SubQ with it is a trimmed SVM. Each pair is
        solved exactly on the kept rows by libsvm (:class:`sklearn.svm.SVC` on the kernel
        matrix, C = 1 / (2 alpha); with features, ``SVC(kernel="linear")`` on them, O(n^2) per
        pair); alpha "auto" searches C = 0.1, 1, 10, 100 and gamma
        1/4 ... 4 times the "scale" gamma. ``predict_proba`` maps each pair's output through
        Platt's sigmoid fitted on out-of-fold outputs of the kept rows and couples the pairs
        (Wu, Lin & Weng 2004, as libsvm); ``predict`` is its most probable class.
        "squared_hinge": the squared hinge per pair, fitted by L-BFGS. "auto" with epsilon,
        alpha and gamma "auto": both the log loss and the hinge loss (its square with
        features) run the label-noise fit; with two classes the log loss is kept unless the
        hinge loss's out-of-fold error on the rows both keep is lower by more than two
        standard errors, with three or more the hinge loss unless the log loss's is (one SVM
        per pair sees only the flips between its two classes, where one softmax output must
        explain every row moved into its class); otherwise "auto" is the log loss (a given
        alpha is a penalty of the log loss; the papers' estimator). The default is the log
        loss: on ``bench_robust.py``'s 51 label-noise cells (3 seeds) "auto" is best or
        within 2 points against the peers in two more cells (39 against 37; see BENCHMARKS.md,
        "Classifier losses") with a smaller median gap to the oracle (0.023 against 0.025),
        but a larger worst gap (0.311 against 0.186), at six times the time. The hinge
        losses fit with the "alternating" solver, without ``radius`` or ``device``; on a
        Dask array, "squared_hinge" (as passes over the chunks of the features; Platt's
        sigmoids from the in-memory fit on the sample of rows that "auto" settings come
        from) and "auto", which is the log loss there.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    loss_ : str
        The loss fitted: "log", "hinge" or "squared_hinge" (the choice of loss="auto").
    noise_transition_ : ndarray of shape (n_classes, n_classes) or None
        Forward loss correction (Patrini et al. 2017): T[i, j], the estimated probability
        that a row of true class i was given label j, where the fit used it, else None. With
        epsilon, alpha and gamma "auto", the log loss and three or more classes, a fit whose
        estimated flips go mostly into one class (at least 15% of the rows flipped, at least
        40% of them into one given class; loss="auto" then keeps the log loss) fits every
        row by the loss -log (T^T p)_y of its given label y under the model's probabilities
        p of the true classes, instead of leaving the flagged rows out; the
        flagged rows stay flagged in ``inlier_mask_`` and every row has weight 1 in
        ``row_weights_``. ``predict_proba`` then estimates the true classes. Not with sample
        weights or duplicate rows (the weighted fit trims), nor on Dask.
    probA_, probB_ : ndarray of shape (n_pairs,)
        The hinge losses only: Platt's sigmoid of each pair's output f,
        P(second class | pair) = 1 / (1 + exp(A f + B)), pairs in libsvm's order (0, 1),
        (0, 2), ..., (1, 2), ...
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Coefficients w of :math:`f(x) = \sum_j w_j \kappa(x_j, x) + b` (exact model,
        n_components=None); one output per class (log loss, more than two classes) or per
        pair of classes (hinge losses), one for two classes.
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
        when X was. With gamma="auto", in the units the model was fitted in:
        ``(X - feature_center_) / feature_scale_``.
    feature_center_, feature_scale_ : ndarray of shape (n_features,)
        gamma="auto" only (see ``gamma``): 0 and each column's standard deviation (1 for a
        constant column); the model is fitted, and predicts, on ``(x - feature_center_) /
        feature_scale_``.
    inlier_mask_ : ndarray of bool, shape (n_samples,)
        True for the rows of the final fit (the k rows of the subquantile, less those
        ``refine="reject"``, given explicitly, dropped); False marks a suspected outlier.
        After a fit on Dask arrays this and the other per-row attributes
        (``outlier_scores_``, ``row_weights_``) are Dask arrays persisted on the cluster:
        compute or save them before it closes.
    outlier_scores_ : ndarray of shape (n_samples,)
        Final per-row training loss; larger is more suspect. Regression fits the targets
        divided by a power of two near their median magnitude and scales the model back
        (exact), so targets of any magnitude fit alike; losses of targets beyond ~1e154 are
        then inf here and in ``threshold_`` and ``objective_history_`` (the squares overflow
        float64), which does not affect the fit.
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
        The kernel fitted and the polynomial kernel's degree and coef0 (the parameters as
        given).
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
    SubquantileKernelRegressor : The same objective for the squared loss.
    robustkernel.SubquantileClassifier : The subquantile fit around any classifier.
    sklearn.svm.SVC : A kernel classifier fitted on every row.

    Notes
    -----
    The objective is the papers' subquantile risk [1]_, [2]_. The model is

    .. math::

        f(x) = \sum_{j=1}^n w_j \, \kappa(x_j, x) + b, \qquad
        \|f\|_{\mathcal{H}}^2 = w^\top K w,

    with :math:`\kappa` the kernel, :math:`K` its matrix on the training rows and :math:`b` the
    unpenalized intercept. With :math:`\ell_i(f)` the loss of row :math:`i`, for two classes the
    binary cross-entropy on logits :math:`\log(1 + e^{f(x_i)}) - y_i f(x_i)` with
    :math:`y_i \in \{0, 1\}`, for :math:`C` classes the softmax cross-entropy
    :math:`\log \sum_{c=1}^C e^{f_c(x_i)} - f_{y_i}(x_i)` (:math:`f` then has one output per class),
    and :math:`k = \lceil (1 - \varepsilon) n \rceil`, the fit minimizes

    .. math::

        F(f) = \sum_{i \in S(f)} \ell_i(f) + \alpha \|f\|_{\mathcal{H}}^2
        = \max_{t} \Bigl\{ k t - \sum_{i=1}^n \bigl(t - \ell_i(f)\bigr)_+ \Bigr\}
        + \alpha \|f\|_{\mathcal{H}}^2,

    where :math:`S(f)` holds the :math:`k` rows of smallest loss (ties to the lower row index), at
    least half of every class among them, and the maximizing :math:`t` is the :math:`k`-th smallest
    loss (``threshold_``). With ``n_components``, :math:`f(x) = z(x)^\top \theta + b` and the
    penalty is :math:`\alpha \|\theta\|^2`. :math:`F` is not convex; every solver here decreases it
    and stops at a point where the kept set is stable. "alternating" is the trimmed-fit iteration of
    least trimmed squares (C-steps [3]_) with exact refits, the papers' solvers are "gd", "momentum"
    and "nesterov".

    With the defaults the fit configures itself on the training rows: the flipped labels by
    confident learning on out-of-fold probabilities [4]_, alpha and gamma by out-of-fold errors
    against the given labels, chosen again without the flagged rows. No clean validation rows
    are needed.

    ``predict_proba`` is fitted to the kept rows, so its probabilities describe the clean
    labels, not the flipped ones: with 20% of the training labels flipped, the expected
    calibration error on clean test labels (10 bins) was 0.034 (breast cancer) and 0.035 (two
    moons) with the defaults, against 0.215 / 0.226 for the epsilon=0 fit and 0.195 / 0.194 for
    ``SVC(probability=True)``, whose probabilities absorb the flips; accuracy was 0.936 / 0.939
    against 0.942 / 0.961 and 0.947 / 0.944 (medians of 5 seeds,
    ``benchmarks/bench_calibration.py``).

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
    .. [4] C. G. Northcutt, L. Jiang and I. L. Chuang, "Confident Learning: Estimating
       Uncertainty in Dataset Labels", Journal of Artificial Intelligence Research 70,
       1373-1411, 2021 (the class thresholds, the confident joint and the pruning by the noise
       rate of each pair of classes behind epsilon="auto").

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from robustkernel import SubquantileKernelClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> y_noisy = y.copy()
    >>> flip = np.random.default_rng(0).choice(len(y), size=len(y) // 5, replace=False)
    >>> y_noisy[flip] = 1 - y_noisy[flip]
    >>> model = SubquantileKernelClassifier(epsilon=0.2, alpha=0.1).fit(X, y_noisy)
    >>> bool(model.score(X, y) > 0.9)
    True
    """

    _task = CLASSIFICATION
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **BaseSubquantile._parameter_constraints,
        "loss": [StrOptions({"auto", "log", *HINGE_LOSSES})],
    }

    __init__ = extended_init(BaseSubquantile, added={"loss": ("log", "str")})

    def _pairwise_calibration(self) -> PairwisePlatt | None:
        """Platt's sigmoids of the pairs where the hinge losses were fitted, else None."""
        if getattr(self, "loss_", "log") == "log":
            return None
        return PairwisePlatt(np.atleast_1d(self.probA_), np.atleast_1d(self.probB_))

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SubquantileKernelClassifier:
        """Fit the classifier; rows outside the final subquantile are flagged.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, or the n x n kernel matrix for kernel="precomputed". Sparse rows
            (CSR, CSC) fit as the dense array does, wherever the kernel takes them. A
            ``dask.array`` (with y one too) is fitted as passes over its chunks, never held in
            one process: see the user guide, section "9. Data larger than a machine: one fit
            on a Dask cluster".
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights: the subquantile keeps the rows of smallest loss until their weight
            reaches (1 - epsilon) of the total (integer weights fit as repeated rows; rows of
            weight 0 are left out of the fit and flagged), with every configuration. The fit
            runs on the distinct rows, each weighing its copies; epsilon, alpha and gamma "auto"
            and the trim of refine="reject" are chosen by the fit without weights on them,
            then the weighted fit runs at them (the "alternating" solver; not with
            refine="biweight" or device).

        Returns
        -------
        self : SubquantileKernelClassifier
            The fitted estimator.
        """
        return super().fit(X, y, sample_weight)

    def _row_losses(self, X: Any, y: np.ndarray) -> np.ndarray:
        position = np.searchsorted(self.classes_, y).clip(0, self.classes_.size - 1)
        known = self.classes_[position] == y
        if self.loss_ != "log":  # the hinge losses of the pairs
            one_hot = np.eye(max(self.classes_.size, 2))[position]
            Y = one_hot[:, 1:] if self.classes_.size == 2 else one_hot
            losses = HingeLoss.named(self.loss_).loss(self._decision(X), Y)
            return np.where(known, losses, np.inf)
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return np.where(known, -np.log(proba[np.arange(y.shape[0]), position]), np.inf)

