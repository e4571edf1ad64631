"""The second stage of the automatic regression fit (kernel="auto"): flagged rows given back
where plausible, every row's p-value and evidence, and a given epsilon obeyed."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import hawkins_like
from robustkernel import SubquantileKernelRegressor
from robustkernel.subquantile._automatic.second_stage import (
    EVIDENCE_COLUMNS,
    FLAG_LEVEL,
    UNUSUAL_X,
    Reference,
    fit_reference,
    judge,
    local_variance,
    reachable,
    x_distance,
)


def test_fit_reference_recovers_the_normal_and_a_heavy_tail():
    rng = np.random.default_rng(0)
    normal = fit_reference(rng.normal(scale=1.0, size=4000))
    assert np.isinf(normal.dof) and abs(normal.scale - 1.0) < 0.05
    heavy = fit_reference(rng.standard_t(3, size=4000))
    assert heavy.dof <= 5
    # gross outliers beyond the truncation do not move it
    z = np.concatenate([rng.normal(size=2000), np.full(600, 40.0)])
    contaminated = fit_reference(z)
    assert np.isinf(contaminated.dof) and abs(contaminated.scale - 1.0) < 0.06


def test_reference_pvalues_are_the_two_sided_tail():
    z = np.array([0.0, 1.96, -2.5, np.inf])
    np.testing.assert_allclose(
        Reference(np.inf, 1.0).pvalues(z), [1.0, 0.04999579, 0.01241933, 0.0], rtol=1e-6
    )
    np.testing.assert_allclose(
        Reference(3.0, 2.0).pvalues(np.array([4.0])), 2 * stats.t(3).sf(2.0), rtol=1e-12
    )


def test_local_variance_follows_a_spread_that_grows_and_stays_flat_on_a_constant_one():
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 1, size=2000))[:, None]
    kept = np.ones(x.shape[0], dtype=bool)
    growing = (1.0 + 3.0 * x[:, 0]) ** 2 * rng.chisquare(1, size=x.shape[0])
    factors = local_variance(x, growing / np.median(growing), kept).factors
    # the ratio of the ends' variances: (4 / 1)^2 = 16 (the clip at 3 sigma lowers it)
    assert factors[-100:].mean() / factors[:100].mean() > 6
    flat = local_variance(x, rng.chisquare(1, size=x.shape[0]), kept)
    assert np.abs(flat.factors - 1.0).max() < 0.25 and flat.explained < 0.01


@pytest.mark.xfail(
    strict=True,
    reason="issue 73 / SPEC 1.5: the second stage's scale (every row's median) and reference "
    "(every row within TRUNCATION) still move with the rows under judgement; the candidates "
    "that fix it (benchmarks/candidates/) lose heavy tails and a steep real table "
    "(BENCHMARKS.md, 'Candidates: the kept rows as the second stage's yardstick')",
)
@pytest.mark.parametrize("moved", [0.3, 0.45])
def test_the_judged_rows_do_not_move_the_yardstick(moved):
    """The rows under judgement (not kept) never set the scale or the reference that judges
    them: moving their honest residuals, however many, leaves every kept row's p-value and
    the reference as they were, and the reference is the one fitted to the kept rows alone
    (:func:`fit_reference`, an independent computation)."""
    rng = np.random.default_rng(2)
    n = 1000
    X = rng.normal(size=(n, 2))
    residuals = rng.normal(size=n)
    kept = np.ones(n, dtype=bool)
    kept[: int(moved * n)] = False
    fitted = X[:, :1]
    base = residuals.copy()
    base[~kept] = rng.uniform(2.0, 3.0, size=(~kept).sum())  # within the truncation
    shifted = base.copy()
    shifted[~kept] *= 1.5
    p_base, reference = judge(X, fitted, base**2, kept, honest=True)
    p_shifted, reference_shifted = judge(X, fitted, shifted**2, kept, honest=True)
    assert reference == reference_shifted
    np.testing.assert_allclose(p_base[kept], p_shifted[kept], rtol=1e-12)
    # the scale: the kept rows' median squared residual over the chi^2 median
    z = residuals[kept] / np.sqrt(np.median(residuals[kept] ** 2) / stats.chi2.ppf(0.5, df=1))
    alone = fit_reference(z)
    assert reference.dof == alone.dof and abs(reference.scale - alone.scale) < 0.05
    # the judged rows moved to 3 to 4.5 kept-row sds are implausible against it
    assert np.median(p_shifted[~kept]) < 0.01


def test_x_distance_is_in_units_of_the_kept_rows_spacing():
    # ten kept rows at 0, 1, ..., 9 and a flagged one at 30: the distance to the 5th nearest
    # other kept row, by brute force, over its median among the kept rows
    X = np.array([[float(i)] for i in range(10)] + [[30.0]])
    kept = np.arange(11) < 10
    expected = []
    for i in range(11):
        others = [abs(X[i, 0] - X[j, 0]) for j in range(10) if j != i]
        expected.append(sorted(others)[4])
    expected = np.array(expected)
    np.testing.assert_allclose(x_distance(X, kept), expected / np.median(expected[:10]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clean_gaussian_rows_get_calibrated_pvalues_and_almost_no_flags(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(600, 2))
    y = X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=600)
    model = SubquantileKernelRegressor().fit(X, y)
    p = model.outlier_pvalues_
    assert p.shape == (600,) and np.all((p >= 0) & (p <= 1))
    # binomial tolerance around the nominal shares (600 rows: sd 2.4 rows at 1%, 5.3 at 5%)
    assert (p < 0.01).sum() <= 6 + 3 * 2.4
    assert abs((p < 0.05).sum() - 30) <= 3 * 5.3
    assert (~model.inlier_mask_).mean() <= 0.01


def test_heavy_tails_are_not_flagged_as_outliers():
    """t(3) errors: the start's normal cutoff flags the tail; the second stage gives it back
    (at most twice FLAG_LEVEL flagged), while gross errors stay flagged."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(800, 2))
    y = X[:, 0] + 0.5 * X[:, 1] + rng.standard_t(3, size=800)
    bad = np.zeros(800, dtype=bool)
    bad[:40] = True
    y[bad] += 30.0
    model = SubquantileKernelRegressor().fit(X, y)
    assert not model.inlier_mask_[bad].any()
    assert (~model.inlier_mask_[~bad]).mean() <= 2 * FLAG_LEVEL


def test_heteroscedastic_rows_are_given_back():
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 4, size=(800, 1))
    y = 2.0 * X[:, 0] + (0.2 + X[:, 0]) * rng.normal(size=800)  # sd 0.2 to 4.2
    model = SubquantileKernelRegressor().fit(X, y)
    assert (~model.inlier_mask_).mean() <= 2 * FLAG_LEVEL


def test_evidence_of_bad_leverage_rows_says_unusual_x_and_the_residual_in_target_units():
    X, y = hawkins_like()
    model = SubquantileKernelRegressor().fit(X, 1000.0 * y)  # target units: thousands
    table = pd.DataFrame(model.outlier_evidence_)
    assert list(table.columns) == list(EVIDENCE_COLUMNS)
    np.testing.assert_array_equal(table["flagged"], ~model.inlier_mask_)
    assert table["flagged"][:10].all() and table["flagged"][10:].sum() <= 1
    assert (table["kind"][:10] == "unusual x").all()
    assert (table["kind"][10:][~table["flagged"][10:]] == "").all()
    # the residual of a flagged row is y less the plane's extrapolation (0.2 x1 + 0.1 x2 - 0.1 x3)
    plane = 1000.0 * (X[:10] @ np.array([0.2, 0.1, -0.1]))
    assert np.all(np.abs(table["residual"][:10] - (1000.0 * y[:10] - plane)) < 1500.0)
    np.testing.assert_allclose(table["fitted"] + table["residual"], 1000.0 * y, rtol=1e-9)
    assert np.all(table["pvalue"][:10] < 1e-6) and np.all(table["robust_z"][:10] > 5)


def test_a_wrong_target_among_ordinary_rows_is_wrong_y():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(200, 2))
    y = X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=200)
    y[7] += 6.0
    model = SubquantileKernelRegressor().fit(X, y)
    assert not model.inlier_mask_[7]
    assert model.outlier_evidence_["kind"][7] == "wrong y"
    assert model.outlier_pvalues_[7] < FLAG_LEVEL


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.2, 0.35])
def test_a_given_epsilon_is_obeyed_under_the_default_kernel(epsilon):
    X, y = hawkins_like()
    model = SubquantileKernelRegressor(epsilon=epsilon).fit(X, y)
    assert model.inlier_mask_.sum() == int(np.ceil((1.0 - epsilon) * y.size))
    np.testing.assert_array_equal(model.outlier_evidence_["flagged"], ~model.inlier_mask_)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 7])
def test_without_an_intercept_the_bad_leverage_rows_are_flagged(seed):
    """The model through the origin (the truth is): X scaled, not centred. ltsReg(intercept =
    FALSE) flags the cluster in the same 7 of 8 seeds (seed 6: rows 11-14 and 72)."""
    X, y = hawkins_like(seed)
    model = SubquantileKernelRegressor(fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(model.feature_center_, 0.0)
    assert not model.inlier_mask_[:10].any() and model.inlier_mask_[10:].mean() >= 0.98


# the start keeps the cluster and flags the good leverage rows on these seeds, as R's ltsReg and
# lmrob (with an intercept) do on the same rows: a plane through the bulk and the cluster
# there fits better than the true one (benchmarks/bench_hawkins_seeds.py: the defaults, ltsReg
# and lmrob are each right on the same 4 of 8 seeds, 0, 3, 5 and 7)
OPEN_SEEDS = {1, 2, 4, 6}


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(seed, marks=pytest.mark.xfail(reason="ltsReg / lmrob fail too", strict=True))
        if seed in OPEN_SEEDS
        else seed
        for seed in range(8)
    ],
)
def test_hawkins_like_seeds_flag_the_cluster_and_predict_the_plane(seed):
    X, y = hawkins_like(seed)
    model = SubquantileKernelRegressor().fit(X, y)
    assert not model.inlier_mask_[:10].any()
    assert model.inlier_mask_[10:].mean() >= 0.95
    rng = np.random.default_rng(100 + seed)
    X_test = rng.uniform(0, 3.5, size=(200, 3))
    truth = X_test @ np.array([0.2, 0.1, -0.1])
    assert np.sqrt(np.mean((model.predict(X_test) - truth) ** 2)) < 0.3  # noise sd 0.5


def test_beyond_the_exact_route_every_row_gets_evidence():
    """2100 rows: the start runs on a sample and the second stage judges every row once."""
    rng = np.random.default_rng(6)
    n = 2100
    X = rng.uniform(-2, 2, size=(n, 2))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    y[:100] += rng.choice([-1.0, 1.0], size=100) * rng.uniform(3.0, 6.0, size=100)
    model = SubquantileKernelRegressor().fit(X, y)
    table = pd.DataFrame(model.outlier_evidence_)
    assert table.shape == (n, len(EVIDENCE_COLUMNS))
    np.testing.assert_array_equal(table["flagged"], ~model.inlier_mask_)
    assert table["flagged"][:100].mean() >= 0.95 and table["flagged"][100:].mean() <= 0.01
    assert (table["kind"][:100][table["flagged"][:100]] == "wrong y").all()
    np.testing.assert_allclose(table["fitted"] + table["residual"], y, rtol=1e-9, atol=1e-9)
    assert (model.outlier_pvalues_[100:] < 0.05).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n)


@pytest.mark.parametrize(
    "case", ["targets 1e150", "targets 1e-150", "features 1e150", "constant target", "4 rows"]
)
def test_the_evidence_stays_finite_on_hostile_tables(case):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=60)
    y[:5] += 3.0
    X, y = {
        "targets 1e150": (X, y * 1e150),
        "targets 1e-150": (X, y * 1e-150),
        "features 1e150": (X * 1e150, y),
        "constant target": (X, np.ones(60)),
        "4 rows": (X[:4], y[:4]),
    }[case]
    model = SubquantileKernelRegressor().fit(X, y)
    table = model.outlier_evidence_
    assert np.all((model.outlier_pvalues_ >= 0) & (model.outlier_pvalues_ <= 1))
    for name in ("residual", "fitted", "robust_z", "x_distance"):
        assert np.all(np.isfinite(table[name])), name
    np.testing.assert_allclose(table["fitted"] + table["residual"], y, rtol=1e-9, atol=0)
    if case.startswith(("targets", "features")):
        np.testing.assert_array_equal(np.flatnonzero(table["flagged"]), np.arange(5))


def test_held_out_residuals_are_kernel_ridge_fitted_on_the_other_folds_chosen_rows():
    """A linear truth with uniform noise (which never reaches the cutoff) and one gross error
    in the third fold: each fold's residuals are those of scikit-learn's KernelRidge fitted on
    the other folds' rows less the gross error, which the fold's own choice drops although
    every row is given as kept."""
    from sklearn.kernel_ridge import KernelRidge

    from robustkernel.subquantile._automatic.high_breakdown import Family, held_out_residuals

    rng = np.random.default_rng(7)
    X = rng.uniform(-2, 2, size=(90, 2))
    y = 2.0 * X[:, 0] + X[:, 1] + rng.uniform(-0.2, 0.2, size=90)
    y[5] += 50.0  # fold 5 % 3 = 2
    family = Family.of("linear", X, 0.5)
    folds = np.arange(90) % 3
    alpha = 0.05
    residuals, studentized = held_out_residuals(
        family, y[:, None], np.ones(90, dtype=bool), False, 0, alpha, folds
    )
    K = family.matrices[0]
    for fold in range(3):
        held = folds == fold
        train = (folds != fold) & (np.arange(90) != 5)
        ridge = KernelRidge(alpha=alpha, kernel="precomputed")
        ridge.fit(K[np.ix_(train, train)], y[train])
        expected = y[held] - ridge.predict(K[np.ix_(held, train)])
        np.testing.assert_allclose(residuals[held, 0], expected, rtol=1e-8, atol=1e-10)
    assert residuals[5, 0] > 45.0
    assert np.all(studentized > 0) and np.all(np.isfinite(studentized))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_small_table_with_many_columns_is_not_trimmed_to_rows_that_fit_themselves(seed):
    """32 rows, 10 columns, a linear truth and Gaussian noise (mtcars' shape): the rows the
    start keeps fit themselves closely, and judged by their own leave-one-out residuals 5 to
    11 correct rows were flagged on seeds 1-3 (at p-values down to 1e-20)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(32, 10))
    y = X @ rng.normal(size=10) + rng.normal(size=32)
    model = SubquantileKernelRegressor().fit(X, y)
    assert (~model.inlier_mask_).sum() <= 1


def _steep(seed: int, outliers: int = 0):
    """y = exp(5 x1) + x2 + N(0, 0.2^2) on the unit square (300 rows): steeper at its edge than
    in its bulk; the first ``outliers`` rows 10 standard deviations of y off."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(300, 2))
    y = np.exp(5 * X[:, 0]) + X[:, 1] + 0.2 * rng.normal(size=300)
    y[:outliers] += 10 * y.std()
    return X, y


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_relation_steeper_at_its_edge_is_misfit_not_outliers(seed):
    """The start flags the edge the bulk's fit cannot reach (34 to 82 of the 300 rows before
    the misfit rule); the flexible fit of every row explains them. Gross errors among them
    stay flagged."""
    X, y = _steep(seed)
    model = SubquantileKernelRegressor().fit(X, y)
    assert (~model.inlier_mask_).mean() <= 0.05
    X, y = _steep(seed, outliers=15)
    model = SubquantileKernelRegressor().fit(X, y)
    assert not model.inlier_mask_[:15].any()
    assert (~model.inlier_mask_[15:]).mean() <= 0.03


@pytest.mark.xfail(
    reason="issue 61, open: a shift over the edge of x looks like a relation steeper at its "
    "edge; the start flags all 116 shifted rows, the held-out second stage gives back 56 and "
    "the misfit rule 38 more (on bench_robust.py's generated data the local test keeps them)",
    strict=True,
)
def test_a_coherent_shift_of_the_targets_is_not_given_back_as_misfit():
    """20% of the rows, those of largest x1, with their targets shifted by 3 standard
    deviations: a flexible fit can follow the step, but it then predicts the kept rows beside
    it worse, so the shifted rows should stay flagged."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.2 * rng.normal(size=600)
    shifted = X[:, 0] >= np.quantile(X[:, 0], 0.8)
    y[shifted] += 3.0 * y.std()
    model = SubquantileKernelRegressor().fit(X, y)
    assert (~model.inlier_mask_[shifted]).mean() >= 0.9
    assert (~model.inlier_mask_[~shifted]).mean() <= 0.05


def test_misfit_is_reached_along_thinning_tails_but_not_across_a_gap():
    """``reachable``: a flagged row is followed out from the kept rows in steps of a few
    spacings of the rows beside it: the tail of normal x (spacing 20 times the centre's at
    2.5 sd in 1-d) is reached; a tight group 3 units past the tail and a lone row beyond it are
    not (the gaps to them are many spacings of the rows at the tail's end)."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.normal(size=800))
    cluster = 6.0 + 0.01 * rng.normal(size=20)
    X = np.concatenate([x, cluster, [12.0]])[:, None]
    kept = np.zeros(X.shape[0], dtype=bool)
    kept[:800] = np.abs(x) <= 1.0
    candidates = ~kept
    reached = reachable(X, kept, candidates, x_distance(X, kept))
    tail = ~kept[:800]
    assert tail.sum() > 200
    assert reached[:800][tail].all()
    assert not reached[800:].any()
    # the one-step rule alone (x-distance within UNUSUAL_X of the kept rows) misses most tails
    assert (x_distance(X, kept)[:800][tail] <= UNUSUAL_X).mean() < 0.5


@pytest.mark.slow
def test_the_papers_polynomial_problem_is_not_trimmed_to_its_middle():
    from sklearn.kernel_ridge import KernelRidge

    from robustkernel.corruption import contaminated_split
    from robustkernel.datasets import make_polynomial_regression

    X, y = make_polynomial_regression(1000, random_state=0)
    split = contaminated_split(X, y, "oblivious", 0.2, random_state=0)
    model = SubquantileKernelRegressor().fit(split.X_train, split.y_train)
    plain = KernelRidge(alpha=1.0, kernel="polynomial", degree=3, gamma=1.0, coef0=1.0)
    plain.fit(split.X_train, split.y_train)

    def rmse(estimator):
        return np.sqrt(np.mean((estimator.predict(split.X_test) - split.y_test) ** 2))

    assert rmse(model) <= rmse(plain)
