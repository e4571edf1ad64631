"""Hostile inputs of the Subquantile kernel estimators: weights of extreme magnitude, degenerate
small data, features whose kernel overflows. Each is fitted correctly or refused by name."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor

GIVEN = {"epsilon": 0.1, "alpha": 0.1, "gamma": 0.5}
"""A given configuration; the regressor's with kernel="rbf" (gamma is the rbf kernel's), the
classifier's kernel is rbf by default."""


def data(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    y[:6] = 4.0
    return X, y, (X[:, 0] > 0).astype(int)


def _fit_quietly(model, X, y, **fit_params):
    """The fit, with every warning an error: no overflow warning may leak."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return model.fit(X, y, **fit_params)


MODELS = [
    SubquantileKernelRegressor(),  # kernel="auto"
    SubquantileKernelRegressor(kernel="rbf", **GIVEN),
    SubquantileKernelRegressor(kernel="rbf", n_components=20, random_state=0, **GIVEN),
    SubquantileKernelClassifier(),
    SubquantileKernelClassifier(**GIVEN, refine=None),
    SubquantileKernelRegressor(n_components=20, random_state=0),  # kernel="auto", features
]
IDS = ["reg-auto", "reg-given", "reg-features", "clf-auto", "clf-given", "reg-auto-features"]


def _outputs(model, X):
    if isinstance(model, SubquantileKernelClassifier):
        return model.predict_proba(X)
    return model.predict(X)


@pytest.mark.parametrize("scale", [1e-14, 1e-300, 1e300, 2.0**-60, 3e-5], ids=str)
@pytest.mark.parametrize("model", MODELS[:1] + MODELS[3:4], ids=["reg-auto", "clf-auto"])
def test_uniform_weights_of_any_scale_give_the_fit_without_weights(model, scale):
    """With alpha "auto" the penalty follows the weight per row: uniform weights are no
    weights, whatever their magnitude (before: 1e-14 gave probabilities 0.5 everywhere). With
    a given alpha, weights scale the loss as in scikit-learn (the next test)."""
    X, y, labels = data()
    target = labels if isinstance(model, SubquantileKernelClassifier) else y
    plain = _fit_quietly(model.__class__(), X, target)
    weighted = _fit_quietly(
        model.__class__(), X, target, sample_weight=np.full(y.size, scale)
    )
    # the same fit (a red team's 1e-14 gave the classifier 0.525 / 0.475 where the plain fit
    # gave 0.5 / 0.5): the rows kept, and the outputs to rounding
    np.testing.assert_array_equal(weighted.inlier_mask_, plain.inlier_mask_)
    np.testing.assert_allclose(_outputs(weighted, X), _outputs(plain, X), rtol=1e-12, atol=1e-12)
    assert weighted.alpha_ == pytest.approx(plain.alpha_ * scale, rel=1e-9)


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("loss", ["auto", "log", "hinge"])
def test_classifier_with_uniform_weights_of_1e_14_gives_the_unweighted_probabilities(
    classes, loss
):
    """Uniform weights of 1e-14 (a red team's: probabilities 0.025 from the unweighted fit):
    alpha "auto" follows the weight per row, so the fit is the one without weights."""
    rng = np.random.default_rng(classes)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])[:classes]
    X = np.vstack([centre + rng.normal(size=(30, 2)) for centre in centres])
    labels = np.repeat(np.arange(classes), 30)
    labels[rng.choice(labels.size, size=6, replace=False)] = rng.integers(0, classes, size=6)
    plain = _fit_quietly(SubquantileKernelClassifier(loss=loss), X, labels)
    weighted = _fit_quietly(
        SubquantileKernelClassifier(loss=loss), X, labels, sample_weight=np.full(labels.size, 1e-14)
    )
    np.testing.assert_allclose(weighted.predict_proba(X), plain.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(weighted.inlier_mask_, plain.inlier_mask_)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize(
    "weights",
    [
        np.r_[1e300, np.ones(59)],  # one row outweighs the rest
        np.r_[1e308, 1e308, np.ones(58)],  # the total overflows float64
        np.r_[np.full(30, 1e-300), np.ones(30)],
        np.full(60, 1e-14),
        np.full(60, 1e300),
    ],
    ids=["one-1e300", "two-1e308", "half-1e-300", "all-1e-14", "all-1e300"],
)
def test_weights_of_extreme_magnitude_fit_finitely(model, weights):
    """Weights far from 1 (ratios of 1e300, sums beyond the largest float): a finite model, no
    overflow warning, kept weights in the given units."""
    X, y, labels = data()
    target = labels if isinstance(model, SubquantileKernelClassifier) else y
    fitted = _fit_quietly(model.__class__(**model.get_params()), X, target, sample_weight=weights)
    assert np.all(np.isfinite(_outputs(fitted, X)))
    assert np.all(np.isfinite(fitted.row_weights_))
    assert np.all((fitted.row_weights_ >= 0) & (fitted.row_weights_ <= weights))
    assert 0.0 <= fitted.epsilon_ < 0.5


def test_one_overwhelming_weight_fits_that_row():
    """A row of weight 1e300 among rows of weight 1 is, to float precision, the only row: the
    regressor predicts its target (before: a classifier's coefficients all 0, probabilities
    0.5, an overflow warning)."""
    X, y, labels = data()
    weights = np.r_[1e300, np.ones(59)]
    model = _fit_quietly(
        SubquantileKernelRegressor(kernel="rbf", **GIVEN), X, y, sample_weight=weights
    )
    assert model.predict(X[:1])[0] == pytest.approx(y[0], abs=0.05)
    classifier = _fit_quietly(
        SubquantileKernelClassifier(**GIVEN, refine=None), X, labels, sample_weight=weights
    )
    assert classifier.predict(X[:1])[0] == labels[0]
    assert classifier.predict_proba(X[:1])[0, labels[0]] > 0.9


def test_weights_of_identical_rows_that_add_up_beyond_float_are_refused():
    X, y, _ = data()
    X, y = np.r_[X, X[:1]], np.r_[y, y[:1]]
    weights = np.r_[np.full(60, 1e308), 1e308]
    with pytest.raises(ValueError, match="sample_weight: the weights of identical rows"):
        SubquantileKernelRegressor().fit(X, y, sample_weight=weights)


# -- degenerate small data -------------------------------------------------------------------


TWO_POINTS = np.r_[np.zeros((3, 2)), np.ones((2, 2))]


@pytest.mark.parametrize(
    ("model", "X", "y"),
    [
        (SubquantileKernelRegressor(alpha=1e-8), TWO_POINTS, np.r_[0.0, 0.1, -0.1, 1.0, 1.2]),
        (SubquantileKernelRegressor(alpha=1e-8), TWO_POINTS, np.r_[0.0, 0.0, 0.0, 1.0, 1.0]),
        (SubquantileKernelRegressor(alpha=1e-8, gamma=0.5), TWO_POINTS, np.r_[0, 1, 2, 3, 4.0]),
        (SubquantileKernelClassifier(alpha=1e-8), TWO_POINTS, np.r_[0, 1, 0, 1, 0]),
        (
            SubquantileKernelRegressor(alpha=1e-8, n_components=5, kernel="linear"),
            1e4 + np.random.default_rng(0).normal(size=(5, 2)),
            np.random.default_rng(1).normal(size=5),
        ),
        (
            SubquantileKernelRegressor(0.2, alpha=1e-8, kernel="linear"),
            1e4 + np.random.default_rng(2).normal(size=(5, 2)),
            np.random.default_rng(3).normal(size=5),
        ),
        (
            SubquantileKernelClassifier(alpha=1e-8, n_components=5, kernel="linear"),
            1e4 + np.random.default_rng(4).normal(size=(6, 2)),
            np.r_[0, 1, 0, 1, 0, 1],
        ),
    ],
    ids=["two-points", "two-points-same-y", "two-points-gamma", "two-points-clf",
         "features-linear-1e4", "exact-linear-1e4", "features-linear-clf"],
)
def test_a_ridge_below_the_kernel_resolution_still_fits(model, X, y):
    """alpha = 1e-8 on five rows (two distinct points; or a linear kernel on features near 1e4,
    whose kernel matrix is singular to float precision): a finite fit (before: numpy's
    'Singular matrix' / 'leading minor not positive definite', or a message blaming the
    kernel)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # convergence on 5 rows
        fitted = model.fit(X, y)
    assert np.all(np.isfinite(_outputs(fitted, X)))


def test_the_ridge_floor_does_not_change_ordinary_fits():
    """The floor (10 eps tr(K)) sits far below any alpha of the grid: the fit at alpha = 1e-6
    equals kernel ridge's closed form."""
    from sklearn.kernel_ridge import KernelRidge

    X, y, _ = data()
    model = SubquantileKernelRegressor(
        0.0, alpha=1e-6, kernel="rbf", gamma=0.5, fit_intercept=False
    )
    reference = KernelRidge(alpha=1e-6, kernel="rbf", gamma=0.5).fit(X, y)
    np.testing.assert_allclose(model.fit(X, y).predict(X), reference.predict(X), rtol=1e-6)


# -- features whose kernel overflows ----------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        SubquantileKernelRegressor(kernel="linear"),
        SubquantileKernelRegressor(kernel="linear", n_components=5),
        SubquantileKernelClassifier(kernel="linear", alpha=0.1),
        SubquantileKernelRegressor(kernel="polynomial", gamma=1.0, **{"epsilon": 0.1}),
    ],
    ids=["linear", "linear-features", "linear-clf", "poly-gamma-1"],
)
def test_features_that_overflow_the_kernel_are_named(model):
    """Features of order 1e150 under an unbounded kernel: the message names the feature scale
    and the remedy (before: it blamed 'a precomputed or callable kernel')."""
    rng = np.random.default_rng(5)
    X = 1e150 * rng.normal(size=(20, 2))
    y = rng.normal(size=20) if not isinstance(model, SubquantileKernelClassifier) else (
        np.arange(20) % 2
    )
    with pytest.raises(ValueError, match=r"features up to .*e\+150.*Scale the features"):
        model.fit(X, y)


def test_a_bounded_kernel_fits_features_of_any_magnitude():
    rng = np.random.default_rng(6)
    X = 1e150 * rng.normal(size=(40, 2))
    y = np.sin(X[:, 0] / 1e150)
    model = SubquantileKernelRegressor().fit(X, y)  # rbf, gamma from the robust feature scale
    assert np.corrcoef(model.predict(X), y)[0, 1] > 0.9


@pytest.mark.parametrize("scale", [0.25, 3.0], ids=str)
def test_uniform_weights_with_a_given_alpha_scale_the_loss(scale):
    # scikit-learn's convention: weights multiply the loss, so uniform weights c at alpha a
    # are the unweighted fit at alpha a / c (with an intercept-only model, at alpha 1e14, the
    # trimmed rows tie and the two fits may keep different rows of one class)
    X, _, labels = data()
    params = {"gamma": 1.0, "epsilon": 0.2, "refine": None, "random_state": 0}
    weighted = SubquantileKernelClassifier(alpha=1.0, **params).fit(
        X, labels, sample_weight=np.full(labels.size, scale)
    )
    plain = SubquantileKernelClassifier(alpha=1.0 / scale, **params).fit(X, labels)
    np.testing.assert_array_equal(weighted.inlier_mask_, plain.inlier_mask_)
    np.testing.assert_allclose(
        weighted.predict_proba(X), plain.predict_proba(X), rtol=1e-6, atol=1e-8
    )
