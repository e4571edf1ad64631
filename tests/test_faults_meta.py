"""Faults of the meta-estimators (SubquantileRegressor / SubquantileClassifier) and of saving them.

Each hostile input is fitted correctly or refused with ValueError / TypeError naming the
argument; nothing is written when saving fails.

* One class (in y, or among the rows of positive ``sample_weight``): refused like the kernel
  classifier ("needs samples of at least 2 classes"), instead of a fit that flags rows.
* Targets of any magnitude (1e200, 1e-300): the trim ranks squared residuals in units of
  ``target_scale_`` (a power of two near the median |y|), so they neither overflow nor
  underflow; the same rows are flagged as at scale 1, and ``outlier_scores_`` stay finite.
* An estimator of the wrong kind (a regressor in the classifier, a classifier in the regressor,
  a classifier that scores no row): refused at fit naming ``estimator``.
* ``.skops`` files: a model that ``load_model`` would refuse is not written (the refused types
  are named); every public estimator with its default inner estimator round-trips.
* Neighbours: sample weights (zeros, NaN, inf, negative, wrong length, overflowing sum), y with
  NaN / inf, X empty, too few rows for the out-of-fold losses, a class of one row, an estimator
  whose predictions are not finite.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone, is_classifier
from sklearn.cluster import KMeans
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestRegressor,
    VotingClassifier,
)
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, SplineTransformer, StandardScaler

import robustkernel
from robustkernel import SubquantileClassifier, SubquantileRegressor, baselines
from robustkernel.persistence import SKOPS_TRUSTED_TYPES, load_model, save_model


def _classifier(kind, **params) -> SubquantileClassifier:
    estimator = None if kind == "default" else LogisticRegression()
    return SubquantileClassifier(estimator, random_state=0, **params)


def _binary(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _curve(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y = sin(x) + noise, 10% of the rows shifted by 3 to 6; returns X, y, corrupted rows."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    bad = rng.choice(n, n // 10, replace=False)
    y[bad] += rng.uniform(3.0, 6.0, size=bad.size) * rng.choice([-1.0, 1.0], size=bad.size)
    return X, y, bad


# -- 1. one class -------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", ["auto", 0.1])
@pytest.mark.parametrize("kind", ["default", "linear"])
@pytest.mark.parametrize("label", [0, "yes"])
def test_a_single_class_is_refused(kind, epsilon, label):
    X, _ = _binary()
    y = np.full(60, label, dtype=object if isinstance(label, str) else int)
    with pytest.raises(
        ValueError,
        match=rf"SubquantileClassifier needs samples of at least 2 classes; .*one class: "
        rf"{label!r}",
    ):
        _classifier(kind, epsilon=epsilon).fit(X, y)


@pytest.mark.parametrize("epsilon", ["auto", 0.1])
@pytest.mark.parametrize("kind", ["default", "linear"])
def test_sample_weight_leaving_a_single_class_is_refused(kind, epsilon):
    """Rows of weight 0 are left out as if absent: one class of positive weight is one class."""
    X, y = _binary()
    weights = (y == 1).astype(float)
    with pytest.raises(
        ValueError,
        match=r"SubquantileClassifier needs samples of at least 2 classes; the rows of positive "
        r"sample_weight contain only one class: 1",
    ):
        _classifier(kind, epsilon=epsilon).fit(X, y, sample_weight=weights)


@pytest.mark.parametrize("epsilon", ["auto", 0.1])
@pytest.mark.parametrize("kind", ["default", "linear"])
def test_a_class_of_one_row_is_kept_and_scored(kind, epsilon):
    """Two classes, one of them a single row: the out-of-fold fits without that row see one
    class (LogisticRegression refuses it); such a fold is scored by the constant model of its
    class, and the row is kept (at least half of every class is)."""
    X, _ = _binary()
    y = np.zeros(60, dtype=int)
    y[7] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # StratifiedKFold / lbfgs on a tiny class
        model = _classifier(kind, epsilon=epsilon).fit(X, y)
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert model.inlier_mask_[7]
    assert np.isfinite(model.outlier_scores_).all()


# -- 2. targets of any magnitude ----------------------------------------------------------------


def _spline_regression():
    return make_pipeline(SplineTransformer(n_knots=8), LinearRegression())


# name -> (estimator, n_folds): nearest neighbours explain their own rows, so out of fold.
REGRESSORS = {
    "splines": (_spline_regression, None),
    "nearest neighbours": (lambda: KNeighborsRegressor(n_neighbors=5), 5),
}


@pytest.mark.parametrize(
    "scale", [1e200, pytest.param(1e-300, marks=pytest.mark.slow), 2.0**-1070 * 2**30]
)
@pytest.mark.parametrize("epsilon", ["auto", 0.1])
@pytest.mark.parametrize("name", sorted(REGRESSORS))
def test_flags_do_not_depend_on_the_target_scale(name, epsilon, scale):
    X, y, bad = _curve()
    estimator, n_folds = REGRESSORS[name]
    reference = SubquantileRegressor(estimator(), epsilon=epsilon, n_folds=n_folds, random_state=0)
    reference.fit(X, y)
    flagged = np.flatnonzero(~reference.inlier_mask_)
    assert set(bad) <= set(flagged)  # the corrupted rows, at scale 1
    model = clone(reference).fit(X, scale * y)
    np.testing.assert_array_equal(model.inlier_mask_, reference.inlier_mask_)
    assert np.isfinite(model.outlier_scores_).all() and np.isfinite(model.threshold_)
    # Scores in units of target_scale_^2: those at scale 1 times the square of the power of two
    # (near 1) between the two target scales.
    factor = (scale / model.target_scale_ * reference.target_scale_) ** 2
    np.testing.assert_allclose(
        model.outlier_scores_, reference.outlier_scores_ * factor, rtol=1e-6, atol=1e-12
    )
    np.testing.assert_allclose(model.predict(X) / scale, reference.predict(X), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("scale", [1e200, pytest.param(1e50, marks=pytest.mark.slow)])
@pytest.mark.parametrize("epsilon", ["auto", 0.1])
def test_gradient_boosting_on_huge_targets_through_a_target_scaler(epsilon, scale):
    """The estimator fits y as given; histogram gradient boosting computes in float32, so for
    targets beyond its range the documented remedy is a target scaler around it (for huge
    targets: scikit-learn's scalers take a scale below ~1e-15 for 0, so not for tiny ones)."""
    X, y, bad = _curve()
    reference = SubquantileRegressor(epsilon=epsilon, random_state=0).fit(X, y)
    assert set(bad) <= set(np.flatnonzero(~reference.inlier_mask_))
    scaled = TransformedTargetRegressor(HistGradientBoostingRegressor(), transformer=MaxAbsScaler())
    model = SubquantileRegressor(scaled, epsilon=epsilon, random_state=0).fit(X, scale * y)
    # MaxAbsScaler divides by max |y|, not a power of two: float32 rounding may move a row at
    # the boundary.
    assert set(bad) <= set(np.flatnonzero(~model.inlier_mask_))
    assert np.count_nonzero(model.inlier_mask_ != reference.inlier_mask_) <= 4
    assert np.isfinite(model.outlier_scores_).all()


def test_outlier_scores_are_squared_residuals_in_units_of_target_scale():
    X, y, _ = _curve()
    y = 3.0 * y
    model = SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(X, y)
    scale = model.target_scale_
    assert scale == 2.0 ** np.floor(np.log2(np.median(np.abs(y))))  # a power of two
    residuals = (y - model.predict(X)) ** 2
    np.testing.assert_allclose(model.outlier_scores_ * scale**2, residuals, rtol=1e-12)
    kept = model.inlier_mask_
    assert model.threshold_ == pytest.approx(float(np.max(residuals[kept])) / scale**2)


def test_targets_too_wide_for_squared_losses_are_refused():
    X, y, _ = _curve()
    y[0] = 1e200
    with pytest.raises(ValueError, match=r"extreme values of y"):
        SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(X, y)


def test_targets_of_weight_zero_do_not_set_the_scale():
    """Rows of weight 0 are absent: an extreme target there neither fails the fit nor
    changes it."""
    X, y, _ = _curve()
    weights = np.ones(len(y))
    weights[0] = 0.0
    reference = SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(
        np.delete(X, 0, axis=0), np.delete(y, 0)
    )
    y[0] = 1e300
    model = SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(model.inlier_mask_[1:], reference.inlier_mask_)
    assert not model.inlier_mask_[0]
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-12)


# -- 3. an estimator of the wrong kind ----------------------------------------------------------


NOT_CLASSIFIERS = {
    "linear regression": LinearRegression(),
    "ridge": Ridge(),
    "gradient boosting regressor": HistGradientBoostingRegressor(),
    "pipeline ending in a regressor": make_pipeline(StandardScaler(), Ridge()),
    "clustering": KMeans(n_clusters=2, n_init=1),
}
NOT_REGRESSORS = {
    "logistic regression": LogisticRegression(),
    "gradient boosting classifier": HistGradientBoostingClassifier(),
    "pipeline ending in a classifier": make_pipeline(StandardScaler(), LogisticRegression()),
    "clustering": KMeans(n_clusters=2, n_init=1),
}


@pytest.mark.parametrize("name", sorted(NOT_CLASSIFIERS))
def test_classifier_refuses_an_estimator_that_is_not_a_classifier(name):
    X, y = _binary()
    with pytest.raises((ValueError, TypeError), match=r"'estimator'.*must be a classifier"):
        SubquantileClassifier(NOT_CLASSIFIERS[name], epsilon=0.1).fit(X, y)


@pytest.mark.parametrize("name", sorted(NOT_REGRESSORS))
def test_regressor_refuses_an_estimator_that_is_not_a_regressor(name):
    X, y = _binary()
    with pytest.raises((ValueError, TypeError), match=r"'estimator'.*must be a regressor"):
        SubquantileRegressor(NOT_REGRESSORS[name], epsilon=0.1).fit(X, y.astype(float))


def test_classifier_refuses_a_classifier_without_scores():
    """Ranking rows needs p(observed label): predict_proba, or decision_function."""
    X, y = _binary()
    hard_vote = VotingClassifier([("lr", LogisticRegression())], voting="hard")
    with pytest.raises(
        (ValueError, TypeError), match=r"'estimator'.*predict_proba or decision_function"
    ):
        SubquantileClassifier(hard_vote, epsilon=0.1).fit(X, y)
    soft_vote = VotingClassifier([("lr", LogisticRegression())], voting="soft")
    assert SubquantileClassifier(soft_vote, epsilon=0.1).fit(X, y).score(X, y) > 0.8


def test_the_wrong_kind_is_refused_as_both_value_and_type_error():
    X, y = _binary()
    for error in (ValueError, TypeError):
        with pytest.raises(error, match="estimator"):
            SubquantileClassifier(LinearRegression()).fit(X, y)


# -- 4. saving -----------------------------------------------------------------------------------


def _public_estimators() -> list[type]:
    return sorted(
        (
            getattr(module, name)
            for module in (robustkernel, baselines)
            for name in module.__all__
            if isinstance(getattr(module, name), type)
            and issubclass(getattr(module, name), BaseEstimator)
        ),
        key=lambda cls: cls.__name__,
    )


NEED_TORCH = {"SubquantileMLPClassifier", "SubquantileMLPRegressor"}


@pytest.mark.parametrize("cls", _public_estimators(), ids=lambda cls: cls.__name__)
def test_every_public_estimator_with_its_defaults_round_trips_through_skops(tmp_path, cls):
    pytest.importorskip("skops")
    if cls.__name__ in NEED_TORCH:
        pytest.importorskip("torch", reason="the networks train with the optional PyTorch")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    fit_params = {}
    if cls is baselines.OracleERM:  # no default: the base learner of the other estimators
        model = cls(HistGradientBoostingRegressor())
        fit_params["clean_mask"] = np.arange(40) >= 4
    else:
        model = cls()
    y = (X[:, 0] > 0).astype(int) if is_classifier(model) else np.sin(X[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, **fit_params)
    loaded = load_model(save_model(model, tmp_path / "model.skops"))
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("y_kind", ["binary", "multiclass"])
def test_default_meta_classifier_round_trips_through_skops(tmp_path, y_kind):
    pytest.importorskip("skops")
    X, y = _binary()
    if y_kind == "multiclass":
        y = np.array(["a", "b", "c"])[np.arange(60) % 3]
    model = SubquantileClassifier(epsilon=0.1).fit(X, y)
    loaded = load_model(save_model(model, tmp_path / "model.skops"))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_a_model_load_model_would_refuse_is_not_saved(tmp_path):
    """A random forest holds sklearn.tree._tree.Tree, which a .skops model may not name: saving
    fails with the refused type and the remedy, and writes nothing."""
    pytest.importorskip("skops")
    X, y, _ = _curve(60)
    forest = RandomForestRegressor(n_estimators=2, random_state=0)
    model = SubquantileRegressor(forest, epsilon=0.1).fit(X, y)
    with pytest.raises(
        ValueError, match=r"not written.*\['sklearn\.tree\._tree\.Tree'\].*\.joblib"
    ):
        save_model(model, tmp_path / "model.skops")
    assert list(tmp_path.iterdir()) == []
    assert "sklearn.tree._tree.Tree" not in SKOPS_TRUSTED_TYPES
    loaded = load_model(save_model(model, tmp_path / "model.joblib"))  # the remedy
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


class _Foreign:
    """A class that no .skops model file may name."""


def test_a_foreign_object_is_not_saved_as_skops(tmp_path):
    pytest.importorskip("skops")
    with pytest.raises(ValueError, match=r"not written.*_Foreign"):
        save_model(_Foreign(), tmp_path / "model.skops")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_leaves_an_existing_file_alone(tmp_path):
    pytest.importorskip("skops")
    path = tmp_path / "model.skops"
    X, y, _ = _curve(60)
    good = SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(X, y)
    save_model(good, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not written"):
        save_model(_Foreign(), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.skops"]


# -- 5. neighbours ----------------------------------------------------------------------------


BAD_WEIGHTS = {
    "all zero": (np.zeros(60), r"(?i)sample.weight"),
    "nan": (np.r_[np.nan, np.ones(59)], r"(?i)sample.weight.*NaN"),
    "inf": (np.r_[np.inf, np.ones(59)], r"(?i)sample.weight.*infinity"),
    "negative": (np.r_[-1.0, np.ones(59)], r"(?i)sample.weight"),
    "wrong length": (np.ones(59), r"(?i)sample.weight"),
    "two-dimensional": (np.ones((60, 1)), r"(?i)sample.weight"),
    "sum overflows": (np.full(60, 1e308), r"sample_weight sums to more than"),
}


@pytest.mark.parametrize("task", ["regressor", "classifier"])
@pytest.mark.parametrize("name", sorted(BAD_WEIGHTS))
def test_bad_sample_weights_are_refused(task, name):
    X, y = _binary()
    weights, message = BAD_WEIGHTS[name]
    model = (
        SubquantileRegressor(LinearRegression(), epsilon=0.1)
        if task == "regressor"
        else SubquantileClassifier(LogisticRegression(), epsilon=0.1)
    )
    with pytest.raises(ValueError, match=message):
        model.fit(X, y.astype(float) if task == "regressor" else y, sample_weight=weights)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("task", ["regressor", "classifier"])
def test_targets_with_nan_or_inf_are_refused(task, value):
    X, y = _binary()
    y = y.astype(float)
    y[3] = value
    model = SubquantileRegressor() if task == "regressor" else SubquantileClassifier()
    with pytest.raises(ValueError, match=r"(?i)\by\b|label"):
        model.fit(X, y)


@pytest.mark.parametrize("task", ["regressor", "classifier"])
def test_empty_X_is_refused_naming_X(task):
    model = SubquantileRegressor() if task == "regressor" else SubquantileClassifier()
    with pytest.raises(ValueError, match=r"needs at least one sample; X has 0 rows"):
        model.fit(np.empty((0, 3)), np.empty(0))


def test_sample_weight_needs_an_estimator_that_takes_it():
    X, y = _binary()
    with pytest.raises(ValueError, match=r"KNeighborsRegressor\.fit does not accept sample_weight"):
        SubquantileRegressor(KNeighborsRegressor()).fit(
            X, y.astype(float), sample_weight=np.ones(60)
        )


@pytest.mark.parametrize("epsilon", ["auto", 0.1])
@pytest.mark.parametrize("n_rows", [1, 4])
def test_too_few_rows_for_the_out_of_fold_losses_are_refused(n_rows, epsilon):
    """Out-of-fold losses (epsilon="auto", or n_folds) need as many kept rows as folds."""
    X, y, _ = _curve()
    model = SubquantileRegressor(LinearRegression(), epsilon=epsilon, n_folds=5)
    with pytest.raises(ValueError, match=rf"n_folds=5.*{n_rows} sample"):
        model.fit(X[:n_rows], y[:n_rows])
    if epsilon != "auto":  # the papers' alternation needs no folds
        model.set_params(n_folds=None).fit(X[:n_rows], y[:n_rows])


class _NaNRegressor(RegressorMixin, BaseEstimator):
    """Predicts NaN (an estimator that failed silently)."""

    def fit(self, X, y):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        return np.full(len(X), np.nan)


class _NaNClassifier(ClassifierMixin, BaseEstimator):
    """Probabilities of NaN."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def predict_proba(self, X):
        return np.full((len(X), self.classes_.size), np.nan)


@pytest.mark.parametrize("epsilon", ["auto", 0.1])
def test_predictions_that_are_not_finite_are_refused(epsilon):
    X, y = _binary()
    with pytest.raises(ValueError, match=r"_NaNRegressor\.predict .*not finite"):
        SubquantileRegressor(_NaNRegressor(), epsilon=epsilon).fit(X, y.astype(float))
    with pytest.raises(ValueError, match=r"_NaNClassifier\.predict_proba .*not finite"):
        SubquantileClassifier(_NaNClassifier(), epsilon=epsilon).fit(X, y)


@pytest.mark.parametrize("weight", [2.0**-1000, 2.0**1000, 3.0])
def test_uniform_sample_weights_are_no_weights(weight):
    X, y, _ = _curve()
    plain = SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(X, y)
    weighted = SubquantileRegressor(LinearRegression(), epsilon=0.1).fit(
        X, y, sample_weight=np.full(len(y), weight)
    )
    np.testing.assert_array_equal(weighted.inlier_mask_, plain.inlier_mask_)
    assert weighted.epsilon_ == pytest.approx(plain.epsilon_)


# Not 1e-300: LinearRegression itself fits rows of weight 1e-300 through sqrt(weights) = 1e-150
# and ranks one near-tie row differently from the unweighted fit (its precision, not ours).
@pytest.mark.parametrize("weight", [0.1, 1e300, 7e-5])
def test_uniform_inexact_sample_weights_are_no_weights(weight):
    """Partial sums of inexact weights (0.1, 1e300) round: the row after the k-th must not keep
    a sliver of its weight (``kept_weights`` drops parts below 1e-12 of a row's weight)."""
    test_uniform_sample_weights_are_no_weights(weight)


@pytest.mark.parametrize("scale", [1e-300, 1e150, 1e300])
def test_regressor_start_flags_the_same_rows_whatever_the_feature_scale(scale):
    """epsilon="auto" starts from the high-breakdown start on the features in units of their
    spread: features of 1e150 (whose kernel would overflow) or 1e-300 flag what unit ones do."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + 0.1 * rng.normal(size=60)
    y[:6] += 20.0
    unit = SubquantileRegressor(LinearRegression()).fit(X, y)
    scaled = SubquantileRegressor(LinearRegression()).fit(X * scale, y)
    np.testing.assert_array_equal(scaled.inlier_mask_, unit.inlier_mask_)
    assert not unit.inlier_mask_[:6].any()
