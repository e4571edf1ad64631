"""alpha="auto" / gamma="auto": the closed-form leave-one-out residuals and the classifier's
out-of-fold outputs against refits, and the choice against an oracle tuned on the clean rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, KFold

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel._kernel_model.losses import BinaryLogLoss, SoftmaxLoss, SquaredLoss
from robustkernel.corruption import contaminated_split
from robustkernel.subquantile._automatic import folds as _folds
from robustkernel.subquantile._automatic.hyperparameters import (
    honest_residuals,
    robust_gamma,
    trimmed_mean,
)
from robustkernel.subquantile._solve.objective import FeatureProblem, Problem


def _ridge_with_intercept(K, y, rows, alpha):
    """Kernel ridge with an unpenalized intercept on ``rows``, by its bordered linear system."""
    n = rows.sum()
    A = np.block(
        [
            [K[np.ix_(rows, rows)] + alpha * np.eye(n), np.ones((n, 1))],
            [np.ones((1, n)), np.zeros((1, 1))],
        ]
    )
    solution = np.linalg.solve(A, np.r_[y[rows], 0.0])
    return K[:, rows] @ solution[:-1] + solution[-1]


def test_honest_residuals_are_leave_one_out_refits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    K = rbf_kernel(X, gamma=0.7)
    kept = rng.uniform(size=30) < 0.7
    alphas = [1e-3, 0.1, 3.0]
    problem = Problem(K=K, Y=y[:, None], loss=SquaredLoss(), alpha=1.0, k=21, fit_intercept=True)
    scores = honest_residuals(problem, kept, alphas)
    for row, alpha in enumerate(alphas):
        expected = np.empty(30)
        fitted = _ridge_with_intercept(K, y, kept, alpha)
        expected[~kept] = (y - fitted)[~kept] ** 2
        for i in np.flatnonzero(kept):
            without = kept.copy()
            without[i] = False
            expected[i] = (y[i] - _ridge_with_intercept(K, y, without, alpha)[i]) ** 2
        np.testing.assert_allclose(scores[row], expected, rtol=1e-7)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_feature_honest_residuals_are_leave_one_out_refits(fit_intercept):
    """Ridge on features (penalty on the weights only) refitted without each kept row; with
    ``counted``, the same values for the counted rows alone (kept and trimmed ones)."""
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(40, 6)).astype(np.float32)
    Y = rng.normal(size=(40, 2))
    kept = rng.uniform(size=40) < 0.7
    alphas = [1e-2, 1.0]
    problem = FeatureProblem(
        Z=Z, Y=Y, loss=SquaredLoss(), alpha=1.0, k=28, fit_intercept=fit_intercept
    )
    scores = honest_residuals(problem, kept, alphas)
    counted = rng.uniform(size=40) < 0.4
    assert (counted & kept).any() and (counted & ~kept).any()
    counted_scores = honest_residuals(problem, kept, alphas, counted)
    design = np.hstack([np.ones((40, 1)), Z]) if fit_intercept else Z.astype(float)
    for row, alpha in enumerate(alphas):
        penalty = alpha * np.eye(design.shape[1])
        if fit_intercept:
            penalty[0, 0] = 0.0

        def fit(rows, penalty=penalty):
            A = design[rows].T @ design[rows] + penalty
            return design @ np.linalg.solve(A, design[rows].T @ Y[rows])

        expected = np.sum((Y - fit(kept)) ** 2, axis=1)
        for i in np.flatnonzero(kept):
            without = kept.copy()
            without[i] = False
            expected[i] = np.sum((Y[i] - fit(without)[i]) ** 2)
        np.testing.assert_allclose(scores[row], expected, rtol=1e-6)
        np.testing.assert_allclose(counted_scores[row], expected[counted], rtol=1e-6)


def test_trimmed_mean_drops_the_largest():
    values = np.array([[1.0, 2.0, 3.0, 100.0]])
    np.testing.assert_allclose(trimmed_mean(values, 0.25), [2.0])


def test_robust_gamma_ignores_rows_moved_far_away_also_on_binary_features():
    # Standard-normal features and two 0/1 features with a 10% minority (MAD 0); then 20% of the
    # rows x -> 100 x. Clean: 1 / (n_features sigma^2) with sigma = 1 (the binary features take
    # the others' scale); the moved rows change it by less than a factor 2 (the MAD of a normal
    # feature grows by a third when 20% of its values are far away; with the binary features'
    # standard deviations gamma fell 400-fold).
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(500, 4)), (rng.random((500, 2)) < 0.1).astype(float)])
    assert robust_gamma(X) == pytest.approx(1.0 / 6.0, rel=0.15)
    X[:100] *= 100.0
    assert 1.0 / 12.0 < robust_gamma(X) < 1.0 / 6.0


def _generated(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(600, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=600)
    return X, y


@pytest.mark.parametrize(("kind", "eps"), [("label", 0.0), ("label", 0.2), ("label_feature", 0.2)])
def test_auto_alpha_and_gamma_are_near_an_oracle_tuned_on_clean_rows(kind, eps):
    X, y = _generated(0)
    split = contaminated_split(X, y, kind, eps, random_state=0)
    grid = {"alpha": np.logspace(-3, 1, 5), "gamma": np.array([0.25, 0.5, 1, 2, 4]) / 5}
    folds = KFold(5, shuffle=True, random_state=0)
    oracle = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=folds)
    oracle.fit(split.X_train_clean, split.y_train_clean)

    def rmse(model):
        return np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2))

    # the rbf kernel's selection (a trimmed fit per gamma); the defaults below choose the kernel
    auto = SubquantileKernelRegressor(epsilon=eps, kernel="rbf", alpha="auto", gamma="auto")
    auto.fit(split.X_train, split.y_train)
    fixed = SubquantileKernelRegressor(epsilon=eps, kernel="rbf", alpha=1.0, gamma=None)
    fixed.fit(split.X_train, split.y_train)
    assert rmse(auto) <= 1.25 * rmse(oracle)
    assert rmse(auto) < 0.6 * rmse(fixed)  # the defaults alpha = 1, gamma = 1/p misfit here
    assert auto.hyperparameter_scores_.shape == (7, 11)
    no_knobs = SubquantileKernelRegressor(epsilon="auto", alpha="auto", gamma="auto")
    no_knobs.fit(split.X_train, split.y_train)
    assert abs(no_knobs.epsilon_ - eps) < 0.03
    assert rmse(no_knobs) <= 1.25 * rmse(oracle)


def test_auto_with_features_is_near_the_exact_choice():
    """n_components: the same selection on Nystroem features (all rows as landmarks here)."""
    X, y = _generated(2)
    split = contaminated_split(X[:300], y[:300], "label", 0.2, random_state=0)
    exact = SubquantileKernelRegressor(epsilon=0.2).fit(split.X_train, split.y_train)
    features = SubquantileKernelRegressor(epsilon=0.2, n_components=240, random_state=0)
    features.fit(split.X_train, split.y_train)
    assert features.hyperparameter_scores_.shape == (7, 11)

    def rmse(model):
        return np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2))

    assert rmse(features) <= 1.05 * rmse(exact)
    assert np.mean(features.inlier_mask_ == exact.inlier_mask_) > 0.97


def test_kernels_without_gamma_only_choose_alpha():
    X, y = _generated(3)
    y = X @ np.arange(1.0, 6.0) + 0.1 * y
    model = SubquantileKernelRegressor(kernel="linear").fit(X[:200], y[:200])
    assert model.gamma_ is None and model.hyperparameter_scores_.shape == (1, 11)
    K = X[:200] @ X[:200].T
    precomputed = SubquantileKernelRegressor(kernel="precomputed").fit(K, y[:200])
    assert precomputed.alpha_ == model.alpha_
    np.testing.assert_allclose(precomputed.dual_coef_, model.dual_coef_, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("space", ["kernel", "features"])
def test_out_of_fold_outputs_are_logistic_regressions_on_the_other_folds(
    monkeypatch, n_classes, space
):
    """Each fold's rows are predicted by sklearn's LogisticRegression fitted on the kept rows
    of the other folds (C = 1 / (2 alpha)); the linear kernel K = Z Z^T gives the same model."""
    monkeypatch.setattr(_folds, "FOLD_TOL", 1e-10)
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(90, 4))
    labels = np.argmax(Z[:, :n_classes] + 0.5 * rng.normal(size=(90, n_classes)), axis=1)
    if n_classes == 2:
        Y, loss = labels[:, None].astype(float), BinaryLogLoss()
    else:
        Y, loss = np.eye(n_classes)[labels], SoftmaxLoss()
    kept = rng.uniform(size=90) < 0.8
    alphas = [0.05, 2.0]
    common = {"Y": Y, "loss": loss, "alpha": 1.0, "k": 70, "fit_intercept": True}
    if space == "kernel":
        problem = Problem(K=Z @ Z.T, **common)
    else:
        problem = FeatureProblem(Z=Z, **common)
    outputs = _folds.out_of_fold_outputs(problem, kept, alphas)
    folds = _folds.stratified_folds(labels, 3)
    for position, alpha in enumerate(alphas):
        for fold in range(3):
            fitted = kept & (folds != fold)
            reference = LogisticRegression(C=1.0 / (2.0 * alpha), tol=1e-12, max_iter=10000)
            reference.fit(Z[fitted], labels[fitted])
            expected = reference.decision_function(Z[folds == fold])
            actual = outputs[position, folds == fold]
            if n_classes == 2:
                np.testing.assert_allclose(actual[:, 0], expected, atol=1e-5)
            else:  # softmax logits are defined up to a constant per row
                np.testing.assert_allclose(
                    actual - actual.mean(axis=1, keepdims=True),
                    expected - expected.mean(axis=1, keepdims=True),
                    atol=1e-5,
                )


def test_stratified_folds_deal_every_label_evenly():
    labels = np.repeat([0, 1, 2], [7, 3, 11])[np.random.default_rng(0).permutation(21)]
    folds = _folds.stratified_folds(labels, 3)
    for label in range(3):
        counts = np.bincount(folds[labels == label], minlength=3)
        assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize(
    "loss, shape, alphas",
    [("log", (3, 3), (0.01, 0.1, 1.0)), ("hinge", (5, 4), (0.005, 0.05, 0.5, 5.0))],
)
def test_the_classifier_chooses_alpha_and_gamma_out_of_fold(loss, shape, alphas):
    """Digits (480 training rows), 20% random wrong classes: the chosen pair is one of the
    loss's grid (hinge: C = 1 / (2 alpha) = 0.1 ... 100), and the fit beats the former rule
    (alpha = 1, the robust "scale" gamma) on clean test rows."""
    X, y = load_digits(return_X_y=True)
    rows = np.random.default_rng(0).permutation(y.size)[:600]
    split = contaminated_split(X[rows] / 16.0, y[rows], "wrong_class", 0.2, random_state=0)
    model = SubquantileKernelClassifier(loss=loss).fit(split.X_train, split.y_train)
    assert model.loss_ == loss
    assert model.hyperparameter_scores_.shape == shape
    assert model.alpha_ in alphas
    rule = SubquantileKernelClassifier(alpha=1.0, gamma=robust_gamma(split.X_train))
    rule.fit(split.X_train, split.y_train)
    assert model.score(split.X_test, split.y_test) > rule.score(split.X_test, split.y_test)
    assert abs(model.epsilon_ - 0.2) < 0.05


def test_a_fixed_fit_after_an_auto_fit_forgets_the_choice():
    X, y = _generated(1)
    model = SubquantileKernelRegressor().fit(X[:200], y[:200])
    model.set_params(alpha=1.0, gamma=0.3).fit(X[:200], y[:200])
    assert model.gamma_ == 0.3 and model.alpha_ == 1.0
    assert not hasattr(model, "hyperparameter_scores_")
    reference = SubquantileKernelRegressor(alpha=1.0, gamma=0.3).fit(X[:200], y[:200])
    np.testing.assert_array_equal(model.predict(X[200:]), reference.predict(X[200:]))
