"""MetricKernelLogisticRegression: the logistic loss in the inner problem of the learned metric."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustkernel import MetricKernelLogisticRegression
from robustkernel.datasets import subspace_distance
from robustkernel.metric_kernel_ridge._objective import (
    gradient,
    inner_solution,
    objective,
    resolve_kernel,
)


def _two_directions(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels driven by x_1^2 + x_2^2 (a disc): the relevant subspace is span(e_1, e_2)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    score = X[:, 0] ** 2 + X[:, 1] ** 2 - 1.4
    y = np.where(rng.uniform(size=n) < expit(4.0 * score), 1, 0)
    return X, y


@pytest.mark.parametrize("lam", [1e-3, 1e-2, 1e-1])
def test_inner_problem_is_logistic_regression_for_the_linear_kernel(lam):
    # with k(x, x') = x^T x', (1/n) sum log-loss + (lam/2) ||w||^2 is LogisticRegression's
    # objective divided by n lam C with C = 1 / (n lam) (intercept not penalized)
    rng = np.random.default_rng(0)
    n = 150
    X = rng.standard_normal((n, 4))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    family = replace(resolve_kernel("linear"), loss="logistic")
    sol = inner_solution(X, y, np.eye(4), lam, family)
    reference = LogisticRegression(C=1.0 / (n * lam), tol=1e-12, max_iter=10_000).fit(X, y)
    decision = sol.kernel @ sol.dual_coef + sol.intercept
    np.testing.assert_allclose(decision, reference.decision_function(X), atol=1e-6)
    w = reference.coef_.ravel()
    value = np.mean(np.logaddexp(0.0, -y * reference.decision_function(X))) + 0.5 * lam * w @ w
    np.testing.assert_allclose(sol.objective, value, rtol=1e-9)


def test_gradient_in_sigma_matches_finite_differences():
    X, y01 = _two_directions(60, 4, seed=1)
    y = np.where(y01 == 1, 1.0, -1.0)
    family = replace(resolve_kernel("gaussian"), loss="logistic")
    rng = np.random.default_rng(2)
    A = rng.standard_normal((4, 4))
    Sigma = 0.1 * (A @ A.T) + 0.05 * np.eye(4)
    lam = 0.02
    G = gradient(X, inner_solution(X, y, Sigma, lam, family), lam, family)
    h = 1e-5
    numeric = np.zeros_like(G)
    for i in range(4):
        for j in range(i, 4):
            E = np.zeros((4, 4))
            E[i, j] = E[j, i] = h
            delta = objective(X, y, Sigma + E, lam, family) - objective(
                X, y, Sigma - E, lam, family
            )
            # a symmetric perturbation of entries (i, j) and (j, i) sees G_ij + G_ji
            numeric[i, j] = numeric[j, i] = delta / (2 * h) / (1 if i == j else 2)
    np.testing.assert_allclose(G, numeric, rtol=1e-5, atol=1e-9)


def test_learns_the_two_directions_of_a_classification_problem():
    X, y = _two_directions(600, 10, seed=0)
    train, test = slice(0, 300), slice(300, 600)
    model = MetricKernelLogisticRegression().fit(X[train], y[train])
    truth = np.eye(10)[:, :2]
    assert model.rank_ == 2
    assert subspace_distance(model.components_.T, truth) < 0.3
    assert model.kkt_residual_ <= 1e-6
    # the learned metric beats the same kernel logistic regression with the initial metric
    fixed = MetricKernelLogisticRegression(max_iter=0).fit(X[train], y[train])
    assert model.score(X[test], y[test]) >= fixed.score(X[test], y[test]) + 0.1
    assert model.score(X[test], y[test]) >= 0.85


def test_labels_probabilities_and_refusals():
    X, y01 = _two_directions(120, 3, seed=4)
    labels = np.array(["inner", "outer"])[y01]
    model = MetricKernelLogisticRegression(max_iter=50).fit(X, labels)
    np.testing.assert_array_equal(model.classes_, ["inner", "outer"])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], expit(model.decision_function(X)))
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
    with pytest.raises(ValueError, match="Only binary"):
        MetricKernelLogisticRegression().fit(X, np.arange(X.shape[0]) % 3)


@parametrize_with_checks(
    [MetricKernelLogisticRegression(max_iter=10)],
    expected_failed_checks=lambda est: {},
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
