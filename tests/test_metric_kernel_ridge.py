"""Tests of MetricKernelRidge against independent computations.

Gradients are checked against finite differences of J_n, J_n against a direct least-squares solve
of the inner problem, predictions against sklearn's KernelRidge with a precomputed kernel.
"""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import KernelCenterer
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from robustkernel.datasets import central_subspace, make_kl_regression
from robustkernel.metric_kernel_ridge import MetricKernelRidge, metric_kernel_ridge_path
from robustkernel.metric_kernel_ridge._objective import (
    gradient,
    inner_solution,
    objective,
    project,
    resolve_kernel,
)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """n <= 300 problems: BLAS threading only adds overhead (and contention on shared CPUs)."""
    with threadpool_limits(limits=1):
        yield


@contextmanager
def _ignore_convergence():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _imq(z):
    return (1.0 + z) ** -0.5


def _imq_prime(z):
    return -0.5 * (1.0 + z) ** -1.5


KERNEL_CASES = {
    "gaussian": {"kernel": "gaussian"},
    "mixture": {
        "kernel": "gaussian_mixture",
        "kernel_params": {"weights": [0.3, 0.7], "scales": [0.5, 2.0]},
    },
    "callable": {"kernel": (_imq, _imq_prime)},
    "linear": {"kernel": "linear"},
    "cubic": {"kernel": "cubic"},
}


def _data(n=30, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


def _sigma(p, low_rank, seed=1):
    rng = np.random.default_rng(seed)
    if low_rank:
        u = rng.standard_normal(p)
        return 0.5 * np.outer(u, u) / (u @ u)  # rank one
    A = rng.standard_normal((p, p))
    return A @ A.T / (4 * p) + np.eye(p) / p


def _explicit_kernel(X, Z, Sigma, kind):
    """k_Sigma computed from explicit pairwise differences (independent of the library)."""
    fam = resolve_kernel(KERNEL_CASES[kind]["kernel"], KERNEL_CASES[kind].get("kernel_params"))
    if fam.kind == "inner":
        U = np.einsum("ik,kl,jl->ij", X, Sigma, Z)
        return fam.fn(U)
    diff = X[:, None, :] - Z[None, :, :]
    D = np.einsum("ijk,kl,ijl->ij", diff, Sigma, diff)
    return fam.fn(D)


def _fd(fun, x0, directions, h):
    """Fourth-order central differences of ``fun`` at ``x0`` along each direction."""
    out = []
    for E in directions:
        f = [fun(x0 + s * h * E) for s in (2, 1, -1, -2)]
        out.append((-f[0] + 8 * f[1] - 8 * f[2] + f[3]) / (12 * h))
    return np.array(out)


# ---------------------------------------------------------------------------------- gradient
@pytest.mark.parametrize("kind", list(KERNEL_CASES))
@pytest.mark.parametrize("low_rank", [False, True], ids=["full", "lowrank"])
@pytest.mark.parametrize("diagonal", [False, True], ids=["matrix", "diag"])
def test_gradient_matches_finite_differences(kind, low_rank, diagonal):
    X, y = _data()
    p = X.shape[1]
    lam = 0.3
    fam = resolve_kernel(KERNEL_CASES[kind]["kernel"], KERNEL_CASES[kind].get("kernel_params"))
    Sigma = _sigma(p, low_rank)
    if diagonal:
        Sigma = np.diag(Sigma).copy()
        if low_rank:
            Sigma[1:] = 0.0
        directions = list(np.eye(p))
    else:
        directions = []
        for k in range(p):
            for m in range(k, p):
                E = np.zeros((p, p))
                E[k, m] = E[m, k] = 1.0
                directions.append(E)
    G = gradient(X, inner_solution(X, y, Sigma, lam, fam), lam, fam, diagonal=diagonal)
    fd = _fd(lambda S: objective(X, y, S, lam, fam), Sigma, directions, h=1e-4)
    analytic = np.array([np.sum(G * E) for E in directions])
    assert np.linalg.norm(fd - analytic) / np.linalg.norm(analytic) < 1e-5
    if not diagonal:
        np.testing.assert_array_equal(G, G.T)


# ---------------------------------------------------------------------------------- objective
def _inner_min_lstsq(K, y, lam):
    """min over (a, gamma) of (1/2n)||y - K a - gamma 1||^2 + lam/2 a^T K a by least squares."""
    n = K.shape[0]
    w, V = np.linalg.eigh(0.5 * (K + K.T))
    R = np.sqrt(np.clip(w, 0, None))[:, None] * V.T  # R^T R = K
    A = np.block([[K, np.ones((n, 1))], [np.sqrt(n * lam) * R, np.zeros((n, 1))]])
    b = np.concatenate([y, np.zeros(n)])
    theta, *_ = np.linalg.lstsq(A, b, rcond=None)
    a, gamma = theta[:n], theta[n]
    return 0.5 / n * np.sum((y - K @ a - gamma) ** 2) + 0.5 * lam * a @ K @ a


@pytest.mark.parametrize("kind", list(KERNEL_CASES))
@pytest.mark.parametrize("low_rank", [False, True], ids=["full", "lowrank"])
def test_objective_equals_direct_least_squares(kind, low_rank):
    X, y = _data(n=25, p=3, seed=3)
    lam = 0.2
    Sigma = _sigma(3, low_rank, seed=4)
    K = _explicit_kernel(X, X, Sigma, kind)
    expected = _inner_min_lstsq(K, y, lam)
    model = MetricKernelRidge(lam=lam, max_iter=0, init=Sigma, **KERNEL_CASES[kind]).fit(X, y)
    assert model.objective_ == pytest.approx(expected, rel=1e-8)
    assert model.dual_coef_.sum() == pytest.approx(0.0, abs=1e-10)


def _krr_precomputed_predict(K_train, K_test, y, lam):
    """KernelRidge on the centred kernel plus the mean of y (the intercept)."""
    n = K_train.shape[0]
    centerer = KernelCenterer().fit(K_train)
    krr = KernelRidge(alpha=n * lam, kernel="precomputed")
    krr.fit(centerer.transform(K_train), y - y.mean())
    return krr.predict(centerer.transform(K_test)) + y.mean()


@pytest.mark.parametrize("kind", list(KERNEL_CASES))
def test_fixed_sigma_predictions_equal_kernel_ridge(kind):
    X, y = _data(n=40, p=3, seed=5)
    X_test, _ = _data(n=15, p=3, seed=6)
    Sigma = _sigma(3, low_rank=False, seed=7)
    lam = 0.05
    model = MetricKernelRidge(lam=lam, max_iter=0, init=Sigma, **KERNEL_CASES[kind]).fit(X, y)
    expected = _krr_precomputed_predict(
        _explicit_kernel(X, X, Sigma, kind), _explicit_kernel(X_test, X, Sigma, kind), y, lam
    )
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-8, atol=1e-10)


def test_learned_sigma_predictions_equal_kernel_ridge():
    X, y = _data(n=60, p=4, seed=8)
    X_test, _ = _data(n=20, p=4, seed=9)
    with _ignore_convergence():
        model = MetricKernelRidge(lam=0.1, max_iter=50).fit(X, y)
    S = model.Sigma_
    expected = _krr_precomputed_predict(
        _explicit_kernel(X, X, S, "gaussian"), _explicit_kernel(X_test, X, S, "gaussian"), y, 0.1
    )
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-8, atol=1e-10)


def test_rbf_is_the_gaussian_kernel_with_gamma_in_sigma():
    """kernel="rbf" (the SubQ engine's and scikit-learn's name) is "gaussian": at Sigma =
    gamma I, with lam = alpha / n, the predictions of KernelRidge(kernel="rbf", gamma, alpha)
    on centred kernels; and a learned fit is the "gaussian" one."""
    X, y = _data(n=40, p=3, seed=5)
    X_test, _ = _data(n=15, p=3, seed=6)
    gamma, alpha = 0.7, 2.0
    model = MetricKernelRidge(
        lam=alpha / 40, kernel="rbf", max_iter=0, init=gamma * np.eye(3)
    ).fit(X, y)
    expected = _krr_precomputed_predict(
        rbf_kernel(X, X, gamma=gamma), rbf_kernel(X_test, X, gamma=gamma), y, alpha / 40
    )
    np.testing.assert_allclose(model.predict(X_test), expected, rtol=1e-8, atol=1e-10)
    with _ignore_convergence():
        rbf = MetricKernelRidge(lam=0.1, kernel="rbf", max_iter=20).fit(X, y)
        gaussian = MetricKernelRidge(lam=0.1, kernel="gaussian", max_iter=20).fit(X, y)
    np.testing.assert_array_equal(rbf.Sigma_, gaussian.Sigma_)


# ---------------------------------------------------------------------------------- descent
@pytest.mark.parametrize("kind", list(KERNEL_CASES))
@pytest.mark.parametrize("diagonal", [False, True])
def test_armijo_never_increases_objective_and_sigma_stays_psd(kind, diagonal):
    X, y = _data(n=50, p=5, seed=10)
    model = MetricKernelRidge(lam=0.1, max_iter=60, diagonal=diagonal, **KERNEL_CASES[kind])
    with _ignore_convergence():
        model.fit(X, y)
    hist = model.objective_history_
    assert hist.size == model.n_iter_ + 1 >= 2
    assert np.all(np.diff(hist) <= 1e-12 * np.abs(hist[:-1]))
    S = model.Sigma_
    np.testing.assert_array_equal(S, S.T)
    assert np.linalg.eigvalsh(S).min() >= -1e-12 * max(1.0, np.abs(S).max())
    if diagonal:
        np.testing.assert_array_equal(S, np.diag(np.diag(S)))
    # the independently recomputed objective at the final Sigma matches the reported one
    fam = resolve_kernel(model.kernel, model.kernel_params)
    S_arg = np.diag(S).copy() if diagonal else S
    assert objective(X, y, S_arg, 0.1, fam) == pytest.approx(model.objective_, rel=1e-10)


def test_projection_is_psd_symmetric_idempotent_and_nearest():
    rng = np.random.default_rng(11)
    A = rng.standard_normal((6, 6))
    S = A + A.T
    P, D, _ = project(S)
    np.testing.assert_array_equal(P, P.T)
    assert np.linalg.eigvalsh(P).min() >= -1e-12 * max(1.0, np.abs(P).max())
    assert np.all(D >= 0)
    np.testing.assert_allclose(project(P)[0], P, atol=1e-12)
    # nearest PSD matrix: no random PSD matrix is closer to S
    dist = np.linalg.norm(P - S)
    for _ in range(200):
        B = rng.standard_normal((6, 3))
        assert np.linalg.norm(B @ B.T + P - S) >= dist - 1e-12
    # the spectral upper bound is enforced
    Pb = project(S, upper=0.5)[0]
    assert np.linalg.eigvalsh(Pb).max() <= 0.5 + 1e-12
    np.testing.assert_array_equal(project(np.array([-1.0, 2.0, 0.3]), upper=1.0)[0], [0, 1, 0.3])


def test_projection_of_low_rank_matrix_keeps_its_rank():
    rng = np.random.default_rng(13)
    Q, _ = np.linalg.qr(rng.standard_normal((30, 30)))
    S = (Q[:, :2] * [0.7, 0.2]) @ Q[:, :2].T  # exactly rank two, in a random basis
    P, D, _ = project(S)
    assert np.count_nonzero(D) == 2
    np.testing.assert_allclose(P, S, atol=1e-15)


def test_warm_start_from_low_rank_solution_keeps_rank():
    X, y = make_kl_regression(n=100, p=10, f="a", random_state=0)
    model = MetricKernelRidge(lam=0.1).fit(X, y)
    assert model.rank_ == 1
    again = MetricKernelRidge(lam=0.1, init=model.Sigma_, max_iter=0).fit(X, y)
    assert again.rank_ == 1  # round-off eigenvalues of the re-decomposed init are not rank
    np.testing.assert_allclose(again.eigenvalues_, model.eigenvalues_, atol=1e-14)
    moved = MetricKernelRidge(lam=0.12, init=model.Sigma_).fit(X, y)
    assert moved.rank_ == 1 and moved.n_iter_ > 1


def test_inner_product_kernel_respects_op_norm_bound():
    X, y = _data(n=40, p=4, seed=12)
    model = MetricKernelRidge(lam=0.1, kernel="linear", op_norm_bound=0.3, max_iter=200)
    with _ignore_convergence():
        model.fit(X, y)
    assert model.eigenvalues_.max() <= 0.3 + 1e-12


# ---------------------------------------------------------------------------------- paper claim
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_claim_i_small_rank_one_and_recovers_direction(seed):
    X, y = make_kl_regression(n=300, p=20, f="a", random_state=seed)
    u = central_subspace("a", 20)[:, 0]
    path = metric_kernel_ridge_path(X, y, [0.1, 0.5], return_estimators=True)
    for model in path.estimators:
        assert model.rank_ <= 1
        assert model.rank_ == 1  # the signal direction is found, not lost
        assert abs(model.components_[0] @ u) > 0.95


def test_no_signal_full_rank_is_where_projected_gradient_stops_not_the_minimizer():
    """Claim (iv) of the paper (f = 0 gives full rank) holds for its stopped descent only."""
    X, y = make_kl_regression(n=300, p=20, f="e", random_state=0)
    with _ignore_convergence():
        stopped = MetricKernelRidge(lam=0.1, solver="projected_gradient", max_iter=300).fit(X, y)
    converged = MetricKernelRidge(lam=0.1).fit(X, y)
    assert stopped.rank_ == 20
    assert stopped.kkt_residual_ > 1e-3
    assert converged.kkt_residual_ <= 1e-6
    assert converged.objective_ < stopped.objective_
    assert converged.rank_ < 20


def test_linear_inner_product_kernel_is_not_low_rank():
    X, y = make_kl_regression(n=300, p=20, f="a", random_state=0)
    with _ignore_convergence():
        model = MetricKernelRidge(lam=0.1, kernel="linear", max_iter=30).fit(X, y)
    assert model.objective_history_[-1] < 0.5 * model.objective_history_[0]  # it did learn
    assert model.eigenvalues_[0] > 1.0  # the signal direction grew ...
    assert model.rank_ > 1  # ... but the others did not vanish


# ---------------------------------------------------------------------------------- API
def test_transform_reproduces_kernel_and_works_in_pipeline():
    X, y = make_kl_regression(n=120, p=6, f="b", random_state=3)
    model = MetricKernelRidge(lam=0.1, max_iter=200)
    with _ignore_convergence():
        model.fit(X, y)
    Z = model.transform(X)
    assert Z.shape == (120, model.rank_)
    D = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(
        np.exp(-D), _explicit_kernel(X, X, model.Sigma_, "gaussian"), atol=1e-10
    )
    np.testing.assert_allclose(
        model.components_ @ model.components_.T, np.eye(model.rank_), atol=1e-12
    )
    pipe = make_pipeline(MetricKernelRidge(lam=0.1, max_iter=50), KernelRidge(kernel="rbf"))
    with _ignore_convergence():
        pipe.fit(X, y)
    assert pipe.predict(X).shape == (120,)
    assert list(model.get_feature_names_out()) == [
        f"metrickernelridge{i}" for i in range(model.rank_)
    ]


def test_path_warm_starts_and_reports():
    X, y = make_kl_regression(n=80, p=5, f="a", random_state=4)
    Xt, yt = make_kl_regression(n=40, p=5, f="a", random_state=5)
    lams = [0.05, 0.2, 0.4]
    path = metric_kernel_ridge_path(X, y, lams, X_test=Xt, y_test=yt, max_iter=100)
    assert path.Sigma.shape == (3, 5, 5)
    assert path.test_rmse.shape == (3,)
    first = MetricKernelRidge(lam=0.05, max_iter=100)
    with _ignore_convergence():
        first.fit(X, y)
    np.testing.assert_array_equal(path.Sigma[0], first.Sigma_)
    second = MetricKernelRidge(lam=0.2, max_iter=100, init=first.Sigma_)
    with _ignore_convergence():
        second.fit(X, y)
    np.testing.assert_array_equal(path.Sigma[1], second.Sigma_)
    assert path.rank[1] == second.rank_
    rmse = np.sqrt(np.mean((second.predict(Xt) - yt) ** 2))
    assert path.test_rmse[1] == pytest.approx(rmse)
    frame = path.to_frame()
    assert list(frame["lam"]) == lams
    with pytest.raises(ValueError, match="lam"):
        metric_kernel_ridge_path(X, y, [0.1, -1.0])
    with pytest.raises(ValueError, match="X_test"):
        metric_kernel_ridge_path(X, y, [0.1], X_test=Xt)


def test_diagonal_metric_selects_relevant_features():
    X, y = make_kl_regression(n=200, p=8, f="a", random_state=6)
    model = MetricKernelRidge(lam=0.1, diagonal=True).fit(X, y)
    d = np.diag(model.Sigma_)
    assert np.all(d[3:] == 0.0)
    assert np.all(d[:3] > 0.0)


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"lam": 0.0}, ValueError),
        ({"lam": -1.0}, ValueError),
        ({"kernel": "laplacian"}, ValueError),
        ({"kernel": "gaussian_mixture"}, ValueError),
        (
            {"kernel": "gaussian_mixture", "kernel_params": {"weights": [1], "scales": [-1]}},
            ValueError,
        ),
        ({"kernel": (np.exp,)}, TypeError),
        ({"init": np.eye(3)}, ValueError),
        ({"beta": 1.0}, ValueError),
    ],
)
def test_bad_parameters_raise(params, error):
    X, y = _data(n=20, p=4)
    with pytest.raises(error):
        MetricKernelRidge(max_iter=1, **params).fit(X, y)


def test_bad_data_raise():
    X, y = _data(n=20, p=4)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MetricKernelRidge(max_iter=1).fit(Xn, y)
    yn = y.copy()
    yn[3] = np.inf
    with pytest.raises(ValueError, match="inf"):
        MetricKernelRidge(max_iter=1).fit(X, yn)
    with pytest.raises(ValueError, match="inconsistent"):
        MetricKernelRidge(max_iter=1).fit(X, y[:-1])
    with _ignore_convergence():
        model = MetricKernelRidge(max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])


@parametrize_with_checks(
    [MetricKernelRidge(max_iter=10)],
    expected_failed_checks=lambda est: {
        "check_sample_weight_equivalence_on_dense_data": (
            "the check compares transform, whose coordinates inside an eigenspace of repeated "
            "eigenvalues (directions max_iter=10 left at the start I/p) are defined up to a "
            "rotation; Sigma_ and the predictions are equal (tests/test_sample_weight.py)"
        ),
    },
)
def test_sklearn_compatible(estimator, check):
    with _ignore_convergence():
        check(estimator)


def test_verbose_shows_a_progress_bar_per_iteration(capsys):
    """verbose=1: one bar update per iteration (the count in the bar is n_iter_)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.sin(X[:, 0])
    model = MetricKernelRidge(lam=0.1, max_iter=15, verbose=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=15 may stop before the tolerance
        model.fit(X, y)
    err = capsys.readouterr().err
    final = err.rsplit("\r", 1)[-1]  # the bar's last state
    assert final.startswith("MetricKernelRidge") and "J=" in final
    assert re.search(rf"\b{model.n_iter_}(/15|it)\b", final), final
    MetricKernelRidge(lam=0.1, max_iter=5).fit(X, y)
    assert capsys.readouterr().err == ""
