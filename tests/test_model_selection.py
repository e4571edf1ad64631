"""Trimmed scorers: their values against direct computation, and model selection under noise.

GridSearchCV with plain RMSE on contaminated folds rewards the models that chase the corrupted
rows; the trimmed scorer picks hyper-parameters whose *clean* test error is near the best on the
grid (each grid point refitted on the contaminated training set and scored on a clean test set).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, root_mean_squared_error
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid

from conftest import make_regression
from robustkernel import SubquantileKernelRegressor
from robustkernel.corruption import corrupt
from robustkernel.metrics import make_trimmed_scorer, trimmed_accuracy, trimmed_rmse

GRID = {"epsilon": [0.0, 0.1, 0.2, 0.3], "alpha": [0.01, 1.0], "gamma": [0.3, 3.0]}


def test_trimmed_rmse_matches_rmse_of_the_best_rows():
    rng = np.random.default_rng(0)
    y_true, y_pred = rng.normal(size=50), rng.normal(size=50)
    order = np.argsort((y_true - y_pred) ** 2)[:40]
    expected = root_mean_squared_error(y_true[order], y_pred[order])
    assert trimmed_rmse(y_true, y_pred, trim=0.2) == pytest.approx(expected)
    assert trimmed_rmse(y_true, y_pred, trim=0.0) == pytest.approx(
        root_mean_squared_error(y_true, y_pred)
    )


def test_trimmed_accuracy_drops_errors_first():
    y_true = np.array([0, 1] * 10)
    y_pred = y_true.copy()
    y_pred[:6] = 1 - y_pred[:6]  # 6 errors in 20 rows
    assert trimmed_accuracy(y_true, y_pred, trim=0.0) == accuracy_score(y_true, y_pred)
    assert trimmed_accuracy(y_true, y_pred, trim=0.2) == pytest.approx(14 / 16)
    assert trimmed_accuracy(y_true, y_pred, trim=0.3) == 1.0


@pytest.mark.parametrize("trim", [-0.1, 1.0])
def test_trim_outside_unit_interval_is_rejected(trim):
    with pytest.raises(ValueError, match="trim"):
        make_trimmed_scorer("rmse", trim=trim)


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError, match="metric"):
        make_trimmed_scorer("r2")


def test_scorer_is_negated_rmse_of_the_estimator():
    X, y = make_regression(60, seed=3)
    model = SubquantileKernelRegressor(epsilon=0.0).fit(X, y)
    scorer = make_trimmed_scorer("rmse", trim=0.1)
    assert scorer(model, X, y) == pytest.approx(-trimmed_rmse(y, model.predict(X), trim=0.1))


@pytest.fixture(scope="module")
def selection():
    """Plain and trimmed GridSearchCV on 20% label noise, and every grid point's clean error."""
    X, y = make_regression(150, seed=4)
    X_test, y_test = make_regression(1000, seed=98)
    bad = corrupt(X, y, "label", 0.2, random_state=4)
    cv = KFold(4, shuffle=True, random_state=0)
    picks = {}
    for name, scoring in {
        "plain": "neg_root_mean_squared_error",
        "trimmed": make_trimmed_scorer("rmse", trim=0.25),
    }.items():
        # the rbf kernel: the grid's gamma is its width (kernel="auto" chooses the kernel)
        search = GridSearchCV(
            SubquantileKernelRegressor(kernel="rbf"), GRID, scoring=scoring, cv=cv
        )
        picks[name] = search.fit(bad.X, bad.y).best_params_
    clean_error = {
        tuple(sorted(params.items())): root_mean_squared_error(
            y_test,
            SubquantileKernelRegressor(kernel="rbf", **params).fit(bad.X, bad.y).predict(X_test),
        )
        for params in ParameterGrid(GRID)
    }
    return picks, clean_error


def test_trimmed_search_picks_near_best_clean_error(selection):
    picks, clean_error = selection
    best = min(clean_error.values())
    assert clean_error[tuple(sorted(picks["trimmed"].items()))] <= 1.1 * best


def test_plain_search_is_misled_by_contaminated_folds(selection):
    picks, clean_error = selection
    best = min(clean_error.values())
    assert clean_error[tuple(sorted(picks["plain"].items()))] >= 1.5 * best
