"""A given epsilon is the fraction trimmed, with every kernel (issue 61): ``refine="auto"``,
the default, rejects nothing at a given epsilon, so epsilon=0 keeps every row and epsilon=0.2
keeps ceil(0.8 n); an explicit ``refine="reject"`` still trims at least epsilon.

The expected counts are computed here from exact fractions (not by the library's rounding
rule), epsilon=0 is compared with scikit-learn's KernelRidge, and the diabetes oracle is a
scikit-learn grid search on the clean rows.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError
from test_refine import _diabetes_scaled_rows

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor

KERNELS = ("rbf", "linear", "poly")
EPSILONS = (0, 0.1, 0.2, 0.35)
N_ROWS = 101
N_GROSS = 15  # gross errors: more than the 10% trim, so "reject" has rows left to drop


def _count(n: int, epsilon: float) -> int:
    """ceil((1 - epsilon) n) in exact arithmetic (0.35 is not a binary fraction)."""
    return math.ceil((1 - Fraction(str(epsilon))) * n)


def _regression(n: int = N_ROWS, gross: int = N_GROSS, seed: int = 0):
    """A smooth target with small noise; the first ``gross`` targets 20 too large."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    y[:gross] += 20.0
    return X, y


def _labels(n: int = 120, seed: int = 0):
    """Two classes split by a line, 20% of the labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    flipped = rng.choice(n, n // 5, replace=False)
    y[flipped] = 1 - y[flipped]
    return X, y


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_regressor_keeps_exactly_the_given_count_with_every_kernel(kernel, epsilon):
    """alpha and gamma "auto" (their trimmed fits run at epsilon too): exactly k rows kept,
    ``epsilon_`` = 1 - k / n, and the fit is refine=None's; refine="reject" trims more where
    the count keeps gross errors (15 of 101 rows at epsilon = 0.1)."""
    X, y = _regression()
    model = SubquantileKernelRegressor(epsilon=epsilon, kernel=kernel).fit(X, y)
    expected = _count(N_ROWS, epsilon)
    assert model.inlier_mask_.sum() == expected
    assert model.epsilon_ == pytest.approx(1 - expected / N_ROWS, abs=1e-15)
    papers = SubquantileKernelRegressor(epsilon=epsilon, kernel=kernel, refine=None).fit(X, y)
    np.testing.assert_array_equal(model.inlier_mask_, papers.inlier_mask_)
    np.testing.assert_array_equal(model.dual_coef_, papers.dual_coef_)
    if epsilon == 0.1:
        rejected = SubquantileKernelRegressor(epsilon=epsilon, kernel=kernel, refine="reject")
        rejected.fit(X, y)
        assert not rejected.inlier_mask_[:N_GROSS].any()
        assert rejected.inlier_mask_.sum() < expected and rejected.epsilon_ > epsilon


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_classifier_keeps_exactly_the_given_count_with_every_kernel(kernel, epsilon):
    """The documented count: k = ceil((1 - epsilon) n) rows, or half of every class where
    that is more (it is not here: the floors are 60 of 120 rows)."""
    X, y = _labels()
    model = SubquantileKernelClassifier(epsilon=epsilon, kernel=kernel).fit(X, y)
    floors = int(np.sum((np.bincount(y) + 1) // 2))
    expected = max(_count(y.size, epsilon), floors)
    assert model.inlier_mask_.sum() == expected
    assert model.epsilon_ == pytest.approx(1 - expected / y.size, abs=1e-15)
    for label in (0, 1):
        assert model.inlier_mask_[y == label].sum() >= np.sum(y == label) / 2


@pytest.mark.parametrize("alpha", [0.1, "auto"])
def test_the_classifier_keeps_half_of_every_class_where_the_count_is_less(alpha):
    """Five classes of three rows, epsilon = 0.45: k = ceil(0.55 * 15) = 9, but two rows of
    each class are 10."""
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(5), 3)
    X = rng.normal(size=(15, 2)) + y[:, None]
    model = SubquantileKernelClassifier(epsilon=0.45, alpha=alpha, gamma=0.5).fit(X, y)
    assert _count(15, 0.45) == 9
    assert model.inlier_mask_.sum() == 10
    np.testing.assert_array_equal(np.bincount(y[model.inlier_mask_]), [2, 2, 2, 2, 2])
    assert model.epsilon_ == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "kernel, params",
    [("rbf", {"gamma": 0.5}), ("linear", {}), ("poly", {"gamma": 0.3, "degree": 2, "coef0": 1})],
)
def test_epsilon_zero_is_kernel_ridge_with_every_kernel(kernel, params):
    """The default refine with epsilon=0 and fit_intercept=False: scikit-learn's KernelRidge
    at the same alpha and kernel, gross errors and all."""
    X, y = _regression()
    X_test = np.random.default_rng(5).normal(size=(20, 3))
    ours = SubquantileKernelRegressor(
        epsilon=0, kernel=kernel, alpha=0.3, fit_intercept=False, **params
    ).fit(X, y)
    reference = KernelRidge(alpha=0.3, kernel=kernel, **params).fit(X, y)
    assert ours.inlier_mask_.all() and ours.epsilon_ == 0.0
    np.testing.assert_allclose(ours.dual_coef_, reference.dual_coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(ours.predict(X_test), reference.predict(X_test), rtol=1e-7)


@pytest.mark.parametrize("epsilon", [0, 0.1, 0.2])
def test_the_default_kernel_keeps_the_given_count_on_features(epsilon):
    """kernel="auto" with features: the start on a sample, then every row scored under its
    model (the subsample route's reflagging); refine="reject" there trimmed 45 rows at
    epsilon = 0.1 (256 of 301 kept) before the default became "auto"."""
    X, y = _regression(n=301, gross=45, seed=2)
    model = SubquantileKernelRegressor(epsilon=epsilon, n_components=40, random_state=0)
    model.fit(X, y)
    assert model.inlier_mask_.sum() == _count(301, epsilon)


def test_the_subsample_route_keeps_the_given_count():
    """alpha "auto" on more than 2000 rows: chosen on a subsample, the inliers reflagged on
    every row at the given epsilon; the 300 gross errors are more than the 10% trim."""
    X, y = _regression(n=2101, gross=300, seed=3)
    model = SubquantileKernelRegressor(epsilon=0.1, kernel="linear").fit(X, y)
    assert model.inlier_mask_.sum() == _count(2101, 0.1)


@pytest.mark.parametrize("seed", [0, 3])
def test_an_explicit_reject_still_trims_at_least_epsilon_near_the_oracle(seed):
    """diabetes, ceil(0.2 n) rows scaled x100 / y1e4, kernel="rbf", epsilon=0.2: the count
    keeps one scaled row (the default refine); refine="reject" drops it, trims more than
    epsilon and stays within 1.10x the oracle's test RMSE (measured 0.98-1.01x on seeds 0-3,
    against 1.03-1.16x for the count)."""
    X_bad, y_bad, X_clean, y_clean, X_test, y_test, bad = _diabetes_scaled_rows(seed)

    def rmse(model):
        return float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))

    grid = {"alpha": np.logspace(-3, 1, 9), "gamma": np.array([0.125, 0.25, 0.5, 1, 2, 4]) / 10}
    oracle = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5).fit(X_clean, y_clean)
    given = SubquantileKernelRegressor(epsilon=0.2, kernel="rbf").fit(X_bad, y_bad)
    assert given.inlier_mask_.sum() == _count(y_bad.size, 0.2)
    assert given.inlier_mask_[bad].sum() == 1
    rejected = SubquantileKernelRegressor(epsilon=0.2, kernel="rbf", refine="reject")
    rejected.fit(X_bad, y_bad)
    assert not rejected.inlier_mask_[bad].any() and rejected.epsilon_ > 0.2
    assert rmse(rejected) <= 1.10 * rmse(oracle)


@pytest.mark.parametrize("kernel", ["rbf", "auto"])
def test_weights_and_copies_trim_exactly_the_given_share(kernel):
    """Integer weights are repeated rows, and copies are fitted once with their count: the
    kept weight is ceil(0.9 W) of the total W, and the repeated rows keep ceil(0.9 W) rows
    (alpha and gamma "auto" are chosen by the fit on the distinct rows, each once, which
    trims 6 of the 60: the weighted fit trimmed their weight, 14 (rbf) or 15 ("auto") of the
    130 copies, before it trimmed the given share)."""
    X, y = _regression(n=60, gross=10, seed=4)
    weights = np.random.default_rng(4).integers(1, 4, size=60).astype(float)
    total = int(weights.sum())
    model = SubquantileKernelRegressor(epsilon=0.1, kernel=kernel)
    weighted = model.fit(X, y, sample_weight=weights)
    assert weighted.row_weights_.sum() == _count(total, 0.1)
    assert weighted.epsilon_ == pytest.approx(1 - _count(total, 0.1) / total, abs=1e-15)
    repeated = np.repeat(np.arange(60), weights.astype(int))
    copies = SubquantileKernelRegressor(epsilon=0.1, kernel=kernel).fit(X[repeated], y[repeated])
    assert copies.inlier_mask_.sum() == _count(total, 0.1)
    assert copies.epsilon_ == pytest.approx(1 - _count(total, 0.1) / total, abs=1e-15)


def test_the_dask_fit_keeps_the_given_count_and_takes_refine_auto():
    """On a Dask array (features, passes over the chunks): the regressor keeps exactly k rows
    (refine="reject" trims more), and the classifier at a given epsilon takes the default,
    whose rejection is refused there."""
    da = pytest.importorskip("dask.array", reason="the Dask fit needs the dask extra")
    X, y = _regression(n=400, gross=60, seed=5)
    X_dask, y_dask = da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100)
    given = {"kernel": "rbf", "n_components": 20, "alpha": 1.0, "gamma": 0.5, "random_state": 0}
    model = SubquantileKernelRegressor(epsilon=0.1, **given).fit(X_dask, y_dask)
    assert int(model.inlier_mask_.sum().compute()) == _count(400, 0.1)
    rejected = SubquantileKernelRegressor(epsilon=0.1, refine="reject", **given)
    assert int(rejected.fit(X_dask, y_dask).inlier_mask_.sum().compute()) < _count(400, 0.1)
    labels = da.from_array((X[:, 0] > 0).astype(int), chunks=100)
    classifier = SubquantileKernelClassifier(epsilon=0.1, **given).fit(X_dask, labels)
    assert int(classifier.inlier_mask_.sum().compute()) == _count(400, 0.1)
    with pytest.raises(ValueError, match="refine='reject'"):
        SubquantileKernelClassifier(epsilon=0.1, refine="reject", **given).fit(X_dask, labels)


def test_refine_values_are_checked_by_name():
    X, y = _regression(n=40)
    with pytest.raises(InvalidParameterError, match="'refine' parameter"):
        SubquantileKernelRegressor(refine="rejekt").fit(X, y)
    with pytest.raises(ValueError, match=r"kernel=\"auto\".*refine='reject'"):
        SubquantileKernelRegressor(epsilon=0.2, refine="reject").fit(X, y)
    with pytest.raises(ValueError, match="refine='biweight' is not available"):
        SubquantileKernelClassifier(refine="biweight").fit(X, y > 0)
    # kernel="auto" takes the default and None, the same fit
    default = SubquantileKernelRegressor(epsilon=0.2).fit(X, y)
    papers = SubquantileKernelRegressor(epsilon=0.2, refine=None).fit(X, y)
    np.testing.assert_array_equal(default.inlier_mask_, papers.inlier_mask_)
    assert default.inlier_mask_.sum() == _count(40, 0.2)
