"""Registry of the benchmark data sets: cache file, public source, checksums, task, converter.

Every cached file is a plain CSV (one header row, target column last). When it is missing, it is
rebuilt from a public copy of the original UCI / TERM file, pinned to a git commit: the download
is checked against the sha256 of that raw file, converted to the cached CSV by a small function
below (add the header, drop an id column, ...), and the result is checked against the sha256 of
the cached CSV (the checksums of ``MANIFEST.md`` in the project's shared data folder). Each
converter was checked to reproduce its cached CSV byte for byte.

Data sets shipped with scikit-learn (Iris, Wine, Breast cancer) are loaded from scikit-learn.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import pandas as pd
from scipy.io import loadmat
from sklearn import datasets as sk_datasets

Task = Literal["regression", "binary", "multiclass"]

_GITHUB_RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def _github(repo: str, commit: str, path: str) -> str:
    return _GITHUB_RAW.format(repo=repo, commit=commit, path=path)


# ----------------------------------------------------------------------------------------------
# Converters: raw downloaded bytes -> cached CSV bytes.


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8").splitlines()


def _join(lines: list[str], eol: str = "\n") -> bytes:
    return (eol.join(lines) + eol).encode("utf-8")


def _add_header(header: list[str], *, rows: slice = slice(None)) -> Callable[[bytes], bytes]:
    """Converter for a headerless CSV: prepend ``header``, keep the data ``rows``."""

    def convert(data: bytes) -> bytes:
        return _join([",".join(header), *_lines(data)[rows]])

    return convert


def _convert_concrete(data: bytes) -> bytes:
    """Keep the original header; strip the blank after every value and the CR line ends."""
    return _join([",".join(f.strip() for f in line.split(",")) for line in _lines(data)])


def _convert_heart(data: bytes) -> bytes:
    """Replace the decorated header by the short names; write missing ``?`` as empty fields."""
    rows = [",".join("" if f == "?" else f for f in line.split(",")) for line in _lines(data)[1:]]
    return _join([",".join(HEART_COLUMNS), *rows])


def _convert_glass(data: bytes) -> bytes:
    """Drop the leading Id column of glass.data and add the header."""
    rows = [line.split(",", 1)[1] for line in _lines(data)]
    return _join([",".join(GLASS_COLUMNS), *rows])


def _convert_drug(data: bytes) -> bytes:
    """Stack X_train / X_test and y_train / y_test of TERM's qsar.mat into one CSV."""
    mat = loadmat(io.BytesIO(data))
    n_features = mat["X_train"].shape[1]
    header = [*(f"f{j}" for j in range(n_features)), "y"]
    lines = [",".join(header)]
    for part in ("train", "test"):
        X, y = mat[f"X_{part}"], mat[f"y_{part}"].ravel()
        lines.extend(
            ",".join(map(str, row.tolist())) + "," + repr(float(target))
            for row, target in zip(X, y, strict=True)
        )
    return _join(lines, eol="\r\n")


BOSTON_COLUMNS = "CRIM ZN INDUS CHAS NOX RM AGE DIS RAD TAX PTRATIO B LSTAT MEDV".split()
WINE_QUALITY_COLUMNS = (
    "fixed acidity", "volatile acidity", "citric acid", "residual sugar", "chlorides",
    "free sulfur dioxide", "total sulfur dioxide", "density", "pH", "sulphates", "alcohol",
    "quality",
)  # fmt: skip
HEART_COLUMNS = (
    "age sex cp trestbps chol fbs restecg thalach exang oldpeak slope ca thal num".split()
)
GLASS_COLUMNS = "RI Na Mg Al Si K Ca Ba Fe Type".split()
SATIMAGE_COLUMNS = [f"p{p}_b{b}" for p in range(1, 10) for b in range(1, 5)] + ["class"]
SATIMAGE_N_TRAIN = 4435


# ----------------------------------------------------------------------------------------------
# Specs.


@dataclass(frozen=True)
class RemoteSource:
    """A public file, pinned by commit, from which a cached CSV is rebuilt.

    Attributes
    ----------
    url : str
        Download address.
    sha256 : str
        sha256 of the downloaded bytes.
    convert : callable
        Maps the downloaded bytes to the bytes of the cached CSV.
    """

    url: str
    sha256: str
    convert: Callable[[bytes], bytes]


@dataclass(frozen=True)
class CachedFile:
    """One CSV file of the cache directory.

    Attributes
    ----------
    filename : str
        Name of the file inside the cache directory.
    sha256 : str
        sha256 of the CSV as cached (as listed in MANIFEST.md).
    n_rows, n_columns : int
        Data rows (header excluded) and columns, target included.
    source : RemoteSource
        Where the file is rebuilt from when it is missing.
    """

    filename: str
    sha256: str
    n_rows: int
    n_columns: int
    source: RemoteSource


@dataclass(frozen=True)
class DatasetSpec:
    """Everything the shared loader needs to know about one data set.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"boston"``.
    task : {"regression", "binary", "multiclass"}
        Learning task of the returned target.
    n_samples, n_features : int
        Shape of the returned X (default subset, missing values imputed).
    description : str
        One-paragraph description with the citation.
    target : str or None
        Target column of the CSV (None for scikit-learn data sets).
    files : mapping of str to CachedFile
        Subset name -> cached file; the first key is the default subset.
    target_transform : callable or None
        Applied to the target column, e.g. ``num > 0`` for Heart disease.
    sklearn_loader : callable or None
        A ``sklearn.datasets.load_*`` function for data sets bundled with scikit-learn.
    """

    name: str
    task: Task
    n_samples: int
    n_features: int
    description: str
    target: str | None = None
    files: Mapping[str, CachedFile] = field(default_factory=dict)
    target_transform: Callable[[pd.Series], pd.Series] | None = None
    sklearn_loader: Callable[..., object] | None = None

    @property
    def subsets(self) -> tuple[str, ...]:
        """Names of the available subsets (empty for scikit-learn data sets)."""
        return tuple(self.files)


def _binary_disease(num: pd.Series) -> pd.Series:
    return (num > 0).astype("int64").rename("disease")


_JB = ("jbrownlee/Datasets", "d20fcb6402ae34e653d4513b00f39257bb37ed7f")
_SAT_SOURCE = (
    _github("ZixiaoShen/Datasets", "f809d4bcecbc4e85c84c88924dd820b8d663e7e4",
            "UCI/C6_F36_S6435_Satimage/Satimage.csv"),
    "e23a322e05dd9b7772f4889746bf67e51727336916e1be057e8fb3f8a971ac47",
)  # fmt: skip


def _satimage_file(filename: str, sha256: str, rows: slice, n_rows: int) -> CachedFile:
    convert = _add_header(SATIMAGE_COLUMNS, rows=rows)
    return CachedFile(filename, sha256, n_rows, 37, RemoteSource(*_SAT_SOURCE, convert))


_SPECS = (
    DatasetSpec(
        name="boston",
        task="regression",
        n_samples=506,
        n_features=13,
        target="MEDV",
        description=(
            "Boston housing (Harrison & Rubinfeld, 1978; UCI 'Housing'): median home value MEDV "
            "(right-censored at 50) from 13 neighbourhood features."
        ),
        files={
            "all": CachedFile(
                "boston.csv",
                "ebf8b4a9ceaf375f9591be7b862b3eafc6efc952251e77f09dd6c2df9e216ba0",
                506,
                14,
                RemoteSource(
                    _github(*_JB, "housing.csv"),
                    "2682ca02e83b89467d7d0cdcbde7c0cc4d2566119be8ce8d84dad4f0fa20859a",
                    _add_header(BOSTON_COLUMNS),
                ),
            )
        },
    ),
    DatasetSpec(
        name="concrete",
        task="regression",
        n_samples=1030,
        n_features=8,
        target="Concrete compressive strength(MPa and megapascals)",
        description=(
            "Concrete compressive strength (Yeh, 1998; UCI): strength in MPa from 7 mixture "
            "components and the age in days."
        ),
        files={
            "all": CachedFile(
                "concrete.csv",
                "2ba7741223d694a691923b570723fe412d22adf7a9c9da9f3216135ef75a78a7",
                1030,
                9,
                RemoteSource(
                    _github(
                        "RajapakshaSN/Concrete_Data",
                        "8533f80b8b48dd17b8db5451e7659582728ae4ae",
                        "Concrete_Data.csv",
                    ),
                    "21ba5124a51be14b3118ab6cc2768feef70421ac2e6a60c33f8e711f06741153",
                    _convert_concrete,
                ),
            )
        },
    ),
    DatasetSpec(
        name="wine_quality_red",
        task="regression",
        n_samples=1599,
        n_features=11,
        target="quality",
        description=(
            "Wine quality, red (Cortez et al., 2009; UCI): sensory quality score 3..8 from 11 "
            "physicochemical measurements, treated as a regression target."
        ),
        files={
            "all": CachedFile(
                "winequality-red.csv",
                "d22f4f11db0456ff21745d2fa96d26fa348a8cdb889efda65bde802085be45fd",
                1599,
                12,
                RemoteSource(
                    _github(*_JB, "winequality-red.csv"),
                    "c9614512e980f1cbd221c796daa97f00c4898c3cd1716863abac60f6cd1a522e",
                    _add_header(list(WINE_QUALITY_COLUMNS)),
                ),
            )
        },
    ),
    DatasetSpec(
        name="drug",
        task="regression",
        n_samples=4085,
        n_features=410,
        target="y",
        description=(
            "Drug / QSAR (Olier et al., 2018, as prepared for the TERM experiments of Li et al., "
            "2021): activity y from 410 binary molecular fingerprint bits. Rows 0..3084 are "
            "TERM's training split, rows 3085..4084 its test split."
        ),
        files={
            "all": CachedFile(
                "drug.csv",
                "097b405566bc6d426ae7ab5575233e1c864fffe42720196264ac448716681c72",
                4085,
                411,
                RemoteSource(
                    _github(
                        "litian96/TERM",
                        "ac3c01db53b24404459ad3840efc4dcd9328eb26",
                        "robust_regression/data/qsar.mat",
                    ),
                    "b3cabe8fd388f5d44d6675e32b061fa4b134f64c1ac0c781d3313ef92653dd72",
                    _convert_drug,
                ),
            )
        },
    ),
    DatasetSpec(
        name="heart",
        task="binary",
        n_samples=303,
        n_features=13,
        target="num",
        target_transform=_binary_disease,
        description=(
            "Heart disease, Cleveland (Detrano et al., 1989; UCI processed.cleveland.data): "
            "presence of disease (num > 0 -> 1, else 0) from 13 clinical features. ca is "
            "missing in 4 rows and thal in 2."
        ),
        files={
            "all": CachedFile(
                "heart.csv",
                "c1a68b0099f13630967e05a357aa7f856bf0b784124f9ae4a01612d5378617a9",
                303,
                14,
                RemoteSource(
                    _github(
                        "EyedBread/naive-bayes",
                        "994f04619bf639588777b184cf1dfe65a9eab8f1",
                        "processed.cleveland.data",
                    ),
                    "c620b2f015f8e6309443511060daa06cc46abe0a7e9126bf423a463988d746f1",
                    _convert_heart,
                ),
            )
        },
    ),
    DatasetSpec(
        name="breast_cancer",
        task="binary",
        n_samples=569,
        n_features=30,
        sklearn_loader=sk_datasets.load_breast_cancer,
        description=(
            "Breast cancer Wisconsin, diagnostic (Street, Wolberg & Mangasarian, 1993; UCI "
            "wdbc.data), loaded from scikit-learn: 0 = malignant, 1 = benign (scikit-learn's "
            "encoding)."
        ),
    ),
    DatasetSpec(
        name="iris",
        task="multiclass",
        n_samples=150,
        n_features=4,
        sklearn_loader=sk_datasets.load_iris,
        description="Iris (Fisher, 1936), loaded from scikit-learn: 3 classes, 4 features.",
    ),
    DatasetSpec(
        name="wine",
        task="multiclass",
        n_samples=178,
        n_features=13,
        sklearn_loader=sk_datasets.load_wine,
        description="Wine recognition (UCI), loaded from scikit-learn: 3 cultivars, 13 features.",
    ),
    DatasetSpec(
        name="glass",
        task="multiclass",
        n_samples=214,
        n_features=9,
        target="Type",
        description=(
            "Glass identification (German, 1987; UCI glass.data): glass type (labels "
            "1, 2, 3, 5, 6, 7; type 4 has no rows) from the refractive index and 8 oxides."
        ),
        files={
            "all": CachedFile(
                "glass.csv",
                "d578fe3cc71f226e0baaf7422119b9914abcec81e2c90aaf49e0cfb2987c1dd2",
                214,
                10,
                RemoteSource(
                    _github(
                        "EpistasisLab/pmlb",
                        "7c1f4bdc00136dc2e55c87fa6b8ba6e8af6d1a68",
                        "datasets/glass_identification/data/glass.data.csv",
                    ),
                    "dd67373f4baf2807345df02cbfef2093d342e61ad0d82a4fb79af43ef8ce449d",
                    _convert_glass,
                ),
            )
        },
    ),
    DatasetSpec(
        name="satimage",
        task="multiclass",
        n_samples=6435,
        n_features=36,
        target="class",
        description=(
            "Statlog Landsat satellite (Srinivasan, 1993; UCI): soil class (labels 1, 2, 3, 4, "
            "5, 7) from the 4 spectral bands of a 3x3 pixel neighbourhood. subset='all' stacks "
            "the standard training file sat.trn (rows 0..4434) and test file sat.tst (rows "
            "4435..6434); subset='train' / 'test' give either part alone."
        ),
        files={
            "all": _satimage_file(
                "satimage.csv",
                "98bfae896ef5c1cac3f43f7e4c33b568bbf64358c9f249e4945ec4c05e9f18ab",
                slice(None),
                6435,
            ),
            "train": _satimage_file(
                "satimage_train.csv",
                "6a56a1f4311af7eb894b02db379505b61aa2bcc1987062f6513fc50fb3438012",
                slice(None, SATIMAGE_N_TRAIN),
                SATIMAGE_N_TRAIN,
            ),
            "test": _satimage_file(
                "satimage_test.csv",
                "8df3fc7ffa365142398c48bf818f7a40abd3e32d6f038da880f48bfca561e08d",
                slice(SATIMAGE_N_TRAIN, None),
                2000,
            ),
        },
    ),
)

DATASETS: Mapping[str, DatasetSpec] = MappingProxyType({spec.name: spec for spec in _SPECS})
"""Read-only registry: data set name -> :class:`DatasetSpec` (``DATASETS[name].task`` etc.)."""
