"""Shared fixtures: small generated data sets with known corrupted rows."""

from __future__ import annotations

import numpy as np
import pytest


def make_regression(n: int, seed: int, n_features: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Smooth regression function plus small noise; x uniform on [-2, 2]^d."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, n_features))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, -1]) + 0.1 * rng.normal(size=n)
    return X, y


@pytest.fixture
def regression_data() -> tuple[np.ndarray, np.ndarray]:
    return make_regression(120, seed=0)
