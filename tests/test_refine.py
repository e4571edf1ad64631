"""The biweight M-step after the trimmed fit (``refine="biweight"``): its weighted kernel ridge
and leave-one-out residuals against brute force, and the bounded influence it buys."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from conftest import PAPERS
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel._kernel_model.losses import SquaredLoss
from robustkernel.subquantile._solve.objective import FeatureProblem, Problem
from robustkernel.subquantile._solve.refine import biweight, weighted_ridge


def _weighted_fit_by_bordered_system(K, y, weights, alpha, design=None):
    """Brute force: the stationarity system of sum_i w_i (f_i - y_i)^2 + alpha ||f||^2 + b."""
    rows = weights > 0
    if design is None:  # dual coefficients on the rows of positive weight
        n = rows.sum()
        A = np.block(
            [
                [K[np.ix_(rows, rows)] + alpha * np.diag(1 / weights[rows]), np.ones((n, 1))],
                [np.ones((1, n)), np.zeros((1, 1))],
            ]
        )
        solution = np.linalg.solve(A, np.r_[y[rows], 0.0])
        c = np.zeros(len(y))
        c[rows] = solution[:-1]
        return K @ c + solution[-1]
    Z1 = np.column_stack([design, np.ones(len(y))])  # features: weighted ridge, free intercept
    penalty = alpha * np.diag(np.r_[np.ones(design.shape[1]), 0.0])
    theta = np.linalg.solve(Z1.T @ (weights[:, None] * Z1) + penalty, Z1.T @ (weights * y))
    return Z1 @ theta


def _problems(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    weights = rng.uniform(0.2, 1.0, size=40)
    weights[:5] = 0.0
    K = rbf_kernel(X, gamma=0.5)
    common = {"Y": y[:, None], "loss": SquaredLoss(), "alpha": 0.1, "k": 40, "fit_intercept": True}
    return y, weights, [(Problem(K=K, **common), K, None), (FeatureProblem(Z=X, **common), None, X)]


@pytest.mark.parametrize("which", [0, 1], ids=["kernel", "features"])
def test_weighted_ridge_and_its_leave_one_out_residuals_match_brute_force(which):
    y, weights, problems = _problems(0)
    problem, K, Z = problems[which]
    w, b, honest = weighted_ridge(problem, weights)
    fitted = (problem.apply(w) + b).ravel()
    np.testing.assert_allclose(fitted, _weighted_fit_by_bordered_system(K, y, weights, 0.1, Z))
    expected = []
    for i in range(len(y)):
        if weights[i] == 0:  # not seen by the fit: its plain residual
            expected.append(abs(y[i] - fitted[i]))
            continue
        without = weights.copy()
        without[i] = 0.0
        refit = _weighted_fit_by_bordered_system(K, y, without, 0.1, Z)
        expected.append(abs(y[i] - refit[i]))
    np.testing.assert_allclose(honest, expected, rtol=1e-8, atol=1e-12)


def test_biweight_is_tukeys():
    u = np.array([0.0, 1.0, 4.685, 5.0, -2.0])
    expected = [1.0, (1 - (1 / 4.685) ** 2) ** 2, 0.0, 0.0, (1 - (2 / 4.685) ** 2) ** 2]
    np.testing.assert_allclose(biweight(u), expected)


def _diabetes_scaled_rows(seed):
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=seed)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    mean, sd = y_train.mean(), y_train.std()
    y_train, y_test = (y_train - mean) / sd, (y_test - mean) / sd
    n = len(y_train)
    bad = np.random.default_rng(seed).choice(n, int(np.ceil(0.2 * n)), replace=False)
    X_bad, y_bad = X_train.copy(), y_train.copy()
    X_bad[bad] *= 100.0
    y_bad[bad] *= 1e4
    clean = np.setdiff1d(np.arange(n), bad)
    return X_bad, y_bad, X_train[clean], y_train[clean], X_test, y_test, bad


@pytest.mark.parametrize("seed", [0, 3])
def test_a_kept_corrupted_row_no_longer_drags_the_fit(seed):
    """ceil(0.2 n) rows scaled x100 / y1e4 and epsilon=0.2: the trim keeps one of them."""
    X_bad, y_bad, X_clean, y_clean, X_test, y_test, bad = _diabetes_scaled_rows(seed)

    def rmse(model):
        return np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))

    papers = {**PAPERS, "epsilon": 0.2}
    oracle = rmse(SubquantileKernelRegressor(**{**papers, "epsilon": 0.0}).fit(X_clean, y_clean))
    trimmed = SubquantileKernelRegressor(**papers).fit(X_bad, y_bad)
    refined = SubquantileKernelRegressor(**{**papers, "refine": "biweight"}).fit(X_bad, y_bad)
    assert trimmed.inlier_mask_[bad].sum() == 1  # the fault: one scaled row kept
    assert rmse(trimmed) > 1.1 * oracle
    assert rmse(refined) <= 1.10 * oracle
    assert set(np.flatnonzero(~refined.inlier_mask_)) == set(bad)
    assert np.all(refined.row_weights_[bad] == 0) and abs(refined.intercept_) < 1.0


def test_refine_leaves_epsilon_zero_and_the_papers_estimator_alone():
    X, y = _diabetes_scaled_rows(1)[2:4]
    given = {"epsilon": 0.0, "alpha": 1.0, "kernel": "rbf", "gamma": None, "fit_intercept": False}
    plain = SubquantileKernelRegressor(**given)
    plain.fit(X, y)
    refined = SubquantileKernelRegressor(**given, refine="biweight")
    np.testing.assert_array_equal(refined.fit(X, y).dual_coef_, plain.dual_coef_)
    default = SubquantileKernelRegressor(**{**PAPERS, "epsilon": 0.2}).fit(X, y)
    assert default.row_weights_.sum() == default.inlier_mask_.sum()  # 0/1 weights: no M-step


def test_refine_is_refused_where_it_does_not_apply():
    X = np.random.default_rng(0).normal(size=(30, 2))
    labels = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="not available for SubquantileKernelClassifier"):
        SubquantileKernelClassifier(refine="biweight").fit(X, labels)
    with pytest.raises(ValueError, match="radius or device"):
        SubquantileKernelRegressor(refine="biweight", radius=1.0).fit(X, X[:, 1])
