"""One Subquantile fit over a Dask array on a dask.distributed LocalCluster."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.corruption import corrupt
from robustkernel.subquantile._backends import distributed as _distributed

da = pytest.importorskip("dask.array", reason="the distributed fit needs the dask extra")
distributed = pytest.importorskip("distributed", reason="the distributed fit needs the dask extra")

SETTINGS = {
    "kernel": "rbf",
    "epsilon": 0.2,
    "alpha": 1.0,
    "gamma": 0.5,
    "refine": None,
    "random_state": 0,
}
"""The papers' estimator at given settings: the Dask fit runs the in-memory alternating fit
over chunks (kernel="auto", the default, takes its kernel and start from an in-memory fit on
a sample of rows: tests/test_default_kernel.py)."""


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


@pytest.mark.slow  # 800,000 rows: make test-slow
def test_features_larger_than_a_worker_memory_limit():
    """n x m features of 640 MB with workers limited to 600 MB: the features are computed per
    chunk in every pass and never stored, so the fit completes. (A worker process holds about
    280 MB once it has imported the library; dask pauses a worker at 80% of its limit, so a
    smaller limit would pause it before any work.)"""
    n, m = 800_000, 100
    bad = generated(n, seed=4)
    X = da.from_array(bad.X, chunks=(10_000, 3))
    y = da.from_array(bad.y, chunks=10_000)
    assert n * m * 8 > 600e6
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, memory_limit="600MB", dashboard_address=None
    ) as cluster, distributed.Client(cluster), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=2: the kept rows may still change
        model = SubquantileKernelRegressor(
            n_components=m, max_iter=2, **SETTINGS
        ).fit(X, y)
        # the per-row attributes are Dask arrays on the cluster: read them while it is up
        inliers = model.inlier_mask_.compute()
    assert model.coef_.shape == (m,)
    assert inliers.sum() == n - n // 5
    assert inliers[bad.index].mean() < 0.2  # two refits drop most of them


def test_unsupported_options_are_named():
    X = da.from_array(np.zeros((20, 2)), chunks=10)
    y = da.from_array(np.zeros(20), chunks=10)
    given = {"epsilon": 0.1, "alpha": 1.0, "gamma": 1.0}
    with pytest.raises(ValueError, match=r"refine='biweight'.*solver='nesterov'"):
        SubquantileKernelRegressor(
            n_components=5, refine="biweight", solver="nesterov", **given
        ).fit(X, y)
    with pytest.raises(ValueError, match="n_components=None"):
        SubquantileKernelRegressor(n_components=None, refine=None, **given).fit(X, y)
    with pytest.raises(ValueError, match="link='logistic'"):
        SubquantileKernelRegressor(n_components=5, link="logistic", **given).fit(X, y)
    with pytest.raises(ValueError, match=r"refine='reject'.*a classifier: only with epsilon"):
        SubquantileKernelClassifier(n_components=5, refine="reject", **given).fit(X, y)


# Every constructor parameter, with the values a Dask fit cannot run (written out here, not read
# from the library): each must be refused by name, never fitted while ignored. An empty list:
# every value of the parameter runs on Dask.
DASK_REFUSES = {
    "epsilon": [],
    "alpha": [],
    "kernel": ["precomputed"],
    "gamma": [],
    "degree": [],
    "coef0": [],
    "kernel_params": [],
    "n_components": [None],
    "approximation": ["rff"],
    "dtype": [],  # the storage type of the feature matrix, which a Dask fit never stores
    "fit_intercept": [],
    "solver": ["gd", "momentum", "nesterov"],
    "max_iter": [],
    "tol": [],  # tol, momentum, n_iter_no_change: gradient solvers only (refused above)
    "init": ["zeros", "glorot", np.zeros(5)],
    "n_init": [2],
    "init_size": [],  # the size of the random starts (n_init, refused above)
    "radius": [1.0],
    "refine": ["biweight"],
    "smoothing": [0.1],
    "momentum": [],
    "line_search": [True],
    "n_iter_no_change": [],
    "random_state": [],
    "verbose": [],
    "device": ["cpu"],
    "link": ["logistic", "softplus"],
    "loss": ["hinge"],  # libsvm's, in memory; "auto" is the log loss on Dask
}
GIVEN_DASK = {"n_components": 5, "epsilon": 0.1, "alpha": 1.0, "gamma": 1.0, "refine": None}


@pytest.mark.parametrize("estimator", [SubquantileKernelRegressor, SubquantileKernelClassifier])
def test_every_parameter_is_classified_for_dask(estimator):
    names = set(estimator().get_params())
    assert names <= set(DASK_REFUSES), sorted(names - set(DASK_REFUSES))


@pytest.mark.parametrize(
    ("estimator", "name", "value"),
    [
        (estimator, name, value)
        for estimator in (SubquantileKernelRegressor, SubquantileKernelClassifier)
        for name, values in DASK_REFUSES.items()
        if name in estimator().get_params()
        for value in values
    ],
)
def test_options_a_dask_fit_cannot_run_are_refused(estimator, name, value):
    X = da.from_array(np.random.default_rng(0).normal(size=(20, 2)), chunks=10)
    y = da.from_array(np.arange(20) % 2, chunks=10)
    model = estimator(**{**GIVEN_DASK, name: value})
    with pytest.raises(ValueError, match=rf"on a Dask array does not support .*\b{name}="):
        model.fit(X, y)
    assert not hasattr(model, "inlier_mask_")


def test_the_classifier_rejection_at_a_given_epsilon_is_refused_on_dask():
    X = da.from_array(np.random.default_rng(0).normal(size=(20, 2)), chunks=10)
    y = da.from_array(np.arange(20) % 2, chunks=10)
    with pytest.raises(ValueError, match=r"Dask array does not support refine='reject'"):
        SubquantileKernelClassifier(**{**GIVEN_DASK, "refine": "reject"}).fit(X, y)


def classes(n: int, n_classes: int, seed: int = 0):
    """Blobs on a circle, 20% of the labels replaced by another class."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(n_classes, size=n)
    angles = 2 * np.pi * labels / n_classes
    X = np.column_stack([np.cos(angles), np.sin(angles)]) * 2 + rng.normal(size=(n, 2))
    flipped = rng.choice(n, n // 5, replace=False)
    noisy = labels.copy()
    noisy[flipped] = (labels[flipped] + rng.integers(1, n_classes, size=flipped.size)) % n_classes
    return X, noisy, flipped


@pytest.mark.slow  # 11 s
@pytest.mark.parametrize("n_classes", [2, 3])
def test_distributed_classifier_equals_the_in_memory_feature_path(client, n_classes):
    """L-BFGS on the client with one pass per evaluation: the same kept rows, probabilities
    equal up to the solver's tolerance (the sums run in another order)."""
    X, y, flipped = classes(2000, n_classes)
    settings = {"epsilon": 0.2, "alpha": 0.1, "gamma": 0.5, "refine": None, "random_state": 0}
    memory = SubquantileKernelClassifier(n_components=60, **settings).fit(X, y)
    model = SubquantileKernelClassifier(n_components=60, **settings).fit(
        da.from_array(X, chunks=(1000, 2)), da.from_array(y, chunks=1000)
    )
    np.testing.assert_array_equal(model.classes_, memory.classes_)
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)
    X_test = np.random.default_rng(1).normal(size=(300, 2)) * 2
    np.testing.assert_allclose(
        model.predict_proba(X_test), memory.predict_proba(X_test), atol=1e-7
    )
    assert model.n_iter_ == memory.n_iter_ and model.converged_
    assert model.inlier_mask_[flipped].mean() < 0.2


@pytest.mark.slow  # L-BFGS as passes, class by class: make test-slow
def test_class_floors_are_selected_as_in_memory(client):
    """A small class with most of its labels wrong: half of it is kept anyway (the floor
    binds), on Dask as in memory."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] > 0).astype(int)
    y[:30] = 2  # a third class of random rows: every one of them is fitted badly
    settings = {"epsilon": 0.3, "alpha": 1.0, "gamma": 0.5, "refine": None, "random_state": 0}
    memory = SubquantileKernelClassifier(n_components=40, **settings).fit(X, y)
    model = SubquantileKernelClassifier(n_components=40, **settings).fit(
        da.from_array(X, chunks=(300, 2)), da.from_array(y, chunks=300)
    )
    assert memory.inlier_mask_[:30].sum() == 15  # the floor ceil(60 / 2), not fewer
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)


@pytest.mark.slow  # 10 s; the default suite keeps the plain equality test
def test_distributed_reject_equals_the_in_memory_reject(client):
    """refine="reject": leverages per chunk and the exact median of the kept rows give the
    rows the in-memory rule drops, and the same refit."""
    bad = generated(6000, seed=2)
    settings = {**SETTINGS, "epsilon": 0.1, "refine": "reject"}  # 20% bad rows, 10% trimmed
    memory = SubquantileKernelRegressor(n_components=80, **settings).fit(bad.X, bad.y)
    model = SubquantileKernelRegressor(n_components=80, **settings).fit(
        da.from_array(bad.X, chunks=(1000, 3)), da.from_array(bad.y, chunks=1000)
    )
    assert memory.epsilon_ > 0.15  # the rule dropped rows beyond the 10% trim
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)
    X_test = np.random.default_rng(1).uniform(-2, 2, size=(300, 3))
    np.testing.assert_allclose(model.predict(X_test), memory.predict(X_test), rtol=1e-8, atol=1e-8)


@pytest.mark.slow
def test_two_target_columns_as_in_memory(client):
    bad = generated(2000, seed=6)
    Y = np.column_stack([bad.y, 2 * bad.y])
    memory = SubquantileKernelRegressor(n_components=50, **SETTINGS).fit(bad.X, Y)
    model = SubquantileKernelRegressor(n_components=50, **SETTINGS).fit(
        da.from_array(bad.X, chunks=(500, 3)), da.from_array(Y, chunks=(500, 2))
    )
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)
    X_test = np.random.default_rng(1).uniform(-2, 2, size=(100, 3))
    assert model.predict(X_test).shape == (100, 2)
    np.testing.assert_allclose(model.predict(X_test), memory.predict(X_test), rtol=1e-8, atol=1e-8)


@pytest.mark.slow  # 12 s
def test_auto_settings_come_from_the_in_memory_fit_on_a_sample(client, monkeypatch):
    """With no more rows than the sample, "auto" gives the in-memory choices exactly; with a
    sample of a fifth of the rows, alpha is scaled to the row count and the fit stays close
    to the in-memory automatic fit on all rows."""
    bad = generated(5000, seed=7)
    X, y = da.from_array(bad.X, chunks=(1000, 3)), da.from_array(bad.y, chunks=1000)
    memory = SubquantileKernelRegressor(n_components=80, random_state=0).fit(bad.X, bad.y)
    whole = SubquantileKernelRegressor(n_components=80, refine=None, random_state=0).fit(X, y)
    reference = SubquantileKernelRegressor(
        n_components=80, refine=None, random_state=0
    ).fit(bad.X, bad.y)
    assert (whole.alpha_, whole.gamma_) == (reference.alpha_, reference.gamma_)
    assert whole.epsilon_ == pytest.approx(reference.epsilon_, abs=0.01)

    monkeypatch.setattr(_distributed, "AUTO_SAMPLE_ROWS", 1000)
    sampled = SubquantileKernelRegressor(n_components=80, random_state=0).fit(X, y)
    small = SubquantileKernelRegressor(n_components=80, random_state=0).fit(
        bad.X[np.sort(np.random.RandomState(0).choice(5000, 1000, replace=False))],
        bad.y[np.sort(np.random.RandomState(0).choice(5000, 1000, replace=False))],
    )
    assert sampled.alpha_ == pytest.approx(small.alpha_ * 5)
    clean = generated(2000, seed=8)
    truth = np.sin(clean.X[:, 0]) + clean.X[:, 1] * clean.X[:, 2]
    errors = [np.sqrt(np.mean((m.predict(clean.X) - truth) ** 2)) for m in (sampled, memory)]
    assert errors[0] < 1.2 * errors[1], errors
    assert abs(sampled.epsilon_ - 0.2) < 0.05


def _peak_client_memory(rows_per_chunk: int) -> int:
    """tracemalloc's peak in this process (the client) over a fit with refine="reject" of 4
    chunks of rows generated on the workers: the client never holds the data."""
    n = 4 * rows_per_chunk
    rng = da.random.default_rng(0)
    X = rng.standard_normal((n, 3), chunks=(rows_per_chunk, 3))
    noise = rng.standard_normal(n, chunks=rows_per_chunk)
    replaced = rng.random(n, chunks=rows_per_chunk) < 0.2
    y = da.where(replaced, 5.0, da.sin(X[:, 0]) + 0.1 * noise)
    model = SubquantileKernelRegressor(
        n_components=20, **{**SETTINGS, "refine": "reject"}, max_iter=6
    )
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # max_iter=6: the kept rows may still change
            model.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the fitted per-row attributes are Dask arrays, computed where asked
    assert not isinstance(model.inlier_mask_, np.ndarray)
    assert np.asarray(model.inlier_mask_).shape == (n,)
    assert 0.75 < float(model.inlier_mask_.mean().compute()) <= 0.8
    return peak


@pytest.mark.slow
def test_the_client_memory_does_not_grow_with_the_rows():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        _peak_client_memory(2_000)  # imports and first-call caches, outside the comparison
        # both beyond PERMUTED_ROWS (below it, the landmark draw permutes every row)
        small, large = _peak_client_memory(30_000), _peak_client_memory(90_000)
    # 240,000 more rows: a per-row array on the client (a mask is 1 byte, a loss 8) would add
    # 0.24-1.9 MB per copy; the client's state is the same at both sizes
    assert _distributed.PERMUTED_ROWS < 120_000
    assert large - small < 100_000, (small, large)


# last in the module: when it ran before test_the_client_memory_does_not_grow_with_the_rows,
# that test's client peaks at its two sizes came out 171 and 273 KB apart (limit 100 KB)
@pytest.mark.slow  # 54 s: L-BFGS as passes, and the in-memory fit twice (itself, the sample)
def test_distributed_squared_hinge_equals_the_in_memory_feature_path(client):
    """The squared hinge per pair of classes, L-BFGS as passes: the kept rows of the in-memory
    feature fit, and its decision values up to the solver's tolerance (1e-6 on the mean
    loss, reached along another path: the sums run in another order; 0.007 apart at most
    here); Platt's sigmoids from the fit on the sample (here every row: the in-memory fit
    itself), so the probabilities agree to the same order."""
    X, y, flipped = classes(1200, 3)
    settings = {
        "epsilon": 0.2, "alpha": 0.05, "gamma": 0.5, "refine": None, "random_state": 0,
        "loss": "squared_hinge", "n_components": 40,
    }
    memory = SubquantileKernelClassifier(**settings).fit(X, y)
    model = SubquantileKernelClassifier(**settings).fit(
        da.from_array(X, chunks=(500, 2)), da.from_array(y, chunks=500)
    )
    assert model.loss_ == memory.loss_ == "squared_hinge"
    np.testing.assert_array_equal(model.inlier_mask_, memory.inlier_mask_)
    X_test = np.random.default_rng(1).normal(size=(300, 2)) * 2
    np.testing.assert_allclose(
        model.decision_function(X_test), memory.decision_function(X_test), atol=0.02
    )
    np.testing.assert_allclose(model.probA_, memory.probA_)
    np.testing.assert_allclose(
        model.predict_proba(X_test), memory.predict_proba(X_test), atol=0.005
    )
    assert model.inlier_mask_[flipped].mean() < 0.2


def test_row_attributes_read_after_the_client_closes_say_what_happened():
    """A new user's session: fit inside ``with Client(...)``, read the mask after it. The per-row
    attributes lived on the cluster: reading them says so and how to keep them;
    ``compute_row_attributes()`` before the close keeps them (equal to the values computed
    while the client was open), and the model still predicts."""
    bad = generated(300)
    X, y = da.from_array(bad.X, chunks=100), da.from_array(bad.y, chunks=100)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        lost = SubquantileKernelRegressor(n_components=20, **SETTINGS).fit(X, y)
        kept = SubquantileKernelRegressor(n_components=20, **SETTINGS).fit(X, y)
        expected = lost.inlier_mask_.compute()
        assert kept.compute_row_attributes() is kept
    for name in ("inlier_mask_", "outlier_scores_", "row_weights_"):
        with pytest.raises(AttributeError, match=r"client has closed.*compute_row_attributes"):
            getattr(lost, name)
        assert isinstance(getattr(kept, name), np.ndarray)
    np.testing.assert_array_equal(kept.inlier_mask_, expected)
    np.testing.assert_allclose(lost.predict(bad.X[:5]), kept.predict(bad.X[:5]))
