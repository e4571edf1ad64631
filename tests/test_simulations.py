"""Tests of the paper 003 (Section 7.1) simulation generators."""

from __future__ import annotations

import numpy as np
import pytest

from robustkernel.datasets import (
    central_subspace,
    make_kl_regression,
    make_kl_train_test,
    regression_function,
    sample_covariates,
    subspace_distance,
)

# f written out independently of the library, on 0-based columns
FORMULAS = {
    "a": lambda x: x[:, 0] + x[:, 1] + x[:, 2],
    "b": lambda x: x[:, 0] * x[:, 1],
    "c": lambda x: 0.1 * (x[:, 0] + x[:, 1] + x[:, 2]) ** 3 + np.tanh(x[:, 0] + x[:, 2] + x[:, 4]),
    "d": lambda x: 2 * x[:, 0] + 2 * x[:, 1] + (x[:, 1] + x[:, 2]) ** 2 + (x[:, 3] - 0.5) ** 3,
    "e": lambda x: 0.0 * x[:, 0],
}
DIMS = {"a": 1, "b": 2, "c": 2, "d": 3, "e": 0}


@pytest.mark.parametrize("f", list(FORMULAS))
def test_functions_match_paper_formulas(f):
    X = np.random.default_rng(0).standard_normal((50, 7))
    np.testing.assert_allclose(regression_function(f)(X), FORMULAS[f](X), rtol=1e-14)


@pytest.mark.parametrize("f", list(FORMULAS))
def test_central_subspace_is_orthonormal_sufficient_and_minimal(f):
    p = 9
    B = central_subspace(f, p)
    assert B.shape == (p, DIMS[f])
    np.testing.assert_allclose(B.T @ B, np.eye(DIMS[f]), atol=1e-12)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, p))
    Z = rng.standard_normal((40, p))
    perp = np.eye(p) - B @ B.T
    # f only depends on the projection of x onto S*
    np.testing.assert_allclose(FORMULAS[f](X + Z @ perp), FORMULAS[f](X), atol=1e-10)
    # and moving along any direction of S* changes f (S* is not too large)
    for k in range(DIMS[f]):
        moved = X + 0.7 * B[:, k]
        assert np.max(np.abs(FORMULAS[f](moved) - FORMULAS[f](X))) > 1e-3


def test_subspace_distance():
    e1 = np.eye(4)[:, :1]
    e12 = np.eye(4)[:, :2]
    assert subspace_distance(e1, e1) == pytest.approx(0.0)
    assert subspace_distance(e1, e12) == pytest.approx(1.0)
    assert subspace_distance(e1, np.eye(4)[:, 1:2]) == pytest.approx(np.sqrt(2))
    assert subspace_distance(np.zeros((4, 0)), e12) == pytest.approx(np.sqrt(2))


@pytest.mark.parametrize("distribution", ["gaussian", "correlated", "uniform", "bernoulli"])
def test_covariate_distributions(distribution):
    n, p = 20000, 5
    X = sample_covariates(n, p, distribution, random_state=0)
    assert X.shape == (n, p)
    cov = np.cov(X.T)
    idx = np.arange(p)
    if distribution == "gaussian":
        np.testing.assert_allclose(cov, np.eye(p), atol=0.03)
        np.testing.assert_allclose(X.mean(0), 0, atol=0.03)
    elif distribution == "correlated":
        np.testing.assert_allclose(cov, 0.5 ** np.abs(idx[:, None] - idx[None, :]), atol=0.03)
    elif distribution == "uniform":
        assert X.min() >= 0 and X.max() <= 1
        np.testing.assert_allclose(cov, np.eye(p) / 12, atol=0.005)
    else:
        assert set(np.unique(X)) == {0.0, 1.0}
        np.testing.assert_allclose(X.mean(0), 0.5, atol=0.02)


def test_noise_level_and_seeding():
    X, y = make_kl_regression(n=5000, p=6, f="d", noise=0.3, random_state=1)
    assert np.std(y - FORMULAS["d"](X)) == pytest.approx(0.3, rel=0.05)
    X2, y2 = make_kl_regression(n=5000, p=6, f="d", noise=0.3, random_state=1)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = make_kl_regression(n=5000, p=6, f="d", noise=0.3, random_state=2)
    assert not np.allclose(X, X3)


def test_train_test_split_sizes_and_independence():
    sim = make_kl_train_test(n=300, p=50, f="c", x_distribution="bernoulli", random_state=3)
    assert sim.X_train.shape == (300, 50)
    assert sim.X_test.shape == (150, 50)
    assert sim.subspace.shape == (50, 2)
    assert not np.array_equal(sim.X_train[:150], sim.X_test)
    again = make_kl_train_test(n=300, p=50, f="c", x_distribution="bernoulli", random_state=3)
    np.testing.assert_array_equal(sim.y_test, again.y_test)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"f": "z"},
        {"f": "c", "p": 4},
        {"x_distribution": "cauchy"},
        {"noise": -1.0},
        {"x_distribution": "correlated", "rho": 1.0},
        {"x_distribution": "bernoulli", "prob": 1.5},
    ],
)
def test_bad_arguments_raise(kwargs):
    params = {"n": 10, "p": 6, "f": "a", **kwargs}
    with pytest.raises(ValueError):
        make_kl_regression(**params)
