"""Forward loss correction (Patrini et al. 2017) in the classifier's label-noise route: the loss
against finite differences and the plain log loss, the rule and the transition matrix against
hand-built joints, and the fitted model against an independent minimizer of its objective."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import approx_fprime, minimize
from scipy.special import softmax
from sklearn.datasets import make_blobs
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from robustkernel import SubquantileKernelClassifier
from robustkernel._kernel_model.losses import ForwardCorrectedLoss
from robustkernel.trimming.label_flags import (
    flip_shares,
    flips_into_one_class,
    transition_matrix,
)


def encoded(labels: np.ndarray, n_classes: int) -> np.ndarray:
    """The classifier's encoding: a {0, 1} column for two classes, else one-hot rows."""
    if n_classes == 2:
        return labels[:, None].astype(float)
    return np.eye(n_classes)[labels]


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_forward_loss_gradient_against_finite_differences(n_classes):
    rng = np.random.default_rng(n_classes)
    T = rng.dirichlet(np.full(n_classes, 2.0), size=n_classes)
    loss = ForwardCorrectedLoss(transition=T)
    columns = 1 if n_classes == 2 else n_classes
    F = rng.normal(scale=2.0, size=(7, columns))
    Y = encoded(rng.integers(0, n_classes, 7), n_classes)
    numeric = approx_fprime(
        F.ravel(), lambda f: loss.loss(f.reshape(F.shape), Y).sum(), 1e-7
    ).reshape(F.shape)
    np.testing.assert_allclose(loss.gradient(F, Y), numeric, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_forward_loss_is_minus_log_of_the_given_labels_probability(n_classes):
    """-log sum_j p_j T[j, y] written out row by row, and with T = I the log loss."""
    rng = np.random.default_rng(0)
    T = rng.dirichlet(np.ones(n_classes), size=n_classes)
    columns = 1 if n_classes == 2 else n_classes
    F = rng.normal(size=(6, columns))
    labels = rng.integers(0, n_classes, 6)
    Y = encoded(labels, n_classes)
    p = np.c_[1 - 1 / (1 + np.exp(-F)), 1 / (1 + np.exp(-F))] if columns == 1 else softmax(F, 1)
    expected = [-np.log(sum(p[i, j] * T[j, labels[i]] for j in range(n_classes)))
                for i in range(6)]
    np.testing.assert_allclose(ForwardCorrectedLoss(transition=T).loss(F, Y), expected)
    plain = -np.log(p[np.arange(6), labels])
    identity = ForwardCorrectedLoss(transition=np.eye(n_classes))
    np.testing.assert_allclose(identity.loss(F, Y), plain, rtol=1e-12)


def test_the_rule_reads_where_the_flips_land():
    diagonal = np.diag([0.3, 0.3, 0.2])
    into_zero = diagonal.copy()
    into_zero[0, 1:] = 0.1  # given 0, true 1 and 2: every flip lands in class 0
    assert flips_into_one_class(into_zero)
    assert flip_shares(into_zero) == pytest.approx((0.2, 1.0))
    spread = diagonal + (np.ones((3, 3)) - np.eye(3)) * 0.2 / 6
    assert not flips_into_one_class(spread)
    assert flip_shares(spread) == pytest.approx((0.2, 1 / 3))
    assert flip_shares(np.diag([0.5, 0.5])) == (0.0, 0.0)
    assert not flips_into_one_class(np.diag([0.5, 0.5]) + np.array([[0, 0.1], [0, 0]]))
    assert not flips_into_one_class(np.diag([0.2, 0.3, 0.5]))  # no flips
    few = np.diag([0.4, 0.3, 0.2])
    few[0, 1:] = 0.05  # every flip into class 0, but 10% of the rows: the flags suffice
    assert not flips_into_one_class(few)


def test_transition_matrix_of_a_joint_written_by_hand():
    Q = np.array([[0.30, 0.10, 0.05], [0.0, 0.20, 0.0], [0.0, 0.0, 0.35]])  # Q[given, true]
    T = transition_matrix(Q)  # T[true, given]
    np.testing.assert_allclose(T[1], [0.10 / 0.30, 0.20 / 0.30, 0.0])
    np.testing.assert_allclose(T[2], [0.05 / 0.40, 0.0, 0.35 / 0.40])
    np.testing.assert_allclose(T[0], [1.0, 0.0, 0.0])
    Q[:, 2] = 0.0  # no row estimated in class 2: no flips from it
    np.testing.assert_allclose(transition_matrix(Q)[2], [0.0, 0.0, 1.0])


def blobs(seed: int, flips: str) -> tuple[np.ndarray, ...]:
    """Four overlapping classes, 300 training rows of which 90 get a wrong label: all of them
    class 0 (``"one"``), or another class drawn at random (``"random"``); 400 clean test rows."""
    X, y = make_blobs(700, centers=4, cluster_std=2.5, random_state=seed)
    X_train, y_train, X_test, y_test = X[:300], y[:300].copy(), X[300:], y[300:]
    rng = np.random.default_rng(seed)
    if flips == "one":
        rows = rng.choice(np.flatnonzero(y_train != 0), 90, replace=False)
        y_train[rows] = 0
    else:
        rows = rng.choice(300, 90, replace=False)
        y_train[rows] = (y_train[rows] + rng.integers(1, 4, 90)) % 4
    return X_train, y_train, X_test, y_test, rows


def test_flips_into_one_class_are_corrected_on_every_row():
    X, y, X_test, y_test, flipped = blobs(1, "one")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubquantileKernelClassifier().fit(X, y)
    T = model.noise_transition_
    assert T is not None and T.shape == (4, 4)
    np.testing.assert_allclose(T.sum(axis=1), 1.0)
    # 90 of the 225 rows of classes 1-3 were moved to class 0: T[i, 0] = 0.4 for i >= 1
    assert np.all(np.abs(T[1:, 0] - 0.4) < 0.15), T[:, 0]
    assert np.all(model.row_weights_ == 1.0)  # every row in the fit ...
    assert np.mean(~model.inlier_mask_[flipped]) > 0.3  # ... and the suspects reported
    clean = np.setdiff1d(np.arange(y.size), flipped)
    accuracy = model.score(X_test, y_test)
    # near SVC fitted on the clean rows alone (an oracle), far above SVC on every row
    assert accuracy >= SVC().fit(X[clean], y[clean]).score(X_test, y_test) - 0.03
    assert accuracy >= SVC().fit(X, y).score(X_test, y_test) + 0.2


def test_random_flips_and_two_classes_are_not_corrected():
    X, y = blobs(2, "random")[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert SubquantileKernelClassifier().fit(X, y).noise_transition_ is None
        binary = np.where(y == 0, 0, 1)
        binary[:60] = 0  # every flip into class 0
        assert SubquantileKernelClassifier().fit(X, binary).noise_transition_ is None


@pytest.mark.parametrize("seed", [1, 3])
def test_corrected_fit_minimizes_its_objective(seed):
    """The objective sum_i -log (T^T softmax(K A + b)_i)_(y_i) + alpha tr(A^T K A) at the fit's
    gamma, alpha and T, written out: the fit's (A, b) is no worse than an independent L-BFGS
    minimizer's from zero, and that minimizer started at the fit moves neither the objective
    nor the probabilities (the loss is not convex in the logits, and at a small gamma the
    minimizer from zero stops at its evaluation limit above the fit: seed 3, 206.12 against
    203.46)."""
    X, y, X_test = blobs(seed, "one")[:3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubquantileKernelClassifier().fit(X, y)
    T, alpha = model.noise_transition_, model.alpha_
    assert T is not None
    # the fit's units: each column over its standard deviation (gamma="auto")
    Z = (X - model.feature_center_) / model.feature_scale_
    Z_test = (X_test - model.feature_center_) / model.feature_scale_
    K = rbf_kernel(Z, Z, gamma=model.gamma_)
    n, C = K.shape[0], T.shape[0]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        A, b = theta[: n * C].reshape(n, C), theta[n * C:]
        KA = K @ A
        P = softmax(KA + b, axis=1)
        given = (P @ T)[np.arange(n), y]
        dP = -T[:, y].T / given[:, None]
        dF = P * (dP - np.sum(P * dP, axis=1, keepdims=True))
        value = -np.log(given).sum() + alpha * np.sum(A * KA)
        return value, np.concatenate([(K @ dF + 2 * alpha * KA).ravel(), dF.sum(axis=0)])

    options = {"maxiter": 20000, "gtol": 1e-9, "ftol": 1e-15}
    fitted = np.r_[model.dual_coef_.ravel(), model.intercept_]
    value = objective(fitted)[0]
    independent = minimize(objective, np.zeros(n * C + C), jac=True, method="L-BFGS-B",
                           options=options)
    assert value <= independent.fun + 1e-6 * abs(independent.fun)
    polished = minimize(objective, fitted, jac=True, method="L-BFGS-B", options=options)
    assert polished.fun >= value - 1e-5 * abs(value)
    A, b = polished.x[: n * C].reshape(n, C), polished.x[n * C:]
    expected = softmax(rbf_kernel(Z_test, Z, gamma=model.gamma_) @ A + b, axis=1)
    np.testing.assert_allclose(model.predict_proba(X_test), expected, atol=2e-3)


def test_string_labels_and_a_precomputed_kernel_take_the_same_route():
    """The corrected route with string labels, and on the rbf kernel matrix given as
    kernel="precomputed" at the fit's gamma: the same transition matrix and predictions."""
    X, y, X_test = blobs(1, "one")[:3]
    names = np.array(["zero", "one", "two", "three"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SubquantileKernelClassifier().fit(X, names[y])
        reference = SubquantileKernelClassifier().fit(X, y)
    assert model.noise_transition_ is not None
    # classes_ are sorted: "one", "three", "two", "zero" = 1, 3, 2, 0
    order = [1, 3, 2, 0]
    np.testing.assert_allclose(
        model.noise_transition_, reference.noise_transition_[np.ix_(order, order)], atol=1e-12
    )
    np.testing.assert_array_equal(model.predict(X_test), names[reference.predict(X_test)])
    # the precomputed kernel has one gamma: the rbf fit at that gamma is the one to match
    gamma = reference.gamma_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at_gamma = SubquantileKernelClassifier(gamma=gamma).fit(X, y)
        precomputed = SubquantileKernelClassifier(kernel="precomputed").fit(
            rbf_kernel(X, X, gamma=gamma), y
        )
    assert at_gamma.noise_transition_ is not None
    np.testing.assert_allclose(
        precomputed.noise_transition_, at_gamma.noise_transition_, atol=1e-12
    )
    np.testing.assert_allclose(
        precomputed.predict_proba(rbf_kernel(X_test, X, gamma=gamma)),
        at_gamma.predict_proba(X_test),
        atol=1e-8,
    )
