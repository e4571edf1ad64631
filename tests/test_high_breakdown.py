"""kernel="auto": the kernel LTS start, the adaptive cutoff and the kernel choice.

Checked against independent computations: brute-force refits for the leave-one-out and
leave-group-out residuals, the augmented fit's leverage by a finite difference, exact counts
for the Gervini-Yohai cutoff, and ordinary least squares on the clean rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics.pairwise import rbf_kernel

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.subquantile._high_breakdown import (
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


def _hawkins_like(seed: int = 0):
    """75 rows in 3 dimensions: 10 bad leverage points (far in x, off the plane) and 4 good
    leverage points (far in x, on the plane), as in Hawkins, Bradu & Kass (1984)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 3.5, size=(75, 3))
    y = X @ np.array([0.2, 0.1, -0.1]) + 0.5 * rng.normal(size=75)
    X[:10] = np.array([10.0, 20.0, 30.0]) + rng.normal(scale=1.0, size=(10, 3))
    y[:10] = 10.0 + rng.normal(scale=0.5, size=10)
    X[10:14] = np.array([11.0, 21.0, 31.0]) + rng.normal(scale=1.0, size=(4, 3))
    y[10:14] = X[10:14] @ np.array([0.2, 0.1, -0.1]) + 0.5 * rng.normal(size=4)
    return X, y


def test_auto_kernel_model_is_the_ridge_fit_on_the_rows_it_keeps():
    # the final model is fitted on the start's kept rows, which stay fixed (no solver moves
    # them): with the linear kernel it is scikit-learn's Ridge on those rows at alpha_
    X, y = _hawkins_like()
    model = SubquantileKernelRegressor(kernel="auto").fit(X, y)
    assert model.kernel_ == "linear"
    kept = model.inlier_mask_
    ridge = Ridge(alpha=model.alpha_).fit(X[kept], y[kept])
    np.testing.assert_allclose(model.predict(X), ridge.predict(X), rtol=1e-6, atol=1e-8)


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
        (lambda: SubquantileKernelRegressor(kernel="auto", link="softplus"), "identity link"),
        (lambda: SubquantileKernelRegressor(kernel="auto", n_components=10), "n_components"),
    ],
)
def test_auto_kernel_refuses_what_it_does_not_cover(make, message):
    X, y = _hawkins_like()
    target = (y > np.median(y)).astype(int) if "Classifier" in repr(make()) else np.abs(y)
    with pytest.raises(ValueError, match=message):
        make().fit(X, target)


def test_auto_kernel_refuses_features_whose_kernel_overflows():
    X, y = _hawkins_like()
    with pytest.raises(ValueError, match="Scale the features"):
        SubquantileKernelRegressor(kernel="auto").fit(X * 1e300, y)


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
    ridge = Ridge(alpha=model.alpha_).fit(X[kept], y[kept])
    np.testing.assert_allclose(model.predict(X), ridge.predict(X), rtol=1e-6, atol=1e-8)
