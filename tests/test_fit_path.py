"""The fit path of the Subquantile estimators: one entry, one validation, backends that return
a result, one place that stores it; the recipe for a new solver touches the registry only."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.subquantile._solve import solvers as _solvers

GIVEN = {"epsilon": 0.1, "alpha": 0.1, "kernel": "rbf", "gamma": 0.5, "refine": None}
"""The papers' estimator at a given alpha and rbf gamma: the solver path (the default
kernel="auto" runs no solver)."""


def data(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    y[:6] = 4.0
    return X, y


def test_a_solver_added_to_the_registry_fits_and_is_refused_where_unsupported(monkeypatch):
    """The "add a solver" recipe: one registry entry. It runs in memory with its own default
    max_iter, and the weighted and Dask fits refuse it by name instead of running another."""
    seen = []

    def run(problem, fit_subset, w, b, options, progress):
        seen.append(options.max_iter)
        return _solvers.alternating(problem, fit_subset, w, b, options.max_iter, progress)

    monkeypatch.setitem(_solvers.SOLVERS, "recorded", _solvers.Solver(run, max_iter=7))
    X, y = data()
    model = SubquantileKernelRegressor(solver="recorded", **GIVEN).fit(X, y)
    reference = SubquantileKernelRegressor(**GIVEN).fit(X, y)
    np.testing.assert_allclose(model.predict(X), reference.predict(X))
    assert seen == [7]
    weights = np.full(y.size, 2.0)
    with pytest.raises(ValueError, match=r"sample_weight.*solver='recorded'"):
        SubquantileKernelRegressor(solver="recorded", **GIVEN).fit(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="smoothing applies to the gradient solvers"):
        SubquantileKernelRegressor(solver="recorded", smoothing=1.0, **GIVEN).fit(X, y)
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match=r"Dask array.*solver='recorded'"):
        SubquantileKernelRegressor(solver="recorded", n_components=10, **GIVEN).fit(
            da.from_array(X, chunks=30), da.from_array(y, chunks=30)
        )


def _setters(model, monkeypatch) -> set[tuple[str, str]]:
    """(module file with its folder, attribute) of every attribute the fit sets on
    ``model``."""
    written: set[tuple[str, str]] = set()
    cls = type(model)

    def recording_setattr(self, name, value):
        if self is model:  # not the clones the fit makes (the intervals' fold models)
            caller = inspect.stack()[1].filename
            written.add(("/".join(Path(caller).parts[-2:]), name))
        object.__setattr__(self, name, value)

    monkeypatch.setattr(cls, "__setattr__", recording_setattr, raising=False)
    return written


@pytest.mark.parametrize(
    ("model", "weighted"),
    [
        (SubquantileKernelRegressor(), False),
        (SubquantileKernelRegressor(n_components=20, random_state=0), True),
        (SubquantileKernelClassifier(), True),
    ],
)
def test_only_the_estimator_stores_the_fitted_state(model, weighted, monkeypatch):
    """Every fitted attribute is written by the estimator's own modules (``_set_fitted`` and
    the kernel model's storage) or by scikit-learn's validation, never by a backend."""
    X, y = data()
    if isinstance(model, SubquantileKernelClassifier):
        y = (X[:, 0] > 0).astype(int)
    written = _setters(model, monkeypatch)
    weights = np.arange(y.size) % 3 if weighted else None
    model.fit(X, y, sample_weight=weights)
    modules = {module for module, _ in written}
    assert modules <= {
        "_estimators/base.py", "_kernel_model/estimator.py", "utils/validation.py"
    }, written
    names = {name for _, name in written}
    assert {"inlier_mask_", "epsilon_", "alpha_", "gamma_", "outlier_scores_"} <= names
    assert not any(name.startswith("_") and name != "_single_output" for name in names), names


def test_the_dask_backend_stores_nothing_itself(monkeypatch):
    da = pytest.importorskip("dask.array")
    X, y = data(200)
    model = SubquantileKernelRegressor(n_components=10, random_state=0, **GIVEN)
    written = _setters(model, monkeypatch)
    model.fit(da.from_array(X, chunks=50), da.from_array(y, chunks=50))
    assert {module for module, _ in written} <= {
        "_estimators/base.py", "_kernel_model/estimator.py"
    }, written
    assert ("_estimators/base.py", "n_features_in_") in written


def test_parameters_are_not_changed_by_a_fit():
    X, y = data()
    model = SubquantileKernelRegressor()
    before = model.get_params()
    model.fit(X, y, sample_weight=np.arange(y.size) % 3)
    assert model.get_params() == before


def _writers(model, monkeypatch) -> dict[str, set[str]]:
    """Public fitted attribute -> the functions that set it during a fit of ``model``."""
    written: dict[str, set[str]] = {}
    cls = type(model)

    def recording_setattr(self, name, value):
        if name.endswith("_") and not name.startswith("_"):
            frame = inspect.stack()[1]
            where = "scikit-learn" if "sklearn" in frame.filename else frame.function
            written.setdefault(name, set()).add(where)
        object.__setattr__(self, name, value)

    monkeypatch.setattr(cls, "__setattr__", recording_setattr, raising=False)
    return written


def _other_engines():
    from robustkernel.meta import SubquantileClassifier, SubquantileRegressor
    from robustkernel.metric_kernel_ridge import MetricKernelRidgeCV

    engines = [
        (SubquantileRegressor(epsilon=0.1), False),
        (SubquantileRegressor(), False),
        (SubquantileClassifier(epsilon=0.1), True),
        (SubquantileClassifier(), True),
        (MetricKernelRidgeCV(lams=[0.1, 1.0], random_state=0), False),
        (MetricKernelRidgeCV(lams=[0.1, 1.0], epsilon=0.1, random_state=0), False),
    ]
    return [pytest.param(model, labels, id=repr(model)) for model, labels in engines]


@pytest.mark.parametrize(("model", "labels"), _other_engines())
def test_other_engines_store_their_fitted_state_in_one_place(model, labels, monkeypatch):
    """The meta-estimators and the cross-validated metric write every fitted attribute from
    their ``_set_fitted`` (scikit-learn's validation sets ``n_features_in_``), nowhere else:
    a fit that fails leaves the previous state."""
    X, y = data(80)
    if labels:
        y = (X[:, 0] > 0).astype(int)
    written = _writers(model, monkeypatch)
    model.fit(X, y)
    assert "n_features_in_" in written and len(written) > 5, written
    elsewhere = {
        name: where for name, where in written.items()
        if where - {"_set_fitted", "scikit-learn"}
    }
    assert not elsewhere, elsewhere


def test_the_networks_store_their_fitted_state_in_one_place(monkeypatch):
    """The networks write their fitted attributes in ``_fit``; only the target encoding
    (``target_center_``, ``target_scale_`` or ``classes_``) is set where the targets are
    encoded, since the network's shape and its loss read it."""
    pytest.importorskip("torch")
    from robustkernel.nn import SubquantileMLPRegressor

    X, y = data(80)
    model = SubquantileMLPRegressor(hidden_units=8, max_iter=50, random_state=0)
    written = _writers(model, monkeypatch)
    model.fit(X, y)
    encoding = {"target_center_", "target_scale_"}
    elsewhere = {
        name: where for name, where in written.items()
        if where - ({"_encode"} if name in encoding else {"_fit", "scikit-learn"})
    }
    assert not elsewhere, elsewhere
    assert {"coefs_", "inlier_mask_", "n_iter_", "converged_"} <= written.keys()


def test_per_row_attributes_of_older_model_files_still_load():
    """Model files written before the per-row attributes had their own store hold them as
    plain entries of the state: loading moves them into it."""
    X, y = data()
    model = SubquantileKernelRegressor(**GIVEN).fit(X, y)
    state = model.__getstate__()
    older = {name: value for name, value in state.items() if name != "_row_attributes"}
    older.update(state["_row_attributes"])
    restored = SubquantileKernelRegressor.__new__(SubquantileKernelRegressor)
    restored.__setstate__(older)
    for name in ("inlier_mask_", "outlier_scores_", "row_weights_"):
        np.testing.assert_array_equal(getattr(restored, name), getattr(model, name))
    assert model.compute_row_attributes().inlier_mask_ is model.inlier_mask_  # in memory: as is
    np.testing.assert_allclose(restored.predict(X), model.predict(X))
