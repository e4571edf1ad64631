"""Mathematical properties of the Subquantile core, checked against independent computations."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy.linalg import lstsq
from sklearn.datasets import make_friedman1
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel._fractions import n_kept
from robustkernel._kernel_model.losses import BinaryLogLoss, SoftmaxLoss, SquaredLoss
from robustkernel.corruption import contaminated_split
from robustkernel.subquantile._solve.objective import FeatureProblem, Problem
from robustkernel.subquantile._solve.refits import LbfgsSubsetFitter, RidgeSubsetFitter, SubsetFit
from robustkernel.subquantile._solve.solvers import _gradient, alternating
from robustkernel.trimming import ClassFloors, subquantile


@pytest.mark.parametrize(
    ("kernel", "params"),
    [
        ("rbf", {"gamma": 0.7}),
        ("polynomial", {"degree": 3, "coef0": 1.0, "gamma": 0.5}),
        ("linear", {}),
        ("laplacian", {"gamma": 0.3}),
    ],
)
def test_epsilon_zero_equals_kernel_ridge(regression_data, kernel, params):
    X, y = regression_data
    reference = KernelRidge(alpha=0.3, kernel=kernel, **params).fit(X, y)
    model = SubquantileKernelRegressor(
        epsilon=0.0, alpha=0.3, kernel=kernel, fit_intercept=False, **params
    ).fit(X, y)
    X_new = np.random.default_rng(1).uniform(-2, 2, size=(50, 2))
    np.testing.assert_allclose(
        model.predict(X_new), reference.predict(X_new), rtol=1e-8, atol=1e-10
    )
    np.testing.assert_allclose(model.dual_coef_, reference.dual_coef_, rtol=1e-8, atol=1e-10)
    assert model.inlier_mask_.all()


def test_epsilon_zero_precomputed_equals_kernel_ridge(regression_data):
    X, y = regression_data
    X_new = np.random.default_rng(1).uniform(-2, 2, size=(30, 2))
    K, K_new = rbf_kernel(X, X, gamma=0.5), rbf_kernel(X_new, X, gamma=0.5)
    reference = KernelRidge(alpha=0.1, kernel="precomputed").fit(K, y)
    model = SubquantileKernelRegressor(
        epsilon=0.0, alpha=0.1, kernel="precomputed", fit_intercept=False
    ).fit(K, y)
    np.testing.assert_allclose(model.predict(K_new), reference.predict(K_new), rtol=1e-8)


def test_epsilon_zero_multioutput_equals_kernel_ridge(regression_data):
    X, y = regression_data
    Y = np.column_stack([y, X[:, 0] ** 2])
    reference = KernelRidge(alpha=0.2, kernel="rbf").fit(X, Y)
    model = SubquantileKernelRegressor(
        epsilon=0.0, alpha=0.2, kernel="rbf", gamma=None, fit_intercept=False
    )
    model.fit(X, Y)
    assert model.predict(X).shape == Y.shape
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-8)


def test_intercept_equals_direct_least_squares(regression_data):
    """With the intercept, minimize ||y - K a - b 1||^2 + alpha a^T K a by an augmented lstsq."""
    X, y = regression_data
    y = y + 3.0
    alpha = 0.2
    K = rbf_kernel(X, X, gamma=0.5)
    L = np.linalg.cholesky(K + 1e-12 * np.eye(len(y)))
    # rows [K 1; sqrt(alpha) L^T 0] against [y; 0]
    design = np.block([[K, np.ones((len(y), 1))], [np.sqrt(alpha) * L.T, np.zeros((len(y), 1))]])
    solution = lstsq(design, np.concatenate([y, np.zeros(len(y))]))[0]
    model = SubquantileKernelRegressor(epsilon=0.0, alpha=alpha, kernel="rbf", gamma=0.5)
    model.fit(X, y)
    np.testing.assert_allclose(model.intercept_, solution[-1], rtol=1e-6)
    np.testing.assert_allclose(model.predict(X), design[: len(y)] @ solution, rtol=1e-6, atol=1e-8)


def test_n_kept_and_subquantile_ties():
    assert n_kept(10, 0.2) == 8
    assert n_kept(11, 0.2) == 9  # ceil(8.8)
    assert n_kept(7, 0.0) == 7
    losses = np.array([3.0, 1.0, 1.0, 2.0, 1.0])
    mask, threshold = subquantile(losses, 2)
    np.testing.assert_array_equal(mask, [False, True, True, False, False])  # ties by row index
    assert threshold == 1.0


def _contaminated(n: int = 150, eps: float = 0.2, seed: int = 0):
    from conftest import make_regression

    X, y = make_regression(n, seed)
    rng = np.random.default_rng(seed + 100)
    bad = rng.choice(n, size=int(eps * n), replace=False)
    y = y.copy()
    y[bad] = rng.normal(5.0, np.sqrt(5.0), size=bad.size)
    return X, y, bad


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_alternating_objective_never_increases_and_keeps_k(fit_intercept):
    X, y, _ = _contaminated()
    model = SubquantileKernelRegressor(
        epsilon=0.2, alpha=0.05, kernel="rbf", fit_intercept=fit_intercept, init="zeros"
    ).fit(X, y)
    history = model.objective_history_
    assert len(history) == model.n_iter_ + 1 >= 2
    assert np.all(np.diff(history) <= 1e-10 * np.abs(history[:-1]))
    assert model.inlier_mask_.sum() == n_kept(len(y), 0.2)
    assert model.converged_


@pytest.mark.parametrize("n_classes", [2, 3])
def test_alternating_classifier_objective_never_increases(n_classes):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 2))
    y = (
        (np.arctan2(X[:, 1], X[:, 0]) > 0).astype(int)
        if n_classes == 2
        else rng.integers(0, 3, 120)
    )
    # refine=None: the papers' alternating solver alone (with 3 random classes, out-of-fold
    # rejection rightly drops most rows)
    model = SubquantileKernelClassifier(epsilon=0.15, alpha=0.1, init="zeros", refine=None).fit(
        X, y
    )
    history = model.objective_history_
    assert np.all(np.diff(history) <= 1e-8 * np.abs(history[:-1]))
    assert model.inlier_mask_.sum() == n_kept(120, 0.15)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_rough_then_exact_alternating_reaches_the_exact_fixed_point(n_classes):
    """Intermediate subsets fitted to a loose L-BFGS tolerance, then polished: the same kept
    rows and objective as exact fits throughout, objective never increasing."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 3))
    labels = np.digitize(X[:, 0] + 0.5 * X[:, 1], np.linspace(-1, 1, n_classes - 1))
    labels[:20] = (labels[:20] + 1) % n_classes
    Y = labels[:, None].astype(float) if n_classes == 2 else np.eye(n_classes)[labels]
    loss = BinaryLogLoss() if n_classes == 2 else SoftmaxLoss()
    problem = Problem(
        K=rbf_kernel(X, gamma=0.5), Y=Y, loss=loss, alpha=0.05, k=n_kept(150, 0.15),
        fit_intercept=True,
    )
    fit_subset = SubsetFit(LbfgsSubsetFitter(problem, tol=1e-9), problem)
    zeros = np.zeros((150, Y.shape[1])), np.zeros(Y.shape[1])
    exact = alternating(problem, fit_subset, *zeros, max_iter=100)
    rough = alternating(problem, fit_subset, *zeros, max_iter=100, rough=fit_subset.loosened())
    np.testing.assert_array_equal(rough.evaluation.mask, exact.evaluation.mask)
    assert rough.evaluation.objective == pytest.approx(exact.evaluation.objective, rel=1e-9)
    history = np.asarray(rough.history)
    assert np.all(np.diff(history) <= 1e-9 * np.abs(history[:-1]))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_preconditioned_feature_lbfgs_fit_equals_sklearn_logistic_regression(n_classes):
    """On features (m = 120: the top eigenvectors of Z^T Z precondition L-BFGS), the fit on
    the kept rows is scikit-learn's LogisticRegression on those rows with C = 1 / (2 alpha)
    (multinomial with every class's coefficients, like softmax here) and an unpenalized
    intercept, both solved tightly."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(11)
    n, m, alpha = 400, 120, 0.05
    Z = rng.normal(size=(n, m)) * np.linspace(3.0, 0.1, m)  # an ill-conditioned design
    labels = np.digitize(Z[:, 0] + Z[:, 1], np.linspace(-1, 1, n_classes - 1))
    labels[:40] = (labels[:40] + 1) % n_classes
    Y = labels[:, None].astype(float) if n_classes == 2 else np.eye(n_classes)[labels]
    loss = BinaryLogLoss() if n_classes == 2 else SoftmaxLoss()
    problem = FeatureProblem(Y=Y, loss=loss, alpha=alpha, k=n, fit_intercept=True, Z=Z)
    fitter = LbfgsSubsetFitter(problem, max_iter=10_000, tol=1e-10)
    assert fitter._top is not None
    kept = rng.random(n) < 0.8
    theta, b = fitter.fit(kept, np.zeros((m, Y.shape[1])), np.zeros(Y.shape[1]), alpha)
    reference = LogisticRegression(C=1.0 / (2.0 * alpha), tol=1e-12, max_iter=100_000)
    reference.fit(Z[kept], labels[kept])
    coef, intercept = reference.coef_.T, reference.intercept_
    if n_classes == 2:
        coef, intercept = coef.reshape(m, 1), intercept.reshape(1)

    def objective(theta: np.ndarray, b: np.ndarray) -> float:
        return problem.subset_objective(theta, b, kept)

    # the same minimum (to 1e-11 relative: the minimizer itself is flat to about 1e-5)
    assert objective(theta, b) == pytest.approx(objective(coef, intercept), rel=1e-10)
    ours, theirs = Z @ theta + b, Z @ coef + intercept
    if n_classes > 2:  # softmax outputs are defined up to a constant per row
        ours = ours - ours.mean(axis=1, keepdims=True)
        theirs = theirs - theirs.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(ours, theirs, atol=1e-3)


def _problem_for(loss, n_outputs: int, seed: int = 0, fit_intercept: bool = True) -> Problem:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    K = rbf_kernel(X, gamma=0.4)
    if isinstance(loss, SquaredLoss):
        Y = rng.normal(size=(40, n_outputs))
    elif isinstance(loss, BinaryLogLoss):
        Y = rng.integers(0, 2, size=(40, 1)).astype(float)
    else:
        Y = np.eye(n_outputs)[rng.integers(0, n_outputs, 40)]
    return Problem(K=K, Y=Y, loss=loss, alpha=0.3, k=30, fit_intercept=fit_intercept)


@pytest.mark.parametrize(
    ("loss", "n_outputs"),
    [(SquaredLoss(), 1), (SquaredLoss(), 2), (BinaryLogLoss(), 1), (SoftmaxLoss(), 3)],
)
def test_rkhs_gradient_matches_finite_differences(loss, n_outputs):
    """<grad F, h>_H equals the directional derivative of F along h = sum_j v_j k(x_j, .)."""
    problem = _problem_for(loss, n_outputs)
    rng = np.random.default_rng(7)
    n, C = problem.n_samples, problem.n_outputs
    w, b = 0.3 * rng.normal(size=(n, C)), rng.normal(size=C)
    evaluation = problem.evaluate(w, b)
    mask = evaluation.mask  # a fixed subset
    grad_w = _gradient(problem, w, evaluation, smoothing=None)
    v = rng.normal(size=(n, C))
    analytic = np.sum(grad_w * (problem.K @ v))
    h = 1e-6
    plus = problem.subset_objective(w + h * v, b, mask)
    minus = problem.subset_objective(w - h * v, b, mask)
    numeric = (plus - minus) / (2 * h)
    assert analytic == pytest.approx(numeric, rel=1e-6)


@pytest.mark.parametrize(
    ("loss", "n_outputs"),
    [(SquaredLoss(), 2), (BinaryLogLoss(), 1), (SoftmaxLoss(), 4)],
)
def test_fused_loss_and_gradient_equal_the_separate_ones(loss, n_outputs):
    """One pass (the L-BFGS refits) equals ``loss`` / ``gradient`` (scipy's logsumexp, expit,
    softmax), also at logits of +-800 where a naive exponential overflows."""
    rng = np.random.default_rng(3)
    F = 30.0 * rng.normal(size=(200, n_outputs))
    F[0], F[1] = 800.0, -800.0
    Y = _problem_for(loss, n_outputs).Y
    Y = np.vstack([Y] * 5)
    with np.errstate(over="raise"):
        losses, gradient = loss.loss_and_gradient(F, Y)
    np.testing.assert_allclose(losses, loss.loss(F, Y), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(gradient, loss.gradient(F, Y), rtol=1e-13, atol=1e-15)
    assert np.all(np.isfinite(losses)) and np.all(np.isfinite(gradient))


@pytest.mark.parametrize(
    ("loss", "n_outputs"),
    [(SquaredLoss(), 1), (SquaredLoss(), 2), (BinaryLogLoss(), 1), (SoftmaxLoss(), 3)],
)
def test_best_intercept_minimizes_the_loss(loss, n_outputs):
    """The exact intercept of the gradient solvers: no direction of b lowers the summed loss."""
    problem = _problem_for(loss, n_outputs, seed=4)
    F = 2.0 * np.random.default_rng(8).normal(size=(problem.n_samples, n_outputs))
    b = loss.best_intercept(F, problem.Y, np.zeros(n_outputs))

    def total(intercept):
        return loss.loss(F + intercept, problem.Y).sum()

    h = 1e-5
    for direction in np.eye(n_outputs):
        slope = (total(b + h * direction) - total(b - h * direction)) / (2 * h)
        assert abs(slope) < 1e-6 * problem.n_samples
        assert total(b) <= total(b + 1e-3 * direction)
        assert total(b) <= total(b - 1e-3 * direction)


def test_schur_complement_subset_solve_equals_direct_solve():
    problem = _problem_for(SquaredLoss(), 1, seed=2)
    fitter = RidgeSubsetFitter(problem)
    rng = np.random.default_rng(5)
    for _ in range(4):  # successive subsets reuse cached columns of (K + alpha I)^-1
        mask = rng.random(problem.n_samples) < 0.9
        w, b = fitter.fit(mask, None, None, problem.alpha)
        K_SS = problem.K[np.ix_(mask, mask)]
        y_S = problem.Y[mask, 0]
        A = K_SS + problem.alpha * np.eye(mask.sum())
        Ai_y, Ai_1 = np.linalg.solve(A, y_S), np.linalg.solve(A, np.ones(mask.sum()))
        b_direct = Ai_y.sum() / Ai_1.sum()
        np.testing.assert_allclose(b[0], b_direct, rtol=1e-9)
        np.testing.assert_allclose(w[mask, 0], Ai_y - b_direct * Ai_1, rtol=1e-8, atol=1e-10)
        assert np.all(w[~mask] == 0)


@pytest.mark.parametrize("solver", ["gd", "momentum", "nesterov"])
def test_gradient_solvers_reach_the_alternating_solution(solver):
    X, y, _ = _contaminated(n=80)
    common = {"epsilon": 0.2, "alpha": 2.0, "kernel": "rbf", "gamma": 0.3}
    reference = SubquantileKernelRegressor(**common).fit(X, y)
    model = SubquantileKernelRegressor(**common, solver=solver, tol=1e-12, max_iter=20000).fit(X, y)
    np.testing.assert_array_equal(model.inlier_mask_, reference.inlier_mask_)
    final, best = model.objective_history_[-1], reference.objective_history_[-1]
    assert abs(final - best) <= 1e-3 * best


def test_line_search_gd_decreases_objective():
    X, y, _ = _contaminated(n=80)
    common = {
        "epsilon": 0.2, "alpha": 0.5, "kernel": "rbf", "solver": "gd", "init": "zeros",
        "max_iter": 300,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        searched = SubquantileKernelRegressor(**common, line_search=True).fit(X, y)
        fixed = SubquantileKernelRegressor(**common).fit(X, y)
    history = searched.objective_history_
    assert np.all(np.diff(history) <= 1e-12 * np.abs(history[:-1]))
    # longer accepted steps: at least as far down after the same number of iterations
    assert searched.objective_history_[-1] <= fixed.objective_history_[-1]


def test_smoothing_approaches_the_hard_subquantile():
    """Weights sigmoid(s (t - l_i)) tend to the indicator of S as s grows.

    The row at the threshold itself keeps weight 1/2 for every s, so the limit differs from the
    hard fit by that half row; the distance must shrink with s and then level off.
    """
    X, y, _ = _contaminated(n=80)
    common = {
        "epsilon": 0.2, "alpha": 2.0, "kernel": "rbf", "gamma": 0.3, "solver": "nesterov",
        "tol": 1e-12,
    }
    hard = SubquantileKernelRegressor(**common, max_iter=5000).fit(X, y)
    distances = []
    for smoothing in [1.0, 10.0, 1e4]:
        smooth = SubquantileKernelRegressor(**common, smoothing=smoothing, max_iter=5000).fit(X, y)
        np.testing.assert_array_equal(hard.inlier_mask_, smooth.inlier_mask_)
        distances.append(np.abs(smooth.predict(X) - hard.predict(X)).max())
    assert distances[0] > distances[1] > distances[2]
    assert distances[2] < distances[0] / 3


@pytest.mark.parametrize("solver", ["alternating", "gd"])
def test_radius_constraint(solver):
    X, y, _ = _contaminated(n=80)
    free = SubquantileKernelRegressor(epsilon=0.2, alpha=0.05, kernel="rbf", gamma=0.5)
    free.fit(X, y)
    K = rbf_kernel(X, gamma=0.5)
    free_norm = np.sqrt(free.dual_coef_ @ K @ free.dual_coef_)
    radius = 0.5 * free_norm
    model = SubquantileKernelRegressor(
        epsilon=0.2, alpha=0.05, kernel="rbf", gamma=0.5, radius=radius, solver=solver,
        max_iter=3000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    norm = np.sqrt(model.dual_coef_ @ K @ model.dual_coef_)
    assert norm <= radius * (1 + 1e-9)
    if solver == "alternating":  # the constraint binds at the optimum of a problem it cuts
        assert norm == pytest.approx(radius, rel=1e-6)


def test_glorot_init_is_deterministic_given_random_state():
    X, y, _ = _contaminated(n=60)
    kwargs = {
        "epsilon": 0.2, "kernel": "rbf", "init": "glorot", "solver": "gd", "max_iter": 5,
        "random_state": 4,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = SubquantileKernelRegressor(**kwargs).fit(X, y).dual_coef_
        second = SubquantileKernelRegressor(**kwargs).fit(X, y).dual_coef_
        other = SubquantileKernelRegressor(**{**kwargs, "random_state": 5}).fit(X, y).dual_coef_
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(first, other)


@pytest.mark.parametrize("seed", [0, 1])
def test_near_zero_start_trims_shifted_labels_that_a_weak_ridge_erm_start_follows(seed):
    # 40% of the labels redrawn from N(5, 5) (000 Table 1). With a weak ridge the ERM start fits
    # them, and the trimmed refits keep them; from a near-zero f the first trim drops the
    # largest |y|, which are mostly the corrupted ones.
    X, y = make_friedman1(400, noise=0.5, random_state=seed)
    split = contaminated_split(X, y, "label", 0.4, random_state=seed)
    kwargs = {"epsilon": 0.4, "alpha": 0.01, "kernel": "rbf", "gamma": 0.1, "random_state": 0}

    def test_rmse(model):
        return np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2))

    erm = SubquantileKernelRegressor(init="erm", **kwargs).fit(split.X_train, split.y_train)
    glorot = SubquantileKernelRegressor(init="glorot", **kwargs).fit(split.X_train, split.y_train)
    clean = ~split.corrupted_mask
    oracle = SubquantileKernelRegressor(**{**kwargs, "epsilon": 0.0}).fit(
        split.X_train[clean], split.y_train[clean]
    )
    assert test_rmse(erm) > 3 * test_rmse(oracle)
    assert test_rmse(glorot) < 0.5 * test_rmse(erm)
    assert (~glorot.inlier_mask_)[split.corrupted_index].mean() > 0.8


def test_array_init_and_convergence_warning():
    X, y, _ = _contaminated(n=60)
    with pytest.warns(Warning, match="max_iter"):
        model = SubquantileKernelRegressor(
            epsilon=0.2, kernel="rbf", solver="gd", init=np.zeros(60), max_iter=3
        ).fit(X, y)
    assert not model.converged_
    assert model.n_iter_ == 3


def _brute_force_constrained_subquantile(losses, labels, minimum, k):
    """The kept set of least total loss with >= minimum[c] rows of each class c, by search."""
    best, best_set = np.inf, None
    n = losses.size
    for size in range(k, n + 1):
        for rows in itertools.combinations(range(n), size):
            kept = np.zeros(n, dtype=bool)
            kept[list(rows)] = True
            if np.all(np.bincount(labels[kept], minlength=minimum.size) >= minimum):
                if losses[kept].sum() < best - 1e-12:
                    best, best_set = losses[kept].sum(), kept
        if best_set is not None:
            return best_set
    raise AssertionError("no feasible set")


@pytest.mark.parametrize("seed", range(5))
def test_class_floors_keep_the_least_loss_set_that_meets_them(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=9)
    labels[:3] = [0, 1, 2]
    losses = rng.exponential(size=9) + 3.0 * (labels == 2)  # class 2 costs most
    floors = ClassFloors(labels, (np.bincount(labels, minlength=3) + 1) // 2)
    for k in (3, 5, 7):
        mask, _ = subquantile(losses, k, floors)
        expected = _brute_force_constrained_subquantile(losses, labels, floors.minimum, k)
        np.testing.assert_array_equal(mask, expected)


def test_epsilon_auto_keeps_every_class_of_digits_with_random_labels():
    """A misfit (features in [0, 1], alpha = 1) gives whole classes low probabilities; 30%
    random labels then drove epsilon="auto" to trim classes away."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(6)
    rows = rng.choice(len(y), 600, replace=False)
    X, y = X[rows] / 16.0, y[rows].copy()
    flipped = rng.choice(600, 180, replace=False)
    y[flipped] = rng.integers(0, 10, size=180)
    model = SubquantileKernelClassifier(epsilon="auto").fit(X, y)
    kept = np.bincount(y[model.inlier_mask_], minlength=10)
    assert np.all(kept >= (np.bincount(y, minlength=10) + 1) // 2)
    assert np.unique(model.predict(X)).size == 10
