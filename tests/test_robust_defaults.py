"""What a user gets with no knobs: bounded influence of single rows and near-oracle fits.

The defaults are epsilon="auto", alpha="auto", gamma="auto" and refine="auto" ("reject" with
epsilon="auto"); the oracle of each test is an independent scikit-learn fit on the clean rows
only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler
from test_refine import _diabetes_scaled_rows

from conftest import run_cli
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.corruption import contaminated_split
from robustkernel.subquantile._solve.objective import ClassFloors


def _rmse(model, X, y):
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_a_given_epsilon_is_the_fraction_trimmed_and_auto_finds_the_corrupted_rows(seed):
    """ceil(0.2 n) rows scaled x100 / y1e4. epsilon=0.2 trims exactly 20% of the rows (the
    count keeps one corrupted row, as the papers' estimator does); epsilon="auto" drops every
    corrupted row and stays near the oracle fitted on the clean rows."""
    X_bad, y_bad, X_clean, y_clean, X_test, y_test, bad = _diabetes_scaled_rows(seed)
    grid = {"alpha": np.logspace(-3, 1, 9), "gamma": np.array([0.125, 0.25, 0.5, 1, 2, 4]) / 10}
    oracle = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5).fit(X_clean, y_clean)
    given = SubquantileKernelRegressor(epsilon=0.2).fit(X_bad, y_bad)
    assert given.inlier_mask_.sum() == int(np.ceil(0.8 * y_bad.size))
    model = SubquantileKernelRegressor().fit(X_bad, y_bad)
    assert _rmse(model, X_test, y_test) <= 1.10 * _rmse(oracle, X_test, y_test)
    assert not model.inlier_mask_[bad].any() and model.epsilon_ >= 0.2
    papers = SubquantileKernelRegressor(
        epsilon=0.2, kernel="rbf", alpha=1.0, gamma=None, refine=None
    )
    papers.fit(X_bad, y_bad)
    assert papers.inlier_mask_[bad].sum() == 1  # the papers' estimator keeps exactly k rows


def test_the_automatic_fit_starts_without_a_cluster_the_ordinary_fit_follows():
    """sklearn's diabetes, 20% of the training rows copied onto a clean row with its target
    + 5 sd. The ordinary fit follows the cluster and in-sample losses rank it best; before the
    trimmed fits started from the studentized (leave-group-out) losses the defaults kept all 70
    rows here (epsilon_ 0.017, test RMSE 2.35x the oracle's)."""
    X, y = load_diabetes(return_X_y=True)
    split = contaminated_split(X, y, "label", 0.0, random_state=2)
    scaler_x, scaler_y = StandardScaler().fit(split.X_train), StandardScaler()
    X_train, X_test = scaler_x.transform(split.X_train), scaler_x.transform(split.X_test)
    y_train = scaler_y.fit_transform(split.y_train[:, None]).ravel()
    y_test = scaler_y.transform(split.y_test[:, None]).ravel()
    rng = np.random.default_rng(2)
    n = y_train.size
    cluster = rng.choice(n, n // 5, replace=False)
    center = rng.choice(np.setdiff1d(np.arange(n), cluster))
    X_bad, y_bad = X_train.copy(), y_train.copy()
    X_bad[cluster] = X_train[center] + 0.01 * rng.normal(size=(cluster.size, X.shape[1]))
    y_bad[cluster] = y_train[center] + 5.0
    clean = np.ones(n, dtype=bool)
    clean[cluster] = False

    # the ordinary fit at the selection's starting alpha: 60% of the rows of smallest in-sample
    # residual (the starting trim) hold the whole cluster
    ordinary = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.1).fit(X_bad, y_bad)
    in_sample = np.abs(ordinary.predict(X_bad) - y_bad)
    assert in_sample[cluster].max() < np.quantile(in_sample, 0.6)

    model = SubquantileKernelRegressor().fit(X_bad, y_bad)
    grid = {"alpha": np.logspace(-3, 1, 9), "gamma": np.array([0.125, 0.25, 0.5, 1, 2, 4]) / 10}
    oracle = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5).fit(X_train[clean], y_train[clean])
    assert not model.inlier_mask_[cluster].any()
    assert _rmse(model, X_test, y_test) <= 1.10 * _rmse(oracle, X_test, y_test)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_huge_target_barely_moves_the_automatic_fit(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(301, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=301)
    y[0] = 1e6
    X_test = rng.uniform(-2, 2, size=(500, 3))
    with_row = SubquantileKernelRegressor().fit(X, y).predict(X_test)
    without = SubquantileKernelRegressor().fit(X[1:], y[1:]).predict(X_test)
    assert np.sqrt(np.mean((with_row - without) ** 2)) < 0.05 * np.sqrt(np.mean(without**2))


def test_reject_drops_an_isolated_kept_row_and_never_a_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=100)
    X[:2], y[:2] = [[40.0, 40.0], [-40.0, 40.0]], 50.0  # far from every row and each other
    # alpha small enough that the fit's bias stays below the noise (a biased fit has clean
    # residuals beyond 5 sigma too: alpha = 1 drops 7% of the clean rows here)
    rbf = {"kernel": "rbf", "alpha": 0.01, "gamma": 0.5}
    kept = SubquantileKernelRegressor(epsilon=0.01, refine=None, **rbf)
    assert kept.fit(X, y).inlier_mask_[:2].sum() == 1  # one row trimmed: the count keeps one
    rejected = SubquantileKernelRegressor(epsilon=0.01, refine="reject", **rbf).fit(X, y)
    assert not rejected.inlier_mask_[:2].any() and rejected.inlier_mask_[2:].all()
    assert rejected.epsilon_ == pytest.approx(1 - rejected.inlier_mask_.mean())

    floors = ClassFloors(labels=np.array([0, 0, 0, 0, 1, 1]), minimum=np.array([2, 1]))
    kept_rows = np.ones(6, dtype=bool)
    dropped = np.array([True, True, True, False, True, False])
    losses = np.array([5.0, 1.0, 3.0, 0.0, 9.0, 0.0])
    protected = floors.protect(kept_rows, dropped, losses)
    # class 0 keeps row 3 and needs one more: the dropped row of smallest loss (row 1) stays
    np.testing.assert_array_equal(protected, [True, False, True, False, True, False])


def test_the_classifier_defaults_keep_every_class():
    """Digits in [0, 1] with 30% random labels (the fault ClassFloors guards against)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    X, y = X[:500] / 16.0, y[:500].copy()
    noisy = rng.choice(500, 150, replace=False)
    y[noisy] = rng.integers(0, 10, size=150)
    model = SubquantileKernelClassifier().fit(X, y)
    assert set(np.unique(model.predict(X))) == set(range(10))
    for label in range(10):
        assert model.inlier_mask_[y == label].mean() >= 0.5


def test_epsilon_zero_in_the_kernel_ridge_configuration_is_kernel_ridge():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=80)
    ours = SubquantileKernelRegressor(
        epsilon=0, kernel="rbf", alpha=0.3, gamma=0.5, fit_intercept=False
    )
    reference = KernelRidge(alpha=0.3, kernel="rbf", gamma=0.5).fit(X, y)
    np.testing.assert_allclose(ours.fit(X, y).dual_coef_, reference.dual_coef_, rtol=1e-8)


def test_the_command_line_with_no_options_finds_the_garbage_rows(tmp_path, capsys):
    """400 rows, features on different scales, 15% of the targets replaced by garbage."""
    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame(
        {
            "temperature": rng.uniform(10, 35, n),
            "pressure": rng.uniform(950, 1050, n),
            "humidity": rng.uniform(0, 1, n),
        }
    )
    frame["load"] = (
        50
        + 2.0 * (frame["temperature"] - 20)
        + 8 * np.sin((frame["pressure"] - 1000) / 15)
        + 10 * frame["humidity"] ** 2
        + rng.normal(0, 1.0, n)
    )
    garbage = rng.choice(n, int(0.15 * n), replace=False)
    frame.loc[garbage, "load"] = rng.uniform(-200, 400, garbage.size)
    path = tmp_path / "plant.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "fit"
    code, _, _ = run_cli(["fit", str(path), "--target", "load", "--out", str(out)], capsys)
    assert code == 0
    flagged = pd.read_csv(out / "outliers.csv")["flagged"].to_numpy()
    truth = np.zeros(n, dtype=bool)
    truth[garbage] = True
    recall = (flagged & truth).sum() / truth.sum()
    precision = (flagged & truth).sum() / flagged.sum()
    assert recall >= 0.9 and precision >= 0.9
