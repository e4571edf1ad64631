"""Column units of kernel="auto" for columns that are mostly one value (issue 73, item 3): their
rare values stay within ``RARE_SPAN`` units of the others, and the fit predicts them."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from robustkernel import SubquantileKernelRegressor
from robustkernel.subquantile._automatic.feature_scaling import RARE_SPAN, FeatureScaling


def _rain(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two normal columns and a rain-like one (0 in about 94% of the rows, else a heavy-tailed
    amount); the target depends smoothly on all three."""
    X = rng.normal(size=(n, 3))
    rainy = rng.random(n) < 0.06
    X[:, 2] = np.where(rainy, rng.exponential(1.0, n) ** 2, 0.0)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] - 0.5 * np.log1p(X[:, 2]) + 0.1 * rng.normal(size=n)
    return X, y


def test_a_column_mostly_one_value_spans_at_most_rare_span_units():
    rng = np.random.default_rng(0)
    X, _ = _rain(500, rng)
    dummy = (rng.random(500) < 0.02).astype(float)  # a rare dummy
    dummy[:2] = 1.0
    X = np.column_stack([X, dummy])
    scaling = FeatureScaling.fit(X)
    # the rain and the dummy: their whole range over RARE_SPAN (the standard deviation, the
    # rule before, put the rain's largest value far beyond)
    assert np.std(X[:, 2]) < np.ptp(X[:, 2]) / RARE_SPAN
    for column in (2, 3):
        np.testing.assert_allclose(scaling.scale[column], np.ptp(X[:, column]) / RARE_SPAN)
    Z = scaling.transform(X)
    assert np.abs(Z[:, 2:] - Z[:, 2:].min(axis=0)).max() <= RARE_SPAN * (1 + 1e-12)
    # a normal column keeps its robust spread: the larger of 1.4826 MAD and IQR / 1.349
    for column in (0, 1):
        values = X[:, column]
        mad = 1.4826 * np.median(np.abs(values - np.median(values)))
        q1, q3 = np.percentile(values, [25, 75])
        np.testing.assert_allclose(scaling.scale[column], max(mad, (q3 - q1) / 1.349))


def test_rare_values_of_a_mostly_zero_column_are_predicted_as_kernel_ridge_does():
    ratios = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X, y = _rain(400, rng)
        X_test, y_test = _rain(2000, rng)
        ours = SubquantileKernelRegressor().fit(X, y)
        grid = {
            "kernelridge__alpha": [1e-3, 1e-2, 1e-1, 1.0],
            "kernelridge__gamma": [0.03, 0.1, 0.3, 1.0],
        }
        search = GridSearchCV(make_pipeline(StandardScaler(), KernelRidge(kernel="rbf")), grid)
        search.fit(X, y)
        ours_error = np.sqrt(np.mean((ours.predict(X_test) - y_test) ** 2))
        search_error = np.sqrt(np.mean((search.predict(X_test) - y_test) ** 2))
        ratios.append(ours_error / search_error)
    # the standard-deviation units of the rule before: 1.15, 1.20 and 1.85
    assert np.median(ratios) <= 1.10, ratios


@pytest.mark.parametrize("extreme", [1e300, np.finfo(float).max])
def test_a_mostly_zero_column_with_extreme_values_keeps_finite_units(extreme):
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(size=60), np.zeros(60)])
    X[:3, 1] = [extreme, -extreme, 1.0]  # a range beyond float64: the rule before stays
    scaling = FeatureScaling.fit(X)
    assert np.all(np.isfinite(scaling.scale)) and np.all(scaling.scale > 0)
    y = X[:, 0] + 0.1 * rng.normal(size=60)
    model = SubquantileKernelRegressor().fit(X, y)
    assert np.all(np.isfinite(model.predict(X)))
