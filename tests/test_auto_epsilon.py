"""epsilon="auto": the estimated fraction, and the test error it leads to, against the truth.

Regression: label noise N(5, 5) on a smooth function; the estimate must be within 0.05 of the
true fraction, the test RMSE at most 1.1 x Oracle ERM (the same estimator with epsilon=0 on the
clean rows), and on clean data at most 5% worse than sklearn's KernelRidge.

Classification: labels flipped on a two-class problem with a curved boundary. Flips next to the
boundary cannot be told from clean rows, so the tolerances reached are looser: the estimate
within 0.07 of the truth, and the test error at most 0.03 above Oracle ERM for eps <= 0.2.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import accuracy_score, root_mean_squared_error
from sklearn.metrics.pairwise import rbf_kernel

from conftest import make_regression
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel._kernel_model.losses import SquaredLoss
from robustkernel.corruption import contaminated_split, corrupt
from robustkernel.subquantile._automatic.auto_epsilon import (
    _feature_residual_variance_factors,
    _kernel_studentized_losses,
)
from robustkernel.subquantile._solve.objective import Evaluation, FeatureProblem, Problem
from robustkernel.trimming import MAX_ROUNDS

EPSILONS = (0.0, 0.05, 0.1, 0.2, 0.3)
REGRESSION_PARAMS = {"alpha": 0.1, "gamma": 1.0}
CLASSIFICATION_PARAMS = {"alpha": 0.1, "gamma": 1.0}


def make_classification(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two classes separated by the curve x2 = sin(1.5 x1), no label noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, (X[:, 1] > np.sin(1.5 * X[:, 0])).astype(int)


def _oracle(estimator, X, y, corrupted_index):
    clean = np.setdiff1d(np.arange(len(y)), corrupted_index)
    return estimator(epsilon=0.0, **_params(estimator)).fit(X[clean], y[clean])


def _params(estimator) -> dict[str, float]:
    if estimator is SubquantileKernelRegressor:
        return REGRESSION_PARAMS
    return CLASSIFICATION_PARAMS


@pytest.fixture(scope="module")
def regression_test_set():
    return make_regression(1000, seed=99)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_auto_epsilon_regression(epsilon, regression_test_set):
    X, y = make_regression(200, seed=0)
    bad = corrupt(X, y, "label", epsilon, random_state=0)
    model = SubquantileKernelRegressor(epsilon="auto", **REGRESSION_PARAMS).fit(bad.X, bad.y)
    assert abs(model.epsilon_ - epsilon) <= 0.05

    X_test, y_test = regression_test_set
    rmse = root_mean_squared_error(y_test, model.predict(X_test))
    oracle = _oracle(SubquantileKernelRegressor, X, y, bad.index)
    assert rmse <= 1.1 * root_mean_squared_error(y_test, oracle.predict(X_test))
    if epsilon == 0.0:
        ridge = KernelRidge(kernel="rbf", **REGRESSION_PARAMS).fit(X, y - y.mean())
        ridge_rmse = root_mean_squared_error(y_test, ridge.predict(X_test) + y.mean())
        assert rmse <= 1.05 * ridge_rmse


def test_auto_epsilon_regression_flags_the_corrupted_rows():
    X, y = make_regression(200, seed=1)
    bad = corrupt(X, y, "label", 0.2, random_state=1)
    model = SubquantileKernelRegressor(epsilon="auto", **REGRESSION_PARAMS).fit(bad.X, bad.y)
    flagged = np.flatnonzero(~model.inlier_mask_)
    assert np.intersect1d(flagged, bad.index).size >= 0.95 * bad.index.size
    assert model.epsilon_ == pytest.approx(flagged.size / len(y))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_auto_epsilon_classification(epsilon):
    X, y = make_classification(200, seed=1)
    X_test, y_test = make_classification(1000, seed=99)
    bad = corrupt(X, y, "flip", epsilon, random_state=1)
    model = SubquantileKernelClassifier(epsilon="auto", **CLASSIFICATION_PARAMS).fit(bad.X, bad.y)
    # Flips near the decision boundary are undetectable: the estimate falls short at high eps.
    assert abs(model.epsilon_ - epsilon) <= (0.07 if epsilon <= 0.2 else 0.1) + 1e-12

    error = 1.0 - accuracy_score(y_test, model.predict(X_test))
    oracle = _oracle(SubquantileKernelClassifier, X, y, bad.index)
    oracle_error = 1.0 - accuracy_score(y_test, oracle.predict(X_test))
    if epsilon <= 0.2:
        assert error <= oracle_error + 0.03


def test_auto_epsilon_classifier_keeps_a_minority_class():
    """The first trim must not swallow the smaller class (breast cancer: 37% malignant)."""
    X, y = load_breast_cancer(return_X_y=True)
    split = contaminated_split(X, y, "flip", 0.1, random_state=0)
    model = SubquantileKernelClassifier(epsilon="auto", alpha=1.0).fit(split.X_train, split.y_train)
    oracle = SubquantileKernelClassifier(epsilon=0.0, alpha=1.0).fit(
        split.X_train_clean, split.y_train_clean
    )
    assert set(model.predict(split.X_test)) == {0, 1}
    accuracy = model.score(split.X_test, split.y_test)
    assert accuracy >= oracle.score(split.X_test, split.y_test) - 0.03
    assert 0.0 < model.epsilon_ <= 0.15


def _ridge_evaluation(K, Y, mask, alpha, fit_intercept):
    """An Evaluation at kernel ridge on the rows ``mask``, by its bordered linear system."""
    k = int(mask.sum())
    border = np.ones((k, 1)) if fit_intercept else np.zeros((k, 1))
    corner = np.zeros((1, 1)) if fit_intercept else np.ones((1, 1))
    A = np.block([[K[np.ix_(mask, mask)] + alpha * np.eye(k), border], [border.T, corner]])
    solution = np.linalg.solve(A, np.vstack([Y[mask], np.zeros((1, Y.shape[1]))]))
    F = K[:, mask] @ solution[:-1] + solution[-1]
    losses = np.sum((Y - F) ** 2, axis=1)
    return Evaluation(
        F=F, Kw=F - solution[-1], losses=losses, mask=mask, threshold=0.0, objective=0.0
    )


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_feature_leverages_equal_the_kernel_leverages_of_z_zt(fit_intercept):
    # Ridge on features Z is kernel ridge with K = Z Z^T: the studentized losses of the O(n m^2)
    # feature formula must equal those of the kernel formula (block inverse of K_SS + alpha I,
    # Schur complements for the trimmed rows); random rows have no near-duplicates.
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(60, 8))
    Y = rng.normal(size=(60, 1))
    mask = rng.random(60) < 0.7
    common = {"Y": Y, "loss": SquaredLoss(), "alpha": 0.3, "k": int(mask.sum())}
    common["fit_intercept"] = fit_intercept
    evaluation = _ridge_evaluation(Z @ Z.T, Y, mask, 0.3, fit_intercept)
    kernel = _kernel_studentized_losses(Problem(K=Z @ Z.T, **common), evaluation)
    factors = _feature_residual_variance_factors(FeatureProblem(Z=Z, **common), mask)
    np.testing.assert_allclose(evaluation.losses * factors, kernel, rtol=1e-8)


def test_a_cluster_of_near_duplicates_is_scored_without_itself():
    # 8 copies of one point (jittered by 1e-4) with targets 3 above the function: each kept copy
    # must be scored by the residual of the fit on the other rows (a refit) over its predictive
    # variance 1 + (k_gg - k_gR (K_RR + alpha I)^-1 k_Rg) / alpha (no intercept).
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(80, 2))
    X[:8] = X[0] + 1e-4 * rng.normal(size=(8, 2))
    Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(80, 1))
    Y[:8] += 3.0
    K = rbf_kernel(X, gamma=0.5)
    alpha, mask = 0.05, np.ones(80, dtype=bool)
    problem = Problem(K=K, Y=Y, loss=SquaredLoss(), alpha=alpha, k=80, fit_intercept=False)
    losses = _kernel_studentized_losses(problem, _ridge_evaluation(K, Y, mask, alpha, False))
    group, rest = np.arange(8), np.arange(8, 80)
    coefficients = np.linalg.solve(K[np.ix_(rest, rest)] + alpha * np.eye(72), Y[rest])
    deleted = Y[group] - K[np.ix_(group, rest)] @ coefficients
    posterior = K[np.ix_(group, group)] - K[np.ix_(group, rest)] @ np.linalg.solve(
        K[np.ix_(rest, rest)] + alpha * np.eye(72), K[np.ix_(rest, group)]
    )
    expected = deleted[:, 0] ** 2 / (1.0 + np.diag(posterior) / alpha)
    np.testing.assert_allclose(losses[group], expected, rtol=1e-6)
    assert expected.min() > 10 * np.median(losses[rest])


def test_auto_epsilon_flags_a_cluster_sharing_a_wrong_target():
    # 15% of the rows copied (jitter 0.01) onto one point with the target there + 3: each copy is
    # explained by the others, so only deleting the cluster together exposes it.
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(400, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 + 0.1 * rng.normal(size=400)
    X[:60] = X[60] + 0.01 * rng.normal(size=(60, 2))
    y[:60] = y[60] + 3.0
    model = SubquantileKernelRegressor().fit(X, y)
    assert not model.inlier_mask_[:60].any()
    assert model.inlier_mask_[60:].mean() >= 0.97


def test_auto_epsilon_with_nystroem_features(regression_test_set):
    X, y = make_regression(400, seed=0)
    bad = corrupt(X, y, "label", 0.2, random_state=0)
    model = SubquantileKernelRegressor(
        epsilon="auto", n_components=100, random_state=0, **REGRESSION_PARAMS
    ).fit(bad.X, bad.y)
    assert abs(model.epsilon_ - 0.2) <= 0.05
    flagged = np.flatnonzero(~model.inlier_mask_)
    assert np.intersect1d(flagged, bad.index).size >= 0.95 * bad.index.size
    X_test, y_test = regression_test_set
    oracle = _oracle(SubquantileKernelRegressor, X, y, bad.index)
    rmse = root_mean_squared_error(y_test, model.predict(X_test))
    assert rmse <= 1.1 * root_mean_squared_error(y_test, oracle.predict(X_test))


def test_auto_epsilon_classifier_with_nystroem_features():
    X, y = make_classification(300, seed=1)
    bad = corrupt(X, y, "flip", 0.1, random_state=1)
    model = SubquantileKernelClassifier(
        epsilon="auto", n_components=100, random_state=0, **CLASSIFICATION_PARAMS
    ).fit(bad.X, bad.y)
    exact = SubquantileKernelClassifier(epsilon="auto", **CLASSIFICATION_PARAMS).fit(bad.X, bad.y)
    assert abs(model.epsilon_ - 0.1) <= 0.07
    assert abs(model.epsilon_ - exact.epsilon_) <= 0.02


@pytest.mark.parametrize(("step", "rounds"), [(1, 2), (9, MAX_ROUNDS)])
def test_epsilon_rounds_stop_once_the_flagged_rows_settle(monkeypatch, step, rounds):
    """epsilon="auto" refits until the flagged set moves by at most SETTLED_FRACTION of the
    rows (1% of 200 rows: 2): a set that gains one row a round stops at the second round; one
    that gains 9 rows (4.5%) runs all MAX_ROUNDS rounds."""
    calls = []

    def creeping_flags(problem, evaluation):
        flagged = np.zeros(problem.n_samples, dtype=bool)
        flagged[: 10 + step * len(calls)] = True
        calls.append(1)
        return flagged

    task = replace(SubquantileKernelRegressor._task, outlier_flags=creeping_flags)
    monkeypatch.setattr(SubquantileKernelRegressor, "_task", task)
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = np.sin(X[:, 0])
    SubquantileKernelRegressor(kernel="rbf", alpha=0.1, gamma=0.5, refine=None).fit(X, y)
    assert len(calls) == rounds
