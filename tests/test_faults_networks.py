"""Fault hardening of the Subquantile networks: hostile inputs end in a clear error or a right
answer, never a silent NaN model, NaN predictions or a raw torch / numpy message.

Faults guarded against:

* float32 range of the inputs: features beyond float32 after the internal scaling are refused
  naming X (they used to train a NaN network); huge or tiny features of a common scale fit as
  the unscaled ones; test rows of 1e40 predict finite values, rows whose outputs overflow
  float64 are refused naming X;
* divergence: a non-finite objective or weights during training (``learning_rate=1e6``, a huge
  ``alpha``, an extreme kept row) raises a ValueError naming ``learning_rate``; a failed fit
  leaves the estimator as it was (fitted: the same predictions; unfitted: still unfitted);
* target scale: regression targets of magnitude 1e200, 1e155 and 1e-200 fit equivariantly (they
  used to raise OverflowError or choose the kept rows on underflowed losses); targets spanning
  more than float32 after scaling, or whose spread overflows float64, are refused naming y;
  constant targets of 1e308 fit; tiny targets where most are equal are not flattened to 0;
  non-numeric targets are refused naming y;
* neighbours: hidden layers too large for memory (refused before allocating, naming
  hidden_units), devices that cannot train (meta, mps), smoothing outside float32, the stopping
  rule of the smoothed (negative) objective, and a table of hostile inputs against both
  networks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError

import robustkernel._memory as memory
from robustkernel import SubquantileMLPClassifier, SubquantileMLPRegressor

torch = pytest.importorskip("torch", reason="the networks need the optional PyTorch extra")
from robustkernel.nn import subquantile_loss  # noqa: E402

SMALL = {"hidden_units": 4, "max_iter": 40, "random_state": 0}


@pytest.fixture(autouse=True)
def _runtime_warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _data(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.tanh(X[:, 0] - X[:, 1]) + 0.1 * rng.normal(size=n)


def _labels(y: np.ndarray) -> np.ndarray:
    return (y > np.median(y)).astype(int)


def _finite_model(model) -> bool:
    return all(np.all(np.isfinite(a)) for a in [*model.coefs_, *model.intercepts_])


# -- 1. the float32 range of the inputs ---------------------------------------------------------


@pytest.mark.parametrize("value", [1e40, -1e300, 1.7e308])
@pytest.mark.parametrize("network", [SubquantileMLPRegressor, SubquantileMLPClassifier])
def test_features_beyond_float32_after_scaling_are_refused_naming_x(network, value):
    X, y = _data()
    X[5, 1] = value
    target = y if network is SubquantileMLPRegressor else _labels(y)
    with pytest.raises(ValueError, match=r"^X holds values too large.*float32.*feature 1"):
        network(**SMALL).fit(X, target)


@pytest.mark.parametrize("factor", [1e30, 1e200, 1e-30, 1e-200])
def test_features_of_a_common_huge_or_tiny_scale_fit_as_the_unscaled_ones(factor):
    X, y = _data()
    base = SubquantileMLPRegressor(**SMALL).fit(X, y)
    scaled = SubquantileMLPRegressor(**SMALL).fit(X * factor, y)
    np.testing.assert_allclose(scaled.predict(X * factor), base.predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("factor", [1e-30, 1e-200, 1e200])
def test_features_mostly_zero_in_extreme_units_fit_as_in_ordinary_ones(factor):
    """A zero interquartile range: the nonzero deviations set the scale, in X's units."""
    X, y = _data()
    X[np.arange(60) % 3 != 0, 0] = 0.0  # two thirds zero
    base = SubquantileMLPRegressor(**SMALL).fit(X, y)
    scaled_X = X.copy()
    scaled_X[:, 0] *= factor
    scaled = SubquantileMLPRegressor(**SMALL).fit(scaled_X, y)
    np.testing.assert_allclose(scaled.predict(scaled_X), base.predict(X), rtol=1e-5, atol=1e-6)


def test_input_scaling_is_robustscalers_on_ordinary_and_binary_features():
    from sklearn.preprocessing import RobustScaler

    X, y = _data()
    X = np.column_stack([X, (X[:, 0] > 1.0).astype(float)])  # a 0/1 feature, mostly 0
    model = SubquantileMLPRegressor(**SMALL).fit(X, y)
    reference = RobustScaler(unit_variance=True).fit(X)
    np.testing.assert_array_equal(model.scaler_.center_, reference.center_)
    np.testing.assert_allclose(model.scaler_.scale_, reference.scale_, rtol=1e-15)


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid", "softplus"])
def test_test_rows_of_1e40_predict_finite_values(activation):
    X, y = _data()
    model = SubquantileMLPRegressor(activation=activation, **SMALL).fit(X, y)
    X_test = X[:4].copy()
    X_test[0, 0] = 1e40
    X_test[1, 2] = -1e40
    assert np.all(np.isfinite(model.predict(X_test)))
    proba = SubquantileMLPClassifier(activation=activation, **SMALL).fit(X, _labels(y))
    assert np.all(np.isfinite(proba.predict_proba(X_test)))


@pytest.mark.parametrize("network", [SubquantileMLPRegressor, SubquantileMLPClassifier])
def test_test_rows_whose_outputs_overflow_float64_are_refused_naming_x(network):
    X, y = _data()
    target = y if network is SubquantileMLPRegressor else _labels(y)
    model = network(activation="relu", **SMALL).fit(X, target)
    X_test = np.vstack([X[:2], np.full((1, 3), 1.7e308), np.full((1, 3), -1.7e308)])
    method = model.predict if network is SubquantileMLPRegressor else model.predict_proba
    with pytest.raises(ValueError, match=r"^X holds values so large.*overflow.*first: \[2"):
        method(X_test)


# -- 2. divergence and the state after a failed fit ---------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"learning_rate": 1e6},
        {"learning_rate": 1e6, "batch_size": 8},
        {"alpha": 1e10},
        {"alpha": 1e300},
    ],
    ids=["lr", "lr-minibatch", "alpha", "huge-alpha"],
)
@pytest.mark.parametrize("network", [SubquantileMLPRegressor, SubquantileMLPClassifier])
def test_diverging_training_raises_naming_learning_rate(network, params):
    X, y = _data()
    target = y if network is SubquantileMLPRegressor else _labels(y)
    with pytest.raises(ValueError, match=r"diverged.*learning_rate.*scale X and y"):
        network(**{**SMALL, **params}).fit(X, target)


def test_a_kept_row_overflowing_the_first_layer_raises_instead_of_a_nan_model():
    """1e30 is finite in float32, but its relu activations overflow once the weights grow."""
    X, y = _data()
    X[0] = 1e30
    with pytest.raises(ValueError, match=r"diverged.*learning_rate"):
        SubquantileMLPRegressor(activation="relu", epsilon=0.0, **SMALL).fit(X, y)
    # left out by the subquantile (epsilon > 0): a finite network, the row flagged
    model = SubquantileMLPRegressor(activation="relu", epsilon=0.1, **SMALL).fit(X, y)
    assert _finite_model(model)
    assert not model.inlier_mask_[0]


@pytest.mark.parametrize("network", [SubquantileMLPRegressor, SubquantileMLPClassifier])
def test_a_failed_fit_keeps_the_previous_state(network):
    X, y = _data()
    target = y if network is SubquantileMLPRegressor else _labels(y)
    model = network(**SMALL).fit(X, target)
    before = {name: value for name, value in vars(model).items() if name.endswith("_")}
    predictions = model.predict(X)
    X_other, y_other = _data(30, seed=1)
    X_other = np.hstack([X_other, X_other[:, :1]])  # four features this time
    target_other = y_other if network is SubquantileMLPRegressor else _labels(y_other)
    with pytest.raises(ValueError, match="diverged"):
        model.set_params(learning_rate=1e6).fit(X_other, target_other)
    after = {name: value for name, value in vars(model).items() if name.endswith("_")}
    assert after.keys() == before.keys()
    for name, value in before.items():
        assert after[name] is value, name
    assert model.n_features_in_ == 3
    np.testing.assert_array_equal(model.predict(X), predictions)


def test_a_failed_first_fit_leaves_the_estimator_unfitted():
    X, y = _data()
    model = SubquantileMLPRegressor(learning_rate=1e6, **SMALL)
    with pytest.raises(ValueError, match="diverged"):
        model.fit(X, y)
    assert not [name for name in vars(model) if name.endswith("_")]
    with pytest.raises(NotFittedError):
        model.predict(X)


# -- 3. the scale of the targets ----------------------------------------------------------------


@pytest.mark.parametrize("factor", [1e200, 1e155, 1e-200, 1e-155])
@pytest.mark.parametrize("params", [{}, {"batch_size": 16}], ids=["full-batch", "mini-batch"])
def test_regression_is_equivariant_in_the_targets(factor, params):
    X, y = _data()
    y[:8] += 6.0  # corrupted rows, to be left out alike
    base = SubquantileMLPRegressor(**SMALL, **params).fit(X, y)
    scaled = SubquantileMLPRegressor(**SMALL, **params).fit(X, y * factor)
    np.testing.assert_allclose(scaled.predict(X) / factor, base.predict(X), rtol=1e-6)
    np.testing.assert_array_equal(scaled.inlier_mask_, base.inlier_mask_)
    assert not np.any(np.isnan(scaled.outlier_scores_))
    assert not np.any(np.isnan(scaled.objective_history_))
    assert not np.isnan(scaled.threshold_)


def test_scores_of_moderate_targets_are_their_squared_residuals():
    X, y = _data()
    model = SubquantileMLPRegressor(**SMALL).fit(X, y * 1e100)
    np.testing.assert_allclose(model.outlier_scores_, (model.predict(X) - y * 1e100) ** 2, 1e-9)


@pytest.mark.parametrize("params", [{}, {"batch_size": 32}], ids=["full-batch", "mini-batch"])
@pytest.mark.parametrize("extreme", [1e20, 1e30, -1e37])
def test_targets_corrupted_by_huge_values_are_left_out_or_refused(extreme, params):
    """Huge but float32 targets: left out by epsilon > 0; kept (epsilon = 0), a clear error."""
    X, y = _data(200)
    y[:5] = extreme
    model = SubquantileMLPRegressor(epsilon=0.1, **SMALL, **params).fit(X, y)
    assert not model.inlier_mask_[:5].any()
    assert np.all(np.isfinite(model.predict(X)))
    clean = SubquantileMLPRegressor(epsilon=0.1, **SMALL, **params).fit(X[5:], y[5:])
    assert np.sqrt(np.mean((model.predict(X[5:]) - clean.predict(X[5:])) ** 2)) < 0.1
    with pytest.raises(ValueError, match=r"diverged.*learning_rate"):
        SubquantileMLPRegressor(epsilon=0.0, **SMALL, **params).fit(X, y)


@pytest.mark.parametrize("extreme", [1e300, -1e60, 1e40])
def test_targets_spanning_more_than_float32_are_refused_naming_y(extreme):
    X, y = _data()
    y[3] = extreme
    with pytest.raises(ValueError, match=r"^y spans too wide a range.*float32"):
        SubquantileMLPRegressor(**SMALL).fit(X, y)


def test_targets_whose_spread_overflows_float64_are_refused_naming_y():
    X, _ = _data()
    y = np.where(np.arange(60) % 2 == 0, 1.7e308, -1.7e308)
    with pytest.raises(ValueError, match=r"^y spans too wide a range.*overflows float64"):
        SubquantileMLPRegressor(**SMALL).fit(X, y)


@pytest.mark.parametrize("factor", [1e300, 1e-300, 1e-100])
@pytest.mark.parametrize("value", [3.0, -3.0])
def test_constant_targets_of_any_magnitude_fit_alike(value, factor):
    """Constant targets are scaled by their magnitude: the fit is the same in any units."""
    X, _ = _data()
    base = SubquantileMLPRegressor(**SMALL).fit(X, np.full(60, value))
    model = SubquantileMLPRegressor(**SMALL).fit(X, np.full(60, value * factor))
    np.testing.assert_allclose(base.predict(X), value, rtol=0.2)
    np.testing.assert_allclose(model.predict(X) / factor, base.predict(X), rtol=1e-6)


def test_tiny_targets_most_of_them_equal_are_not_flattened_to_zero():
    """More than half of the targets equal: the spread of the others sets the scale."""
    X, y = _data()
    y[::3] = 0.0
    y[1::3] = 0.0  # two thirds zero: the median absolute deviation is 0
    base = SubquantileMLPRegressor(**SMALL).fit(X, y)
    tiny = SubquantileMLPRegressor(**SMALL).fit(X, y * 1e-200)
    assert np.std(tiny.predict(X) * 1e200) > 0.01
    np.testing.assert_allclose(tiny.predict(X) * 1e200, base.predict(X), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "y",
    [np.array(["a", "b"] * 30), np.array(["a", 1.0] * 30, dtype=object), np.array([None] * 60)],
    ids=["strings", "mixed-object", "none"],
)
def test_non_numeric_regression_targets_are_refused_naming_y(y):
    X, _ = _data()
    with pytest.raises(ValueError, match=r"^y (must hold numbers|holds NaN)"):
        SubquantileMLPRegressor(**SMALL).fit(X, y)


# -- 4. neighbours ------------------------------------------------------------------------------


@pytest.mark.parametrize("network", [SubquantileMLPRegressor, SubquantileMLPClassifier])
def test_a_hidden_layer_too_large_for_memory_is_refused_before_allocating(network, monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    X, y = _data()
    target = y if network is SubquantileMLPRegressor else _labels(y)
    with pytest.raises(memory.InsufficientMemoryError, match="hidden_units=10000000000"):
        network(hidden_units=10**10, max_iter=1).fit(X, target)
    with pytest.raises(ValueError, match="lower hidden_units"):  # a ValueError as well
        network(hidden_units=10**10, max_iter=1).fit(X, target)
    network(hidden_units=8, max_iter=2).fit(X, target)  # small ones pass the guard


@pytest.mark.parametrize("device", ["meta", "mps", "xla"])
def test_devices_that_cannot_train_here_are_refused_naming_device(device):
    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine trains on mps")
    X, y = _data()
    with pytest.raises(ValueError, match=rf"^device='{device}'"):
        SubquantileMLPRegressor(device=device, **SMALL).fit(X, y)


@pytest.mark.parametrize("smoothing", [1e300, 1e-300])
def test_smoothing_beyond_float32_is_refused_naming_smoothing(smoothing):
    X, y = _data()
    with pytest.raises(ValueError, match=r"^smoothing=.*float32.*smoothing=None"):
        SubquantileMLPRegressor(smoothing=smoothing, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"^smoothing="):
        subquantile_loss(torch.ones(5), 0.1, smoothing=smoothing)
    value = subquantile_loss(torch.ones(5, dtype=torch.float64), 0.1, smoothing=1e300)
    assert torch.isfinite(value)  # float64 losses hold it


def test_the_smoothed_objective_below_zero_still_stops_when_it_stalls():
    """The smoothed objective is negative here: progress is measured relative to |best|."""
    X, y = _data()
    model = SubquantileMLPRegressor(
        smoothing=1.0, hidden_units=4, max_iter=3000, n_iter_no_change=20, random_state=0
    ).fit(X, y)
    assert model.objective_history_.min() < 0.0
    assert model.converged_
    assert model.n_iter_ < 3000


def _cases() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    X, y = _data(40)
    labels = _labels(y)
    nan_X = X.copy()
    nan_X[3, 1] = np.nan
    inf_y = y.copy()
    inf_y[2] = np.inf
    nan_y = y.copy()
    nan_y[2] = np.nan
    return {
        "nan-X": (nan_X, y, labels),
        "inf-y": (X, inf_y, labels),
        "nan-y": (X, nan_y, labels),
        "empty": (np.empty((0, 3)), np.empty(0), np.empty(0, dtype=int)),
        "no-features": (np.empty((40, 0)), y, labels),
        "one-row": (X[:1], y[:1], labels[:1]),
        "two-rows": (X[:2], y[:2], np.array([0, 1])),
        "constant-X": (np.ones((40, 3)), y, labels),
        "huge-X": (X * 1e300, y, labels),
        "tiny-X": (X * 1e-300, y, labels),
        "constant-y": (X, np.full(40, 2.5), np.r_[np.zeros(39, int), 1]),
        "one-class": (X, y, np.zeros(40, dtype=int)),
        "one-row-per-class": (X[:3], y[:3], np.array([0, 1, 2])),
        "float32": (X.astype(np.float32), y.astype(np.float32), labels),
        "int": (np.rint(X * 3).astype(int), np.rint(y * 3).astype(int), labels),
        "wide": (np.random.default_rng(1).normal(size=(20, 2000)), y[:20], labels[:20]),
    }


CASES = _cases()
NETWORKS = {
    "regressor": lambda **params: SubquantileMLPRegressor(**{**SMALL, **params}),
    "classifier": lambda **params: SubquantileMLPClassifier(**{**SMALL, **params}),
}
SETTINGS = {
    "full-batch": {},
    "batch-larger-than-n": {"batch_size": 1000},
    "batch-of-one": {"batch_size": 1, "max_iter": 3},
    "per-batch-selection": {"batch_size": 7, "selection": "batch", "max_iter": 5},
}


@pytest.mark.parametrize("settings", sorted(SETTINGS))
@pytest.mark.parametrize("network", sorted(NETWORKS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_fault_injection(case, network, settings):
    X, y, labels = CASES[case]
    model = NETWORKS[network](**SETTINGS[settings])
    try:
        model.fit(X, labels if network == "classifier" else y)
        prediction = model.predict(X)
    except ValueError as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        return
    assert _finite_model(model)
    assert np.all(np.isfinite(model.outlier_scores_))
    if network == "regressor":
        assert np.all(np.isfinite(prediction))
    else:
        assert np.all(np.isfinite(model.predict_proba(X)))
