"""MetricKernelRidgeCV: closed-form leave-one-out errors against refits, and what it chooses."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from robustkernel.corruption import corrupt
from robustkernel.datasets import (
    central_subspace,
    make_kl_regression,
    make_kl_train_test,
    subspace_distance,
)
from robustkernel.metric_kernel_ridge import MetricKernelRidge, MetricKernelRidgeCV
from robustkernel.metric_kernel_ridge._cv import leave_one_out_mse
from robustkernel.metric_kernel_ridge._gradient_metric import gradient_outer_product_metric
from robustkernel.metric_kernel_ridge._objective import kernel_argument, resolve_kernel

GAUSSIAN = resolve_kernel("gaussian")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1):
        yield


def _refits_without_each_row(X, y, metric, mu):
    """Mean squared error of kernel ridge refitted without each row in turn, with the same
    penalty n mu ||f||^2 on the sum of squares (lam = n mu / (n - 1) on n - 1 rows)."""
    n = len(y)
    errors = []
    for row in range(n):
        keep = np.arange(n) != row
        refit = MetricKernelRidge(lam=n * mu / (n - 1), init=metric, max_iter=0)
        refit.fit(X[keep], y[keep])
        errors.append(y[row] - refit.predict(X[row : row + 1])[0])
    return np.mean(np.square(errors))


def test_leave_one_out_mse_equals_refits_without_each_row():
    X, y = make_kl_regression(n=40, p=3, f="a", random_state=0)
    rng = np.random.default_rng(0)
    B = rng.standard_normal((3, 3))
    Sigma = 0.2 * B @ B.T
    scales, ridges = np.array([0.5, 2.0]), np.array([1e-3, 0.1])
    fast = leave_one_out_mse(kernel_argument(X, None, Sigma, GAUSSIAN), y, scales, ridges, GAUSSIAN)
    for i, s in enumerate(scales):
        for j, mu in enumerate(ridges):
            expected = _refits_without_each_row(X, y, s * Sigma, mu)
            assert fast[i, j] == pytest.approx(expected, rel=1e-8)


def test_leave_one_out_mse_of_a_low_rank_kernel_equals_refits_without_each_row():
    # a rank-1 metric and wide bandwidths: the kernel matrix has a numerical rank far below n,
    # and the pivoted Cholesky route stands for the eigendecomposition
    from robustkernel.metric_kernel_ridge._cv import _centred_spectrum

    X, y = make_kl_regression(n=80, p=3, f="a", random_state=4)
    Sigma = np.zeros((3, 3))
    Sigma[0, 0] = 1.0
    argument = kernel_argument(X, None, Sigma, GAUSSIAN)
    scales, ridges = np.array([0.05, 0.2]), np.array([1e-6, 1e-2])
    for s in scales:
        _, Q, rest = _centred_spectrum(GAUSSIAN.fn(s * argument), GAUSSIAN)
        assert rest == 1.0 and Q.shape[1] < 20
    fast = leave_one_out_mse(argument, y, scales, ridges, GAUSSIAN)
    for i, s in enumerate(scales):
        for j, mu in enumerate(ridges):
            expected = _refits_without_each_row(X, y, s * Sigma, mu)
            assert fast[i, j] == pytest.approx(expected, rel=1e-6)


def _counted_search(monkeypatch, n: int, seed: int, near: float | None = None):
    """A bandwidth search on n rows of a sine: its choice, the factors whose leave-one-out
    errors it computed (in order), the grids and the full grid of errors computed apart."""
    from robustkernel.metric_kernel_ridge import _cv

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=n)
    argument = kernel_argument(X, None, np.eye(2), GAUSSIAN)
    grids = (np.array([2.0**k for k in range(-6, 4)]), np.array([1e-4, 1e-2]))
    full = leave_one_out_mse(argument, y, *grids, GAUSSIAN)  # every (s, mu)
    evaluated = []

    def counting(argument, y, scales, ridges, family):
        evaluated.extend(scales.tolist())
        return leave_one_out_mse(argument, y, scales, ridges, family)

    monkeypatch.setattr(_cv, "leave_one_out_mse", counting)
    choice = MetricKernelRidgeCV._scale_and_ridge(argument, y, grids, GAUSSIAN, near)
    return choice, evaluated, grids, full


@pytest.mark.parametrize("n", [120, 520])
def test_bandwidth_search_is_the_full_grid_below_500_rows_and_coarse_to_fine_above(
    monkeypatch, n
):
    from robustkernel.metric_kernel_ridge import _cv

    (scale, ridge, score), evaluated, grids, full = _counted_search(monkeypatch, n, n)
    tried = np.isin(grids[0], evaluated)
    if n < _cv.COARSE_TO_FINE_ROWS:
        assert tried.all()
    else:  # every other factor, and the two next to the best of those
        assert tried.sum() <= 7 and tried[::2].all()
        best_even = 2 * int(np.argmin(full[::2].min(axis=1)))
        assert all(tried[i] for i in (best_even - 1, best_even + 1) if 0 <= i < tried.size)
    # the least error among the factors tried, by the independent full grid
    i, j = np.unravel_index(np.argmin(np.where(tried[:, None], full, np.inf)), full.shape)
    assert (scale, ridge) == (grids[0][i], grids[1][j])
    assert score == pytest.approx(full[i, j], rel=1e-10)


@pytest.mark.parametrize("near", [2.0**-6, 2.0**-2, 0.3, 2.0**3])
def test_bandwidth_search_near_the_previous_round_walks_to_a_local_best(monkeypatch, near):
    from robustkernel.metric_kernel_ridge import _cv

    (scale, ridge, score), evaluated, grids, full = _counted_search(
        monkeypatch, _cv.COARSE_TO_FINE_ROWS, 3, near
    )
    tried = np.flatnonzero(np.isin(grids[0], evaluated))
    start = int(np.argmin(np.abs(np.log(grids[0] / near))))
    assert len(evaluated) == tried.size  # no factor twice
    assert np.array_equal(tried, np.arange(tried[0], tried[-1] + 1))  # one run of factors
    assert {start - 1, start, start + 1} & set(range(grids[0].size)) <= set(tried)
    # the least error among the factors tried, by the independent full grid ...
    i, j = np.unravel_index(np.argmin(full[tried]), (tried.size, grids[1].size))
    assert (scale, ridge) == (grids[0][tried[i]], grids[1][j])
    assert score == pytest.approx(full[tried[i], j], rel=1e-10)
    # ... and not at an end of the run unless the grid ends there: a local best over s
    best = tried[i]
    by_scale = full.min(axis=1)
    for neighbour in (best - 1, best + 1):
        if 0 <= neighbour < grids[0].size:
            assert neighbour in tried or by_scale[neighbour] >= by_scale[best]
    assert tried.size < grids[0].size  # fewer eigendecompositions than the grid


def test_two_fits_with_random_state_none_agree_and_an_int_draws_other_rows():
    X, y = make_kl_regression(n=60, p=3, f="b", random_state=5)
    params = {"lams": [0.3, 0.1], "n_iter_no_change": 5}
    first = MetricKernelRidgeCV(**params).fit(X, y)
    second = MetricKernelRidgeCV(**params).fit(X, y)
    np.testing.assert_array_equal(first.validation_mse_, second.validation_mse_)
    np.testing.assert_array_equal(first.Sigma_, second.Sigma_)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    other = MetricKernelRidgeCV(random_state=11, **params).fit(X, y)
    assert not np.allclose(other.validation_mse_, first.validation_mse_)


def test_folds_hold_out_every_row_once():
    model = MetricKernelRidgeCV(validation_fraction=None, n_splits=3, random_state=2)
    rows = np.arange(3, 50)
    splits = model._splits(rows)
    held_out = np.concatenate([val for _, val in splits])
    np.testing.assert_array_equal(np.sort(held_out), rows)
    for train, val in splits:
        assert np.intersect1d(train, val).size == 0
        np.testing.assert_array_equal(np.sort(np.concatenate([train, val])), rows)
        assert abs(val.size - rows.size / 3) < 1


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, float("nan"), "0.2", [0.2]])
def test_validation_fraction_must_be_a_fraction_or_none(bad):
    X, y = make_kl_regression(n=30, p=3, f="a", random_state=0)
    with pytest.raises(ValueError, match="validation_fraction"):
        MetricKernelRidgeCV(validation_fraction=bad).fit(X, y)


@pytest.mark.parametrize("n_splits", [1, 16])
def test_folds_need_two_to_half_the_rows(n_splits):
    X, y = make_kl_regression(n=30, p=3, f="a", random_state=0)
    with pytest.raises(ValueError, match="n_splits must be between 2 and half the rows"):
        MetricKernelRidgeCV(validation_fraction=None, n_splits=n_splits).fit(X, y)


def test_cv_picks_the_lam_with_the_smallest_held_out_error_and_predicts_well():
    X, y = make_kl_regression(n=200, p=8, f="a", random_state=1)
    X_test, y_test = make_kl_regression(n=400, p=8, f="a", random_state=2)
    lams = [0.3, 0.1, 0.03, 0.01]
    model = MetricKernelRidgeCV(lams=lams, random_state=0, gradient_metric=False).fit(X, y)
    assert model.metric_source_ == "path" and model.gradient_validation_mse_ is None
    assert model.lam_ == model.lams_[int(np.argmin(model.validation_mse_))]
    assert model.metric_.lam == model.lam_
    np.testing.assert_array_equal(model.Sigma_, model.metric_.Sigma_)
    # the final ridge is plain kernel ridge with the metric s Sigma and ridge mu
    direct = MetricKernelRidge(lam=model.ridge_, init=model.scale_ * model.Sigma_, max_iter=0)
    np.testing.assert_allclose(model.predict(X_test), direct.fit(X, y).predict(X_test), rtol=1e-10)
    paper = MetricKernelRidge(lam=0.1).fit(X, y)
    rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    rmse_paper = np.sqrt(np.mean((paper.predict(X_test) - y_test) ** 2))
    assert rmse < 0.5 * rmse_paper  # the paper's lam = 0.1 is a heavy ridge for prediction
    assert rmse < 0.2  # noise sd 0.1
    assert model.rank_ == 1
    assert subspace_distance(model.components_.T, central_subspace("a", 8)) < 0.2
    assert model.transform(X_test).shape == (400, 1)


def test_the_path_stops_after_n_iter_no_change_worse_lams():
    X, y = make_kl_regression(n=120, p=5, f="a", random_state=3)
    lams = [1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001]
    model = MetricKernelRidgeCV(lams=lams, n_iter_no_change=1, random_state=0).fit(X, y)
    fitted = len(model.lams_)
    best = int(np.argmin(model.validation_mse_))
    assert fitted == len(lams) or best == fitted - 2  # stopped right after one worse lam
    np.testing.assert_array_equal(model.lams_, lams[:fitted])


@pytest.mark.slow  # statistical, several seconds: make test-slow
def test_epsilon_predicts_close_to_the_oracle_on_corrupted_targets():
    # the paper's f (a), p = 20, 20% of the targets replaced by N(5, 5) draws
    sim = make_kl_train_test(n=300, p=20, f="a", random_state=2)
    bad = corrupt(sim.X_train, sim.y_train, kind="label", epsilon=0.2, random_state=2)
    corrupted = np.zeros(sim.y_train.size, dtype=bool)
    corrupted[bad.index] = True

    def rmse(model: MetricKernelRidgeCV) -> float:
        return float(np.sqrt(np.mean((model.predict(sim.X_test) - sim.y_test) ** 2)))

    with threadpool_limits(1):
        oracle = MetricKernelRidgeCV(random_state=0).fit(bad.X[~corrupted], bad.y[~corrupted])
        plain = MetricKernelRidgeCV(random_state=0).fit(bad.X, bad.y)
        robust = MetricKernelRidgeCV(epsilon="auto", random_state=0).fit(bad.X, bad.y)
    assert rmse(robust) <= 1.25 * rmse(oracle), (rmse(robust), rmse(oracle))
    assert rmse(plain) >= 5 * rmse(oracle)
    assert (~robust.inlier_mask_ & corrupted).sum() >= 0.9 * corrupted.sum()
    assert subspace_distance(robust.components_.T, sim.subspace) < 0.2
    # refitting without epsilon forgets the trimming
    robust.set_params(epsilon=None, lams=[0.1]).fit(bad.X, bad.y)
    assert not hasattr(robust, "inlier_mask_") and not hasattr(robust, "X_fit_")


def test_cv_rejects_bad_grids():
    X, y = make_kl_regression(n=30, p=3, f="a", random_state=0)
    for params in ({"lams": []}, {"scales": [0.0]}, {"ridges": [np.inf]}):
        with pytest.raises(ValueError, match="must be a non-empty list"):
            MetricKernelRidgeCV(**params).fit(X, y)


@parametrize_with_checks(
    [
        MetricKernelRidgeCV(lams=[0.1], scales=[1.0], ridges=[0.1], max_iter=20, random_state=0),
        MetricKernelRidgeCV(
            lams=[0.1], scales=[1.0], ridges=[0.1], max_iter=20, random_state=0, epsilon=0.1
        ),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_verbose_shows_a_bar_over_the_path(capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.sin(X[:, 0])
    MetricKernelRidgeCV(lams=[1.0, 0.1], max_iter=20, verbose=1, random_state=0).fit(X, y)
    final = capsys.readouterr().err.rsplit("\r", 1)[-1]
    assert final.startswith("MetricKernelRidgeCV") and "3/3" in final


@pytest.mark.parametrize(
    ("errors", "max_iterations", "rounds", "calls_made"),
    [
        # a leave-one-out error that falls every round: the metric after the last round is kept
        ([3.0, 2.0, 1.0], 2, 2, 3),
        # lowest after one round, then two rounds without a lower error stop the iteration
        ([3.0, 1.0, 2.0, 2.5, 0.5], 10, 1, 4),
    ],
)
def test_gradient_outer_product_metric_against_finite_differences_of_the_fit(
    errors, max_iterations, rounds, calls_made
):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.sin(X[:, 0] - X[:, 1]) + 0.05 * rng.normal(size=40)
    scale, ridge = 0.5, 0.01
    calls = []

    def choose(argument, targets, near):
        assert near == (None if not calls else scale)  # the previous round's s
        calls.append(argument)
        return scale, ridge, errors[len(calls) - 1]

    metric = gradient_outer_product_metric(X, y, GAUSSIAN, choose, max_iterations=max_iterations)
    assert len(calls) == calls_made
    # the kernel ridge fit with kernel phi(s ||x - x'||^2_M), differentiated numerically, for
    # as many rounds as the kept metric took
    expected, step = np.eye(3) / 3, 1e-5
    for _ in range(rounds):
        fit = MetricKernelRidge(lam=ridge, init=scale * expected, max_iter=0).fit(X, y)
        gradients = np.array([
            [(fit.predict((x + step * e)[None])[0] - fit.predict((x - step * e)[None])[0])
             / (2 * step) for e in np.eye(3)]
            for x in X
        ])
        expected = gradients.T @ gradients / len(X)
        expected /= np.trace(expected)
    values, vectors = np.linalg.eigh(expected)
    keep = values >= 0.01 * values.max()
    expected = (vectors[:, keep] * values[keep]) @ vectors[:, keep].T
    np.testing.assert_allclose(metric, expected, atol=1e-7)
    # y varies along x1 - x2 only: the metric's leading direction is close to it
    direction = np.linalg.eigh(metric)[1][:, -1]
    assert abs(direction @ np.array([1.0, -1.0, 0.0]) / np.sqrt(2)) > 0.95


def test_cv_takes_the_gradient_metric_where_the_path_settles_on_a_wrong_subspace():
    # the paper's f (b), p = 20: from the isotropic start the path of J_n learns rank 1 with a
    # subspace error of 1.42 (test RMSE 0.72); the gradient outer product finds both directions
    sim = make_kl_train_test(300, 20, "b", random_state=0)
    path_only = MetricKernelRidgeCV(random_state=0, gradient_metric=False)
    path_only.fit(sim.X_train, sim.y_train)
    model = MetricKernelRidgeCV(random_state=0).fit(sim.X_train, sim.y_train)
    assert model.metric_source_ == "gradient" and model.lam_ is None
    assert model.gradient_validation_mse_ < model.validation_mse_.min()
    assert model.rank_ == 2
    assert subspace_distance(model.components_.T, sim.subspace) < 0.2
    assert subspace_distance(path_only.components_.T, sim.subspace) > 1.0
    rmse = np.sqrt(np.mean((model.predict(sim.X_test) - sim.y_test) ** 2))
    rmse_path = np.sqrt(np.mean((path_only.predict(sim.X_test) - sim.y_test) ** 2))
    assert rmse < 0.2 and rmse < 0.5 * rmse_path
    # the predictor is kernel ridge with the metric scale_ * Sigma_ held fixed
    direct = MetricKernelRidge(lam=model.ridge_, init=model.scale_ * model.Sigma_, max_iter=0)
    np.testing.assert_allclose(
        model.predict(sim.X_test), direct.fit(sim.X_train, sim.y_train).predict(sim.X_test),
        rtol=1e-8, atol=1e-10,
    )


@pytest.mark.parametrize("options", [{"diagonal": True}, {"epsilon": 0.1}, {"kernel": "linear"}])
def test_gradient_metric_is_not_scored_where_it_does_not_apply(options):
    X, y = make_kl_regression(n=80, p=4, f="a", random_state=0)
    model = MetricKernelRidgeCV(lams=[0.1, 0.01], random_state=0, **options).fit(X, y)
    assert model.metric_source_ == "path" and model.gradient_validation_mse_ is None
    assert model.lam_ in (0.1, 0.01)


def test_n_splits_pools_the_held_out_errors_of_independent_single_splits():
    # with n_splits=3 the error per lam is the mean over three splits; each split alone is what
    # n_splits=1 computes when its random state draws that split's permutation first
    X, y = make_kl_regression(n=60, p=3, f="b", random_state=0)
    params = {"lams": [0.3, 0.1, 0.03], "n_iter_no_change": 5}
    pooled = MetricKernelRidgeCV(n_splits=3, random_state=7, **params).fit(X, y)
    assert pooled.validation_ranks_.shape == (3, 3)
    draws = np.random.RandomState(7)
    singles = []
    for _ in range(3):
        state = np.random.RandomState()
        state.set_state(draws.get_state())
        singles.append(MetricKernelRidgeCV(random_state=state, **params).fit(X, y))
        draws.permutation(X.shape[0])
    np.testing.assert_allclose(
        pooled.validation_mse_, np.mean([m.validation_mse_ for m in singles], axis=0), rtol=1e-6
    )
    np.testing.assert_allclose(
        pooled.gradient_validation_mse_,
        np.mean([m.gradient_validation_mse_ for m in singles]),
        rtol=1e-6,
    )
    np.testing.assert_array_equal(
        pooled.validation_ranks_, np.column_stack([m.validation_ranks_[:, 0] for m in singles])
    )
    # the choice follows the pooled errors
    best = min(pooled.validation_mse_.min(), pooled.gradient_validation_mse_)
    if pooled.metric_source_ == "path":
        assert pooled.validation_mse_[params["lams"].index(pooled.lam_)] == best
    else:
        assert pooled.gradient_validation_mse_ == best


def test_n_splits_refit_starts_from_the_split_metric_with_the_lowest_objective():
    from robustkernel.metric_kernel_ridge._objective import objective

    X, y = make_kl_regression(n=60, p=4, f="a", random_state=1)
    draws = np.random.RandomState(0)
    starts = []
    for _ in range(3):
        order = draws.permutation(60)
        starts.append(MetricKernelRidge(lam=0.1).fit(X[order[12:]], y[order[12:]]).Sigma_)
    values = [objective(X, y, S, 0.1, GAUSSIAN) for S in starts]
    assert int(np.argmin(values)) != 0  # not simply the first split's
    refit = MetricKernelRidgeCV(lams=[0.1], n_splits=3, gradient_metric=False, random_state=0)
    refit.fit(X, y)
    direct = MetricKernelRidge(lam=0.1, init=starts[int(np.argmin(values))]).fit(X, y)
    np.testing.assert_allclose(refit.Sigma_, direct.Sigma_, atol=1e-10)


def test_n_splits_must_be_a_positive_integer():
    X, y = make_kl_regression(n=30, p=3, f="a", random_state=0)
    for bad in (0, -1, 1.5, "3"):
        with pytest.raises(ValueError, match="n_splits"):
            MetricKernelRidgeCV(n_splits=bad).fit(X, y)


def test_gaussian_process_predictor_is_sklearns_process_on_the_learned_coordinates():
    # the metric is the same as with the kernel ridge predictor; the final model is scikit-learn's
    # GaussianProcessRegressor (ARD RBF times an amplitude, plus white noise) on transform(X)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = np.sin(2 * (X[:, 0] - X[:, 1]) / np.sqrt(2)) + 0.05 * rng.normal(size=120)
    X_test = rng.normal(size=(60, 5))
    y_test = np.sin(2 * (X_test[:, 0] - X_test[:, 1]) / np.sqrt(2))
    params = {"lams": [0.3, 0.1], "random_state": 0}
    ridge = MetricKernelRidgeCV(**params).fit(X, y)
    model = MetricKernelRidgeCV(predictor="gaussian_process", **params).fit(X, y)
    np.testing.assert_array_equal(model.Sigma_, ridge.Sigma_)
    Z = model.transform(X)
    kernel = ConstantKernel() * RBF(length_scale=np.ones(Z.shape[1])) + WhiteKernel(0.01)
    reference = GaussianProcessRegressor(kernel, normalize_y=True, random_state=0).fit(Z, y)
    np.testing.assert_allclose(
        model.predict(X_test), reference.predict(model.transform(X_test)), rtol=1e-10, atol=1e-12
    )
    # one index: the process recovers the function (noise 0.05 on the training rows)
    assert np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)) < 0.15


def test_gaussian_process_predictor_refuses_epsilon():
    X, y = make_kl_regression(n=60, p=3, f="a", random_state=0)
    model = MetricKernelRidgeCV(predictor="gaussian_process", epsilon=0.1, lams=[0.1])
    with pytest.raises(ValueError, match="predictor='gaussian_process' is not available"):
        model.fit(X, y)
    with pytest.raises(ValueError, match="predictor"):
        MetricKernelRidgeCV(predictor="forest").fit(X, y)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.full((3, 3), np.nan), "NaN"),
        (np.full((3, 3), np.inf), "infinity"),
        (np.ones((3, 4)), "features"),
        (np.empty((0, 3)), "0 sample"),
    ],
    ids=["nan", "inf", "columns", "empty"],
)
def test_gaussian_process_predictor_rejects_bad_inputs_to_predict(bad, message):
    X, y = make_kl_regression(n=60, p=3, f="a", random_state=0)
    model = MetricKernelRidgeCV(predictor="gaussian_process", lams=[0.1], random_state=0)
    model.fit(X, y)
    with pytest.raises(ValueError, match=message):
        model.predict(bad)
    # 1e300 is finite: a finite prediction (the process reverts to its mean far from the rows)
    assert np.all(np.isfinite(model.predict(np.full((2, 3), 1e300))))
