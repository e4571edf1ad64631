"""Baselines: each does what its paper claims, checked against independent computations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC, SVR

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.baselines import (
    BASELINES,
    REGRESSION_ONLY,
    CRRKernelRegressor,
    OracleERM,
    SeverKernelClassifier,
    SeverKernelRegressor,
    STIRKernelRegressor,
    TiltedKernelClassifier,
    TiltedKernelRegressor,
    TorrentGDKernelRegressor,
    sever_scores,
    tilted_weights,
)


def linear_problem(n: int = 200, d: int = 5, eps: float = 0.2, seed: int = 0):
    """y = X w* + b* + small noise, with eps n labels replaced by large adversarial values."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w_star = rng.normal(size=d)
    b_star = 0.5
    y = X @ w_star + b_star + 0.01 * rng.normal(size=n)
    bad = rng.permutation(n)[: int(eps * n)]
    y[bad] = 10.0 + 5.0 * rng.random(bad.size)  # one-sided: biases least squares
    return X, y, w_star, b_star, bad


def primal_ridge(X: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """min ||X w + b - y||^2 + alpha ||w||^2 with an unpenalized b, by least squares."""
    n, d = X.shape
    A = np.vstack([np.column_stack([X, np.ones(n)]), np.sqrt(alpha) * np.eye(d, d + 1)])
    solution = np.linalg.lstsq(A, np.concatenate([y, np.zeros(d)]), rcond=None)[0]
    return solution[:d], float(solution[d])


def primal_weights(model, X: np.ndarray) -> np.ndarray:
    """w = X^T dual_coef_ of a linear-kernel model."""
    return X.T @ model.dual_coef_


# --- TERM ------------------------------------------------------------------------------------


def test_tilted_weights_are_a_stable_softmax():
    rng = np.random.default_rng(1)
    losses = rng.random(30) * 3
    for t in (-2.0, 0.5):
        expected = np.exp(t * losses) / np.exp(t * losses).sum()
        np.testing.assert_allclose(tilted_weights(losses, t), expected, rtol=1e-12)
    # Losses of 1e4 under t = -2: exp underflows naively; the weights must still be finite,
    # sum to one and follow exp(t (l_i - min l)).
    huge = np.array([1e4, 1e4 + 1.0, 3e4])
    weights = tilted_weights(huge, -2.0)
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(), 1.0)
    shifted = np.exp(-2.0 * (huge - huge.min()))
    np.testing.assert_allclose(weights, shifted / shifted.sum(), rtol=1e-12)


@pytest.mark.parametrize("tilt", [0.0, -1e-7])
def test_term_without_tilt_is_kernel_ridge(tilt):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    term = TiltedKernelRegressor(tilt, alpha=1.0, fit_intercept=False, tol=0).fit(X, y)
    krr = KernelRidge(alpha=1.0, kernel="rbf", gamma=0.5).fit(X, y)
    X_test = rng.normal(size=(20, 2))
    np.testing.assert_allclose(term.predict(X_test), krr.predict(X_test), atol=1e-6)
    np.testing.assert_allclose(term.weights_, 1 / 40, rtol=1e-4)


def test_term_with_intercept_and_no_tilt_is_the_library_erm():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    y = X[:, 0] + 3.0 + 0.1 * rng.normal(size=40)
    term = TiltedKernelRegressor(0.0, alpha=0.5).fit(X, y)
    erm = SubquantileKernelRegressor(epsilon=0.0, alpha=0.5, gamma=None, kernel="rbf").fit(X, y)
    np.testing.assert_allclose(term.predict(X), erm.predict(X), atol=1e-5)


def test_term_negative_tilt_down_weights_outliers():
    X, y, w_star, _, bad = linear_problem(n=100, eps=0.1)
    term = TiltedKernelRegressor(-2.0, kernel="linear", alpha=1e-3).fit(X, y)
    clean = np.setdiff1d(np.arange(100), bad)
    assert term.weights_[bad].max() < 1e-6 * term.weights_[clean].max()
    ols_error = np.linalg.norm(primal_ridge(X, y, 1e-3)[0] - w_star)
    assert np.linalg.norm(primal_weights(term, X) - w_star) < 0.1 * ols_error


def test_term_classifier_without_tilt_is_the_library_erm():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    term = TiltedKernelClassifier(0.0, alpha=1.0, tol=0).fit(X, y)
    erm = SubquantileKernelClassifier(epsilon=0.0, alpha=1.0, gamma=None).fit(X, y)
    np.testing.assert_allclose(term.decision_function(X), erm.decision_function(X), atol=1e-4)


def test_term_classifier_default_tilt_is_the_authors_classification_tilt():
    # 20% flipped labels. At the regression tilt -2 the tilted logistic risk is lowest for one
    # class predicted with infinite confidence, and the descent finds it; -0.1 (the authors'
    # tilt for label noise) keeps a classifier.
    X, y = make_classification(300, n_features=5, class_sep=1.5, random_state=0)
    X_test, y_test = X[200:], y[200:]
    X, y = X[:200], y[:200].copy()
    flipped = np.random.default_rng(0).choice(200, 40, replace=False)
    y[flipped] = 1 - y[flipped]
    term = TiltedKernelClassifier(alpha=1.0).fit(X, y)
    assert term.tilt_ == -0.1 and TiltedKernelRegressor().fit(X, y).tilt_ == -2.0
    assert term.score(X_test, y_test) > 0.85
    collapsed = TiltedKernelClassifier(-2.0, alpha=1.0).fit(X, y)
    assert len(np.unique(collapsed.predict(X_test))) == 1


# --- CRR, STIR, TORRENT-GD -------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        CRRKernelRegressor(epsilon=0.2, kernel="linear", alpha=1e-6),
        STIRKernelRegressor(kernel="linear", alpha=1e-6),
        TorrentGDKernelRegressor(epsilon=0.2, kernel="linear", alpha=1e-6, max_iter=5000),
    ],
    ids=["crr", "stir", "torrent_gd"],
)
def test_robust_linear_regression_recovers_w_star(model):
    X, y, w_star, b_star, _ = linear_problem()
    ols_w, _ = primal_ridge(X, y, 1e-6)
    assert np.linalg.norm(ols_w - w_star) > 0.3  # least squares is visibly broken
    model.fit(X, y)
    assert np.linalg.norm(primal_weights(model, X) - w_star) < 0.02
    assert abs(model.intercept_ - b_star) < 0.02


def test_crr_support_is_the_corrupted_rows():
    X, y, *_, bad = linear_problem()
    crr = CRRKernelRegressor(epsilon=0.2, kernel="linear", alpha=1e-6).fit(X, y)
    np.testing.assert_array_equal(np.flatnonzero(~crr.inlier_mask_), np.sort(bad))


def test_stir_weights_are_truncated_inverse_residuals():
    X, y, *_, bad = linear_problem()
    stir = STIRKernelRegressor(kernel="linear", alpha=1e-6).fit(X, y)
    clean = np.setdiff1d(np.arange(y.size), bad)
    assert stir.sample_weight_[bad].max() < stir.sample_weight_[clean].min()
    assert stir.sample_weight_.max() <= stir.M_


# --- SEVER -----------------------------------------------------------------------------------


def brute_force_sever_scores(X: np.ndarray, residual_gradient: np.ndarray) -> np.ndarray:
    """Squared projections of centred explicit gradients g_i [x_i, 1] on the top singular vector."""
    gradients = residual_gradient[:, None] * np.column_stack([X, np.ones(X.shape[0])])
    centred = gradients - gradients.mean(axis=0)
    top = np.linalg.svd(centred, full_matrices=False)[2][0]
    return (centred @ top) ** 2


@pytest.mark.parametrize("n", [60, 300])  # dense eigh and the sparse eigsh path
def test_sever_scores_match_explicit_gradients(n):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, 3))
    g = rng.normal(size=n)
    scores = sever_scores(X @ X.T + 1.0, g[:, None])
    np.testing.assert_allclose(scores, brute_force_sever_scores(X, g), rtol=1e-6, atol=1e-9)


def test_sever_removes_the_rows_with_largest_scores():
    X, y, *_ = linear_problem(n=100)
    alpha = 0.1
    sever = SeverKernelRegressor(fraction=0.1, n_rounds=1, kernel="linear", alpha=alpha).fit(X, y)
    w, b = primal_ridge(X, y, alpha)
    scores = brute_force_sever_scores(X, 2.0 * (X @ w + b - y))
    expected = np.sort(np.argsort(-scores)[:10])
    np.testing.assert_array_equal(np.flatnonzero(~sever.inlier_mask_), expected)
    # The final model is the ridge fit on the kept rows.
    w_kept, b_kept = primal_ridge(X[sever.inlier_mask_], y[sever.inlier_mask_], alpha)
    np.testing.assert_allclose(primal_weights(sever, X), w_kept, atol=1e-8)
    np.testing.assert_allclose(sever.intercept_, b_kept, atol=1e-8)


def test_sever_default_rounds_remove_eps_over_two_per_round_and_find_outliers():
    X, y, *_, bad = linear_problem(n=200, eps=0.1)
    sever = SeverKernelRegressor(epsilon=0.1, kernel="linear", alpha=1e-3).fit(X, y)
    expected_removed = 0
    kept = 200
    for _ in range(4):  # ceil(0.05 m) of the m rows kept, four rounds
        step = int(np.ceil(0.05 * kept))
        expected_removed += step
        kept -= step
    assert (~sever.inlier_mask_).sum() == expected_removed
    assert set(bad) <= set(np.flatnonzero(~sever.inlier_mask_))


def test_sever_classifier_filters_each_class():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 2))
    y = np.where(X[:, 0] > 0, "a", "b")
    sever = SeverKernelClassifier(fraction=0.05, n_rounds=2).fit(X, y)
    for label in ("a", "b"):
        rows = y == label
        m = rows.sum()
        removed_1 = int(np.ceil(0.05 * m))
        removed_2 = int(np.ceil(0.05 * (m - removed_1)))
        assert (~sever.inlier_mask_[rows]).sum() == removed_1 + removed_2
    assert sever.score(X, y) > 0.9


# --- Oracle ERM, factories, scikit-learn API -------------------------------------------------


def test_oracle_uses_only_the_clean_rows():
    X, y, *_, bad = linear_problem(n=80)
    clean = np.ones(80, dtype=bool)
    clean[bad] = False
    oracle = OracleERM(KernelRidge(alpha=0.3, kernel="rbf")).fit(X, y, clean_mask=clean)
    reference = KernelRidge(alpha=0.3, kernel="rbf").fit(X[clean], y[clean])
    np.testing.assert_allclose(oracle.predict(X), reference.predict(X), rtol=1e-10)
    by_index = OracleERM(KernelRidge(alpha=0.3, kernel="rbf")).fit(
        X, y, clean_mask=np.flatnonzero(clean)
    )
    np.testing.assert_allclose(by_index.predict(X), reference.predict(X), rtol=1e-10)
    with pytest.raises(ValueError, match="no rows"):
        OracleERM(KernelRidge()).fit(X, y, clean_mask=np.zeros(80, dtype=bool))


def test_oracle_classifier_predicts_as_its_fitted_estimator():
    X, y = make_classification(n_samples=120, n_features=5, random_state=0)
    clean = np.arange(120) >= 20
    oracle = OracleERM(SVC(probability=True, random_state=0)).fit(X, y, clean_mask=clean)
    reference = SVC(probability=True, random_state=0).fit(X[clean], y[clean])
    for method in ("predict", "decision_function", "predict_proba", "predict_log_proba"):
        np.testing.assert_allclose(
            getattr(oracle, method)(X), getattr(reference, method)(X), rtol=1e-10
        )
    np.testing.assert_array_equal(oracle.classes_, [0, 1])
    assert not hasattr(OracleERM(KernelRidge()), "predict_proba")


def test_factories():
    assert isinstance(BASELINES["krr"](alpha=2.0), KernelRidge)
    assert isinstance(BASELINES["krr"](fit_intercept=True), SubquantileKernelRegressor)
    svc = BASELINES["svm"]("classification", alpha=0.25)
    assert isinstance(svc, SVC) and svc.C == 2.0 and svc.gamma == "auto"
    assert isinstance(BASELINES["svm"](), SVR)
    oracle = BASELINES["oracle"]("classification", alpha=3.0)
    assert isinstance(oracle.estimator, SubquantileKernelClassifier)
    assert oracle.estimator.epsilon == 0 and oracle.estimator.alpha == 3.0
    assert isinstance(BASELINES["term"]("classification"), TiltedKernelClassifier)
    assert isinstance(BASELINES["sever"]("classification"), SeverKernelClassifier)
    for name in REGRESSION_ONLY:
        BASELINES[name]("regression")
        with pytest.raises(ValueError, match="regression-only"):
            BASELINES[name]("classification")
    with pytest.raises(ValueError, match="task must be"):
        BASELINES["term"]("ranking")
    with pytest.raises(ValueError, match="fit_intercept"):
        BASELINES["svm"](fit_intercept=False)


KERNEL_ARGUMENTS = {
    "alpha": 0.25,
    "kernel": "poly",
    "gamma": 0.5,
    "degree": 2,
    "coef0": 0.75,
    "kernel_params": {"unused": 1},
    "fit_intercept": False,
}


@pytest.mark.parametrize(
    "cls",
    [
        CRRKernelRegressor,
        STIRKernelRegressor,
        TorrentGDKernelRegressor,
        SeverKernelRegressor,
        SeverKernelClassifier,
        TiltedKernelRegressor,
        TiltedKernelClassifier,
    ],
)
def test_constructors_store_every_kernel_argument_under_its_name(cls):
    """The shared setter of the kernel arguments keeps each under its own name."""
    params = cls(**KERNEL_ARGUMENTS).get_params()
    assert {key: params[key] for key in KERNEL_ARGUMENTS} == KERNEL_ARGUMENTS
    assert params.keys() == set(cls._get_param_names())


@pytest.mark.parametrize(
    "estimator",
    [
        TiltedKernelRegressor(-1.0, alpha=0.5, max_iter=50),
        TiltedKernelClassifier(-1.0, max_iter=50),
        SeverKernelRegressor(0.2, n_rounds=2),
        SeverKernelClassifier(0.05),
        CRRKernelRegressor(0.2, gamma=0.3),
        STIRKernelRegressor(eta=5.0),
        TorrentGDKernelRegressor(0.1, max_iter=50),
        OracleERM(SubquantileKernelRegressor(epsilon=0.0)),
    ],
    ids=lambda estimator: type(estimator).__name__,
)
def test_clone_get_params_and_fit(estimator):
    copy = clone(estimator)
    params, copied = estimator.get_params(), copy.get_params()
    assert params.keys() == copied.keys()
    for key, value in params.items():
        if hasattr(value, "get_params"):  # a nested estimator is cloned, not shared
            assert copied[key] is not value and copied[key].get_params() == value.get_params()
        else:
            assert copied[key] == value
    copy.set_params(**{"alpha": 0.7} if "alpha" in copy.get_params() else {})
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int) if "Classifier" in type(copy).__name__ else X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        predictions = copy.fit(X, y).predict(X)
    assert predictions.shape == (40,)
