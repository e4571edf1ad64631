"""Sparse X for the Subquantile kernel estimators: the same fit as the dense array."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.corruption import corrupt
from robustkernel.subquantile._automatic.hyperparameters import _median_with_zeros, robust_gamma


def sparse_rows(n: int, seed: int = 0) -> np.ndarray:
    """Rows with about 60% zeros (a document-term-like table) and a target on them."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)) * (rng.random((n, 6)) < 0.4)
    return X


def test_robust_gamma_of_a_sparse_matrix_equals_the_dense_computation():
    X = sparse_rows(300)
    X[:, 5] = 0.0
    X[:3, 5] = 7.0  # a column whose median absolute deviation is 0
    assert robust_gamma(sparse.csr_array(X)) == pytest.approx(robust_gamma(X), rel=1e-12)


@pytest.mark.parametrize("zeros", [0, 1, 4, 5, 6, 9, 20])
def test_median_with_zeros_is_the_median_of_the_whole_column(zeros):
    values = np.array([-3.0, 0.5, 2.0, 4.0, 9.0])
    expected = np.median(np.concatenate([values, np.full(zeros, 1.5)]))
    assert _median_with_zeros(values, zeros, fill=1.5) == pytest.approx(expected)


@pytest.mark.parametrize("form", [sparse.csr_array, sparse.csc_matrix])
def test_regressor_defaults_on_sparse_rows_equal_the_dense_fit(form):
    X = sparse_rows(150)
    y = np.sin(X[:, 0]) + X[:, 1] + 0.05 * np.random.default_rng(1).normal(size=150)
    bad = corrupt(X, y, "label", 0.2, random_state=0)
    dense = SubquantileKernelRegressor().fit(bad.X, bad.y)
    model = SubquantileKernelRegressor().fit(form(bad.X), bad.y)
    assert sparse.issparse(model.X_fit_)
    assert (model.epsilon_, model.alpha_, model.gamma_) == pytest.approx(
        (dense.epsilon_, dense.alpha_, dense.gamma_)
    )
    np.testing.assert_array_equal(model.inlier_mask_, dense.inlier_mask_)
    X_test = sparse_rows(40, seed=2)
    # kernel="auto" centres sparse columns as dense ones (filling only those of median
    # other than 0): the same model, equal to rounding
    np.testing.assert_allclose(
        model.predict(sparse.csr_array(X_test)), dense.predict(X_test), rtol=1e-6, atol=1e-7
    )


def test_classifier_features_on_sparse_rows_equal_the_dense_fit():
    X = sparse_rows(200, seed=3)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    y[:20] = 1 - y[:20]
    settings = {"epsilon": 0.1, "alpha": 0.1, "gamma": 0.5, "n_components": 50, "random_state": 0}
    dense = SubquantileKernelClassifier(**settings).fit(X, y)
    model = SubquantileKernelClassifier(**settings).fit(sparse.csr_array(X), y)
    np.testing.assert_array_equal(model.inlier_mask_, dense.inlier_mask_)
    np.testing.assert_allclose(
        model.predict_proba(sparse.csr_array(X)), dense.predict_proba(X), atol=1e-10
    )


def test_sparse_rows_are_refused_where_the_fit_needs_dense_ones():
    X = sparse.csr_array(sparse_rows(30))
    y = np.arange(30.0)
    with pytest.raises(TypeError, match="dense data is required"):
        SubquantileKernelRegressor(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(TypeError, match="dense data is required"):
        SubquantileKernelRegressor(0.1, alpha=1.0, gamma=1.0, refine=None, device="cpu").fit(X, y)
