"""Tests of the contamination models and the contaminated train/test protocol."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from robustkernel.corruption import (
    CORRUPTION_TASKS,
    CORRUPTIONS,
    ContaminatedSplit,
    Corrupted,
    contaminated_split,
    corrupt,
    n_corrupted,
    outlier_precision_recall,
)

KINDS = sorted(CORRUPTIONS)


def _data(task: str, n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    X = rng.normal(3.0, 2.0, size=(n, 4))
    if task == "regression":
        return X, X @ np.array([1.0, -2.0, 0.5, 0.0]) + 10.0 + rng.normal(size=n)
    n_classes = 2 if task == "binary" else 4
    return X, np.arange(n) % n_classes


def test_registry_names():
    assert set(CORRUPTIONS) == {
        "label", "oblivious", "label_feature", "flip", "flip_feature", "wrong_class",
        "wrong_class_feature",
    }  # fmt: skip
    assert set(CORRUPTION_TASKS) == set(CORRUPTIONS)


# ---------------------------------------------------------------------------------------------
# corrupt: count, copies, untouched rows, determinism.


@pytest.mark.parametrize("n", [7, 10, 37, 100, 404])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.2, 0.29, 0.3, 0.45, 0.49])
def test_exact_number_of_corrupted_rows(n, epsilon):
    X, y = _data("regression", n)
    expected = math.floor(Fraction(str(epsilon)) * n)  # exact rational arithmetic
    assert n_corrupted(n, epsilon) == expected
    result = corrupt(X, y, "oblivious", epsilon, random_state=0)
    assert isinstance(result, Corrupted)
    assert result.index.shape == (expected,)
    assert np.issubdtype(result.index.dtype, np.integer)
    assert np.all(np.diff(result.index) > 0)  # sorted, unique


def test_count_matches_what_subquantile_trims():
    for n in range(1, 300):
        for epsilon in (0.1, 0.2, 0.25, 0.3, 0.4):
            kept = math.ceil(round((1 - epsilon) * n, 12))
            assert n_corrupted(n, epsilon) == n - kept


@pytest.mark.parametrize("kind", KINDS)
def test_inputs_untouched_and_other_rows_bit_identical(kind):
    X, y = _data(CORRUPTION_TASKS[kind])
    X0, y0 = X.copy(), y.copy()
    result = corrupt(X, y, kind, 0.3, random_state=1)
    np.testing.assert_array_equal(X, X0)  # the input is never modified
    np.testing.assert_array_equal(y, y0)
    assert not np.shares_memory(result.X, X) and not np.shares_memory(result.y, y)
    clean = np.ones(len(y), dtype=bool)
    clean[result.index] = False
    np.testing.assert_array_equal(result.X[clean], X0[clean])
    np.testing.assert_array_equal(result.y[clean], y0[clean])
    assert np.any(result.y[result.index] != y0[result.index])  # something did change


@pytest.mark.parametrize("kind", KINDS)
def test_deterministic_given_seed(kind):
    X, y = _data(CORRUPTION_TASKS[kind])
    a = corrupt(X, y, kind, 0.2, random_state=5)
    b = corrupt(X, y, kind, 0.2, random_state=5)
    c = corrupt(X, y, kind, 0.2, random_state=6)
    for left, right in zip(a, b, strict=True):
        np.testing.assert_array_equal(left, right)
    assert not np.array_equal(a.index, c.index)


def test_corrupted_rows_are_nested_across_epsilon_for_one_seed():
    X, y = _data("regression")
    small = corrupt(X, y, "label", 0.1, random_state=2).index
    large = corrupt(X, y, "label", 0.4, random_state=2).index
    assert set(small) < set(large)


# ---------------------------------------------------------------------------------------------
# What each model does to a corrupted row.


@pytest.mark.parametrize(("kind", "mean"), [("label", 5.0), ("oblivious", 0.0)])
def test_gaussian_label_noise_has_the_stated_mean_and_variance(kind, mean):
    X, y = _data("regression", n=20_000)
    result = corrupt(X, y, kind, 0.45, random_state=0)
    noise = result.y[result.index]
    assert noise.size == 9000
    assert abs(noise.mean() - mean) < 0.1  # standard error sqrt(5 / 9000) = 0.024
    assert abs(noise.var() - 5.0) < 0.3  # variance 5 (not standard deviation 5)
    np.testing.assert_array_equal(result.X, X)  # features untouched


def test_label_feature_scales_rows():
    X, y = _data("regression")
    result = corrupt(X, y, "label_feature", 0.25, random_state=0)
    idx = result.index
    np.testing.assert_array_equal(result.X[idx], 100.0 * X[idx])
    np.testing.assert_array_equal(result.y[idx], 10_000.0 * y[idx])


@pytest.mark.parametrize("labels", [(0, 1), (-1, 1), ("benign", "malignant"), (2.0, 7.0)])
def test_flip_gives_the_other_label(labels):
    X, _ = _data("binary")
    y = np.array([labels[i % 2] for i in range(len(X))])
    result = corrupt(X, y, "flip", 0.3, random_state=0)
    flipped = result.y[result.index]
    assert np.all(flipped != y[result.index])
    assert set(flipped) <= set(labels)
    assert result.y.dtype == y.dtype
    np.testing.assert_array_equal(result.X, X)


def test_flip_feature_flips_and_scales():
    X, y = _data("binary")
    result = corrupt(X, y, "flip_feature", 0.3, random_state=0)
    idx = result.index
    np.testing.assert_array_equal(result.y[idx], 1 - y[idx])
    np.testing.assert_array_equal(result.X[idx], 100.0 * X[idx])


@pytest.mark.parametrize("kind", ["wrong_class", "wrong_class_feature"])
def test_wrong_class_never_keeps_the_true_class_and_is_uniform(kind):
    X, y = _data("multiclass", n=8000)  # classes 0..3, balanced
    result = corrupt(X, y, kind, 0.45, random_state=0)
    idx = result.index
    assert np.all(result.y[idx] != y[idx])
    assert set(result.y[idx]) == {0, 1, 2, 3}
    # Each of the 3 other classes is drawn with probability 1/3.
    for true_class in range(4):
        new = result.y[idx][y[idx] == true_class]
        shares = np.bincount(new, minlength=4)[np.arange(4) != true_class] / new.size
        np.testing.assert_allclose(shares, 1 / 3, atol=0.05)
    scale = 100.0 if kind.endswith("feature") else 1.0
    np.testing.assert_array_equal(result.X[idx], scale * X[idx])


def test_wrong_class_with_string_labels():
    X, _ = _data("multiclass")
    y = np.array(["a", "b", "c"] * 66 + ["a", "b"])
    result = corrupt(X, y, "wrong_class", 0.4, random_state=0)
    assert np.all(result.y[result.index] != y[result.index])


def test_corruption_functions_can_be_called_directly():
    X, y = _data("binary", n=10)
    index = np.array([1, 4])
    X_bad, y_bad = CORRUPTIONS["flip_feature"](X, y, index, 0)
    np.testing.assert_array_equal(y_bad[index], 1 - y[index])
    np.testing.assert_array_equal(X_bad[index], 100 * X[index])


# ---------------------------------------------------------------------------------------------
# Validation.


@pytest.mark.parametrize("epsilon", [0.5, 0.7, -0.1, 1.0])
def test_epsilon_outside_range_raises(epsilon):
    X, y = _data("regression")
    with pytest.raises(ValueError, match="epsilon"):
        corrupt(X, y, "label", epsilon)


def test_unknown_kind_raises():
    X, y = _data("regression")
    with pytest.raises(ValueError, match="kind"):
        corrupt(X, y, "gaussian", 0.1)


def test_task_compatibility():
    X, y3 = _data("multiclass")
    with pytest.raises(ValueError, match="exactly 2 classes"):
        corrupt(X, y3 % 3, "flip", 0.1)
    with pytest.raises(ValueError, match="at least 2 classes"):
        corrupt(X, np.zeros(len(X), dtype=int), "wrong_class", 0.1)
    with pytest.raises(ValueError, match="y must be numeric"):
        corrupt(X, np.array(["a", "b"] * 100), "oblivious", 0.1)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        corrupt(X_nan, y3, "wrong_class", 0.1)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        corrupt(X, y3[:-1], "wrong_class", 0.1)


# ---------------------------------------------------------------------------------------------
# contaminated_split.


def test_split_standardizes_with_clean_training_statistics():
    X, y = _data("regression", n=500)
    split = contaminated_split(X, y, "label_feature", 0.3, random_state=0)
    assert isinstance(split, ContaminatedSplit)
    np.testing.assert_allclose(split.X_train_clean.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.X_train_clean.std(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(split.y_train_clean.mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(split.y_train_clean.std(), 1.0, atol=1e-12)
    # The scalers hold the clean training statistics and produced the test data.
    np.testing.assert_allclose(split.x_scaler.mean_, X[split.train_index].mean(axis=0))
    np.testing.assert_array_equal(split.X_test, split.x_scaler.transform(X[split.test_index]))
    np.testing.assert_array_equal(
        split.y_test, split.y_scaler.transform(y[split.test_index].reshape(-1, 1)).ravel()
    )
    # The corrupted training rows are scaled after standardizing (x 100 in standard units).
    idx = split.corrupted_index
    np.testing.assert_allclose(split.X_train[idx], 100 * split.X_train_clean[idx])


def test_split_sizes_and_exact_count():
    X, y = _data("regression", n=505)
    split = contaminated_split(X, y, "oblivious", 0.2, test_size=0.2, random_state=0)
    assert split.X_train.shape == (404, 4) and split.X_test.shape == (101, 4)
    assert len(split.corrupted_index) == n_corrupted(404, 0.2) == 80
    assert sorted(np.concatenate([split.train_index, split.test_index]).tolist()) == list(
        range(505)
    )
    changed = np.flatnonzero(split.y_train != split.y_train_clean)
    np.testing.assert_array_equal(changed, split.corrupted_index)
    np.testing.assert_array_equal(split.X_train, split.X_train_clean)  # oblivious: y only
    assert split.corrupted_mask.sum() == 80


@pytest.mark.parametrize("kind", KINDS)
def test_test_rows_never_touched(kind):
    """The same seed gives bit-identical test (and clean training) data at every epsilon."""
    X, y = _data(CORRUPTION_TASKS[kind], n=300)
    X0, y0 = X.copy(), y.copy()
    clean = contaminated_split(X, y, kind, 0.0, random_state=3)
    dirty = contaminated_split(X, y, kind, 0.45, random_state=3)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert clean.corrupted_index.size == 0
    np.testing.assert_array_equal(clean.X_train, clean.X_train_clean)
    for name in ("X_test", "y_test", "X_train_clean", "y_train_clean", "test_index"):
        np.testing.assert_array_equal(getattr(clean, name), getattr(dirty, name))
    assert dirty.corrupted_index.size == n_corrupted(240, 0.45)
    assert np.any(dirty.y_train != dirty.y_train_clean)


@pytest.mark.parametrize("kind", ["flip", "wrong_class_feature"])
def test_classification_labels_are_not_scaled_and_split_is_stratified(kind):
    X, y = _data(CORRUPTION_TASKS[kind], n=400)
    split = contaminated_split(X, y, kind, 0.2, random_state=0)
    assert split.y_scaler is None
    np.testing.assert_array_equal(split.y_test, y[split.test_index])
    np.testing.assert_array_equal(split.y_train_clean, y[split.train_index])
    n_classes = len(np.unique(y))
    assert np.bincount(split.y_test).tolist() == [80 // n_classes] * n_classes
    np.testing.assert_allclose(split.X_train_clean.mean(axis=0), 0.0, atol=1e-12)


def test_split_without_standardization_keeps_units():
    X, y = _data("regression")
    split = contaminated_split(X, y, "label", 0.1, standardize=False, random_state=0)
    assert split.x_scaler is None and split.y_scaler is None
    np.testing.assert_array_equal(split.X_test, X[split.test_index])
    np.testing.assert_array_equal(split.y_test, y[split.test_index])


def test_split_is_deterministic_and_seed_dependent():
    X, y = _data("regression")
    a = contaminated_split(X, y, "label", 0.2, random_state=11)
    b = contaminated_split(X, y, "label", 0.2, random_state=11)
    c = contaminated_split(X, y, "label", 0.2, random_state=12)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    np.testing.assert_array_equal(a.corrupted_index, b.corrupted_index)
    assert not np.array_equal(a.test_index, c.test_index)


def test_split_validates_like_corrupt():
    X, y = _data("regression")
    with pytest.raises(ValueError, match="epsilon"):
        contaminated_split(X, y, "label", 0.5)
    with pytest.raises(ValueError, match="exactly 2 classes"):
        contaminated_split(X, y, "flip", 0.1)
    with pytest.raises(ValueError, match="test_size"):
        contaminated_split(X, y, "label", 0.1, test_size=1.5)


# ---------------------------------------------------------------------------------------------
# outlier_precision_recall.


def test_precision_recall_on_a_hand_example():
    inlier = np.array([True, False, False, True, False, True])  # flagged: 1, 2, 4
    assert outlier_precision_recall(inlier, [1, 3]) == (1 / 3, 1 / 2)
    assert outlier_precision_recall(inlier, np.array([1, 2, 4])) == (1.0, 1.0)


def test_precision_recall_empty_cases():
    all_in = np.ones(5, dtype=bool)
    assert outlier_precision_recall(all_in, []) == (1.0, 1.0)
    assert outlier_precision_recall(all_in, [2]) == (1.0, 0.0)  # no false alarm, all missed
    flagged = np.array([True, False, True, True, True])
    assert outlier_precision_recall(flagged, []) == (0.0, 1.0)


def test_precision_recall_rejects_bad_input():
    with pytest.raises(TypeError, match="boolean"):
        outlier_precision_recall(np.array([1, 0, 1]), [1])
    with pytest.raises(ValueError, match="outside"):
        outlier_precision_recall(np.ones(3, dtype=bool), [3])
    with pytest.raises(ValueError, match="duplicates"):
        outlier_precision_recall(np.ones(3, dtype=bool), [1, 1])


def test_precision_recall_with_a_split():
    X, y = _data("regression")
    split = contaminated_split(X, y, "label_feature", 0.2, random_state=0)
    perfect = ~split.corrupted_mask
    assert outlier_precision_recall(perfect, split.corrupted_index) == (1.0, 1.0)
