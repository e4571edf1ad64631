"""MetricKernelRidge(epsilon=...): the metric learned on the subquantile of the rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from robustkernel.corruption import corrupt
from robustkernel.datasets import make_kl_train_test, subspace_distance
from robustkernel.metric_kernel_ridge import MetricKernelRidge


def _test_rmse(model: MetricKernelRidge, sim) -> float:
    return float(np.sqrt(np.mean((model.predict(sim.X_test) - sim.y_test) ** 2)))


@pytest.fixture(scope="module", params=["a", "c"])
def contaminated(request):
    """The paper's f (a) or f (c), p = 20, with 20% of the targets replaced by N(5, 5) draws."""
    sim = make_kl_train_test(n=300, p=20, f=request.param, random_state=1)
    bad = corrupt(sim.X_train, sim.y_train, kind="label", epsilon=0.2, random_state=1)
    mask = np.zeros(sim.y_train.size, dtype=bool)
    mask[bad.index] = True
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits["clean"] = MetricKernelRidge().fit(sim.X_train, sim.y_train)
        fits["oracle"] = MetricKernelRidge().fit(bad.X[~mask], bad.y[~mask])
        fits["plain"] = MetricKernelRidge().fit(bad.X, bad.y)
        fits["robust"] = MetricKernelRidge(epsilon="auto", random_state=0).fit(bad.X, bad.y)
    return request.param, sim, mask, fits


@pytest.mark.slow  # 17 s of fixture fits
def test_subspace_as_on_clean_data_while_the_plain_fit_is_pulled_away(contaminated):
    f, sim, _, fits = contaminated
    error = {name: subspace_distance(m.components_.T, sim.subspace) for name, m in fits.items()}
    assert error["robust"] <= error["clean"] + 0.1, (f, error)
    assert error["plain"] >= error["clean"] + 0.5, (f, error)
    assert fits["plain"].rank_ > fits["clean"].rank_, f


def test_prediction_close_to_the_oracle_on_the_clean_rows(contaminated):
    f, sim, _, fits = contaminated
    oracle, robust, plain = (_test_rmse(fits[k], sim) for k in ("oracle", "robust", "plain"))
    assert robust <= 1.2 * oracle, (f, robust, oracle)
    assert plain >= 1.4 * oracle, (f, plain, oracle)


def test_left_out_rows_are_corrupted_and_the_kept_set_is_a_fixed_point(contaminated):
    f, _, corrupted, fits = contaminated
    model = fits["robust"]
    left_out = ~model.inlier_mask_
    assert abs(model.epsilon_ - 0.2) <= 0.02, (f, model.epsilon_)
    assert (left_out & corrupted).sum() >= 0.8 * corrupted.sum(), f
    # the kept rows are the k rows of smallest squared residual under the returned fit
    k = int(model.inlier_mask_.sum())
    assert model.outlier_scores_[model.inlier_mask_].max() <= np.sort(model.outlier_scores_)[k]
    assert model.X_fit_.shape[0] == k == model.dual_coef_.size


def test_a_given_epsilon_keeps_that_many_rows_and_zero_is_the_plain_fit():
    sim = make_kl_train_test(n=120, p=5, f="a", random_state=3)
    X, y = sim.X_train, sim.y_train
    model = MetricKernelRidge(epsilon=0.25, random_state=0).fit(X, y)
    assert model.inlier_mask_.sum() == 90
    residuals = (model.predict(X) - y) ** 2
    np.testing.assert_allclose(model.outlier_scores_, residuals, rtol=1e-10)

    full = MetricKernelRidge(epsilon=0.0).fit(X, y)
    plain = MetricKernelRidge().fit(X, y)
    assert full.inlier_mask_.all() and full.n_rounds_ == 1
    np.testing.assert_allclose(full.Sigma_, plain.Sigma_, atol=1e-12)
    np.testing.assert_allclose(full.predict(X), plain.predict(X), atol=1e-10)


def test_refit_without_epsilon_drops_the_trimming_attributes():
    sim = make_kl_train_test(n=80, p=4, f="a", random_state=0)
    model = MetricKernelRidge(epsilon=0.1).fit(sim.X_train, sim.y_train)
    assert hasattr(model, "inlier_mask_")
    model.set_params(epsilon=None).fit(sim.X_train, sim.y_train)
    for name in ("inlier_mask_", "outlier_scores_", "epsilon_", "n_rounds_"):
        assert not hasattr(model, name)


def test_invalid_epsilon_is_refused():
    sim = make_kl_train_test(n=40, p=3, f="a", random_state=0)
    with pytest.raises(ValueError, match="epsilon"):
        MetricKernelRidge(epsilon=0.5).fit(sim.X_train, sim.y_train)


@parametrize_with_checks(
    [MetricKernelRidge(max_iter=10, epsilon=0.1)],
    expected_failed_checks=lambda est: dict.fromkeys(
        (
            "check_sample_weights_list",
            "check_sample_weights_not_overwritten",
            "check_sample_weight_equivalence_on_dense_data",
        ),
        "sample_weight is not available with epsilon (the metric learned on the subquantile): "
        "fit raises a ValueError that says so",
    ),
)
def test_sklearn_compatible_with_epsilon(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
