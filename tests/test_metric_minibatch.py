"""Tests of mini-batch (stochastic) descent in MetricKernelRidge (``batch_size``).

The mini-batch path is checked against independent computations: one draw of the sampler is
reproduced with its own RandomState, a descent on a fixed batch is compared with the full descent
on those rows alone, and the final fit is compared with J_n and predictions recomputed on all rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from robustkernel.datasets import make_kl_regression, make_kl_train_test
from robustkernel.metric_kernel_ridge import MetricKernelRidge
from robustkernel.metric_kernel_ridge._objective import (
    inner_solution,
    kernel_matrix,
    objective,
    projected_gradient_descent,
    resolve_kernel,
)

GAUSSIAN = resolve_kernel("gaussian")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield


def _fit(X: np.ndarray, y: np.ndarray, **params) -> MetricKernelRidge:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return MetricKernelRidge(**params).fit(X, y)


def _same_fit(a: MetricKernelRidge, b: MetricKernelRidge) -> bool:
    return all(
        np.array_equal(getattr(a, name), getattr(b, name))
        for name in ("Sigma_", "dual_coef_", "intercept_", "objective_history_", "n_iter_")
    )


def test_batch_size_none_is_unchanged():
    X, y = make_kl_regression(n=80, p=5, f="c", random_state=0)
    default = _fit(X, y, max_iter=30)
    explicit = _fit(X, y, max_iter=30, batch_size=None, random_state=3)
    assert _same_fit(default, explicit)
    history = default.objective_history_
    assert np.all(np.diff(history) <= 1e-12 * np.abs(history[:-1]))


@pytest.mark.parametrize("extra", [0, 7])
def test_batch_size_at_least_n_equals_full_fit(extra):
    X, y = make_kl_regression(n=80, p=5, f="c", random_state=1)
    full = _fit(X, y, max_iter=30)
    batched = _fit(X, y, max_iter=30, batch_size=80 + extra, random_state=5)
    assert _same_fit(full, batched)


def test_deterministic_given_random_state():
    X, y = make_kl_regression(n=120, p=5, f="c", random_state=2)
    a = _fit(X, y, max_iter=15, batch_size=40, random_state=0)
    b = _fit(X, y, max_iter=15, batch_size=40, random_state=0)
    c = _fit(X, y, max_iter=15, batch_size=40, random_state=1)
    assert _same_fit(a, b)
    assert not np.allclose(a.Sigma_, c.Sigma_)


def test_first_step_uses_the_drawn_rows_and_final_fit_uses_all_rows():
    X, y = make_kl_regression(n=120, p=5, f="c", random_state=3)
    model = _fit(X, y, max_iter=10, batch_size=30, random_state=7, lam=0.2)
    # The first draw, reproduced independently: J on those 30 rows at Sigma = I/p.
    idx = np.random.RandomState(7).choice(120, size=30, replace=False)
    S0 = np.eye(5) / 5
    first = model.objective_history_[0]
    assert first == pytest.approx(objective(X[idx], y[idx], S0, 0.2, GAUSSIAN))
    assert first != pytest.approx(objective(X, y, S0, 0.2, GAUSSIAN))
    # dual_coef_ / intercept_ / objective_ come from one solve on all rows at Sigma_: compare with
    # a direct least-squares solve of min (1/2n)||y - K a - g 1||^2 + (lam/2) a^T K a.
    assert model.dual_coef_.shape == (120,)
    K = kernel_matrix(X, None, model.Sigma_, GAUSSIAN)
    n, lam = 120, 0.2
    # Normal equations in (a, g): [K K + n lam K, K 1; 1^T K, n] [a; g] = [K y; 1^T y].
    top = np.hstack([K @ K + n * lam * K, K.sum(axis=1, keepdims=True)])
    bottom = np.hstack([K.sum(axis=0, keepdims=True), [[n]]])
    coef = np.linalg.lstsq(np.vstack([top, bottom]), np.append(K @ y, y.sum()), rcond=None)[0]
    fitted_direct = K @ coef[:n] + coef[n]
    np.testing.assert_allclose(model.predict(X), fitted_direct, atol=1e-6)
    assert model.objective_ == pytest.approx(objective(X, y, model.Sigma_, lam, GAUSSIAN))


def test_descent_on_a_fixed_batch_equals_full_descent_on_those_rows():
    X, y = make_kl_regression(n=100, p=4, f="a", random_state=4)
    idx = np.arange(0, 100, 3)
    S0 = np.eye(4) / 4
    batched = projected_gradient_descent(X, y, S0, 0.1, GAUSSIAN, max_iter=12, batch=lambda: idx)
    subset = projected_gradient_descent(X[idx], y[idx], S0, 0.1, GAUSSIAN, max_iter=12)
    np.testing.assert_array_equal(batched.Sigma, subset.Sigma)
    np.testing.assert_array_equal(batched.objective_history, subset.objective_history)
    full_solution = inner_solution(X, y, batched.Sigma, 0.1, GAUSSIAN)
    np.testing.assert_allclose(batched.solution.dual_coef, full_solution.dual_coef, atol=1e-12)


def test_minibatch_recovers_direction_of_f_a():
    sim = make_kl_train_test(n=600, p=10, f="a", random_state=0)
    model = _fit(sim.X_train, sim.y_train, lam=0.1, batch_size=200, random_state=0, max_iter=100)
    u = np.zeros(10)
    u[:3] = 1.0 / np.sqrt(3.0)
    assert model.rank_ <= 2
    assert abs(model.components_[0] @ u) > 0.9
    rmse = np.sqrt(np.mean((model.predict(sim.X_test) - sim.y_test) ** 2))
    assert rmse < 0.5 * np.std(sim.y_test)


@pytest.mark.parametrize("batch_size", [0, 1, -5, 2.5, "100"])
def test_bad_batch_size_raises(batch_size):
    X, y = make_kl_regression(n=20, p=4, f="a", random_state=0)
    with pytest.raises(ValueError, match="batch_size"):
        MetricKernelRidge(max_iter=1, batch_size=batch_size).fit(X, y)


def test_bad_random_state_raises():
    X, y = make_kl_regression(n=20, p=4, f="a", random_state=0)
    with pytest.raises(ValueError, match="random_state"):
        MetricKernelRidge(max_iter=1, batch_size=10, random_state="seed").fit(X, y)
