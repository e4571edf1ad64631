"""Property-based hostile inputs: weights, targets and feature scales drawn by hypothesis.

Whatever the magnitudes, a fit either gives finite predictions or raises a ValueError / TypeError
of the library's own (never numpy's linear-algebra errors or a raw numpy / scipy / torch
message), and no overflow warning leaks."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="property tests need hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402

from robustkernel import (  # noqa: E402
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
    SubquantileMLPClassifier,
    SubquantileMLPRegressor,
)
from robustkernel.meta import SubquantileClassifier, SubquantileRegressor  # noqa: E402

# Messages of numpy, scipy and torch that must never reach a user.
RAW_MESSAGES = re.compile(
    r"Singular matrix|leading minor|zero-size array|could not convert|infs or NaNs|"
    r"argmin of an empty|cannot convert float|broadcast|operands could not|"
    r"index \d+ is out of bounds|object has no attribute|NoneType|expected scalar type|"
    r"must be real number, not"
)

PROPERTY_SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def tables(draw, classification: bool = False, weight_decades: int = 300):
    """(X, y, sample_weight): 4-30 rows, 1-3 features, each at a drawn power of ten; weights
    (when drawn) within ``weight_decades`` powers of ten of 1."""
    n = draw(st.integers(4, 30))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    feature_scale = 10.0 ** draw(st.integers(-200, 200))
    X = rng.normal(size=(n, d)) * feature_scale
    if draw(st.booleans()):  # duplicated rows
        X[: n // 2] = X[n // 2 : 2 * (n // 2)]
    if classification:
        y = rng.integers(0, draw(st.integers(2, 3)), size=n)
        y[:2] = [0, 1]
    else:
        target_scale = 10.0 ** draw(st.integers(-200, 200))
        y = (np.sin(X[:, 0] / feature_scale) + 0.1 * rng.normal(size=n)) * target_scale
        if draw(st.booleans()):
            y[: max(n // 5, 1)] = 5.0 * target_scale  # a corrupted group
    weights = None
    kind = draw(st.sampled_from(["none", "integers", "magnitudes", "zeros"]))
    if kind == "integers":
        weights = rng.integers(0, 4, size=n).astype(float)
        weights[:2] = 1.0
    elif kind == "magnitudes":
        weights = 10.0 ** rng.uniform(-weight_decades, weight_decades, size=n)
    elif kind == "zeros":
        weights = (rng.uniform(size=n) > 0.3).astype(float)
        weights[:2] = 1.0
    return X, y, weights


def fits_finitely_or_refuses(model, X, y, weights, outputs) -> None:
    """The property: finite outputs, or the library's own ValueError / TypeError."""
    fit_params = {} if weights is None else {"sample_weight": weights}
    with warnings.catch_warnings():
        # no overflow / invalid-value warning from the library's own code (a wrapped
        # scikit-learn estimator's own warnings are its business)
        warnings.filterwarnings("error", category=RuntimeWarning, module=r"robustkernel\.")
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            model.fit(X, y, **fit_params)
        except (ValueError, TypeError) as error:
            assert not isinstance(error, np.linalg.LinAlgError), repr(error)
            # a wrapped estimator's own failure is reported as such, naming it
            own = str(error).split(": ", 1)[-1] if str(error).startswith("estimator: ") else ""
            assert not RAW_MESSAGES.search(str(error).replace(own, "")), repr(error)
            return
        predicted = np.asarray(getattr(model, outputs)(X), dtype=float)
    assert np.all(np.isfinite(predicted)), (predicted, model)


KERNEL_MODELS = [
    lambda: SubquantileKernelRegressor(0.2, alpha=0.1, gamma=0.5),
    lambda: SubquantileKernelRegressor(n_components=5, random_state=0),
    lambda: SubquantileKernelRegressor(kernel="linear", alpha=1e-8),
]


@pytest.mark.parametrize("make", KERNEL_MODELS, ids=["given", "features-auto", "linear"])
@PROPERTY_SETTINGS
@given(table=tables())
def test_kernel_regressor_is_finite_or_refuses(make, table):
    fits_finitely_or_refuses(make(), *table, "predict")


@pytest.mark.parametrize(
    "make",
    [
        lambda: SubquantileKernelClassifier(0.2, alpha=0.1, gamma=0.5, refine=None),
        lambda: SubquantileKernelClassifier(n_components=5, random_state=0),
    ],
    ids=["given", "features-auto"],
)
@PROPERTY_SETTINGS
@given(table=tables(classification=True))
def test_kernel_classifier_is_finite_or_refuses(make, table):
    fits_finitely_or_refuses(make(), *table, "predict_proba")


@PROPERTY_SETTINGS
@given(table=tables())
def test_kernel_regressor_defaults_are_finite_or_refuse(table):
    """Every knob "auto" on the exact kernel (the slowest: fewer rows suffice)."""
    X, y, weights = table
    fits_finitely_or_refuses(SubquantileKernelRegressor(), X, y, weights, "predict")


META_MODELS = {
    "meta-regressor": lambda: SubquantileRegressor(Ridge(alpha=1.0), n_folds=3),
    "meta-regressor-given": lambda: SubquantileRegressor(Ridge(alpha=1.0), epsilon=0.2),
}


# The meta-estimators hand the weights to the wrapped estimator as they are: weights of 1e+-300
# overflow scikit-learn's own Ridge (sqrt(w) y), whose error is its own. Within 1e+-3.
@pytest.mark.parametrize("name", sorted(META_MODELS))
@PROPERTY_SETTINGS
@given(table=tables(weight_decades=3))
def test_meta_regressor_is_finite_or_refuses(name, table):
    fits_finitely_or_refuses(META_MODELS[name](), *table, "predict")


@PROPERTY_SETTINGS
@given(table=tables(classification=True, weight_decades=3))
def test_meta_classifier_is_finite_or_refuses(table):
    model = SubquantileClassifier(LogisticRegression(), n_folds=3)
    fits_finitely_or_refuses(model, *table, "predict_proba")


@pytest.mark.parametrize(
    "make",
    [
        lambda: SubquantileMLPRegressor(hidden_units=8, max_iter=60, random_state=0),
        lambda: SubquantileMLPClassifier(hidden_units=8, max_iter=60, random_state=0),
    ],
    ids=["mlp-regressor", "mlp-classifier"],
)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_networks_are_finite_or_refuse(make, data):
    """The networks take no sample_weight: features and targets of any magnitude."""
    model = make()
    classification = isinstance(model, SubquantileMLPClassifier)
    X, y, _ = data.draw(tables(classification=classification))
    outputs = "predict_proba" if classification else "predict"
    fits_finitely_or_refuses(model, X, y, None, outputs)


@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16), n_classes=st.integers(2, 3))
def test_integer_weights_fit_as_repeated_rows_under_the_hinge_loss(seed, n_classes):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int) + (n_classes == 3) * (X[:, 1] > 0.5)
    y[:4] = (y[:4] + 1) % n_classes
    weights = rng.integers(0, 4, size=40).astype(float)
    weights[np.unique(y, return_index=True)[1]] = 1.0  # every class keeps a row
    rows = np.repeat(np.arange(40), weights.astype(int))
    model = SubquantileKernelClassifier(0.2, loss="hinge", alpha=0.05, gamma=0.5, refine=None)
    weighted = clone(model).fit(X, y, sample_weight=weights)
    repeated = clone(model).fit(X[rows], y[rows])
    X_test = rng.normal(size=(20, 2))
    np.testing.assert_allclose(weighted._decision(X_test), repeated._decision(X_test), atol=1e-5)
