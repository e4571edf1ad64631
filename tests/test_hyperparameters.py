"""alpha="auto" / gamma="auto": the closed-form leave-one-out residuals against refits, and the
choice against an oracle tuned on the clean rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, KFold

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.corruption import contaminated_split
from robustkernel.subquantile._hyperparameters import honest_residuals, trimmed_mean


def _ridge_with_intercept(K, y, rows, alpha):
    """Kernel ridge with an unpenalized intercept on ``rows``, by its bordered linear system."""
    n = rows.sum()
    A = np.block(
        [
            [K[np.ix_(rows, rows)] + alpha * np.eye(n), np.ones((n, 1))],
            [np.ones((1, n)), np.zeros((1, 1))],
        ]
    )
    solution = np.linalg.solve(A, np.r_[y[rows], 0.0])
    return K[:, rows] @ solution[:-1] + solution[-1]


def test_honest_residuals_are_leave_one_out_refits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    K = rbf_kernel(X, gamma=0.7)
    kept = rng.uniform(size=30) < 0.7
    alphas = [1e-3, 0.1, 3.0]
    scores = honest_residuals(K, y[:, None], kept, alphas, fit_intercept=True)
    for row, alpha in enumerate(alphas):
        expected = np.empty(30)
        fitted = _ridge_with_intercept(K, y, kept, alpha)
        expected[~kept] = (y - fitted)[~kept] ** 2
        for i in np.flatnonzero(kept):
            without = kept.copy()
            without[i] = False
            expected[i] = (y[i] - _ridge_with_intercept(K, y, without, alpha)[i]) ** 2
        np.testing.assert_allclose(scores[row], expected, rtol=1e-7)


def test_trimmed_mean_drops_the_largest():
    values = np.array([[1.0, 2.0, 3.0, 100.0]])
    np.testing.assert_allclose(trimmed_mean(values, 0.25), [2.0])


def _generated(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(600, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=600)
    return X, y


@pytest.mark.parametrize(("kind", "eps"), [("label", 0.0), ("label", 0.2), ("label_feature", 0.2)])
def test_auto_alpha_and_gamma_are_near_an_oracle_tuned_on_clean_rows(kind, eps):
    X, y = _generated(0)
    split = contaminated_split(X, y, kind, eps, random_state=0)
    grid = {"alpha": np.logspace(-3, 1, 5), "gamma": np.array([0.25, 0.5, 1, 2, 4]) / 5}
    folds = KFold(5, shuffle=True, random_state=0)
    oracle = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=folds)
    oracle.fit(split.X_train_clean, split.y_train_clean)

    def rmse(model):
        return np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2))

    auto = SubquantileKernelRegressor(epsilon=eps, alpha="auto", gamma="auto")
    auto.fit(split.X_train, split.y_train)
    fixed = SubquantileKernelRegressor(epsilon=eps).fit(split.X_train, split.y_train)
    assert rmse(auto) <= 1.25 * rmse(oracle)
    assert rmse(auto) < 0.6 * rmse(fixed)  # the defaults alpha = 1, gamma = 1/p misfit here
    assert auto.hyperparameter_scores_.shape == (7, 11)
    no_knobs = SubquantileKernelRegressor(epsilon="auto", alpha="auto", gamma="auto")
    no_knobs.fit(split.X_train, split.y_train)
    assert abs(no_knobs.epsilon_ - eps) < 0.03
    assert rmse(no_knobs) <= 1.25 * rmse(oracle)


def test_auto_is_refused_where_it_does_not_apply():
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(ValueError, match="not available for SubquantileKernelClassifier"):
        SubquantileKernelClassifier(alpha="auto").fit(X, (X[:, 0] > 0).astype(int))
    with pytest.raises(ValueError, match="n_components"):
        SubquantileKernelRegressor(gamma="auto", n_components=10).fit(X, X[:, 1])


def test_a_fixed_fit_after_an_auto_fit_forgets_the_choice():
    X, y = _generated(1)
    model = SubquantileKernelRegressor(alpha="auto", gamma="auto").fit(X[:200], y[:200])
    model.set_params(alpha=1.0, gamma=0.3).fit(X[:200], y[:200])
    assert model.gamma_ == 0.3 and model.alpha_ == 1.0
    assert not hasattr(model, "hyperparameter_scores_")
    reference = SubquantileKernelRegressor(alpha=1.0, gamma=0.3).fit(X[:200], y[:200])
    np.testing.assert_array_equal(model.predict(X[200:]), reference.predict(X[200:]))
