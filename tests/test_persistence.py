"""save_model / load_model: identical predictions after a round trip, version check on load."""

from __future__ import annotations

import warnings
from functools import cache

import joblib
import numpy as np
import pytest

from conftest import make_regression
from robustkernel import (
    MetricKernelLogisticRegression,
    MetricKernelRidge,
    MetricKernelRidgeCV,
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
    __version__,
)
from robustkernel.persistence import FORMAT, ModelVersionWarning, load_model, save_model

X, y = make_regression(40, seed=5)
MODELS = {
    "regressor": lambda: SubquantileKernelRegressor(epsilon=0.1).fit(X, y),
    "classifier": lambda: SubquantileKernelClassifier(epsilon=0.1).fit(X, y > 0),
    "metric": lambda: MetricKernelRidge(lam=0.1, max_iter=20).fit(X, y),
    "robust metric": lambda: MetricKernelRidge(lam=0.1, epsilon=0.1, max_iter=20).fit(X, y),
    "metric classifier": lambda: MetricKernelLogisticRegression(max_iter=20).fit(X, y > 0),
    "robust metric cv": lambda: MetricKernelRidgeCV(
        lams=[0.1], max_iter=20, epsilon=0.1, random_state=0
    ).fit(X, y),
}


@cache
def fitted(name: str):
    """Each model fitted once for all the formats."""
    return MODELS[name]()


def assert_same_model(loaded, model) -> None:
    """The fitted arrays survive bit for bit; predictions agree to rounding.

    Predictions are compared to 1e-12, not exactly: BLAS may take another code path for arrays
    at another memory alignment, which changes the last bit of a kernel entry.
    """
    for name, value in vars(model).items():
        if name.endswith("_") and isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(loaded, name), value, err_msg=name)
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("suffix", [".joblib", ".skops"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_gives_identical_predictions(tmp_path, name, suffix):
    if suffix == ".skops":
        pytest.importorskip("skops")
    model = fitted(name)
    path = save_model(model, tmp_path / f"model{suffix}")
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind
    loaded = load_model(path)
    assert type(loaded) is type(model)
    assert_same_model(loaded, model)


def test_model_from_another_version_warns(tmp_path):
    model = SubquantileKernelRegressor(epsilon=0.1).fit(X, y)
    path = tmp_path / "old.joblib"
    joblib.dump({"format": FORMAT, "version": "0.0.1", "model": model}, path)
    with pytest.warns(ModelVersionWarning, match=r"0\.0\.1"):
        loaded = load_model(path)
    assert_same_model(loaded, model)


def test_model_from_this_version_does_not_warn(tmp_path, recwarn):
    load_model(save_model(SubquantileKernelRegressor().fit(X, y), tmp_path / "m.joblib"))
    assert not [w for w in recwarn if issubclass(w.category, ModelVersionWarning)]
    assert joblib.load(tmp_path / "m.joblib")["version"] == __version__


@pytest.mark.parametrize("name", ["other.joblib", "text.joblib", "text.skops"])
def test_other_files_are_rejected(tmp_path, name):
    if name.endswith(".skops"):
        pytest.importorskip("skops")
    joblib.dump({"a": 1}, tmp_path / "other.joblib")
    (tmp_path / "text.joblib").write_text("not a model")
    (tmp_path / "text.skops").write_text("not a model")
    with pytest.raises(ValueError, match="not a robustkernel model"):
        load_model(tmp_path / name)


class Foreign:
    """A class skops does not trust."""


def test_skops_refuses_foreign_types(tmp_path):
    skops_io = pytest.importorskip("skops.io")
    path = tmp_path / "foreign.skops"
    skops_io.dump({"format": FORMAT, "version": __version__, "model": Foreign()}, path)
    with pytest.raises(ValueError, match=r"refused to load it: \[.*Foreign.\]"):
        load_model(path)


def test_plain_pickles_carry_the_version_and_warn_under_another(monkeypatch):
    """Without save_model: the pickled state holds the version (as scikit-learn's does)."""
    import pickle

    model = fitted("robust metric")
    assert model.__getstate__()["_robustkernel_version"] == __version__
    data = pickle.dumps(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelVersionWarning)
        loaded = pickle.loads(data)  # same version: silent
    assert_same_model(loaded, model)
    monkeypatch.setattr("robustkernel._version_stamp.__version__", "9.9.9")
    with pytest.warns(ModelVersionWarning, match=r"pickled by robustkernel 0\.1.* 9\.9\.9"):
        pickle.loads(data)


def test_load_model_warns_once_for_another_version(tmp_path, monkeypatch):
    path = save_model(fitted("regressor"), tmp_path / "m.joblib")
    monkeypatch.setattr("robustkernel._version_stamp.__version__", "9.9.9")
    monkeypatch.setattr("robustkernel.persistence.__version__", "9.9.9")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_model(path)
    assert len([w for w in caught if issubclass(w.category, ModelVersionWarning)]) == 1


def test_version_lives_in_the_leaf_module():
    """One version source: the package, persistence and the pickled stamp all show _version's."""
    import robustkernel
    from robustkernel import _version, _version_stamp, persistence

    assert robustkernel.__version__ == _version.__version__ == __version__
    assert persistence.__version__ == _version_stamp.__version__ == _version.__version__
    assert persistence.ModelVersionWarning is _version.ModelVersionWarning
    assert issubclass(ModelVersionWarning, UserWarning)


def test_metric_components_from_before_the_row_layout_are_transposed_on_load():
    """components_ holds rows (rank_, n_features) as PCA's; a pickle written when it held
    columns (no row marker in its state) loads with the rows, and transform is unchanged."""
    import pickle

    from robustkernel import MetricKernelRidge
    from robustkernel.metric_kernel_ridge._estimator import ComponentRows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.sin(X[:, 0] + X[:, 1])
    model = MetricKernelRidge(lam=0.1).fit(X, y)
    assert model.components_.shape == (model.rank_, 4)
    assert np.allclose(model.components_ @ model.components_.T, np.eye(model.rank_))
    old = model.__getstate__()
    del old[ComponentRows.ROWS_KEY]
    old["components_"] = model.components_.T  # the column layout of earlier versions
    restored = MetricKernelRidge.__new__(MetricKernelRidge)
    restored.__setstate__(old)
    np.testing.assert_array_equal(restored.components_, model.components_)
    np.testing.assert_allclose(restored.transform(X), model.transform(X))
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.components_, model.components_)
