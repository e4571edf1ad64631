"""The PyTorch backend (``device=``) against the NumPy path and against direct computations."""

import pickle
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.metrics.pairwise import pairwise_kernels  # noqa: E402

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor  # noqa: E402
from robustkernel.subquantile._backends.torch_backend import DEVICE_KERNELS, DeviceKernel  # noqa: E402

RTOL = 1e-8
PAPERS = {"kernel": "rbf", "gamma": None, "refine": None}  # device= runs the papers' estimator


def _regression_data(n: int = 150, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    y[: n // 5] = rng.normal(5, np.sqrt(5), size=n // 5)
    return X, y


def _fit_both(estimator_class, X, y, **params):
    params = {**PAPERS, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = estimator_class(**params).fit(X, y)
        on_device = estimator_class(**params, device="cpu").fit(X, y)
    return reference, on_device


def _assert_close(actual, expected, rtol=RTOL):
    scale = max(np.max(np.abs(expected)), 1.0)
    assert np.max(np.abs(actual - expected)) <= rtol * scale


@pytest.mark.parametrize("solver", ["alternating", "gd"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("epsilon", [0.0, 0.2])
def test_regressor_matches_the_numpy_path(solver, kernel, epsilon):
    X, y = _regression_data()
    params = {"epsilon": epsilon, "kernel": kernel, "solver": solver, "alpha": 0.5}
    if solver == "gd":
        params["max_iter"] = 60
    reference, on_device = _fit_both(SubquantileKernelRegressor, X, y, **params)
    X_test = _regression_data(40, seed=1)[0]
    _assert_close(on_device.predict(X_test), reference.predict(X_test))
    np.testing.assert_array_equal(on_device.inlier_mask_, reference.inlier_mask_)
    assert on_device.n_iter_ == reference.n_iter_
    np.testing.assert_allclose(
        on_device.objective_history_, reference.objective_history_, rtol=RTOL
    )
    _assert_close(on_device.dual_coef_, reference.dual_coef_)
    assert isinstance(on_device.dual_coef_, np.ndarray)


def test_regressor_on_device_is_trimmed_kernel_ridge():
    """Independent check: the device fit solves kernel ridge on its own kept rows."""
    X, y = _regression_data()
    model = SubquantileKernelRegressor(
        epsilon=0.2, alpha=0.5, kernel="rbf", gamma=0.7, refine=None, device="cpu"
    )
    model.fit(X, y)
    kept = model.inlier_mask_
    K = pairwise_kernels(X[kept], metric="rbf", gamma=0.7)
    centring = np.eye(kept.sum()) - 1.0 / kept.sum()
    w = np.linalg.solve(centring @ K + 0.5 * np.eye(kept.sum()), centring @ y[kept])
    b = np.mean(y[kept] - K @ w)
    _assert_close(model.dual_coef_[kept], w)
    assert abs(model.intercept_ - b) <= RTOL * max(abs(b), 1.0)
    assert np.all(model.dual_coef_[~kept] == 0.0)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("solver", ["alternating", "gd"])
def test_classifier_matches_the_numpy_path(n_classes, solver):
    X, _ = _regression_data(80)
    y = np.digitize(X[:, 0], [-0.5, 0.5] if n_classes == 3 else [0.0])
    y[:8] = (y[:8] + 1) % n_classes
    params = {"epsilon": 0.1, "solver": solver, "alpha": 1.0}
    if solver == "gd":
        params["max_iter"] = 60
    reference, on_device = _fit_both(SubquantileKernelClassifier, X, y, **params)
    _assert_close(on_device.predict_proba(X), reference.predict_proba(X), rtol=1e-6)
    np.testing.assert_array_equal(on_device.predict(X), reference.predict(X))
    np.testing.assert_array_equal(on_device.inlier_mask_, reference.inlier_mask_)
    np.testing.assert_allclose(
        on_device.objective_history_, reference.objective_history_, rtol=1e-6
    )


@pytest.mark.parametrize("kernel", [k for k in DEVICE_KERNELS if k != "precomputed"])
def test_device_kernels_match_sklearn(kernel):
    X = np.random.default_rng(2).normal(size=(30, 4))
    params = {"gamma": None, "degree": 2, "coef0": 0.5}
    expected = pairwise_kernels(X, metric=kernel, filter_params=True, **params)
    matrix = DeviceKernel.compute(X, kernel, params, "cpu").matrix.numpy()
    np.testing.assert_allclose(matrix, expected, rtol=1e-12, atol=1e-12)


def test_precomputed_kernel_on_device():
    X, y = _regression_data(80)
    K = pairwise_kernels(X, metric="rbf", gamma=0.5)
    reference, on_device = _fit_both(
        SubquantileKernelRegressor, K, y, kernel="precomputed", epsilon=0.2, alpha=1.0
    )
    _assert_close(on_device.predict(K[:10]), reference.predict(K[:10]))


def test_fitted_model_pickles_and_predicts_on_numpy_input():
    X, y = _regression_data(60)
    model = SubquantileKernelRegressor(epsilon=0.2, alpha=1.0, **PAPERS, device="cpu").fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(restored.predict(X), model.predict(X), rtol=1e-12)
    for name in ("dual_coef_", "inlier_mask_", "outlier_scores_", "objective_history_"):
        assert type(getattr(restored, name)) is np.ndarray


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"device": "gpu0"}, "not a torch device string"),
        ({"device": "cuda:99"}, "cuda:99"),
        ({"device": "cpu", "kernel": "chi2"}, "not available with device"),
        ({"device": "cpu", "kernel": lambda a, b: float(a @ b)}, "not available with device"),
        ({"device": "cpu", "n_components": 10}, "without n_components"),
        ({"device": "cpu", "epsilon": "auto"}, "got {'epsilon': 'auto'}"),
        ({"device": "cpu", "refine": "reject"}, "got {'refine': 'reject'}"),
        ({"device": "cpu", "kernel": "auto"}, r'give kernel \(e\.g\. kernel="rbf"\)'),
        ({"device": "cpu", "kernel": "auto"}, "got {'kernel': 'auto'}"),
    ],
)
def test_bad_device_settings_raise_clearly(params, match):
    X, y = _regression_data(40)
    params = {"epsilon": 0.1, "alpha": 1.0, **PAPERS, **params}
    with pytest.raises(ValueError, match=match):
        SubquantileKernelRegressor(**params).fit(X, y)


def test_device_with_the_defaults_says_what_to_give():
    """The defaults choose (kernel="auto", epsilon="auto", ...): device= names all it needs."""
    X, y = _regression_data(40)
    with pytest.raises(ValueError, match="device=") as raised:
        SubquantileKernelRegressor(device="cpu").fit(X, y)
    message = str(raised.value)
    for needed in (
        'give kernel (e.g. kernel="rbf")',
        "epsilon (a number)",
        "alpha and gamma",
        "refine=None",
        "without n_components",
        "'kernel': 'auto'",
        "'epsilon': 'auto'",
    ):
        assert needed in message, (needed, message)


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    X, y = _regression_data(40)
    with pytest.raises(ImportError, match=r"pip install robustkernel\[gpu\]"):
        SubquantileKernelRegressor(epsilon=0.2, alpha=1.0, **PAPERS, device="cuda").fit(X, y)
    model = SubquantileKernelRegressor().fit(X, y)  # the NumPy path needs no torch
    assert model.inlier_mask_[8:].all() and not model.inlier_mask_[:8].any()
