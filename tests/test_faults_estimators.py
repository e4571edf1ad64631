"""Fault hardening of the estimators: hostile inputs end in a clear error or a finite answer.

Faults guarded against:

* memory: an exact (n x n) fit too large for the machine is refused before anything of size
  n x n is allocated (``InsufficientMemoryError``, naming n, the memory and ``n_components=``);
  each estimator's declared peak of n x n matrices bounds its measured peak;
* prediction memory: exact-model ``predict`` / ``decision_function`` / ``predict_proba`` and
  ``MetricKernelRidge.predict`` / ``transform`` work in bounded row blocks, with the unchunked
  answer;
* silent wrong answers: SubQ regression on targets of magnitude 1e200 or 1e-200 (equivariance,
  no overflow warnings); ``MetricKernelRidge`` on features of magnitude 1e9 (refused, told to
  standardize) and its squared distances' cancellation; a callable kernel returning NaN at fit
  or at predict, with and without ``n_components``; a non-PSD precomputed kernel with
  ``n_components``; ``epsilon="auto"`` on one row; ``MetricKernelRidge`` with a tiny ``lam`` or
  huge targets (the message names the real cause);
* a table of hostile inputs (NaN / inf, empty, one row, one feature, constant features, huge and
  tiny magnitudes, int / bool / float32 / object dtypes, tall and wide data, duplicate rows,
  constant targets, one class, one row per class, Fortran and non-contiguous arrays, pandas)
  against every estimator: each fits and predicts finite values, or raises ValueError or
  MemoryError with a message; never another exception, NaN predictions or a RuntimeWarning.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import pairwise_kernels

import robustkernel._memory as memory
from robustkernel import (
    MetricKernelLogisticRegression,
    SubquantileClassifier,
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
    SubquantileMLPClassifier,
)
from robustkernel._kernel_model.pairwise import PairwisePlatt
from robustkernel._memory import InsufficientMemoryError
from robustkernel.baselines import (
    CRRKernelRegressor,
    SeverKernelClassifier,
    SeverKernelRegressor,
    STIRKernelRegressor,
    TiltedKernelRegressor,
    TorrentGDKernelRegressor,
)
from robustkernel.metric_kernel_ridge import MetricKernelRidge
from robustkernel.metric_kernel_ridge._objective import kernel_argument, resolve_kernel
from robustkernel.subquantile._automatic.feature_scaling import UNIT_DECIMALS

GIB = 2**30
MIB = 2**20


@pytest.fixture(autouse=True)
def _runtime_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(n=60, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    y[: n // 10] += 5.0
    return X, y


def _labels(y):
    return (y > np.median(y)).astype(int)


# -- 1. memory guard -----------------------------------------------------------------------

GUARDED = {
    # the exact model asked for: n_components="auto" fits features at this size. The papers'
    # estimator (kernel="rbf") and the default (kernel="auto": a high-breakdown start, then
    # kernel ridge on the rows it keeps), each guarded before its first n x n matrix.
    "subq-regressor": (
        lambda: SubquantileKernelRegressor(kernel="rbf", n_components=None),
        "regression",
    ),
    "subq-default": (lambda: SubquantileKernelRegressor(n_components=None), "regression"),
    "subq-classifier": (
        lambda: SubquantileKernelClassifier(n_components=None),
        "classification",
    ),
    "subq-auto": (
        lambda: SubquantileKernelRegressor(kernel="rbf", epsilon="auto", n_components=None),
        "regression",
    ),
    "crr": (lambda: CRRKernelRegressor(), "regression"),
    "stir": (lambda: STIRKernelRegressor(max_iter=20), "regression"),
    "torrent": (lambda: TorrentGDKernelRegressor(max_iter=50), "regression"),
    "sever": (lambda: SeverKernelRegressor(), "regression"),
    "sever-classifier": (lambda: SeverKernelClassifier(), "classification"),
    "term": (lambda: TiltedKernelRegressor(max_iter=50), "regression"),
    "metric": (lambda: MetricKernelRidge(max_iter=3), "regression"),
}


def _with_peak_memory(function, *args):
    """``function(*args)`` and the peak of the memory traced by tracemalloc meanwhile."""
    tracemalloc.start()
    try:
        result = function(*args)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_exact_fit_too_large_is_refused_before_allocating(name, monkeypatch):
    make, task = GUARDED[name]
    monkeypatch.setattr(memory, "available_memory", lambda: 8 * GIB)
    n = 60_000
    X = np.linspace(0.0, 1.0, 2 * n).reshape(n, 2)
    y = np.arange(n) % 2 if task == "classification" else np.linspace(0.0, 1.0, n)

    def refused_fit():
        with pytest.raises(InsufficientMemoryError) as raised:
            make().fit(X, y)
        return raised

    raised, peak = _with_peak_memory(refused_fit)
    assert peak < 8 * MIB  # a validated copy of X at most; one n x n matrix is 26.8 GiB
    message = str(raised.value)
    assert "n=60000" in message and "8.0 GiB" in message and "\n" not in message
    if name != "metric":
        assert "n_components=" in message and "--n-components" in message
    assert isinstance(raised.value, MemoryError) and isinstance(raised.value, ValueError)


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_declared_peak_bounds_the_measured_peak(name, monkeypatch):
    """The n x n count each estimator declares is at least what its fit really holds."""
    make, task = GUARDED[name]
    n = 500
    X, y = _data(n)
    target = _labels(y) if task == "classification" else y
    estimator = make()
    needed = {}

    def record(estimator_name, n_samples, n_matrices, remedy):  # the largest declaration
        needed["bytes"] = max(needed.get("bytes", 0.0), n_matrices * 8.0 * n_samples**2)

    monkeypatch.setattr(memory, "check_fit_memory", record)
    for module in (
        "robustkernel._kernel_model.estimator",
        "robustkernel.metric_kernel_ridge._estimator",
    ):
        monkeypatch.setattr(f"{module}.check_fit_memory", record)
    _, peak = _with_peak_memory(estimator.fit, X, target)
    assert peak <= needed["bytes"] + 1 * MIB


def test_small_fits_pass_the_guard(monkeypatch):
    X, y = _data(200)
    monkeypatch.setattr(memory, "available_memory", lambda: 1 * GIB)
    SubquantileKernelRegressor().fit(X, y)  # kernel="auto"
    SubquantileKernelRegressor(n_components=20, random_state=0).fit(X, y)  # its sampled start
    SubquantileKernelRegressor(kernel="rbf").fit(X, y)
    MetricKernelRidge(max_iter=3).fit(X, y)
    monkeypatch.setattr(memory, "available_memory", lambda: None)  # unknown: no check
    SubquantileKernelRegressor().fit(X, y)
    SubquantileKernelRegressor(kernel="rbf").fit(X, y)
    # The approximate model of a given kernel is never refused: it holds no n x n matrix.
    # (kernel="auto" runs its high-breakdown start on the exact model of up to 1000 rows.)
    monkeypatch.setattr(memory, "available_memory", lambda: 0)
    SubquantileKernelRegressor(kernel="rbf", n_components=20).fit(X, y)


def test_available_memory_is_a_positive_count_or_unknown():
    available = memory.available_memory()
    assert available is None or (isinstance(available, int) and available > 0)


def test_metric_on_too_many_features_is_refused(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 8 * GIB)
    X = np.zeros((5, 100_000))
    with pytest.raises(InsufficientMemoryError, match="p=100000 features"):
        MetricKernelRidge().fit(X, np.arange(5.0))


# -- 2. chunked prediction -----------------------------------------------------------------


def _unchunked(model, X):
    """k(X, X_fit_) w + b in one product, with the fitted kernel and its parameters (what
    kernel="auto" chose: ``kernel_``, ``gamma_``, ``degree_``, ``coef0_``), in the units the
    model was fitted in (kernel="auto": each column less ``feature_center_``, over
    ``feature_scale_``, to ``UNIT_DECIMALS`` decimals)."""
    if hasattr(model, "feature_scale_"):
        X = np.round((X - model.feature_center_) / model.feature_scale_, UNIT_DECIMALS)
    params = {
        name: getattr(model, f"{name}_", getattr(model, name))
        for name in ("gamma", "degree", "coef0")
    }
    kernel = getattr(model, "kernel_", model.kernel)
    K = pairwise_kernels(X, model.X_fit_, metric=kernel, filter_params=True, **params)
    w = model.dual_coef_.reshape(model.X_fit_.shape[0], -1)
    return K @ w + np.atleast_1d(model.intercept_)


@pytest.mark.parametrize(
    "model, task",
    [
        (SubquantileKernelRegressor(kernel="rbf", gamma=0.5), "regression"),
        (SubquantileKernelRegressor(), "regression"),  # kernel="auto": its kernel, its units
        (SubquantileKernelClassifier(gamma=0.5, loss="log"), "classification"),
        (SubquantileKernelClassifier(kernel="laplacian", gamma=0.3, loss="log"), "multiclass"),
        (SubquantileKernelClassifier(gamma=0.5, loss="hinge"), "classification"),
        (SubquantileKernelClassifier(kernel="laplacian", gamma=0.3, loss="hinge"), "multiclass"),
        (CRRKernelRegressor(gamma=0.5), "regression"),
    ],
    ids=[
        "subq-regressor", "subq-default", "subq-binary", "subq-multiclass", "subq-hinge-binary",
        "subq-hinge-multiclass", "crr",
    ],
)
def test_chunked_predict_matches_the_unchunked_formula(model, task, monkeypatch):
    X, y = _data(80)
    target = {"regression": y, "classification": _labels(y)}.get(task)
    if task == "multiclass":
        target = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    model.fit(X, target)
    X_test = np.random.default_rng(1).standard_normal((1000, 3))
    monkeypatch.setattr(memory, "CHUNK_ELEMENTS", 80 * 37)  # 37 rows a block: 28 blocks
    expected = _unchunked(model, X_test)
    if task == "regression":
        np.testing.assert_allclose(model.predict(X_test), expected.ravel(), rtol=1e-12)
    elif getattr(model, "loss_", "log") == "hinge":  # the pairs' outputs, calibrated
        proba = PairwisePlatt(model.probA_, model.probB_).probabilities(expected)
        np.testing.assert_allclose(model.predict_proba(X_test), proba, rtol=1e-9, atol=1e-12)
    else:
        scores = model.decision_function(X_test)
        # A chunk's product sums the same terms in another order (BLAS blocking depends on
        # the shape): rounding of the order of 1e-16 x the terms' size, so a score near 0
        # gets an absolute, not a relative, error (seen: 1e-14 on a score of 0.006).
        atol = 1e-12 * np.max(np.abs(expected))
        np.testing.assert_allclose(
            scores, expected.reshape(scores.shape), rtol=1e-12, atol=atol
        )
        proba = model.predict_proba(X_test)
        assert proba.shape == (1000, model.classes_.size) and np.all(np.isfinite(proba))


@pytest.mark.parametrize(
    "params", [{"kernel": "rbf", "gamma": 0.5}, {}], ids=["rbf", "default"]
)
def test_exact_predict_memory_is_bounded(params):
    X, y = _data(300)
    model = SubquantileKernelRegressor(**params).fit(X, y)
    X_test = np.random.default_rng(2).standard_normal((200_000, 3))
    prediction, peak = _with_peak_memory(model.predict, X_test)
    block = memory.CHUNK_ELEMENTS * 8  # 32 MiB; the whole kernel matrix is 458 MiB
    # pairwise_kernels holds two blocks (the product and -2 times it), plus the output.
    assert peak < 3 * block + 2 * prediction.nbytes
    assert peak < 200_000 * 300 * 8 / 3
    np.testing.assert_allclose(prediction[:500], _unchunked(model, X_test[:500]).ravel())


def test_metric_predict_and_transform_are_chunked_and_exact(monkeypatch):
    X, y = _data(120)
    model = MetricKernelRidge(max_iter=20).fit(X, y)
    X_test = np.random.default_rng(3).standard_normal((2000, 3))
    U = model.components_.T * np.sqrt(model.eigenvalues_[: model.rank_])
    K = np.exp(-cdist(X_test @ U, model.X_fit_ @ U, "sqeuclidean"))
    expected = K @ model.dual_coef_ + model.intercept_
    monkeypatch.setattr(memory, "CHUNK_ELEMENTS", 120 * 51)
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.transform(X_test), X_test @ U, rtol=1e-12)


def test_metric_predict_memory_is_bounded():
    X, y = _data(300)
    model = MetricKernelRidge(max_iter=5).fit(X, y)
    X_test = np.random.default_rng(4).standard_normal((200_000, 3))
    prediction, peak = _with_peak_memory(model.predict, X_test)
    block = memory.CHUNK_ELEMENTS * 8
    # kernel_argument: the inner products, the distances and 2 x inner; phi: -z and exp(-z).
    assert peak < 4 * block + 2 * prediction.nbytes
    assert np.all(np.isfinite(prediction))


# -- 3. silent wrong answers ---------------------------------------------------------------


@pytest.mark.parametrize("factor", [1e200, 1e-200, 1e155])
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"n_components": 30},
        {"kernel": "rbf"},
        {"kernel": "rbf", "solver": "gd", "max_iter": 200},
        {"epsilon": "auto"},
    ],
    ids=["exact", "features", "rbf", "gd", "auto"],
)
def test_subq_regression_is_equivariant_in_the_targets(factor, params):
    X, y = _data(80)
    base = SubquantileKernelRegressor(random_state=0, **params).fit(X, y)
    scaled = SubquantileKernelRegressor(random_state=0, **params).fit(X, y * factor)
    np.testing.assert_allclose(scaled.predict(X) / factor, base.predict(X), rtol=1e-8)
    np.testing.assert_array_equal(scaled.inlier_mask_, base.inlier_mask_)


@pytest.mark.parametrize("factor", [1e200, 1e-200])
@pytest.mark.parametrize(
    "params",
    [{}, {"epsilon": 0.1}, {"n_components": 30}, {"epsilon": 0.1, "n_components": 30}],
    ids=["auto", "given-epsilon", "features", "features-given-epsilon"],
)
def test_weighted_subq_regression_is_equivariant_in_the_targets(factor, params):
    """Row weights and targets beyond 1e154: the weighted fit ranked the rows by their squared
    residuals in the given units, all inf there (a red team's 1e200 with a given epsilon: 1.3
    relative away from the scaled fit, other rows kept)."""
    X, y = _data(80, seed=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    base = SubquantileKernelRegressor(random_state=0, **params)
    base.fit(X, y, sample_weight=weights)
    scaled = SubquantileKernelRegressor(random_state=0, **params)
    scaled.fit(X, y * factor, sample_weight=weights)
    expected = base.predict(X)
    np.testing.assert_allclose(
        scaled.predict(X) / factor, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max()
    )
    np.testing.assert_array_equal(scaled.inlier_mask_, base.inlier_mask_)


def test_subq_regression_refuses_targets_of_too_wide_a_range():
    X, y = _data(50)
    y[0] = 1e120
    with pytest.raises(ValueError, match="too wide a range"):
        SubquantileKernelRegressor().fit(X, y)


def test_metric_refuses_unscaled_features():
    X, y = _data(60)
    for factor in (1e9, 1e10):
        with pytest.raises(ValueError, match="standardize X"):
            MetricKernelRidge(max_iter=20).fit(X * factor, y)


def test_metric_squared_distances_never_negative():
    X = np.random.default_rng(0).standard_normal((50, 3)) * 1e9
    family = resolve_kernel("gaussian")
    D = kernel_argument(X, X, np.eye(3) / 3, family)
    assert D.min() >= 0.0


def _nan_far_away(a, b):
    return np.nan if abs(a[0]) > 5 else float(np.exp(-np.sum((a - b) ** 2)))


@pytest.mark.parametrize("params", [{}, {"n_components": 10}], ids=["exact", "features"])
def test_callable_kernel_nan_at_predict_raises(params):
    X, y = _data(40)
    model = SubquantileKernelRegressor(kernel=_nan_far_away, **params).fit(X, y)
    with pytest.raises(ValueError, match="NaN or infinity in the kernel"):
        model.predict(X * 10)


@pytest.mark.parametrize("params", [{}, {"n_components": 5}], ids=["exact", "features"])
def test_callable_kernel_nan_at_fit_raises_the_same_message(params):
    X, y = _data(30)
    with pytest.raises(ValueError, match="NaN or infinity in the kernel"):
        SubquantileKernelRegressor(kernel=lambda a, b: np.nan, **params).fit(X, y)


@pytest.mark.parametrize(
    "model",
    [SubquantileKernelRegressor, SubquantileKernelClassifier],
    ids=["regressor", "classifier"],
)
def test_non_psd_precomputed_kernel_is_refused_with_features_too(model):
    n = 30
    K = np.eye(n)
    K[0, 1] = K[1, 0] = 5.0
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="not positive definite"):
        model(kernel="precomputed").fit(K, y)
    with pytest.raises(ValueError, match="not positive definite"):
        model(kernel="precomputed", n_components=n).fit(K, y)


@pytest.mark.parametrize("params", [{}, {"n_components": 5}], ids=["exact", "features"])
def test_auto_epsilon_on_one_row_is_clean(params):
    model = SubquantileKernelRegressor(epsilon="auto", **params).fit([[1.0, 2.0]], [3.0])
    assert model.epsilon_ == 0.0
    assert np.all(np.isfinite(model.predict([[1.0, 2.0], [0.0, 0.0]])))


# Five rows, three of them identical: once SubQ trims two rows, the kept rows are one group of
# near-duplicates (``subquantile/_automatic/groups.py``), the whole kept set.
IDENTICAL_KEPT_X = np.array([[0.0, 0.0], [0.0, -1.0], [0.0, -1.0], [0.0, 1.0], [0.0, -1.0]])
IDENTICAL_KEPT_Y = np.array([0.48984205, 0.35688701, 0.10541425, -0.93046804, -0.02925182])


@pytest.mark.parametrize(
    "params",
    [
        {"alpha": 1e-8},  # gamma="auto": the leave-one-out residuals of _hyperparameters
        {"alpha": 1e-8, "epsilon": 0.4},  # the studentized losses of _auto_epsilon
        {"alpha": "auto", "gamma": 0.5},
        {"alpha": 1.0, "epsilon": 0.4},
        {"alpha": 1e-8, "fit_intercept": False},
    ],
    ids=str,
)
def test_a_duplicate_group_of_every_kept_row_fits(params):
    """Deleting a group that is every kept row leaves nothing to fit (with an intercept its
    block of the inverse system is singular): it was numpy's raw "LinAlgError: Singular matrix";
    now its rows keep their one-row leave-one-out residuals and the fit is finite."""
    model = SubquantileKernelRegressor(**params).fit(IDENTICAL_KEPT_X, IDENTICAL_KEPT_Y)
    assert np.all(np.isfinite(model.predict(IDENTICAL_KEPT_X)))
    assert np.all(np.isfinite(model.dual_coef_))


@pytest.mark.parametrize("epsilon", ["auto", 0.2])
@pytest.mark.parametrize("identical", [True, False], ids=["identical rows", "random rows"])
@pytest.mark.parametrize("estimator", [SubquantileKernelRegressor, SubquantileKernelClassifier])
def test_tiny_alpha_on_five_rows_fits(estimator, identical, epsilon):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 2)), rng.normal(size=5)
    if identical:
        X, y = IDENTICAL_KEPT_X, IDENTICAL_KEPT_Y
    if estimator is SubquantileKernelClassifier:
        y = y > np.median(y)
    model = estimator(alpha=1e-8, epsilon=epsilon).fit(X, y)
    assert np.all(np.isfinite(model.dual_coef_))
    assert np.all(
        np.isfinite(model.decision_function(X) if hasattr(model, "classes_") else model.predict(X))
    )


def test_metric_messages_name_the_real_cause():
    X, y = _data(60)
    with pytest.raises(ValueError, match="lam=1e-300 is too small"):
        MetricKernelRidge(lam=1e-300).fit(X, y)
    with pytest.raises(ValueError, match="rescale y"):
        MetricKernelRidge().fit(X, y * 1e200)


# -- 4. fault injection: hostile inputs x estimators ---------------------------------------


def _case(X, y, labels=None):
    return X, y, _labels(np.asarray(y, dtype=float)) if labels is None else labels


def _cases():
    X, y = _data(40)
    rng = np.random.default_rng(5)
    nan_X = X.copy()
    nan_X[3, 1] = np.nan
    inf_X = X.copy()
    inf_X[3, 1] = np.inf
    nan_y = y.copy()
    nan_y[2] = np.nan
    inf_y = y.copy()
    inf_y[2] = -np.inf
    constant = X.copy()
    constant[:, 1] = 7.0
    duplicates = np.repeat(X[:10], 4, axis=0)
    return {
        "nan-X": _case(nan_X, y),
        "inf-X": _case(inf_X, y),
        "nan-y": _case(X, nan_y, nan_y),
        "inf-y": _case(X, inf_y, inf_y),
        "empty": _case(np.empty((0, 3)), np.empty(0), np.empty(0, dtype=int)),
        "no-features": _case(np.empty((40, 0)), y),
        "one-row": _case(X[:1], y[:1], np.array([1])),
        "one-feature": _case(X[:, :1], y),
        "constant-features": _case(np.ones((40, 3)), y),
        "some-constant-features": _case(constant, y),
        "huge-X": _case(X * 1e200, y),
        "tiny-X": _case(X * 1e-200, y),
        "huge-y": _case(X, y * 1e200),
        "tiny-y": _case(X, y * 1e-200),
        "int": _case(np.rint(X * 3).astype(int), np.rint(y * 3).astype(int)),
        "bool": _case(X > 0, (y > 0).astype(bool), (y > 0)),
        "float32": _case(X.astype(np.float32), y.astype(np.float32)),
        "object": _case(X.astype(object), y.astype(object)),
        "strings": _case(np.full((40, 3), "a", dtype=object), y),
        "tall": _case(rng.standard_normal((1_000_000, 2)), rng.standard_normal(1_000_000)),
        "wide": _case(rng.standard_normal((20, 20_000)), rng.standard_normal(20)),
        "duplicate-rows": _case(duplicates, np.repeat(y[:10], 4)),
        "constant-y": _case(X, np.full(40, 2.5), np.r_[np.zeros(39, int), 1]),
        "one-class": _case(X, y, np.zeros(40, dtype=int)),
        "one-row-per-class": _case(X[:3], y[:3], np.array([0, 1, 2])),
        "two-rows-two-classes": _case(X[:2], y[:2], np.array([0, 1])),
        "fortran": _case(np.asfortranarray(X), y),
        "non-contiguous": _case(np.repeat(X, 2, axis=1)[:, ::2], y[::1]),
        "pandas": _case(pd.DataFrame(X, columns=["a", "b", "c"]), pd.Series(y)),
    }


CASES = _cases()
ESTIMATORS = {
    "subq-regressor": lambda: SubquantileKernelRegressor(random_state=0),
    "subq-regressor-features": lambda: SubquantileKernelRegressor(n_components=5, random_state=0),
    "subq-classifier": lambda: SubquantileKernelClassifier(random_state=0),
    "subq-classifier-features": lambda: SubquantileKernelClassifier(n_components=5, random_state=0),
    "metric": lambda: MetricKernelRidge(max_iter=5),
}
# a million rows: the default (n_components="auto") and the features fit, minutes each
SLOW = {("tall", name) for name in ESTIMATORS if name.startswith("subq")}


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_fault_injection(case, estimator, monkeypatch):
    if (case, estimator) in SLOW:
        pytest.skip("a million rows of features: minutes (bench_defaults_scale.py)")
    X, y, labels = CASES[case]
    target = labels if "classifier" in estimator else y
    model = ESTIMATORS[estimator]()
    try:
        model.fit(X, target)
        prediction = model.predict(X)
    except (ValueError, MemoryError) as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        return
    if "classifier" not in estimator:
        assert np.all(np.isfinite(np.asarray(prediction, dtype=float)))
    else:
        assert np.all(np.isfinite(model.predict_proba(X)))


@pytest.mark.parametrize(
    "make",
    [
        lambda: SubquantileKernelClassifier(random_state=0),
        lambda: SubquantileClassifier(LogisticRegression(), random_state=0),
        lambda: SubquantileMLPClassifier(max_iter=5, random_state=0),
        lambda: MetricKernelLogisticRegression(max_iter=2),
    ],
    ids=["kernel", "meta", "mlp", "metric"],
)
def test_labels_of_mixed_types_are_named(make):
    # 1 and "a" do not sort: NumPy's raw "'<' not supported between instances" TypeError
    # named neither the argument nor the cure; the same labels as strings fit
    X = np.random.RandomState(0).normal(size=(20, 2))
    y = np.array([1, "a"] * 10, dtype=object)
    with pytest.raises(ValueError, match=r"labels y mix types .*int, str.*astype\(str\)"):
        make().fit(X, y)
    model = make().fit(X, y.astype(str))
    assert list(model.classes_) == ["1", "a"]
