"""Benchmark data sets of the robustkernel experiments and simulated data.

Loaders return ``(X, y)`` (NumPy arrays, or pandas objects with ``as_frame=True``) and read a
cache directory: the ``data_home`` argument, else the environment variable ``ROBUSTKERNEL_DATA``,
else ``~/.cache/robustkernel``. A missing file is downloaded from a pinned public copy of the
original, checked against its sha256, converted to a plain CSV and checked again. Iris, Wine and
Breast cancer come from scikit-learn. :data:`DATASETS` lists every name with its task.

Simulated data: :func:`make_polynomial_regression` (the Subquantile papers' synthetic regression)
and :func:`make_kl_regression` / :func:`make_kl_train_test` (the learned-metric paper's
simulations, with :func:`central_subspace` and :func:`subspace_distance` to score a metric).
"""

from ._cache import DATA_ENV_VAR, ChecksumError, fetch_file, get_data_home, sha256_file
from ._loaders import (
    load_boston,
    load_breast_cancer,
    load_concrete,
    load_dataset,
    load_drug,
    load_glass,
    load_heart,
    load_iris,
    load_satimage,
    load_wine,
    load_wine_quality_red,
)
from ._registry import DATASETS, CachedFile, DatasetSpec, RemoteSource
from ._simulations import (
    REGRESSION_FUNCTIONS,
    X_DISTRIBUTIONS,
    KLSimulation,
    central_subspace,
    make_kl_regression,
    make_kl_train_test,
    regression_function,
    sample_covariates,
    subspace_distance,
)
from ._synthetic import make_polynomial_regression

__all__ = [
    "DATASETS",
    "DATA_ENV_VAR",
    "REGRESSION_FUNCTIONS",
    "X_DISTRIBUTIONS",
    "CachedFile",
    "ChecksumError",
    "DatasetSpec",
    "KLSimulation",
    "RemoteSource",
    "central_subspace",
    "fetch_file",
    "get_data_home",
    "load_boston",
    "load_breast_cancer",
    "load_concrete",
    "load_dataset",
    "load_drug",
    "load_glass",
    "load_heart",
    "load_iris",
    "load_satimage",
    "load_wine",
    "load_wine_quality_red",
    "make_kl_regression",
    "make_kl_train_test",
    "make_polynomial_regression",
    "regression_function",
    "sample_covariates",
    "sha256_file",
    "subspace_distance",
]
