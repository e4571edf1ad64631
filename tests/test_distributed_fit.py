"""One Subquantile fit over a Dask array on a dask.distributed LocalCluster."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from robustkernel import SubquantileKernelRegressor
from robustkernel.corruption import corrupt

da = pytest.importorskip("dask.array", reason="the distributed fit needs the dask extra")
distributed = pytest.importorskip("distributed", reason="the distributed fit needs the dask extra")

SETTINGS = {"epsilon": 0.2, "alpha": 1.0, "gamma": 0.5, "refine": None, "random_state": 0}


def generated(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 3))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)
    return corrupt(X, y, "label", 0.2, random_state=seed)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def test_distributed_fit_equals_the_in_memory_feature_path(client):
    bad = generated(10_000)
    memory = SubquantileKernelRegressor(n_components=100, **SETTINGS).fit(bad.X, bad.y)
    X = da.from_array(bad.X, chunks=(1500, 3))
    y = da.from_array(bad.y, chunks=1500)
    model = SubquantileKernelRegressor(n_components=100, **SETTINGS).fit(X, y)
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)
    X_test = np.random.default_rng(1).uniform(-2, 2, size=(500, 3))
    expected = memory.predict(X_test)
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(model.outlier_scores_, memory.outlier_scores_, rtol=1e-8)
    assert model.n_iter_ == memory.n_iter_ and model.converged_
    assert model.epsilon_ == pytest.approx(0.2)
    assert model.inlier_mask_[bad.index].mean() <= 0.05  # N(5, 5) targets left out


def test_ties_at_the_threshold_are_broken_by_row_index_as_in_memory(client):
    """Duplicated rows give equal losses at the k-th place; both fits keep the same ones."""
    bad = generated(400, seed=3)
    X, y = np.repeat(bad.X, 5, axis=0), np.repeat(bad.y, 5)
    settings = {**SETTINGS, "epsilon": 0.13}  # k = 1740: a cut inside a group of copies
    memory = SubquantileKernelRegressor(n_components=40, **settings).fit(X, y)
    model = SubquantileKernelRegressor(n_components=40, **settings).fit(
        da.from_array(X, chunks=(333, 3)), da.from_array(y, chunks=333)
    )
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)


def test_features_larger_than_a_worker_memory_limit():
    """n x m features of 400 MB with workers limited to 350 MB: the features are computed per
    chunk in every pass and never stored, so the fit completes."""
    n, m = 500_000, 100
    bad = generated(n, seed=4)
    X = da.from_array(bad.X, chunks=(10_000, 3))
    y = da.from_array(bad.y, chunks=10_000)
    assert n * m * 8 > 350e6
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, memory_limit="350MB", dashboard_address=None
    ) as cluster, distributed.Client(cluster), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=2: the kept rows may still change
        model = SubquantileKernelRegressor(
            n_components=m, max_iter=2, **SETTINGS
        ).fit(X, y)
    assert model.coef_.shape == (m,)
    assert model.inlier_mask_.sum() == n - n // 5
    assert model.inlier_mask_[bad.index].mean() < 0.2  # two refits drop most of them


def test_unsupported_options_are_named():
    X = da.from_array(np.zeros((20, 2)), chunks=10)
    y = da.from_array(np.zeros(20), chunks=10)
    with pytest.raises(ValueError, match=r"epsilon='auto'.*refine='reject'"):
        SubquantileKernelRegressor(n_components=5).fit(X, y)
    with pytest.raises(ValueError, match="n_components=None"):
        SubquantileKernelRegressor(0.1, alpha=1.0, gamma=1.0, refine=None).fit(X, y)
