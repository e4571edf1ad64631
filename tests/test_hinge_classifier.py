"""The classifier's hinge losses (a trimmed SVM): against libsvm itself, Platt's sigmoid and
pairwise coupling computed independently, and hostile input (integer weights against repeated
rows: tests/test_properties.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.datasets import load_iris, make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from robustkernel import SubquantileKernelClassifier
from robustkernel._kernel_model.losses import HingeLoss
from robustkernel._kernel_model.pairwise import PairwisePlatt, coupled, ovr_decision
from robustkernel.subquantile._automatic.folds import FLAG_CALIBRATION_C, flag_probabilities
from robustkernel.trimming.label_flags import clearly_fewer_errors

GIVEN = {"alpha": 0.05, "gamma": 0.5, "refine": None}  # C = 1 / (2 alpha) = 10


def blobs(n: int = 90, centers: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return make_blobs(n, centers=centers, cluster_std=1.5, random_state=seed)


@pytest.mark.parametrize("centers", [2, 3, 4])
def test_the_ordinary_fit_is_libsvms(centers):
    """epsilon=0: every pair's SVM is SVC's (C = 1 / (2 alpha), the same gamma), so the
    outputs equal SVC's one-vs-one decision values (ours are positive for the second class of
    a pair; SVC's for the first, except with two classes) and the per-class votes SVC's "ovr"
    decision."""
    X, y = blobs(centers=centers)
    model = SubquantileKernelClassifier(0.0, loss="hinge", **GIVEN).fit(X, y)
    svc = SVC(C=10.0, gamma=0.5, decision_function_shape="ovo").fit(X, y)
    X_test = np.random.default_rng(1).normal(scale=4.0, size=(50, 2))
    ovo = svc.decision_function(X_test).reshape(50, -1)
    sign = 1.0 if centers == 2 else -1.0
    np.testing.assert_allclose(model._decision(X_test), sign * ovo, atol=1e-6)
    svc.set_params(decision_function_shape="ovr")
    if centers > 2:
        np.testing.assert_allclose(
            ovr_decision(model._decision(X_test)), svc.decision_function(X_test), atol=1e-6
        )
    assert model.loss_ == "hinge" and model.inlier_mask_.all()


def test_a_trimmed_fit_is_the_svm_of_its_kept_rows_and_keeps_its_smallest_losses():
    """At a given epsilon the fit is a fixed point: the SVM refitted on the kept rows is the
    model, and no dropped row has a smaller hinge loss than the largest kept one of its class
    beyond the class floors (checked against SVC and the loss written out by hand)."""
    X, y = make_blobs(120, centers=2, cluster_std=1.0, random_state=3)
    wrong = np.arange(0, 120, 8)
    y[wrong] = 1 - y[wrong]
    model = SubquantileKernelClassifier(0.15, loss="hinge", **GIVEN).fit(X, y)
    kept = model.inlier_mask_
    assert kept.sum() == np.ceil(0.85 * 120)
    svc = SVC(C=10.0, gamma=0.5).fit(X[kept], y[kept])
    np.testing.assert_allclose(model._decision(X)[:, 0], svc.decision_function(X), atol=1e-6)
    losses = np.maximum(0.0, 1.0 - np.where(y == 1, 1.0, -1.0) * svc.decision_function(X))
    assert losses[~kept].min() >= losses[kept].max() - 1e-6
    assert np.isin(wrong, np.flatnonzero(~kept)).mean() >= 0.9


def test_platt_is_the_cross_entropy_fit_of_smoothed_targets():
    """Platt's (A, B) against scikit-learn's unpenalized logistic regression on the same
    smoothed targets (each row twice, weighted t and 1 - t)."""
    rng = np.random.default_rng(0)
    f = rng.normal(size=200)
    labels = (f + rng.normal(scale=0.8, size=200) > 0.3).astype(int)
    platt = PairwisePlatt.fit(f[:, None], labels, np.ones(200))
    positives, negatives = labels.sum(), (1 - labels).sum()
    t = np.where(labels == 1, (positives + 1) / (positives + 2), 1 / (negatives + 2))
    reference = LogisticRegression(C=1e12, tol=1e-10, max_iter=10_000).fit(
        np.r_[f, f][:, None], np.r_[np.ones(200), np.zeros(200)], sample_weight=np.r_[t, 1 - t]
    )
    # P(positive) = 1 / (1 + exp(A f + B)) = sigmoid(coef f + intercept)
    assert platt.A[0] == pytest.approx(-reference.coef_[0, 0], rel=1e-5)
    assert platt.B[0] == pytest.approx(-reference.intercept_[0], rel=1e-5, abs=1e-7)


def test_coupling_recovers_consistent_pairwise_probabilities_and_minimizes_its_objective():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=20)
    first, second = np.triu_indices(4, k=1)
    R = p[:, second] / (p[:, first] + p[:, second])  # P(b | a or b) of the true p
    np.testing.assert_allclose(coupled(R), p, atol=1e-9)
    noisy = np.clip(R + rng.normal(scale=0.1, size=R.shape), 0.01, 0.99)
    for row, r in zip(coupled(noisy), noisy, strict=False):
        pairwise = np.zeros((4, 4))
        pairwise[second, first], pairwise[first, second] = r, 1 - r

        def objective(q, pairwise=pairwise):
            return sum(
                (pairwise[s, t] * q[t] - pairwise[t, s] * q[s]) ** 2
                for s in range(4) for t in range(4) if s != t
            )

        best = minimize(
            objective, np.full(4, 0.25), method="SLSQP", bounds=[(0, 1)] * 4,
            constraints={"type": "eq", "fun": lambda q: q.sum() - 1}, options={"ftol": 1e-14},
        )
        np.testing.assert_allclose(row, best.x, atol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_flag_probabilities_of_the_hinge_are_a_multinomial_fit_on_the_votes(n_classes):
    """The hinge's label-noise flags read class probabilities from a multinomial logistic
    regression of the labels on the per-class votes of the out-of-fold outputs (two classes:
    on the one output), rows of weight 0 left out: checked against the penalized weighted
    cross-entropy minimized by scipy."""
    rng = np.random.default_rng(n_classes)
    n_pairs = n_classes * (n_classes - 1) // 2
    labels = rng.integers(0, n_classes, size=150)
    first, second = np.triu_indices(n_classes, k=1)
    F = rng.normal(size=(150, n_pairs)) + 1.5 * (  # leaning to the given class of its pairs
        (labels[:, None] == second).astype(float) - (labels[:, None] == first)
    )
    weights = rng.uniform(0.5, 2.0, size=150)
    weights[:20] = 0.0
    P = flag_probabilities(HingeLoss.named("hinge"), F, labels, weights)
    Z = ovr_decision(F) if n_classes > 2 else F
    K, d = n_classes, Z.shape[1]
    kept = weights > 0

    def objective(theta):
        if K == 2:  # one logit column: sklearn's binary parametrization
            logits = np.column_stack([np.zeros(150), Z @ theta[:d] + theta[d]])
            penalty = theta[:d] @ theta[:d]
        else:
            W, b = theta[: d * K].reshape(d, K), theta[d * K :]
            logits, penalty = Z @ W + b, np.sum(W**2)
        log_p = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        return -weights[kept] @ log_p[kept, labels[kept]] + penalty / (2 * FLAG_CALIBRATION_C)

    size = d + 1 if K == 2 else d * K + K
    theta = minimize(objective, np.zeros(size), method="BFGS", options={"gtol": 1e-9}).x
    if K == 2:
        logits = np.column_stack([np.zeros(150), Z @ theta[:d] + theta[d]])
    else:
        logits = Z @ theta[: d * K].reshape(d, K) + theta[d * K :]
    expected = np.exp(logits - np.logaddexp.reduce(logits, axis=1, keepdims=True))
    # at scikit-learn's tolerance (1e-4) the weighted cross-entropy is within 3% of the
    # optimum's, the probabilities within 0.1 and their argmax the same on 98% of the rows (the
    # votes are nearly collinear: the regression converges slowly)
    cross_entropy = [-weights[kept] @ np.log(Q[kept, labels[kept]]) for Q in (P, expected)]
    assert cross_entropy[0] == pytest.approx(cross_entropy[1], rel=0.03)
    np.testing.assert_allclose(P, expected, atol=0.1)
    assert np.mean(np.argmax(P, axis=1) == np.argmax(expected, axis=1)) >= 0.98


def test_hinge_loss_per_row_sums_its_classes_pairs():
    F = np.array([[0.5, -2.0, 3.0]])  # pairs (0, 1), (0, 2), (1, 2) of 3 classes
    one_hot = np.eye(3)
    hinge, squared = HingeLoss.named("hinge"), HingeLoss.named("squared_hinge")
    # class 0: pairs (0,1) and (0,2) with sign -1: max(0, 1 + 0.5) + max(0, 1 - 2)
    assert hinge.loss(F, one_hot[[0]])[0] == pytest.approx(1.5)
    # class 2: pairs (0,2) and (1,2) with sign +1: max(0, 1 + 2) + max(0, 1 - 3)
    assert hinge.loss(F, one_hot[[2]])[0] == pytest.approx(3.0)
    assert squared.loss(F, one_hot[[2]])[0] == pytest.approx(9.0)
    step = 1e-6 * np.eye(3)
    numeric = [
        (squared.loss(F + e, one_hot[[1]]) - squared.loss(F - e, one_hot[[1]]))[0] / 2e-6
        for e in step
    ]
    np.testing.assert_allclose(squared.gradient(F, one_hot[[1]])[0], numeric, atol=1e-6)


def test_probabilities_decision_and_predict_agree():
    X, y = load_iris(return_X_y=True)
    model = SubquantileKernelClassifier(loss="hinge", random_state=0).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    predicted = model.predict(X)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], predicted)
    np.testing.assert_array_equal(model.classes_[model.decision_function(X).argmax(1)], predicted)
    assert model.probA_.shape == (3,) and model.score(X, y) > 0.9


def test_one_standard_error_rule_between_two_losses():
    never = np.zeros(100, bool)
    # fewer errors on 10 rows of 100: mean difference -0.1, standard error sqrt(0.09 / 100)
    assert clearly_fewer_errors(never, np.r_[np.ones(10, bool), never[10:]], np.ones(100))
    # fewer on 2 rows, more on 1: mean -0.01, standard error sqrt(0.0299 / 100) = 0.0173
    default_wrong = np.r_[True, True, never[2:]]
    candidate_wrong = np.r_[False, False, True, never[3:]]
    assert not clearly_fewer_errors(candidate_wrong, default_wrong, np.ones(100))
    assert not clearly_fewer_errors(np.r_[True, never[1:]], never, np.ones(100))
    assert not clearly_fewer_errors(never[:0], never[:0], np.ones(0))
    # weights: the 10 rows of fewer errors weigh nothing
    weights = np.r_[np.zeros(10), np.ones(90)]
    assert not clearly_fewer_errors(never, np.r_[np.ones(10, bool), never[10:]], weights)


def test_loss_auto_reports_its_choice_and_random_labels_flag_nothing():
    X, y = blobs(150, centers=3)
    y[::7] = (y[::7] + 1) % 3
    assert SubquantileKernelClassifier().fit(X, y).loss_ == "log"  # the default
    model = SubquantileKernelClassifier(loss="auto").fit(X, y)
    assert model.loss_ in ("hinge", "log")
    chosen = SubquantileKernelClassifier(loss=model.loss_).fit(X, y)  # the same fit
    np.testing.assert_array_equal(model.inlier_mask_, chosen.inlier_mask_)
    np.testing.assert_allclose(model.predict_proba(X), chosen.predict_proba(X), atol=1e-12)
    rng = np.random.RandomState(7)
    with pytest.warns(UserWarning, match="no evidence about the labels"):
        noise = SubquantileKernelClassifier(loss="hinge").fit(
            rng.normal(size=(300, 5)), rng.randint(0, 3, 300)
        )
    assert noise.epsilon_ == 0.0 and noise.inlier_mask_.all()


@pytest.mark.parametrize(("centers", "expected"), [(2, "log"), (3, "hinge")])
def test_loss_auto_sides_with_the_log_loss_for_two_classes_and_the_hinge_for_more(
    centers, expected
):
    """Separated classes, a few flipped labels: both losses flag the flips and make no
    out-of-fold error on the rows both keep, so neither is clearly better and "auto" keeps its
    side: the log loss for two classes, the hinge for three."""
    X, y = make_blobs(150, centers=centers, cluster_std=0.5, center_box=(-8, 8), random_state=2)
    y[::15] = (y[::15] + 1) % centers
    assert SubquantileKernelClassifier(loss="auto").fit(X, y).loss_ == expected


def test_string_labels_precomputed_kernels_and_features():
    X, y = blobs(90, centers=3)
    labels = np.array(["cat", "dog", "eel"])[y]
    model = SubquantileKernelClassifier(0.1, loss="hinge", **GIVEN).fit(X, labels)
    assert set(model.predict(X)) <= set(labels)
    K = rbf_kernel(X, gamma=0.5)
    precomputed = SubquantileKernelClassifier(
        0.1, loss="hinge", kernel="precomputed", alpha=0.05, refine=None
    ).fit(K, labels)
    np.testing.assert_array_equal(precomputed.predict(K), model.predict(X))
    exact = SubquantileKernelClassifier(loss="hinge", random_state=0).fit(X, labels)
    for loss in ("hinge", "squared_hinge"):
        features = SubquantileKernelClassifier(loss=loss, n_components=60, random_state=0)
        features.fit(X, labels)
        assert features.score(X, labels) >= exact.score(X, labels) - 0.05
        assert features.coef_.shape == (60, 3)


def test_one_row_classes_and_fifty_classes():
    X, y = blobs(60, centers=2)
    y[0] = 2  # a class of one row
    model = SubquantileKernelClassifier(0.1, loss="hinge", **GIVEN).fit(X, y)
    assert np.all(np.isfinite(model.predict_proba(X)))
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=20.0, size=(50, 2))
    many = np.repeat(np.arange(50), 4)
    Xm = centers[many] + rng.normal(size=(200, 2))
    fifty = SubquantileKernelClassifier(0.0, loss="hinge", alpha=0.05, gamma=0.1).fit(Xm, many)
    assert fifty.probA_.shape == (50 * 49 // 2,) and fifty.score(Xm, many) > 0.9


@pytest.mark.parametrize(
    "params, match",
    [
        ({"loss": "hinge", "solver": "gd"}, "solver='gd'"),
        ({"loss": "hinge", "fit_intercept": False}, "fit_intercept=False"),
        ({"loss": "squared_hinge", "radius": 1.0}, "radius=1.0"),
        ({"loss": "hinge", "device": "cpu", "refine": None}, "device='cpu'"),
    ],
)
def test_options_the_hinge_losses_cannot_run_are_refused(params, match):
    X, y = blobs(30, centers=2)
    with pytest.raises(ValueError, match=match):
        SubquantileKernelClassifier(0.1, alpha=1.0, gamma=0.5, **params).fit(X, y)


def test_bad_loss_values_name_the_parameter():
    X, y = blobs(30, centers=2)
    for value in ("svm", 1, None):
        with pytest.raises(ValueError, match="'loss' parameter"):
            SubquantileKernelClassifier(loss=value).fit(X, y)


def test_non_finite_rows_and_indefinite_kernels_are_refused():
    X, y = blobs(30, centers=2)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[3, 0] = bad
        with pytest.raises(ValueError, match=r"NaN|infinity"):
            SubquantileKernelClassifier(loss="hinge").fit(Xb, y)
    K = np.eye(30)
    K[0, 1] = K[1, 0] = 5.0
    with pytest.raises(ValueError, match="not positive definite"):
        SubquantileKernelClassifier(loss="hinge", kernel="precomputed").fit(K, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        # a given gamma keeps the units given, where the kernel overflows
        with pytest.raises(ValueError, match="Scale the features"):
            SubquantileKernelClassifier(loss="hinge", gamma=0.5).fit(X * 1e300, y)
        # gamma="auto" fits in units of each column's spread: the same fit as on X
        huge = SubquantileKernelClassifier(loss="hinge").fit(X * 1e300, y)
    np.testing.assert_array_equal(huge.predict(X * 1e300), clone(huge).fit(X, y).predict(X))
