"""Approximate kernels (n_components): agreement with the exact model, Gram updates, trimming."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics.pairwise import rbf_kernel

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel._kernel_model.losses import SquaredLoss
from robustkernel.subquantile._solve.objective import FeatureProblem
from robustkernel.subquantile._solve.refits import FeatureRidgeSubsetFitter


def _target(X):
    return np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 - X[:, 2]


def _contaminated(n: int = 150, seed: int = 0, shift: float = 10.0):
    """Smooth target, 20% of the labels moved far away (rows 0 .. n/5 - 1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3))
    y = _target(X) + 0.1 * rng.normal(size=n)
    y[: n // 5] += shift + rng.normal(size=n // 5)
    return X, y


COMMON = {"epsilon": 0.2, "alpha": 0.5, "gamma": 0.5, "kernel": "rbf"}
"""Given alpha and gamma for the rbf kernel (the default kernel="auto" chooses its own)."""


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["alternating", "gd", "nesterov"])
def test_nystroem_on_every_row_is_the_exact_model(solver):
    """With m = n landmarks Z Z^T = K, so the feature fit is the exact fit.

    The gradient solvers follow the same iterates in both spaces, capped or not.
    """
    X, y = _contaminated()
    options = {**COMMON, "solver": solver, "max_iter": None if solver == "alternating" else 150}
    exact = SubquantileKernelRegressor(**options).fit(X, y)
    approximate = SubquantileKernelRegressor(
        **options, n_components=X.shape[0], random_state=0
    ).fit(X, y)
    X_test = np.random.default_rng(1).uniform(-2, 2, size=(50, 3))
    np.testing.assert_allclose(approximate.predict(X_test), exact.predict(X_test), atol=1e-6)
    np.testing.assert_array_equal(approximate.inlier_mask_, exact.inlier_mask_)
    assert approximate.objective_history_[-1] == pytest.approx(exact.objective_history_[-1])
    assert approximate.coef_.shape == (X.shape[0],)
    assert not hasattr(approximate, "dual_coef_")


@pytest.mark.parametrize("n_classes", [2, 3])
def test_nystroem_on_every_row_is_the_exact_classifier(n_classes):
    X, _ = _contaminated(n=60, seed=3)
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5] if n_classes == 3 else [0.0])
    y[:8] = (y[:8] + 1) % n_classes
    options = {"epsilon": 0.15, "alpha": 0.3, "gamma": 0.5}
    exact = SubquantileKernelClassifier(**options).fit(X, y)
    approximate = SubquantileKernelClassifier(**options, n_components=60, random_state=0).fit(X, y)
    np.testing.assert_allclose(
        approximate.decision_function(X), exact.decision_function(X), atol=1e-4
    )
    np.testing.assert_array_equal(approximate.inlier_mask_, exact.inlier_mask_)


def test_approximation_error_decreases_as_m_grows():
    X, y = _contaminated(n=150, seed=2)
    X_test = np.random.default_rng(5).uniform(-2, 2, size=(300, 3))
    exact = SubquantileKernelRegressor(**COMMON).fit(X, y).predict(X_test)
    errors = {
        approximation: [
            np.sqrt(
                np.mean(
                    (
                        SubquantileKernelRegressor(
                            **COMMON, n_components=m, approximation=approximation, random_state=0
                        )
                        .fit(X, y)
                        .predict(X_test)
                        - exact
                    )
                    ** 2
                )
            )
            for m in (10, 40, 150)
        ]
        for approximation in ("nystroem", "rff")
    }
    assert np.all(np.diff(errors["nystroem"]) < 0) and errors["nystroem"][-1] < 1e-6
    assert errors["rff"][0] > 2 * errors["rff"][-1]


def test_untrimmed_feature_fit_is_ridge_on_nystroem_features():
    """epsilon=0: ridge on the features with an unpenalized intercept (sklearn's Ridge)."""
    X, y = _contaminated(n=120, seed=4, shift=0.0)
    model = SubquantileKernelRegressor(
        epsilon=0.0, alpha=0.5, gamma=0.5, kernel="rbf", n_components=30, random_state=0
    ).fit(X, y)
    features = Nystroem(gamma=0.5, n_components=30, random_state=0).fit(X)
    ridge = Ridge(alpha=0.5).fit(features.transform(X), y)
    np.testing.assert_allclose(model.coef_, ridge.coef_, rtol=1e-7, atol=1e-9)
    assert model.intercept_ == pytest.approx(ridge.intercept_, rel=1e-9)


def test_untrimmed_feature_classifier_is_logistic_regression_on_the_features():
    X, _ = _contaminated(n=120, seed=6)
    y = (X[:, 0] + 0.5 * np.random.default_rng(0).normal(size=120) > 0).astype(int)
    model = SubquantileKernelClassifier(
        epsilon=0.0, alpha=0.5, gamma=0.5, n_components=30, random_state=0
    ).fit(X, y)
    Z = Nystroem(gamma=0.5, n_components=30, random_state=0).fit(X).transform(X)
    # sklearn: C sum(log-loss) + ||theta||^2 / 2, i.e. C = 1 / (2 alpha)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=10000).fit(Z, y)
    np.testing.assert_allclose(model.coef_, reference.coef_[0], atol=1e-4)


def test_gram_updates_equal_the_recomputed_gram():
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(300, 12))
    Y = rng.normal(size=(300, 2))
    problem = FeatureProblem(Z=Z, Y=Y, loss=SquaredLoss(), alpha=0.7, k=240, fit_intercept=True)
    fitter = FeatureRidgeSubsetFitter(problem)
    mask = np.zeros(300, dtype=bool)
    for change in (300, 0, 5, 40, 150, 3):  # all rows, then small and large moves
        mask = mask.copy()
        mask[rng.choice(300, size=change, replace=False)] ^= True
        sums = fitter.subset_gram(mask)
        np.testing.assert_allclose(sums.gram, Z[mask].T @ Z[mask], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(sums.ones, Z[mask].sum(axis=0), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(sums.targets, Z[mask].T @ Y[mask], rtol=1e-10, atol=1e-10)
        theta, b = fitter.fit(mask, None, None, problem.alpha)
        ridge = Ridge(alpha=problem.alpha).fit(Z[mask], Y[mask])
        np.testing.assert_allclose(theta, ridge.coef_.T, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(b, ridge.intercept_, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("approximation", ["nystroem", "rff"])
@pytest.mark.parametrize("solver", ["alternating", "momentum", "nesterov"])
def test_trimming_recovers_the_outliers_with_features(approximation, solver):
    X, y = _contaminated(n=400, seed=8)
    model = SubquantileKernelRegressor(
        **COMMON, n_components=100, approximation=approximation, solver=solver, random_state=0
    ).fit(X, y)
    assert not model.inlier_mask_[:80].any()
    X_test = np.random.default_rng(9).uniform(-2, 2, size=(300, 3))
    rmse = np.sqrt(np.mean((model.predict(X_test) - _target(X_test)) ** 2))
    assert rmse < 0.35


def test_float32_features_match_float64():
    X, y = _contaminated(n=300, seed=10)
    options = {**COMMON, "n_components": 60, "random_state": 0}
    double = SubquantileKernelRegressor(**options).fit(X, y)
    single = SubquantileKernelRegressor(**options, dtype="float32").fit(X, y)
    np.testing.assert_array_equal(single.inlier_mask_, double.inlier_mask_)
    np.testing.assert_allclose(single.predict(X), double.predict(X), atol=1e-4)
    assert single.predict(X).dtype == np.float64


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": 2.5}, "n_components"),
        ({"n_components": "many"}, "n_components"),
        ({"n_components": 10, "approximation": "fourier"}, "approximation"),
        ({"n_components": 10, "dtype": "int8"}, "dtype"),
        ({"n_components": 10, "approximation": "rff", "kernel": "laplacian"}, "rbf"),
    ],
)
def test_bad_approximation_parameters_raise(params, message):
    X, y = _contaminated(n=40)
    with pytest.raises(ValueError, match=message):
        SubquantileKernelRegressor(**params).fit(X, y)


def test_precomputed_kernel_features_equal_the_kernel_features():
    """Nystroem on a precomputed kernel draws the same landmarks as on the rbf kernel."""
    X, y = _contaminated(n=120, seed=11)
    X_test = np.random.default_rng(12).uniform(-2, 2, size=(30, 3))
    options = {**COMMON, "n_components": 40, "random_state": 0}
    direct = SubquantileKernelRegressor(**options).fit(X, y)
    precomputed = SubquantileKernelRegressor(**{**options, "kernel": "precomputed"})
    precomputed.fit(rbf_kernel(X, gamma=0.5), y)
    np.testing.assert_allclose(
        precomputed.predict(rbf_kernel(X_test, X, gamma=0.5)), direct.predict(X_test), atol=1e-8
    )
