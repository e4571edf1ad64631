"""kernel="auto": the kernel LTS start, the adaptive cutoff and the kernel choice.

Checked against independent computations: brute-force refits for the leave-one-out and
leave-group-out residuals, the augmented fit's leverage by a finite difference, exact counts
for the Gervini-Yohai cutoff, and ordinary least squares on the clean rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import sparse
from scipy.stats import chi2
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics.pairwise import rbf_kernel

from conftest import hawkins_like as _hawkins_like
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.subquantile._automatic.high_breakdown import (
    adaptive_flags,
    batched_ridge,
    kernel_lts,
    ridge_on_rows,
)


def _krr(K, y, rows, alpha):
    """Kernel ridge with an unpenalized intercept on ``rows``, by the bordered system."""
    k = rows.size
    system = np.zeros((k + 1, k + 1))
    system[:k, :k] = K[np.ix_(rows, rows)] + alpha * np.eye(k)
    system[:k, k] = system[k, :k] = 1.0
    solution = np.linalg.solve(system, np.append(y[rows], 0.0))
    return lambda index: K[np.ix_(index, rows)] @ solution[:k] + solution[k]


@pytest.fixture
def kernel_problem():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    K = rbf_kernel(X, gamma=0.5)
    kept = np.ones(40, dtype=bool)
    kept[rng.choice(40, 12, replace=False)] = False
    return K, y, kept


def test_leave_group_out_of_a_large_tight_cluster_equals_the_refit():
    # 120 near-copies of one point among 200 rows (a tight cluster of bad leverage rows, sd
    # 1e-3): their joint deletion takes the pseudo-inverse of a nearly singular 120 x 120 block
    # of the inverse (now by eigh: LAPACK's SVD failed to converge on a 311-row block of
    # bench_masking's 20,000-row data, which this small case does not reproduce). Every
    # cluster row's loss is its residual under the fit on the other 80 rows
    rng = np.random.RandomState(3)
    X = np.vstack([rng.normal(size=(80, 2)), [4.0, 4.0] + 1e-3 * rng.normal(size=(120, 2))])
    y = np.r_[np.sin(X[:80, 0]), np.full(120, 5.0)]
    K = rbf_kernel(X, gamma=0.5)
    kept = np.ones(200, dtype=bool)
    group = np.arange(80, 200)
    fit = ridge_on_rows(K, y[:, None], kept, 0.1, True, [group])
    predict = _krr(K, y, np.arange(80), 0.1)
    np.testing.assert_allclose(fit.losses[group], (y[group] - predict(group)) ** 2, rtol=1e-6)


def test_honest_residuals_equal_brute_force_refits(kernel_problem):
    K, y, kept = kernel_problem
    alpha = 0.3
    group = np.flatnonzero(kept)[:3]
    fit = ridge_on_rows(K, y[:, None], kept, alpha, True, [group], studentized=True)
    rows = np.flatnonzero(kept)
    for i in rows:
        others = rows[rows != i] if i not in group else np.setdiff1d(rows, group)
        expected = y[i] - _krr(K, y, others, alpha)(np.array([i]))[0]
        assert fit.losses[i] == pytest.approx(expected**2, rel=1e-8)
    outside = np.flatnonzero(~kept)
    predict = _krr(K, y, rows, alpha)
    np.testing.assert_allclose(fit.losses[outside], (y[outside] - predict(outside)) ** 2)
    assert fit.score == pytest.approx(fit.losses[rows].mean())
    # a row outside the fit, studentized: its squared residual times 1 - h_jj, h_jj its
    # leverage had it been added (a finite difference of the augmented fit in y_j)
    j = outside[0]
    augmented = np.append(rows, j)
    shifted = y.copy()
    shifted[j] += 1.0
    leverage = (
        _krr(K, shifted, augmented, alpha)(np.array([j]))[0]
        - _krr(K, y, augmented, alpha)(np.array([j]))[0]
    )
    assert fit.studentized[j] == pytest.approx(fit.losses[j] * (1.0 - leverage), rel=1e-7)


def test_batched_fits_equal_one_at_a_time(kernel_problem):
    K, y, _ = kernel_problem
    sets = np.array([[0, 3, 5, 7], [1, 2, 8, 30], [4, 9, 10, 39]])
    batched = batched_ridge(K, y[:, None], sets, 0.2, True)
    for row, chosen in enumerate(sets):
        mask = np.zeros(40, dtype=bool)
        mask[chosen] = True
        single = ridge_on_rows(K, y[:, None], mask, 0.2, True)
        np.testing.assert_allclose(batched[row], single.losses)


def test_adaptive_cutoff_flags_only_the_excess_over_the_normal_tail():
    n = 2000
    clean = chi2.ppf((np.arange(n) + 0.5) / n, df=1)  # squared normal residuals, exactly
    assert not adaptive_flags(clean, 1.0, 1).any()
    gross = clean.copy()
    gross[:40] = 100.0**2  # 2% of the rows 100 sigma away
    flags = adaptive_flags(gross, 1.0, 1)
    assert np.flatnonzero(flags).tolist() == list(range(40))
    # on random Gaussian residuals almost nothing is flagged (full efficiency)
    rng = np.random.RandomState(1)
    shares = [adaptive_flags(rng.normal(size=n) ** 2, 1.0, 1).mean() for _ in range(20)]
    assert np.mean(shares) < 0.005


def test_adaptive_cutoff_flags_every_one_of_a_few_rows_far_out():
    # n d_n for k rows 4.5 to 6 sigma out is k less a sliver (the normal tail beyond them):
    # all k are flagged, not k - 1 (starsCYG's four giants)
    clean = chi2.ppf((np.arange(43) + 0.5) / 47, df=1)  # the normal's lower 43 of 47 rows
    far = np.array([4.5, 5.0, 5.5, 6.0]) ** 2
    flags = adaptive_flags(np.concatenate([clean, far]), 1.0, 1)
    assert np.flatnonzero(flags).tolist() == [43, 44, 45, 46]


def _robust_units(X, rows):
    """X in units of each column's spread on ``rows``: (x - median) / (1.4826 MAD)."""
    centre = np.median(rows, axis=0)
    return (X - centre) / (1.4826 * np.median(np.abs(rows - centre), axis=0))


def test_auto_kernel_model_is_the_ridge_fit_on_the_rows_it_keeps():
    # the final model is fitted on the start's kept rows, which stay fixed (no solver moves
    # them), every column in units of its spread: with the linear kernel it is scikit-learn's
    # Ridge on those rows at alpha_, the columns as (x - median) / (1.4826 MAD)
    X, y = _hawkins_like()
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert model.kernel_ == "linear"
    kept = model.inlier_mask_
    Z = _robust_units(X, X)
    ridge = Ridge(alpha=model.alpha_).fit(Z[kept], y[kept])
    np.testing.assert_allclose(model.predict(X), ridge.predict(Z), rtol=1e-6, atol=1e-8)


def test_kernel_lts_keeps_no_bad_leverage_point():
    X, y = _hawkins_like()
    K = X @ X.T
    fit = kernel_lts(
        K, y[:, None], 40, 1e-6 * np.trace(K) / 75, True, [], 5, np.random.RandomState(0)
    )
    assert fit.kept.sum() == 40
    assert not fit.kept[:10].any()


def test_auto_kernel_finds_masked_bad_leverage_points_and_keeps_the_good_ones():
    X, y = _hawkins_like()
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert model.kernel_ == "linear"
    assert not model.inlier_mask_[:10].any()
    assert model.inlier_mask_[10:14].all()
    assert model.inlier_mask_.mean() >= 0.84
    # the fit is close to the clean rows' least squares (well within the noise, sd 0.5; the
    # adaptive cutoff may drop a clean row near 3 sigma, and alpha shrinks a little)
    clean = LinearRegression().fit(X[10:], y[10:])
    assert np.abs(model.predict(X[10:]) - clean.predict(X[10:])).max() < 0.2
    # the ordinary fit is dragged by the group
    ordinary = LinearRegression().fit(X, y)
    assert np.abs(ordinary.predict(X[10:]) - clean.predict(X[10:])).max() > 1.0


def test_auto_kernel_chooses_a_flexible_kernel_for_a_curved_bulk():
    rng = np.random.RandomState(0)
    X = rng.uniform(-3, 3, size=(150, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=150)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert model.kernel_ == "rbf"
    assert model.inlier_mask_.mean() >= 0.95
    assert np.sqrt(np.mean((model.predict(X) - np.sin(2 * X[:, 0])) ** 2)) < 0.1


def test_auto_kernel_keeps_clean_gaussian_rows():
    rng = np.random.RandomState(3)
    X = rng.normal(size=(300, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=300)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert model.inlier_mask_.mean() >= 0.98
    assert model.kernel_ == "linear"


def test_auto_kernel_is_reproducible_without_a_random_state():
    X, y = _hawkins_like(1)
    first = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    second = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    np.testing.assert_array_equal(first.inlier_mask_, second.inlier_mask_)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: SubquantileKernelClassifier(kernel="auto"), "regression"),
        (lambda: SubquantileKernelRegressor(kernel="auto", device="cpu"), "device"),
        (lambda: SubquantileKernelRegressor(solver="nesterov"), "solver='nesterov'"),
        (lambda: SubquantileKernelRegressor(n_init=5, radius=2.0), "n_init=5, radius=2.0"),
        (lambda: SubquantileKernelRegressor(refine="biweight"), "refine='biweight'"),
        (lambda: SubquantileKernelRegressor(init="zeros"), "kernel=\"rbf\""),
        # the regressor's kernel="auto" with approximation="rff" is the rbf kernel
        # (test_default_kernel.py); the classifier's is still refused
        (
            lambda: SubquantileKernelClassifier(kernel="auto", approximation="rff"),
            "regression",
        ),
    ],
)
def test_auto_kernel_refuses_what_it_does_not_cover(make, message):
    X, y = _hawkins_like()
    target = (y > np.median(y)).astype(int) if "Classifier" in repr(make()) else np.abs(y)
    with pytest.raises(ValueError, match=message):
        make().fit(X, target)


def test_auto_kernel_refuses_features_whose_kernel_overflows():
    # features of 1e300 fit (in units of each column's spread: see the scale tests); a row
    # 1e200 spreads away still overflows the linear kernel
    X, y = _hawkins_like()
    X[0] = 1e200
    with pytest.raises(ValueError, match="Scale the features"):
        SubquantileKernelRegressor(kernel="auto").fit(X, y)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_auto_kernel_fits_a_handful_of_rows(n):
    rng = np.random.RandomState(n)
    X, y = rng.normal(size=(n, 2)), rng.normal(size=n)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert np.isfinite(model.predict(X)).all()
    assert model.inlier_mask_.sum() >= 1


def test_auto_kernel_flags_the_same_rows_at_any_target_magnitude():
    X, y = _hawkins_like()
    small = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    huge = SubquantileKernelRegressor(kernel="auto").fit(X, y * 2.0**600)
    np.testing.assert_array_equal(small.inlier_mask_, huge.inlier_mask_)
    assert np.isfinite(huge.predict(X)).all()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_auto_kernel_names_non_finite_input(bad):
    X, y = _hawkins_like()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="X"):
        SubquantileKernelRegressor(kernel="auto").fit(X, y)


def _cluster_of_bad_leverage(fraction: float, target: str, seed: int, n: int = 300):
    """Uniform rows on [-2, 2]^2 with noise sd 0.2 on a linear or sine target; ``fraction`` of
    the rows moved to a tight cluster at (5, 5) (jitter 0.01) with the target -6."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2, 2, (n, 2))
    truth = {
        "linear": lambda Z: 1.5 * Z[:, 0] - Z[:, 1],
        "sine": lambda Z: np.sin(2 * Z[:, 0]) + Z[:, 1],
    }[target]
    y = truth(X) + 0.2 * rng.normal(size=n)
    bad = np.zeros(n, dtype=bool)
    bad[rng.choice(n, int(fraction * n), replace=False)] = True
    X[bad] = np.array([5.0, 5.0]) + 0.01 * rng.normal(size=(bad.sum(), 2))
    y[bad] = -6.0 + 0.2 * rng.normal(size=bad.sum())
    return X, y, bad, truth


def _oracle(X, y):
    """Kernel ridge (rbf) with 5-fold GridSearchCV over the automatic fit's grids."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    gammas = np.array([0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]) / X.shape[1]
    grid = {"alpha": np.logspace(-4, 1, 11), "gamma": gammas}
    return GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5).fit(X, y)


@pytest.mark.parametrize("fraction", [0.3, 0.45])
def test_auto_kernel_flags_a_masking_cluster_of_bad_leverage_points(fraction):
    _assert_cluster_flagged_and_fit_efficient(fraction, "linear", seed=0)


@pytest.mark.slow
def test_auto_kernel_keeps_clean_rows_with_the_efficiency_of_kernel_ridge():
    rng = np.random.RandomState(0)

    def truth(Z):
        return np.sin(2 * Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.5 * Z[:, 3] ** 2

    X, X_test = rng.uniform(-2, 2, (500, 4)), rng.uniform(-2, 2, (1000, 4))
    y = truth(X) + 0.3 * rng.normal(size=500)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert model.inlier_mask_.mean() >= 0.98
    error = np.sqrt(np.mean((model.predict(X_test) - truth(X_test)) ** 2))
    oracle = _oracle(X, y)
    assert error <= 1.02 * np.sqrt(np.mean((oracle.predict(X_test) - truth(X_test)) ** 2))


def _assert_cluster_flagged_and_fit_efficient(fraction, target, seed):
    X, y, bad, truth = _cluster_of_bad_leverage(fraction, target, seed=seed)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    flagged = ~model.inlier_mask_
    assert flagged[bad].mean() >= 0.95
    assert flagged[~bad].mean() <= 0.02
    X_test = np.random.RandomState(9).uniform(-2, 2, (500, 2))
    error = np.sqrt(np.mean((model.predict(X_test) - truth(X_test)) ** 2))
    oracle = _oracle(X[~bad], y[~bad])
    assert error <= 1.10 * np.sqrt(np.mean((oracle.predict(X_test) - truth(X_test)) ** 2))


@pytest.mark.slow
def test_auto_kernel_flags_a_masking_cluster_on_a_curved_target():
    # seeds 0-4 of this generator at 30%: all flagged, none clean, 0.93-1.06x the oracle
    _assert_cluster_flagged_and_fit_efficient(0.3, "sine", seed=0)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="issue 31, open: at 45% on a sine the rbf start can keep the far cluster; seeds "
    "0-4 of this generator: all flagged in 4 of 5, but 1.17x and 1.18x the oracle in two of "
    "them; seed 3 flags none (2.6x)",
)
def test_auto_kernel_flags_a_45_percent_masking_cluster_on_a_curved_target():
    _assert_cluster_flagged_and_fit_efficient(0.45, "sine", seed=3)


def test_auto_kernel_with_a_given_epsilon_keeps_that_share_of_the_best_explained_rows():
    # a given epsilon: the ceil((1 - eps) n) rows of smallest standardized residual under the
    # start's fit, the bad leverage points among the rows left out; ridge on the rows kept
    X, y = _hawkins_like()
    model = SubquantileKernelRegressor(kernel="auto", epsilon=0.2).fit(X, y)
    assert model.inlier_mask_.sum() == 60
    assert not model.inlier_mask_[:10].any()
    kept = model.inlier_mask_
    Z = _robust_units(X, X)
    ridge = Ridge(alpha=model.alpha_).fit(Z[kept], y[kept])
    np.testing.assert_allclose(model.predict(X), ridge.predict(Z), rtol=1e-6, atol=1e-8)


# -- coef0, feature units and constant targets (red-team findings) ------------------------------


def _quadratic_truth(Z):
    return Z[:, 0] ** 2 + 2.0 * Z[:, 0] + Z[:, 1]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("coef0", [1.0, 5.0, -3.0])
def test_auto_kernel_poly_predicts_with_the_coef0_it_fitted(coef0, weighted):
    # a noise-free quadratic: the degree-2 polynomial kernel holds it, so predictions far
    # outside the training range equal the quadratic itself, whatever the estimator's coef0
    # (the polynomial of kernel="auto" is fitted with coef0 1, reported as coef0_; predict
    # used the given coef0: 75 instead of 35 at (5, 0) with coef0=5)
    rng = np.random.RandomState(0)
    X = rng.uniform(-2, 2, (80, 2))
    weights = np.where(np.arange(80) < 40, 2.0, 1.0) if weighted else None
    model = SubquantileKernelRegressor(kernel="auto", coef0=coef0).fit(
        X, _quadratic_truth(X), sample_weight=weights
    )
    assert model.inlier_mask_.all()
    far = np.array([[5.0, 0.0], [-4.0, 3.0], [0.0, 6.0], [6.0, -6.0]])
    np.testing.assert_allclose(model.predict(far), _quadratic_truth(far), rtol=1e-4, atol=1e-4)
    assert (model.kernel_, model.degree_, model.coef0_) == ("poly", 2, 1.0)


def _query_rows(X, seed=5, n=50):
    """Rows drawn uniformly in the bounding box of X (some beyond it)."""
    rng = np.random.RandomState(seed)
    low, high = X.min(axis=0), X.max(axis=0)
    return low + rng.uniform(-0.1, 1.1, (n, X.shape[1])) * (high - low)


@pytest.mark.parametrize("scale", [1e3, 1e-3, 1e-80, 1e-150, 1e150, 1e300])
def test_auto_kernel_is_the_same_at_any_scale_of_the_features(scale):
    # every column times one factor: the same flags and the same function (at 1e-80 the
    # start's linear fits overflowed, with a RuntimeWarning, and nothing was flagged; 1e150
    # was refused; the linear kernel's absolute alpha grid moved the model at 1e3 and 1e-3)
    X, y = _hawkins_like()
    X_test = _query_rows(X[14:])  # the clean bulk's box
    unit = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert not unit.inlier_mask_[:10].any()  # the bad leverage points
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = SubquantileKernelRegressor(kernel="auto").fit(X * scale, y)
        predictions = model.predict(X_test * scale)
    assert model.kernel_ == unit.kernel_
    np.testing.assert_array_equal(model.inlier_mask_, unit.inlier_mask_)
    np.testing.assert_allclose(predictions, unit.predict(X_test), rtol=1e-6, atol=1e-9)
    clean = LinearRegression().fit(X[10:], y[10:])
    assert np.abs(predictions - clean.predict(X_test)).max() < 0.25


def _curved_with_outliers(n=200, seed=0):
    """y = sin(x1) + x2^2 / 2 + noise (sd 0.1) on normal rows of 3 columns, 10% of the rows
    moved 3 to 6 up or down."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 3))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 / 2 + 0.1 * rng.normal(size=n)
    bad = np.zeros(n, dtype=bool)
    bad[rng.choice(n, n // 10, replace=False)] = True
    y[bad] += rng.choice([-1.0, 1.0], bad.sum()) * rng.uniform(3, 6, bad.sum())
    return X, y, bad


def _curved_truth(Z):
    return np.sin(Z[:, 0]) + Z[:, 1] ** 2 / 2


@pytest.mark.parametrize("units", [[1e3, 1.0, 1.0], [1.0, 1e-3, 1.0], [1e3, 1e-3, 7.0]])
@pytest.mark.parametrize("data", ["hawkins", "curved"])
def test_auto_kernel_does_not_depend_on_the_units_of_a_column(data, units):
    # one column in other units: the same flags and the same function (the rbf and
    # polynomial kernels are isotropic: a sine with one column in units of 1e3 had 30 of
    # 270 clean rows flagged and 12x the test error)
    units = np.asarray(units)
    if data == "hawkins":
        X, y = _hawkins_like()
        bad = np.arange(75) < 10
        truth = LinearRegression().fit(X[10:], y[10:]).predict
        tolerance = 0.25  # the noise's sd: 0.5
        X_test = _query_rows(X[14:])  # the clean bulk's box
    else:
        X, y, bad = _curved_with_outliers()
        truth, tolerance = _curved_truth, 0.3  # the noise's sd: 0.1
        X_test = _query_rows(X)
    unit = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    model = SubquantileKernelRegressor(kernel="auto").fit(X * units, y)
    # the curve: the cubic (20 monomials, 200 rows), which a sine and a square fit closely
    expected = ("linear", None) if data == "hawkins" else ("poly", 3)
    assert model.kernel_ == unit.kernel_ == expected[0]
    assert expected[1] is None or model.degree_ == unit.degree_ == expected[1]
    np.testing.assert_array_equal(model.inlier_mask_, unit.inlier_mask_)
    assert not model.inlier_mask_[bad].any()
    assert model.inlier_mask_[~bad].mean() >= 0.95
    predictions = model.predict(X_test * units)
    np.testing.assert_allclose(predictions, unit.predict(X_test), rtol=1e-6, atol=1e-9)
    inside = np.all((X_test >= X.min(axis=0)) & (X_test <= X.max(axis=0)), axis=1)
    error = np.sqrt(np.mean((predictions[inside] - truth(X_test[inside])) ** 2))
    assert error < tolerance


def test_auto_kernel_scales_and_centres_sparse_columns_as_dense_ones():
    # sparse X takes the dense form's centre and scale (and stays sparse): the fit equals the
    # dense one, at any units
    X, y = _hawkins_like()
    units = np.array([1e3, 1e-3, 7.0])
    dense = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    model = SubquantileKernelRegressor(kernel="auto").fit(sparse.csr_matrix(X * units), y)
    assert sparse.issparse(model.X_fit_)
    np.testing.assert_allclose(model.feature_center_, np.median(X * units, axis=0), rtol=1e-15)
    np.testing.assert_allclose(model.feature_scale_, dense.feature_scale_ * units, rtol=1e-12)
    np.testing.assert_array_equal(model.inlier_mask_, dense.inlier_mask_)
    X_test = _query_rows(X)
    predictions = model.predict(sparse.csr_matrix(X_test * units))
    np.testing.assert_allclose(predictions, dense.predict(X_test), rtol=1e-6, atol=1e-9)


def _constant_target_rows(kind, seed):
    rng = np.random.RandomState(seed)
    return {
        "normal 1": lambda: rng.normal(size=(40, 1)),
        "normal 3": lambda: rng.normal(size=(40, 3)),
        "uniform 1": lambda: rng.uniform(0, 1, (40, 1)),
        "uniform 3": lambda: rng.uniform(-2, 2, (40, 3)),
        "grid 1": lambda: np.arange(40.0)[:, None],
        "grid 3": lambda: np.c_[np.arange(40.0), np.arange(40.0) % 7, np.arange(40.0) % 3],
    }[kind]()


@pytest.mark.parametrize("value", [3.0, -1e5])
@pytest.mark.parametrize(
    "kind, seed",
    [
        ("normal 1", 1),
        ("normal 1", 4),
        ("normal 3", 2),
        ("uniform 1", 0),
        ("uniform 3", 3),
        ("grid 1", 0),
        ("grid 3", 0),
    ],
)
def test_auto_kernel_flags_nothing_on_a_constant_target(kind, seed, value):
    # residuals of a constant target are rounding, and so is their scale: the cutoff flagged
    # up to 19 of 40 rows at squared residuals below 1e-20
    X = _constant_target_rows(kind, seed)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, np.full(40, value))
    assert model.inlier_mask_.all()
    np.testing.assert_allclose(model.predict(X), value, rtol=1e-9)
    np.testing.assert_allclose(model.predict(_query_rows(X)), value, rtol=1e-9)


def test_auto_kernel_column_units_count_a_weight_as_copies_and_fall_back():
    # the centre and scale of each column: the median, and the larger of 1.4826 MAD and
    # IQR / 1.349 of the rows, a row of integer weight w counting w times (weight 0: left
    # out); where that is under 1/20 of the 5-95% quantile range over 3.29 (the middle half
    # nearly one value), that range over 3.29; where all are 0 the standard deviation (a
    # column mostly 0), where that is 0 too, 1 (a constant column); a column of 60% zeros and
    # jitter: the IQR, not the tiny MAD; 85% jitter and 15% far values: the wide range; and
    # where the middle half is one value, at least the column's range over 4
    rng = np.random.RandomState(2)
    X = np.c_[
        rng.normal(3.0, 2.0, 60),
        (rng.uniform(size=60) < 0.2).astype(float),
        np.full(60, 4.0),
        np.where(rng.uniform(size=60) < 0.6, 1e-3 * rng.normal(size=60), 1.0),
        np.where(np.arange(60) < 51, 1e-3 * rng.normal(size=60), rng.normal(5.0, 1.0, 60)),
        (np.arange(60) == 7).astype(float),
    ]
    y = X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=60)
    weights = rng.randint(0, 4, 60)
    weights[7] = 1
    repeated = np.repeat(X, weights, axis=0)
    centre = np.median(repeated, axis=0)
    mad = 1.4826 * np.median(np.abs(repeated - centre), axis=0)
    quartiles = np.subtract(*np.quantile(repeated, [0.75, 0.25], axis=0)) / 1.349
    wide = np.subtract(*np.quantile(repeated, [0.95, 0.05], axis=0)) / 3.29
    scale = np.maximum(mad, quartiles)
    assert scale[0] > 0 and scale[1] == scale[2] == scale[5] == 0
    assert quartiles[3] > 100 * mad[3] and scale[3] > wide[3] / 20
    assert 0 < scale[4] < wide[4] / 20 and wide[1] > 0 and wide[5] == 0
    scale[1], scale[2], scale[4], scale[5] = wide[1], 1.0, wide[4], np.std(repeated[:, 5])
    # a column whose middle half is one value spans at most 4 units: its range over 4
    for column in (1, 4, 5):
        scale[column] = max(scale[column], np.ptp(repeated[:, column]) / 4.0)
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y, sample_weight=weights)
    np.testing.assert_allclose(model.feature_center_, centre, rtol=1e-12)
    np.testing.assert_allclose(model.feature_scale_, scale, rtol=1e-12)
    assert np.isfinite(model.predict(X)).all()


def test_rows_of_tiny_magnitude_give_finite_studentized_losses_without_warnings():
    # hypothesis found it (the meta-regressor's start on four rows of 1e-76): the leverage of
    # an added row squared its intercept term into overflow, and inf x 0 warned
    from sklearn.linear_model import Ridge

    from robustkernel import SubquantileRegressor

    X = np.array([[1.25730221e-76], [-1.32104863e-76], [6.40422650e-76], [1.04900117e-76]])
    y = np.array([0.07183229, -0.09556145, 0.7279344, 0.19941593])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=RuntimeWarning, module=r"robustkernel\.")
        model = SubquantileRegressor(Ridge(alpha=1.0), n_folds=3).fit(X, y)
    assert np.all(np.isfinite(model.predict(X)))


def test_the_cubic_family_needs_ten_rows_per_monomial():
    from robustkernel.subquantile._automatic.high_breakdown import families

    # monomials of degree <= 3 in p columns: 4 for one column, 84 for six
    assert "cubic" in families(40, 1) and "cubic" not in families(39, 1)
    assert "cubic" in families(840, 6) and "cubic" not in families(839, 6)
    assert families(39, 1) == ("linear", "poly", "rbf")
