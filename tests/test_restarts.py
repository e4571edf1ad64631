"""Random starts (``n_init``): the kept fit has the lowest objective, computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel
from sklearn.utils._param_validation import InvalidParameterError

from conftest import PAPERS
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor


def _flip_and_scale(seed: int) -> tuple[np.ndarray, ...]:
    """Linear labels; 20% of the training rows flipped and scaled by 100 (000 Table 3, L+F)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 5))
    y = (X @ np.array([1.0, -1.0, 0.5, 0.0, 0.0]) > 0).astype(int)
    X_test, y_test, X, y = X[200:], y[200:], X[:200].copy(), y[:200].copy()
    bad = rng.choice(200, 40, replace=False)
    X[bad] *= 100.0
    y[bad] = 1 - y[bad]
    return X, y, X_test, y_test, bad


def _binary_objective(model: SubquantileKernelClassifier, X: np.ndarray, y: np.ndarray) -> float:
    """Sum of the k smallest logistic losses + alpha w^T K w, from the fitted coefficients."""
    w = model.dual_coef_
    f = linear_kernel(X) @ w + model.intercept_
    losses = np.logaddexp(0.0, f) - y * f
    k = int(np.ceil((1 - model.epsilon) * len(y)))
    return float(np.sort(losses)[:k].sum() + model.alpha * w @ linear_kernel(X) @ w)


def test_random_starts_escape_the_start_pulled_by_scaled_rows():
    X, y, X_test, y_test, bad = _flip_and_scale(1)
    params = {**PAPERS, "epsilon": 0.2, "kernel": "linear", "random_state": 0}
    single = SubquantileKernelClassifier(**params).fit(X, y)
    several = SubquantileKernelClassifier(n_init=10, **params).fit(X, y)
    # The fit on all rows is pulled to the flipped, scaled rows; it keeps them.
    assert np.mean(~single.inlier_mask_[bad]) < 0.1 and single.best_start_ == 0
    assert several.best_start_ > 0
    assert np.mean(~several.inlier_mask_[bad]) > 0.6
    assert several.score(X_test, y_test) > 0.75 > single.score(X_test, y_test)
    # The kept fit is the one of lower objective, checked from its coefficients.
    assert _binary_objective(several, X, y) < _binary_objective(single, X, y)
    np.testing.assert_allclose(several.objective_history_[-1], _binary_objective(several, X, y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_more_starts_never_raise_the_objective(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(120, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=120)
    y[:30] = rng.normal(0, 5, size=30)
    params = {**PAPERS, "epsilon": 0.25, "gamma": 0.5, "random_state": seed}
    objectives = []
    for n_init in (1, 4):
        model = SubquantileKernelRegressor(n_init=n_init, **params).fit(X, y)
        K = rbf_kernel(X, gamma=0.5)
        residual = K @ model.dual_coef_ + model.intercept_ - y
        kept = np.sort(residual**2)[: model.inlier_mask_.sum()].sum()
        objectives.append(kept + model.alpha * model.dual_coef_ @ K @ model.dual_coef_)
        np.testing.assert_allclose(model.objective_history_[-1], objectives[-1], rtol=1e-9)
    assert objectives[1] <= objectives[0] * (1 + 1e-12)


def test_random_starts_are_seeded_and_see_every_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.repeat(["a", "b", "c"], 30)
    X[y == "b"] += 2.0
    X[y == "c"] -= 2.0
    params = {**PAPERS, "n_init": 5, "init_size": 2, "random_state": 3}
    # init_size 2 < 3 classes: each start still holds one row of every class (else the
    # start's fit would fail on a missing class).
    first = SubquantileKernelClassifier(**params).fit(X, y)
    second = SubquantileKernelClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(first.dual_coef_, second.dual_coef_)
    assert first.best_start_ == second.best_start_


@pytest.mark.parametrize("params", [{"n_init": 0}, {"init_size": 1}])
def test_invalid_start_parameters(params):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(InvalidParameterError):
        SubquantileKernelRegressor(**params).fit(X, X[:, 0])
