"""robustkernel.nn: subquantile_loss and the two-layer Subquantile networks (PyTorch)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustkernel import SubquantileMLPClassifier, SubquantileMLPRegressor

torch = pytest.importorskip("torch", reason="the networks need the optional PyTorch extra")
from robustkernel.nn import subquantile_loss  # noqa: E402


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


# -- subquantile_loss ---------------------------------------------------------------------------


def test_hard_subquantile_is_the_mean_of_the_smallest_losses_and_its_gradient():
    rng = np.random.default_rng(0)
    values = rng.exponential(size=20)
    losses = torch.tensor(values, requires_grad=True)
    value = subquantile_loss(losses, 0.25)  # k = 15
    value.backward()
    smallest = np.sort(values)[:15]
    assert value.item() == pytest.approx(smallest.mean(), rel=1e-12)
    expected = np.where(values <= smallest[-1], 1 / 15, 0.0)
    np.testing.assert_allclose(losses.grad.numpy(), expected, rtol=1e-12)


def test_smoothed_subquantile_weights_rows_by_a_sigmoid_and_tends_to_the_hard_one():
    rng = np.random.default_rng(1)
    values = rng.exponential(size=12)
    t = np.sort(values)[8]  # k = ceil(0.75 * 12) = 9
    s = 3.0
    losses = torch.tensor(values, requires_grad=True)
    subquantile_loss(losses, 0.25, smoothing=s).backward()
    expected = 1.0 / (1.0 + np.exp(-s * (t - values))) / 9  # sigmoid(s (t - l_i)) / k
    np.testing.assert_allclose(losses.grad.numpy(), expected, rtol=1e-10)
    sharp = subquantile_loss(torch.tensor(values), 0.25, smoothing=1e6).item()
    assert sharp == pytest.approx(np.sort(values)[:9].mean(), rel=1e-6)


def test_subquantile_loss_rejects_bad_input():
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        subquantile_loss(np.ones(5), 0.1)
    with pytest.raises(ValueError, match="epsilon"):
        subquantile_loss(torch.ones(5), 0.5)
    with pytest.raises(ValueError, match="1-d"):
        subquantile_loss(torch.ones(5, 2), 0.1)
    with pytest.raises(ValueError, match="smoothing"):
        subquantile_loss(torch.ones(5), 0.1, smoothing=0.0)


# -- the two-layer networks ---------------------------------------------------------------------


def teacher(seed: int, n: int, d: int = 10, hidden: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """A fixed two-layer tanh network (16 hidden units) and its outputs on N(0, I) inputs."""
    weights = np.random.default_rng(1000)
    W = weights.normal(size=(d, hidden)) / np.sqrt(d)
    a = 2.0 * weights.normal(size=hidden) / np.sqrt(hidden)
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X, np.tanh(X @ W) @ a


def contaminated_teacher(seed: int):
    """1000 rows, noise sd 0.1, 20% of the targets replaced by N(5, variance 5)."""
    X, f = teacher(seed, 1000)
    X_test, f_test = teacher(100 + seed, 2000)
    rng = np.random.default_rng(seed)
    y = f + 0.1 * rng.normal(size=1000)
    bad = rng.choice(1000, 200, replace=False)
    y_bad = y.copy()
    y_bad[bad] = rng.normal(5.0, np.sqrt(5.0), size=200)
    clean = np.ones(1000, dtype=bool)
    clean[bad] = False
    return X, y, y_bad, clean, X_test, f_test


@pytest.mark.slow  # statistical, several seconds: make test-slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_network_on_corrupted_targets_is_close_to_its_oracle_and_the_plain_one_is_not():
    X, y, y_bad, clean, X_test, f_test = contaminated_teacher(0)
    settings = {"hidden_units": 16, "max_iter": 3000, "random_state": 0}
    oracle = SubquantileMLPRegressor(epsilon=0.0, **settings).fit(X[clean], y[clean])
    plain = SubquantileMLPRegressor(epsilon=0.0, **settings).fit(X, y_bad)  # same budget
    model = SubquantileMLPRegressor(epsilon=0.2, **settings).fit(X, y_bad)
    oracle_rmse = rmse(oracle.predict(X_test), f_test)
    assert rmse(model.predict(X_test), f_test) <= 1.15 * oracle_rmse
    assert rmse(plain.predict(X_test), f_test) >= 2.0 * oracle_rmse
    assert model.inlier_mask_[~clean].mean() <= 0.05
    assert model.inlier_mask_.sum() == 800
    scores = model.outlier_scores_  # squared residuals in target units
    np.testing.assert_allclose(scores, (model.predict(X) - y_bad) ** 2, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mini_batches_chosen_from_refreshed_full_data_losses():
    X, y, y_bad, clean, X_test, f_test = contaminated_teacher(1)
    settings = {"hidden_units": 16, "batch_size": 64, "learning_rate": 0.01, "max_iter": 200}
    oracle = SubquantileMLPRegressor(epsilon=0.0, random_state=0, **settings).fit(
        X[clean], y[clean]
    )
    model = SubquantileMLPRegressor(epsilon=0.2, random_state=0, **settings).fit(X, y_bad)
    assert model.n_iter_ <= 200
    assert rmse(model.predict(X_test), f_test) <= 1.3 * rmse(oracle.predict(X_test), f_test)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_classifier_leaves_out_labels_flipped_far_from_the_boundary():
    X, f = teacher(2, 800)
    y = (f > 0).astype(int)
    far = np.flatnonzero(np.abs(f) > 0.8)
    flipped = np.random.default_rng(2).choice(far, 120, replace=False)  # 15% of the rows
    y_bad = y.copy()
    y_bad[flipped] = 1 - y_bad[flipped]
    X_test, f_test = teacher(102, 2000)
    y_test = (f_test > 0).astype(int)
    settings = {"hidden_units": 16, "max_iter": 2000, "random_state": 0}
    plain = SubquantileMLPClassifier(epsilon=0.0, **settings).fit(X, y_bad)
    model = SubquantileMLPClassifier(epsilon=0.15, **settings).fit(X, y_bad)
    assert model.inlier_mask_[flipped].mean() <= 0.1
    assert model.score(X_test, y_test) >= plain.score(X_test, y_test) + 0.02
    np.testing.assert_allclose(model.predict_proba(X_test).sum(axis=1), 1.0, rtol=1e-12)


def test_three_classes_and_string_labels():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    labels = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.5, 0.5])]
    model = SubquantileMLPClassifier(epsilon=0.05, hidden_units=8, random_state=0).fit(
        X, labels
    )
    assert model.predict_proba(X).shape == (300, 3)
    assert model.score(X, labels) >= 0.9


def test_same_seed_same_network():
    X, f = teacher(4, 200)
    first = SubquantileMLPRegressor(hidden_units=8, max_iter=100, random_state=7).fit(X, f)
    second = SubquantileMLPRegressor(hidden_units=8, max_iter=100, random_state=7).fit(X, f)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))


def test_clear_error_without_pytorch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="need PyTorch"):
        SubquantileMLPRegressor().fit(np.ones((4, 2)), np.arange(4.0))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(
    [
        SubquantileMLPRegressor(hidden_units=8, max_iter=50, random_state=0),
        SubquantileMLPClassifier(hidden_units=8, max_iter=50, random_state=0),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
