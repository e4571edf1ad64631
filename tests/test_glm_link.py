"""The kernelized GLM: SubquantileKernelRegressor(link=...), loss (omega(f) - y)^2."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustkernel import SubquantileKernelRegressor
from robustkernel._kernel_model.losses import LINKS, LinkSquaredLoss


def proportions(seed: int, n: int):
    """Targets in (0, 1): logistic(2 sin x1 + x2) plus noise sd 0.05, clipped to (0, 1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    p = expit(2.0 * np.sin(X[:, 0]) + X[:, 1])
    return X, np.clip(p + 0.05 * rng.normal(size=n), 0.001, 0.999), p


@pytest.mark.parametrize("name", ["logistic", "softplus"])
def test_link_loss_gradient_and_curvature_bound(name):
    """The gradient matches central differences; the curvature bound holds on a grid."""
    rng = np.random.default_rng(0)
    F = rng.normal(scale=2.0, size=(50, 1))
    Y = rng.uniform(0.0, 1.0, size=(50, 1))
    loss = LinkSquaredLoss.for_targets(LINKS[name], Y)
    h = 1e-6
    numeric = (loss.loss(F + h, Y) - loss.loss(F - h, Y)) / (2 * h)
    np.testing.assert_allclose(loss.gradient(F, Y)[:, 0], numeric, rtol=1e-6, atol=1e-9)
    grid = np.linspace(-30, 30, 2001)[:, None]
    for y in (0.0, 0.5, 1.0):
        targets = np.full_like(grid, y)
        second = (
            loss.loss(grid + 1e-4, targets) - 2 * loss.loss(grid, targets)
            + loss.loss(grid - 1e-4, targets)
        ) / 1e-8
        assert np.max(np.abs(second)) <= loss.curvature * (1 + 1e-3)


def test_identity_link_is_kernel_ridge():
    X, y, _ = proportions(1, 80)
    model = SubquantileKernelRegressor(
        0.0, alpha=0.1, kernel="rbf", gamma=0.5, fit_intercept=False, link="identity"
    ).fit(X, y)
    reference = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.5).fit(X, y)
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-9, atol=1e-12)


def test_logistic_link_minimizes_the_link_objective_without_contamination():
    """epsilon = 0: the fit reaches the minimum of sum (omega(K w) - y)^2 + alpha w^T K w that
    an independent L-BFGS in w (analytic gradient, tight tolerance) finds."""
    X, y, _ = proportions(2, 60)
    alpha = 0.01
    model = SubquantileKernelRegressor(
        0.0, alpha=alpha, gamma=0.5, fit_intercept=False, link="logistic", refine=None
    ).fit(X, y)
    K = model._kernel(X)

    def objective(w):
        p = expit(K @ w)
        value = np.sum((p - y) ** 2) + alpha * w @ K @ w
        return value, K @ (2 * (p - y) * p * (1 - p) + 2 * alpha * w)

    reference = minimize(objective, np.zeros(60), jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 20000})
    ours = objective(model.dual_coef_)[0]
    assert ours <= reference.fun * (1 + 1e-6)
    np.testing.assert_allclose(model.predict(X), expit(K @ model.dual_coef_), rtol=1e-12)


def test_a_callable_link_equals_the_named_one():
    X, y, _ = proportions(3, 80)
    settings = {"alpha": 1e-3, "gamma": 0.1, "epsilon": 0.1, "refine": None}
    named = SubquantileKernelRegressor(link="logistic", **settings).fit(X, y)
    pair = (expit, lambda f: expit(f) * (1 - expit(f)))
    custom = SubquantileKernelRegressor(link=pair, **settings).fit(X, y)
    np.testing.assert_allclose(custom.predict(X), named.predict(X), rtol=1e-6)


def test_logistic_link_with_uniformly_replaced_targets_is_close_to_its_oracle():
    """20% of the targets replaced by uniform draws on (0, 1): within 1.15x the oracle (the
    same model fitted on the clean rows); the identity link and the plain fit are not."""
    X, y, _ = proportions(3, 300)
    X_test, _, p_test = proportions(103, 1000)
    rng = np.random.default_rng(3)
    bad = rng.choice(300, 60, replace=False)
    y_bad = y.copy()
    y_bad[bad] = rng.uniform(0.0, 1.0, size=60)
    clean = np.ones(300, dtype=bool)
    clean[bad] = False
    settings = {"alpha": 1e-3, "kernel": "rbf", "gamma": 0.1, "link": "logistic"}

    def rmse(model):
        return float(np.sqrt(np.mean((model.predict(X_test) - p_test) ** 2)))

    oracle = rmse(SubquantileKernelRegressor(0.0, **settings).fit(X[clean], y[clean]))
    robust = SubquantileKernelRegressor(0.2, **settings).fit(X, y_bad)
    plain = SubquantileKernelRegressor(0.0, **settings).fit(X, y_bad)
    assert rmse(robust) <= 1.15 * oracle  # 1.08x
    assert rmse(plain) >= 3.0 * oracle
    assert np.all((robust.predict(X_test) > 0) & (robust.predict(X_test) < 1))
    # the rows whose replacement landed far from the truth are the ones left out
    far = bad[np.abs(y_bad[bad] - y[bad]) > 0.2]
    assert robust.inlier_mask_[far].mean() <= 0.05


def test_gradient_solver_with_a_link_reaches_the_alternating_objective():
    """Nesterov steps from the smoothness bound reach the alternating fit's objective (within
    1%: the objective is not convex, and the two may stop at kept sets a few rows apart)."""
    X, y, _ = proportions(4, 120)
    settings = {
        "alpha": 0.01, "kernel": "rbf", "gamma": 0.5, "epsilon": 0.1, "refine": None,
        "link": "logistic",
    }
    alternating = SubquantileKernelRegressor(**settings).fit(X, y)
    nesterov = SubquantileKernelRegressor(solver="nesterov", max_iter=5000, **settings).fit(X, y)
    history = nesterov.objective_history_
    assert history[-1] <= 1.01 * alternating.objective_history_[-1]
    assert history[-1] <= history[0]  # from the ordinary fit on every row


def test_link_errors():
    X, y, _ = proportions(5, 30)
    with pytest.raises(ValueError, match="pair"):
        SubquantileKernelRegressor(link=(expit,)).fit(X, y)
    with pytest.raises(ValueError, match="biweight"):
        SubquantileKernelRegressor(0.1, link="logistic", refine="biweight").fit(X, y)


GIVEN_LINK = {"epsilon": 0.1, "alpha": 0.1, "gamma": 0.5}


@pytest.mark.parametrize(
    ("link", "targets"),
    [
        ("logistic", lambda y: np.full_like(y, 2.0)),  # all above the range
        ("logistic", lambda y: np.r_[y[:-1], -0.5]),  # one below it
        ("softplus", lambda y: -y),  # negative targets
        ("softplus", lambda y: np.r_[y[:-1], -1e-3]),
    ],
)
@pytest.mark.parametrize("settings", [GIVEN_LINK, {}], ids=["given", "auto"])
def test_targets_outside_the_link_range_are_refused(link, targets, settings):
    """A target no output reaches: a ValueError naming y and the link, never a fit that
    predicts the range's edge."""
    X, y, _ = proportions(6, 40)
    with pytest.raises(ValueError, match=rf"y has values outside the range .* link='{link}'"):
        SubquantileKernelRegressor(link=link, **settings).fit(X, targets(y))


def test_targets_at_the_edge_of_the_range_fit():
    X, y, _ = proportions(7, 40)
    y = np.r_[0.0, 1.0, y[2:]]  # proportions of 0 and 1 are reachable limits
    model = SubquantileKernelRegressor(link="logistic", **GIVEN_LINK).fit(X, y)
    assert np.all((model.predict(X) > 0) & (model.predict(X) < 1))
    positive = SubquantileKernelRegressor(link="softplus", **GIVEN_LINK).fit(X, np.r_[0.0, y[1:]])
    assert np.all(np.isfinite(positive.predict(X)))


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ((lambda F: F * np.nan, lambda F: np.ones_like(F)), r"omega\(F\) is not finite"),
        ((lambda F: expit(F), lambda F: np.where(F > 10, np.inf, 1.0)), r"omega'\(F\) is not"),
        ((lambda F: 1.0, lambda F: 1.0), r"omega\(F\) must return an array of F's shape"),
        ((lambda F: expit(F), lambda F: F[:3]), r"omega'\(F\) must return an array"),
        ((lambda F: expit(F), lambda F: "slope"), r"omega'\(F\) failed"),
    ],
    ids=["nan", "inf-slope", "scalar", "wrong-shape", "not-numeric"],
)
def test_a_link_given_as_functions_is_checked_at_fit(pair, message):
    """A pair (omega, omega') that is not finite, not vectorized or not numeric is refused at
    fit, naming the function, instead of failing later (in the solver or at predict)."""
    X, y, _ = proportions(8, 30)
    with pytest.raises(ValueError, match=message):
        SubquantileKernelRegressor(link=pair, **GIVEN_LINK).fit(X, y)


NEGATIVE_TARGETS = (
    "the check's multi-output targets ignore the positive_only tag (half of them negative); the "
    "softplus link reaches positive values only and refuses them with a ValueError naming y"
)


@parametrize_with_checks(
    [SubquantileKernelRegressor(0.1, alpha=0.1, gamma=0.5, link="softplus")],
    expected_failed_checks=lambda estimator: {
        "check_regressor_multioutput": NEGATIVE_TARGETS,
    },
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
