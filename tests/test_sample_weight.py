"""sample_weight of the Subquantile kernel estimators: integer weights fit as repeated rows,
zero weights as dropped rows, and the weighted subquantile keeps (1 - epsilon) of the weight."""

from __future__ import annotations

import numpy as np
import pytest

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor

GIVEN = {"epsilon": 0.2, "alpha": 0.1, "gamma": 0.5, "refine": None}


def regression(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    y[: n // 8] = 5.0
    weights = rng.integers(0, 4, size=n).astype(float)
    return X, y, weights, rng.uniform(-2, 2, size=(30, 2))


def labels(X: np.ndarray, n_classes: int) -> np.ndarray:
    y = np.digitize(X[:, 0], np.linspace(-2, 2, n_classes + 1)[1:-1])
    y[:6] = (y[:6] + 1) % n_classes  # wrong labels
    return y


def test_integer_weights_fit_as_repeated_rows_regression():
    X, y, weights, X_test = regression()
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=weights)
    repeated = SubquantileKernelRegressor(**GIVEN).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.predict(X_test), repeated.predict(X_test), atol=1e-8)
    assert weighted.epsilon_ == pytest.approx(repeated.epsilon_)
    np.testing.assert_allclose(weighted.objective_history_[-1], repeated.objective_history_[-1])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_integer_weights_fit_as_repeated_rows_classification(n_classes):
    """Equal up to L-BFGS's tolerance (the sums run in another order)."""
    X, _, weights, X_test = regression(seed=1)
    y = labels(X, n_classes)
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = SubquantileKernelClassifier(**GIVEN).fit(X, y, sample_weight=weights)
    repeated = SubquantileKernelClassifier(**GIVEN).fit(X[rows], y[rows])
    np.testing.assert_allclose(
        weighted.predict_proba(X_test), repeated.predict_proba(X_test), atol=1e-4
    )


@pytest.mark.parametrize("model", [SubquantileKernelRegressor, SubquantileKernelClassifier])
def test_zero_weights_drop_the_rows_with_the_defaults(model):
    """Every knob "auto": rows of weight 0 are out of everything, the automatic choices too."""
    X, y, _, X_test = regression(n=80, seed=2)
    if model is SubquantileKernelClassifier:
        y = labels(X, 2)
    weights = np.ones(y.size)
    weights[::5] = 0.0
    kept = weights > 0
    weighted = model().fit(X, y, sample_weight=weights)
    dropped = model().fit(X[kept], y[kept])
    assert (weighted.alpha_, weighted.gamma_) == (dropped.alpha_, dropped.gamma_)
    outputs = "predict" if model is SubquantileKernelRegressor else "predict_proba"
    np.testing.assert_allclose(
        getattr(weighted, outputs)(X_test), getattr(dropped, outputs)(X_test), atol=1e-8
    )
    assert not weighted.inlier_mask_[~kept].any()
    assert np.all(weighted.row_weights_[~kept] == 0)
    np.testing.assert_array_equal(weighted.inlier_mask_[kept], dropped.inlier_mask_)
    if model is SubquantileKernelRegressor:  # the left-out rows score their squared error
        expected = (weighted.predict(X[~kept]) - y[~kept]) ** 2
        np.testing.assert_allclose(weighted.outlier_scores_[~kept], expected)


def test_reject_chooses_the_trim_without_weights_then_fits_with_them():
    """refine="reject" at a given epsilon: the trim comes from the fit without weights (it
    drops the rows it finds implausible); the weighted fit trims the weight of those rows."""
    X, y, weights, X_test = regression(seed=7)
    weights[weights == 0] = 0.5
    plain = SubquantileKernelRegressor(0.05, alpha=0.1, gamma=0.5).fit(X, y)
    weighted = SubquantileKernelRegressor(0.05, alpha=0.1, gamma=0.5).fit(
        X, y, sample_weight=weights
    )
    assert plain.epsilon_ > 0.1  # the 12% of rows with y = 5 dropped beyond the 5% trim
    trimmed = weights[~plain.inlier_mask_].sum() / weights.sum()
    at_chosen = SubquantileKernelRegressor(
        trimmed, alpha=0.1, gamma=0.5, refine=None
    ).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(weighted.predict(X_test), at_chosen.predict(X_test))
    assert weighted.inlier_mask_[: y.size // 8].sum() == 0


def test_unit_weights_are_no_weights():
    X, y, _, X_test = regression(seed=3)
    plain = SubquantileKernelRegressor().fit(X, y)
    ones = SubquantileKernelRegressor().fit(X, y, sample_weight=np.ones(y.size))
    np.testing.assert_array_equal(plain.predict(X_test), ones.predict(X_test))


def test_the_weighted_subquantile_keeps_one_minus_epsilon_of_the_weight():
    """Fractional weights: the kept rows are those of smallest loss, the one at the boundary
    keeps part of its weight, and the kept weight is (1 - epsilon) of the total."""
    X, y, _, _ = regression(seed=4)
    weights = np.random.default_rng(5).uniform(0.2, 2.0, size=y.size)
    model = SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=weights)
    assert model.row_weights_.sum() == pytest.approx(0.8 * weights.sum())
    partial = (model.row_weights_ > 0) & (model.row_weights_ < weights - 1e-12)
    assert partial.sum() <= 1
    kept, trimmed = model.row_weights_ > 0, model.row_weights_ == 0
    assert model.outlier_scores_[kept].max() <= model.outlier_scores_[trimmed].min()
    assert model.epsilon_ == pytest.approx(0.2)
    assert model.inlier_mask_[: y.size // 8].sum() == 0  # the rows with y = 5


def test_options_without_weights_are_refused_with_a_reason():
    X, y, weights, _ = regression(seed=6)
    weights[0] = 2.5
    with pytest.raises(ValueError, match="solver='nesterov'"):
        SubquantileKernelRegressor(
            **GIVEN, solver="nesterov"
        ).fit(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="refine='biweight'"):
        SubquantileKernelRegressor(**{**GIVEN, "refine": "biweight"}).fit(
            X, y, sample_weight=weights
        )
    with pytest.raises(ValueError, match="at least one non-zero"):
        SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=np.zeros(y.size))
    with pytest.raises(ValueError, match=r"[Nn]egative"):
        SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=-np.ones(y.size))


def metric_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 4))
    y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.normal(size=50)
    return X, y, rng.integers(0, 4, size=50).astype(float), rng.normal(size=(10, 4))


@pytest.mark.parametrize("solver", ["lbfgs", "projected_gradient"])
def test_metric_integer_weights_fit_as_repeated_rows(solver):
    from robustkernel import MetricKernelRidge

    X, y, weights, X_test = metric_data()
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = MetricKernelRidge(lam=0.1, solver=solver).fit(X, y, sample_weight=weights)
    repeated = MetricKernelRidge(lam=0.1, solver=solver).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.Sigma_, repeated.Sigma_, atol=1e-8)
    np.testing.assert_allclose(weighted.predict(X_test), repeated.predict(X_test), atol=1e-8)
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-10)
    kept = weights > 0
    dropped = MetricKernelRidge(lam=0.1, solver=solver).fit(X[kept], y[kept])
    ones = MetricKernelRidge(lam=0.1, solver=solver).fit(X, y, sample_weight=kept * 1.0)
    np.testing.assert_allclose(ones.predict(X_test), dropped.predict(X_test), atol=1e-12)


def test_metric_gradient_with_weights_matches_central_differences():
    """The gradient keeps its form in the weighted dual coefficients (envelope theorem)."""
    from robustkernel.metric_kernel_ridge._objective import gradient, inner_solution, resolve_kernel

    X, y, weights, _ = metric_data(seed=1)
    weights += 0.5
    family = resolve_kernel("gaussian")
    rng = np.random.default_rng(2)
    B = rng.normal(size=(4, 4))
    Sigma = B @ B.T / 8 + 0.1 * np.eye(4)
    G = gradient(X, inner_solution(X, y, Sigma, 0.1, family, weights=weights), 0.1, family)
    E = rng.normal(size=(4, 4))
    E = E + E.T
    h = 1e-6

    def J(S: np.ndarray) -> float:
        return inner_solution(X, y, S, 0.1, family, weights=weights).objective

    numeric = (J(Sigma + h * E) - J(Sigma - h * E)) / (2 * h)
    assert np.sum(G * E) == pytest.approx(numeric, rel=1e-6)


def test_metric_weights_are_refused_with_trimming_or_batches():
    from robustkernel import MetricKernelRidge

    X, y, weights, _ = metric_data()
    with pytest.raises(ValueError, match="epsilon=None and batch_size=None"):
        MetricKernelRidge(lam=0.1, epsilon=0.1).fit(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="epsilon=None and batch_size=None"):
        MetricKernelRidge(lam=0.1, batch_size=20).fit(X, y, sample_weight=weights)
