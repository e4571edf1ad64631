"""n_components="auto": which model a fit on n rows gets, and that it is that model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.subquantile._automatic import components as _components
from robustkernel.subquantile._automatic.components import resolve_components

GIB = 2**30


def _params(**changes):
    return {"n_components": "auto", "kernel": "rbf", "device": None, **changes}


@pytest.fixture
def plenty_of_memory(monkeypatch):
    monkeypatch.setattr(_components, "available_memory", lambda: 64 * GIB)


@pytest.mark.parametrize(
    ("n", "expected"),
    [(10, None), (4000, None), (4001, 317), (20_000, 708), (40_000, 1000), (10**6, 1000)],
)
def test_exact_up_to_4000_rows_then_five_root_n_features(plenty_of_memory, n, expected):
    # ceil(5 sqrt(4001)) = ceil(316.27) = 317; ceil(5 sqrt(20000)) = ceil(707.1) = 708
    assert resolve_components(_params(), n) == expected


def test_features_capped_by_memory(monkeypatch):
    monkeypatch.setattr(_components, "available_memory", lambda: 1 * GIB)
    # four n x m float64 arrays in 1 GiB at n = 1e6: m = floor(2^30 / (32 e6)) = 33
    assert resolve_components(_params(), 10**6) == 33
    monkeypatch.setattr(_components, "available_memory", lambda: 10 * 2**20)
    assert resolve_components(_params(), 10**6) == _components.MIN_COMPONENTS


@pytest.mark.parametrize("changes", [{"kernel": "precomputed"}, {"device": "cpu"}])
def test_exact_only_models_stay_exact(plenty_of_memory, changes):
    assert resolve_components(_params(**changes), 10**5) is None


@pytest.mark.parametrize(("n", "expected"), [(4000, None), (4001, 317), (10**5, 1000)])
def test_the_default_kernel_gets_features_as_a_given_kernel_does(plenty_of_memory, n, expected):
    """kernel="auto" (the regressor's default) is no exact-only model: beyond 4000 rows its
    start runs on a sample of rows and the model on every row is fitted on features."""
    assert resolve_components(_params(kernel="auto"), n) == expected


@pytest.mark.parametrize("given", [None, 7, 5000])
def test_given_values_pass_through(given):
    assert resolve_components(_params(n_components=given), 10**5) == given


def test_dask_always_gets_features():
    assert resolve_components(_params(), 100, dask=True) == math.ceil(5 * math.sqrt(100))
    assert resolve_components(_params(), math.nan, dask=True) == _components.MAX_COMPONENTS


def test_the_fit_uses_the_resolved_features(plenty_of_memory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4001, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=4001)
    given = {"kernel": "rbf", "epsilon": 0.1, "alpha": 1.0, "gamma": 0.5, "random_state": 0}
    automatic = SubquantileKernelRegressor(**given).fit(X, y)
    explicit = SubquantileKernelRegressor(n_components=317, **given).fit(X, y)
    assert automatic.n_components_ == 317
    assert automatic.feature_map_.n_components == 317
    np.testing.assert_array_equal(automatic.coef_, explicit.coef_)
    np.testing.assert_array_equal(automatic.inlier_mask_, explicit.inlier_mask_)


def test_small_fits_stay_exact():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    given = {"epsilon": 0.1, "alpha": 1.0, "gamma": 0.5}
    automatic = SubquantileKernelClassifier(**given).fit(X, y)
    exact = SubquantileKernelClassifier(n_components=None, **given).fit(X, y)
    assert automatic.n_components_ is None
    assert not hasattr(automatic, "feature_map_")
    np.testing.assert_array_equal(automatic.dual_coef_, exact.dual_coef_)


@pytest.mark.parametrize("value", ["many", 0, 2.5])
def test_bad_values_are_named(value):
    X, y = np.zeros((10, 2)), np.arange(10.0)
    with pytest.raises(ValueError, match="n_components"):
        SubquantileKernelRegressor(n_components=value).fit(X, y)
