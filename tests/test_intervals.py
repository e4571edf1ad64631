"""predict_interval: coverage of clean rows when training rows are wrong, shapes, refusals."""

import pickle

import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import NearestNeighbors

from robustkernel import SubquantileKernelRegressor, SubquantileRegressor
from robustkernel.persistence import load_model, save_model
from robustkernel.subquantile import internal_fits
from robustkernel.subquantile._intervals import (
    TAIL,
    check_coverage,
    half_widths,
    nearest_window_means,
)

COEF = np.array([1.0, -2.0, 0.5])


def linear_rows(n, rng, noise=0.3):
    X = rng.normal(size=(n, COEF.size))
    return X, X @ COEF + noise * rng.normal(size=n)


def inside(intervals, y):
    """Share of y within each interval ([:, 0], [:, 1]; a last axis of coverages kept)."""
    y = y.reshape(-1, *([1] * (intervals.ndim - 2)))
    return ((y >= intervals[:, 0]) & (y <= intervals[:, 1])).mean(axis=0)


@pytest.mark.parametrize("attack", ["vertical", "cluster"])
def test_coverage_of_clean_rows_is_nominal_within_a_binomial_tolerance(attack):
    # 3000 training rows, 20% gross errors; 20,000 clean test rows. The coverage's spread:
    # the test rows' binomial sd (0.002 at 0.9) and the calibration quantile's, about
    # sqrt(c (1 - c) / m) over the ~2400 clean scores (0.006): four of those together
    rng = np.random.default_rng(0)
    X, y = linear_rows(3000, rng)
    bad = rng.choice(3000, 600, replace=False)
    if attack == "vertical":
        y[bad] += rng.choice([-1, 1], 600) * rng.uniform(10, 20, 600)
    else:  # bad leverage: a tight far cluster with a wrong target, which OLS on every row fits
        X[bad] = 6.0 + 0.1 * rng.normal(size=(600, COEF.size))
        y[bad] = -20.0 + 0.03 * rng.normal(size=600)
    # a fixed start: with random_state=None the global state chose it, and 2 of 120 starts
    # keep the cluster (test_a_start_that_keeps_the_cluster_gives_wide_intervals)
    model = SubquantileRegressor(LinearRegression(), random_state=0).fit(X, y)
    X_test, y_test = linear_rows(20_000, rng)
    coverages = np.array([0.8, 0.9, 0.95])
    covered = inside(model.predict_interval(X_test, list(coverages)), y_test)
    tolerance = 4 * np.sqrt(coverages * (1 - coverages) * (1 / 2400 + 1 / 20_000))
    assert np.all(np.abs(covered - coverages) <= tolerance), covered
    # against the oracle: the normal's quantile times the noise sd (the model is nearly exact)
    width = np.diff(model.predict_interval(X_test, list(coverages)), axis=1).mean(axis=0)[0]
    oracle = 2 * 0.3 * stats.norm.ppf(0.5 + coverages / 2)
    assert np.all(np.abs(width / oracle - 1) < 0.08), width / oracle


@pytest.mark.xfail(
    strict=True,
    reason="SubquantileRegressor(LinearRegression()) with epsilon='auto': of random_state 0-119, "
    "72 and 113 keep a 20% bad-leverage cluster (31-33 rows flagged of 600; the others flag "
    "exactly the 600), so the fit and its intervals (4x the oracle's mean width) follow the "
    "cluster; also before this session's changes (commit f664de2)",
)
def test_a_start_that_keeps_the_cluster_gives_wide_intervals():
    rng = np.random.default_rng(0)
    X, y = linear_rows(3000, rng)
    bad = rng.choice(3000, 600, replace=False)
    X[bad] = 6.0 + 0.1 * rng.normal(size=(600, COEF.size))
    y[bad] = -20.0 + 0.03 * rng.normal(size=600)
    model = SubquantileRegressor(LinearRegression(), random_state=72).fit(X, y)
    assert np.sum(~model.inlier_mask_[bad]) == 600


def test_split_conformal_on_every_row_is_set_by_the_outliers_ours_is_not():
    # split conformal as a user runs it on these rows (OLS on 70%, the 90% quantile of the
    # other 30%'s absolute residuals): 20% of the targets 15 off put that quantile among them
    rng = np.random.default_rng(1)
    X, y = linear_rows(1000, rng)
    y[rng.choice(1000, 200, replace=False)] += 15.0
    naive = LinearRegression().fit(X[:700], y[:700])
    naive_width = 2 * np.quantile(np.abs(y[700:] - naive.predict(X[700:])), 0.9)
    model = SubquantileRegressor(LinearRegression()).fit(X, y)
    ours = np.diff(model.predict_interval(X[:50]), axis=1).mean()
    oracle = 2 * 0.3 * stats.norm.ppf(0.95)
    assert naive_width > 10 * oracle
    assert abs(ours / oracle - 1) < 0.15


def test_the_default_kernel_regressor_covers_clean_rows_of_a_nonlinear_truth():
    rng = np.random.default_rng(2)

    def rows(n):
        X = rng.uniform(-2, 2, size=(n, 2))
        return X, np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 + 0.3 * rng.normal(size=n)

    X, y = rows(500)
    y[:100] = rng.normal(8, 2, size=100)
    model = SubquantileKernelRegressor().fit(X, y)
    X_test, y_test = rows(10_000)
    covered = inside(model.predict_interval(X_test, [0.8, 0.9]), y_test)
    # ~400 clean scores: the calibration quantile's sd is about 0.015 at 0.9
    assert np.all(np.abs(covered - [0.8, 0.9]) < 0.06), covered


def test_intervals_widen_where_the_noise_grows():
    rng = np.random.default_rng(3)

    def rows(n):
        X = rng.uniform(-2, 2, size=(n, 1))
        noise = np.where(X[:, 0] > 0, 1.0, 0.2)
        return X, X[:, 0] + noise * rng.normal(size=n)

    X, y = rows(1500)
    y[:150] += 30.0
    model = SubquantileRegressor(LinearRegression()).fit(X, y)
    X_test, y_test = rows(10_000)
    intervals = model.predict_interval(X_test)
    width = intervals[:, 1] - intervals[:, 0]
    right = X_test[:, 0] > 0.5
    left = X_test[:, 0] < -0.5
    assert width[right].mean() / width[left].mean() > 3
    # each side covers at the nominal rate, not only the two together
    for side in (right, left):
        assert abs(inside(intervals[side], y_test[side]) - 0.9) < 0.05


def test_bounds_shape_order_and_nesting():
    rng = np.random.default_rng(4)
    X, y = linear_rows(200, rng)
    model = SubquantileRegressor(LinearRegression()).fit(X, y)
    one = model.predict_interval(X[:7], 0.9)
    assert one.shape == (7, 2)
    prediction = model.predict(X[:7])
    assert np.all(one[:, 0] <= prediction) and np.all(prediction <= one[:, 1])
    many = model.predict_interval(X[:7], [0.5, 0.9, 0.99])
    assert many.shape == (7, 2, 3)
    np.testing.assert_allclose(many[:, :, 1], one)
    widths = many[:, 1] - many[:, 0]
    assert np.all(np.diff(widths, axis=1) >= 0)
    # coverage beyond what the clean scores can rank: the outlier cutoff, still finite
    assert np.all(np.isfinite(model.predict_interval(X[:7], 0.9999)))


def test_half_width_is_the_conformal_order_statistic():
    scores = np.arange(1.0, 100.0)  # 99 clean scores 1..99, sigma 2
    calibration = {"sigma": 2.0, "scores": scores, "cutoff": 500.0, "local": None}
    rank = int(np.ceil(100 * 0.9 / (1 - TAIL)))
    np.testing.assert_allclose(half_widths(calibration, np.array([0.9])), [2.0 * rank])
    # a rank past the scores: the cutoff
    np.testing.assert_allclose(half_widths(calibration, np.array([0.999])), [1000.0])


@pytest.mark.parametrize(
    "coverage", [0, 1, 1.5, -0.1, float("nan"), float("inf"), "0.9", None, True, [], [[0.9]],
                 [0.9, "a"], {"a": 1}]
)
def test_hostile_coverage_is_refused_naming_it(coverage):
    with pytest.raises(ValueError, match="coverage"):
        check_coverage(coverage)
    rng = np.random.default_rng(5)
    X, y = linear_rows(60, rng)
    model = SubquantileRegressor(LinearRegression()).fit(X, y)
    with pytest.raises(ValueError, match="coverage"):
        model.predict_interval(X[:3], coverage)


def test_refusals_say_why():
    rng = np.random.default_rng(6)
    X, y = linear_rows(80, rng)
    with pytest.raises(NotFittedError):
        SubquantileRegressor(LinearRegression()).predict_interval(X)
    several = SubquantileKernelRegressor(epsilon=0.1, kernel="linear", alpha=1.0)
    several.fit(X, np.column_stack([y, -y]))
    with pytest.raises(ValueError, match="several targets"):
        several.predict_interval(X)
    gram = X @ X.T
    precomputed = SubquantileKernelRegressor(epsilon=0.1, kernel="precomputed", alpha=1.0)
    with pytest.raises(ValueError, match="precomputed"):
        precomputed.fit(gram, y).predict_interval(gram)
    with internal_fits():
        step = SubquantileRegressor(LinearRegression()).fit(X, y)
    with pytest.raises(ValueError, match="another computation"):
        step.predict_interval(X)


def test_query_rows_are_validated():
    rng = np.random.default_rng(7)
    X, y = linear_rows(100, rng)
    model = SubquantileKernelRegressor(epsilon=0.1, kernel="rbf").fit(X, y)
    bad = X[:3].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.predict_interval(bad)
    with pytest.raises(ValueError, match="features"):
        model.predict_interval(X[:3, :2])


@pytest.mark.parametrize(
    "model",
    [
        SubquantileKernelRegressor(),
        SubquantileKernelRegressor(n_components=40, random_state=0),
        SubquantileKernelRegressor(epsilon=0.2, kernel="rbf"),
    ],
    ids=["default", "features", "given"],
)
def test_every_fit_kind_gives_finite_nested_intervals_that_survive_model_files(model, tmp_path):
    rng = np.random.default_rng(8)
    X, y = linear_rows(150, rng)
    y[:20] += 10
    model.fit(X, y)
    intervals = model.predict_interval(X[:20], [0.8, 0.95])
    assert np.all(np.isfinite(intervals))
    assert np.all(intervals[:, 1, 0] <= intervals[:, 1, 1])
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_interval(X[:20], [0.8, 0.95]), intervals)
    path = save_model(model, tmp_path / "model.skops")
    np.testing.assert_array_equal(load_model(path).predict_interval(X[:20], [0.8, 0.95]), intervals)


@pytest.mark.parametrize("seed", range(5))
def test_one_dimensional_neighbour_means_match_a_brute_force_search(seed):
    """The sorted-window search of the fitted-value scale against sklearn's brute force (no
    ties: continuous draws), queries inside and beyond the reference's range."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 400))
    reference, values = rng.normal(size=m), rng.exponential(size=m)
    queries = rng.normal(scale=3.0, size=200)
    for k in sorted({1, 2, m // 2 or 1, m - 1 or 1, m}):
        search = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(reference[:, None])
        nearest = search.kneighbors(queries[:, None], return_distance=False)
        np.testing.assert_allclose(
            nearest_window_means(reference, values, queries, k), values[nearest].mean(axis=1)
        )
