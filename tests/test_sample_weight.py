"""sample_weight of the Subquantile kernel estimators: integer weights fit as repeated rows,
zero weights as dropped rows, and the weighted subquantile keeps (1 - epsilon) of the weight."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor

GIVEN = {"epsilon": 0.2, "alpha": 0.1, "kernel": "rbf", "gamma": 0.5, "refine": None}
"""The papers' estimator at a given alpha and rbf gamma (the default kernel="auto" runs no
solver)."""


def regression(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    y[: n // 8] = 5.0
    weights = rng.integers(0, 4, size=n).astype(float)
    return X, y, weights, rng.uniform(-2, 2, size=(30, 2))


def labels(X: np.ndarray, n_classes: int) -> np.ndarray:
    y = np.digitize(X[:, 0], np.linspace(-2, 2, n_classes + 1)[1:-1])
    y[:6] = (y[:6] + 1) % n_classes  # wrong labels
    return y


def test_integer_weights_fit_as_repeated_rows_regression():
    X, y, weights, X_test = regression()
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=weights)
    repeated = SubquantileKernelRegressor(**GIVEN).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.predict(X_test), repeated.predict(X_test), atol=1e-8)
    assert weighted.epsilon_ == pytest.approx(repeated.epsilon_)
    np.testing.assert_allclose(weighted.objective_history_[-1], repeated.objective_history_[-1])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_integer_weights_fit_as_repeated_rows_classification(n_classes):
    """Equal up to L-BFGS's tolerance (the sums run in another order)."""
    X, _, weights, X_test = regression(seed=1)
    y = labels(X, n_classes)
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = SubquantileKernelClassifier(**GIVEN).fit(X, y, sample_weight=weights)
    repeated = SubquantileKernelClassifier(**GIVEN).fit(X[rows], y[rows])
    np.testing.assert_allclose(
        weighted.predict_proba(X_test), repeated.predict_proba(X_test), atol=1e-4
    )


@pytest.mark.parametrize("model", [SubquantileKernelRegressor, SubquantileKernelClassifier])
def test_zero_weights_drop_the_rows_with_the_defaults(model):
    """Every knob "auto": rows of weight 0 are out of everything, the automatic choices too."""
    X, y, _, X_test = regression(n=80, seed=2)
    if model is SubquantileKernelClassifier:
        y = labels(X, 2)
    weights = np.ones(y.size)
    weights[::5] = 0.0
    kept = weights > 0
    weighted = model().fit(X, y, sample_weight=weights)
    dropped = model().fit(X[kept], y[kept])
    assert (weighted.alpha_, weighted.gamma_) == (dropped.alpha_, dropped.gamma_)
    outputs = "predict" if model is SubquantileKernelRegressor else "predict_proba"
    np.testing.assert_allclose(
        getattr(weighted, outputs)(X_test), getattr(dropped, outputs)(X_test), atol=1e-8
    )
    assert not weighted.inlier_mask_[~kept].any()
    assert np.all(weighted.row_weights_[~kept] == 0)
    np.testing.assert_array_equal(weighted.inlier_mask_[kept], dropped.inlier_mask_)
    if model is SubquantileKernelRegressor:  # the left-out rows score their squared error
        expected = (weighted.predict(X[~kept]) - y[~kept]) ** 2
        np.testing.assert_allclose(weighted.outlier_scores_[~kept], expected)


def test_reject_chooses_the_trim_without_weights_then_fits_with_them():
    """refine="reject" at a given epsilon: the trim comes from the fit without weights (it
    drops the rows it finds implausible); the weighted fit trims the weight of those rows."""
    X, y, weights, X_test = regression(seed=7)
    weights[weights == 0] = 0.5
    given = {"alpha": 0.1, "kernel": "rbf", "gamma": 0.5, "refine": "reject"}
    plain = SubquantileKernelRegressor(0.05, **given).fit(X, y)
    weighted = SubquantileKernelRegressor(0.05, **given).fit(X, y, sample_weight=weights)
    assert plain.epsilon_ > 0.1  # the 12% of rows with y = 5 dropped beyond the 5% trim
    trimmed = weights[~plain.inlier_mask_].sum() / weights.sum()
    at_chosen = SubquantileKernelRegressor(
        trimmed, alpha=0.1, kernel="rbf", gamma=0.5, refine=None
    ).fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(weighted.predict(X_test), at_chosen.predict(X_test))
    assert weighted.inlier_mask_[: y.size // 8].sum() == 0


def test_unit_weights_are_no_weights():
    X, y, _, X_test = regression(seed=3)
    plain = SubquantileKernelRegressor().fit(X, y)
    ones = SubquantileKernelRegressor().fit(X, y, sample_weight=np.ones(y.size))
    np.testing.assert_array_equal(plain.predict(X_test), ones.predict(X_test))


def test_the_weighted_subquantile_keeps_one_minus_epsilon_of_the_weight():
    """Fractional weights: the kept rows are those of smallest loss, the one at the boundary
    keeps part of its weight, and the kept weight is (1 - epsilon) of the total."""
    X, y, _, _ = regression(seed=4)
    weights = np.random.default_rng(5).uniform(0.2, 2.0, size=y.size)
    model = SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=weights)
    assert model.row_weights_.sum() == pytest.approx(0.8 * weights.sum())
    partial = (model.row_weights_ > 0) & (model.row_weights_ < weights - 1e-12)
    assert partial.sum() <= 1
    kept, trimmed = model.row_weights_ > 0, model.row_weights_ == 0
    assert model.outlier_scores_[kept].max() <= model.outlier_scores_[trimmed].min()
    assert model.epsilon_ == pytest.approx(0.2)
    assert model.inlier_mask_[: y.size // 8].sum() == 0  # the rows with y = 5


def test_options_without_weights_are_refused_with_a_reason():
    X, y, weights, _ = regression(seed=6)
    weights[0] = 2.5
    with pytest.raises(ValueError, match="solver='nesterov'"):
        SubquantileKernelRegressor(
            **GIVEN, solver="nesterov"
        ).fit(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="refine='biweight'"):
        SubquantileKernelRegressor(**{**GIVEN, "refine": "biweight"}).fit(
            X, y, sample_weight=weights
        )
    with pytest.raises(ValueError, match="at least one non-zero"):
        SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=np.zeros(y.size))
    with pytest.raises(ValueError, match=r"[Nn]egative"):
        SubquantileKernelRegressor(**GIVEN).fit(X, y, sample_weight=-np.ones(y.size))


def metric_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 4))
    y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.normal(size=50)
    return X, y, rng.integers(0, 4, size=50).astype(float), rng.normal(size=(10, 4))


@pytest.mark.parametrize("solver", ["lbfgs", "projected_gradient"])
def test_metric_integer_weights_fit_as_repeated_rows(solver):
    from robustkernel import MetricKernelRidge

    X, y, weights, X_test = metric_data()
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    weighted = MetricKernelRidge(lam=0.1, solver=solver).fit(X, y, sample_weight=weights)
    repeated = MetricKernelRidge(lam=0.1, solver=solver).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.Sigma_, repeated.Sigma_, atol=1e-8)
    np.testing.assert_allclose(weighted.predict(X_test), repeated.predict(X_test), atol=1e-8)
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-10)
    kept = weights > 0
    dropped = MetricKernelRidge(lam=0.1, solver=solver).fit(X[kept], y[kept])
    ones = MetricKernelRidge(lam=0.1, solver=solver).fit(X, y, sample_weight=kept * 1.0)
    np.testing.assert_allclose(ones.predict(X_test), dropped.predict(X_test), atol=1e-12)


@pytest.mark.parametrize("scale", [1e308 / 3.0, 1e-300])
def test_metric_weights_are_relative_at_any_scale(scale):
    """Weights of 1e308 (whose sum overflows) or 1e-300 fit as the same weights near 1: the
    repeated-rows fit, not an error that points at the kernel."""
    from robustkernel import MetricKernelRidge

    X, y, weights, X_test = metric_data()
    rows = np.repeat(np.arange(y.size), weights.astype(int))
    repeated = MetricKernelRidge(lam=0.1).fit(X[rows], y[rows])
    scaled = MetricKernelRidge(lam=0.1).fit(X, y, sample_weight=weights * scale)
    np.testing.assert_allclose(scaled.predict(X_test), repeated.predict(X_test), atol=1e-8)


def test_metric_gradient_with_weights_matches_central_differences():
    """The gradient keeps its form in the weighted dual coefficients (envelope theorem)."""
    from robustkernel.metric_kernel_ridge._objective import gradient, inner_solution, resolve_kernel

    X, y, weights, _ = metric_data(seed=1)
    weights += 0.5
    family = resolve_kernel("gaussian")
    rng = np.random.default_rng(2)
    B = rng.normal(size=(4, 4))
    Sigma = B @ B.T / 8 + 0.1 * np.eye(4)
    G = gradient(X, inner_solution(X, y, Sigma, 0.1, family, weights=weights), 0.1, family)
    E = rng.normal(size=(4, 4))
    E = E + E.T
    h = 1e-6

    def J(S: np.ndarray) -> float:
        return inner_solution(X, y, S, 0.1, family, weights=weights).objective

    numeric = (J(Sigma + h * E) - J(Sigma - h * E)) / (2 * h)
    assert np.sum(G * E) == pytest.approx(numeric, rel=1e-6)


def test_metric_weights_are_refused_with_trimming_or_batches():
    from robustkernel import MetricKernelRidge

    X, y, weights, _ = metric_data()
    with pytest.raises(ValueError, match="epsilon=None and batch_size=None"):
        MetricKernelRidge(lam=0.1, epsilon=0.1).fit(X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="epsilon=None and batch_size=None"):
        MetricKernelRidge(lam=0.1, batch_size=20).fit(X, y, sample_weight=weights)


# -- integer weights = repeated rows with the automatic configuration -----------------------------


def _repeated(weights: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(weights.size), weights.astype(int))


@pytest.mark.parametrize(
    "model",
    [
        SubquantileKernelRegressor(),
        # landmarks on every row (m >= n): a draw of m < n landmarks from the repeated rows and
        # from the weighted rows differs, and the fits are then equal in distribution only
        SubquantileKernelRegressor(n_components=500, random_state=0),
        SubquantileKernelRegressor(0.2, alpha=0.1, kernel="rbf", gamma=0.5, refine="reject"),
        SubquantileKernelClassifier(),
    ],
    ids=["defaults", "features", "reject", "classifier"],
)
def test_integer_weights_fit_as_repeated_rows_with_every_knob_automatic(model):
    """epsilon, alpha and gamma "auto" and refine="reject": weights of 0-3 give the model of
    the rows repeated (and dropped), whatever the rows' order; per-row results add up."""
    X, y, weights, X_test = regression(n=70, seed=11)
    if isinstance(model, SubquantileKernelClassifier):
        y = labels(X, 3)
    rows = _repeated(weights)
    order = np.random.default_rng(0).permutation(y.size)
    repeated = clone(model).fit(X[rows], y[rows])
    weighted = clone(model).fit(X[order], y[order], sample_weight=weights[order])
    outputs = "predict_proba" if isinstance(model, SubquantileKernelClassifier) else "predict"
    np.testing.assert_allclose(
        getattr(weighted, outputs)(X_test), getattr(repeated, outputs)(X_test), rtol=1e-6,
        atol=1e-9,  # the features: Nystroem bases of the same span differ by rounding
    )
    assert (weighted.alpha_, weighted.gamma_) == (repeated.alpha_, repeated.gamma_)
    assert weighted.epsilon_ == pytest.approx(repeated.epsilon_, abs=1e-12)
    # the weight each row keeps is what its copies keep
    kept_by_copies = np.bincount(rows, weights=repeated.row_weights_, minlength=y.size)
    np.testing.assert_allclose(weighted.row_weights_, kept_by_copies[order], atol=1e-12)
    np.testing.assert_array_equal(weighted.inlier_mask_, kept_by_copies[order] > 0)


def test_duplicate_rows_fit_as_one_row_of_their_weight():
    """Copies in the data (no weights) and one row weighing as much: the same model; every
    copy scores its row's loss."""
    X, y, _, X_test = regression(n=50, seed=12)
    copies = np.r_[np.arange(50), np.arange(0, 50, 3)]  # every third row twice
    weights = np.bincount(copies, minlength=50).astype(float)
    doubled = SubquantileKernelRegressor().fit(X[copies], y[copies])
    weighted = SubquantileKernelRegressor().fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(doubled.predict(X_test), weighted.predict(X_test), rtol=1e-9)
    second = np.arange(50, copies.size)
    np.testing.assert_array_equal(
        doubled.outlier_scores_[second], doubled.outlier_scores_[copies[second]]
    )
    assert doubled.X_fit_.shape[0] == 50  # the kernel model on the distinct rows


def test_spread_kept_weight_matches_the_subquantile_of_repeated_rows():
    """Each copy's share of its distinct row's kept weight is what the subquantile of the
    repeated rows keeps (ties between copies: the first copies), checked by brute force."""
    from robustkernel.subquantile._fit.unique_rows import spread_kept_weight, unique_rows
    from robustkernel.trimming import kept_weights

    rng = np.random.default_rng(3)
    for _ in range(20):
        distinct = rng.normal(size=(8, 2))
        picks = rng.integers(0, 8, size=20)
        X, y = distinct[picks], distinct[picks, 0]
        unique = unique_rows(X, y)
        losses = rng.uniform(size=unique.first.size)
        needed = float(rng.integers(1, 20))
        kept = kept_weights(losses, needed, unique.weights)
        brute = kept_weights(losses[unique.inverse], needed)  # one loss per copy, ties by index
        np.testing.assert_allclose(spread_kept_weight(unique, kept), brute)


def test_unique_rows_of_sparse_rows_are_those_of_the_dense_rows():
    from scipy import sparse

    from robustkernel.subquantile._fit.unique_rows import unique_rows

    rng = np.random.default_rng(4)
    distinct = rng.integers(0, 2, size=(6, 5)) * rng.normal(size=(6, 5))
    picks = rng.integers(0, 6, size=30)
    X, y = distinct[picks], picks % 2
    dense = unique_rows(X, y)
    stored = sparse.csr_array(X)
    with_zeros = sparse.csr_array((np.r_[stored.data, 0.0], np.r_[stored.indices, 0],
                                   np.r_[stored.indptr[:-1], stored.indptr[-1] + 1]),
                                  shape=X.shape)  # an explicit zero stored in the last row
    for matrix in (stored, with_zeros):
        groups = unique_rows(matrix, y)
        # the same distinct rows in the same order, with the same weights
        np.testing.assert_array_equal(groups.inverse, dense.inverse)
        np.testing.assert_array_equal(groups.first, dense.first)
        np.testing.assert_array_equal(groups.weights, dense.weights)


@pytest.mark.parametrize("scale", [1.0, 1e300, 1e-300])
def test_copies_are_found_as_sorting_the_rows_finds_them(scale):
    """The O(n)-memory check of duplicate rows (random projection, then exact comparison)
    against np.unique of the whole table, with features that overflow the projection too."""
    from robustkernel.subquantile._fit.unique_rows import unique_rows

    rng = np.random.default_rng(7)
    for trial in range(30):
        n = int(rng.integers(2, 40))
        X = rng.integers(-2, 3, size=(n, 2)) * scale  # small integers: copies are common
        y = rng.integers(0, 2, size=n).astype(float)
        if trial % 3 == 0:
            X = rng.normal(size=(n, 2)) * scale  # no copies
        table = np.column_stack([X, y])
        expected = np.unique(table, axis=0).shape[0] < n
        assert unique_rows(X, y).has_copies == expected
