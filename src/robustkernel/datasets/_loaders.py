"""One shared loading mechanism for every registered data set, and thin public loaders."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from typing import Literal, TypeVar

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ._cache import fetch_file, get_data_home
from ._registry import DATASETS, CachedFile, DatasetSpec

Missing = Literal["impute", "drop", "keep"]
PathLike = str | os.PathLike | None
LoaderResult = tuple[np.ndarray, np.ndarray] | tuple[pd.DataFrame, pd.Series] | Bunch

_MISSING_OPTIONS = ("impute", "drop", "keep")


def _spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"Unknown data set {name!r}; choose one of {sorted(DATASETS)}.") from None


def _cached_file(spec: DatasetSpec, subset: str | None) -> CachedFile:
    if subset is None:
        return next(iter(spec.files.values()))
    if subset not in spec.files:
        raise ValueError(
            f"Unknown subset {subset!r} for data set {spec.name!r}; choose one of "
            f"{list(spec.files)}."
        )
    return spec.files[subset]


def _ensure_file(file: CachedFile, data_home: PathLike, download_if_missing: bool) -> str:
    """Path of the cached file, downloading and converting it first if it is missing."""
    path = get_data_home(data_home) / file.filename
    if path.is_file():
        return str(path)
    if not download_if_missing:
        raise OSError(
            f"Data file {path} is missing and download_if_missing=False. Pass data_home= or set "
            "ROBUSTKERNEL_DATA to a folder that holds it."
        )
    source = file.source
    fetch_file(
        source.url, source.sha256, path, convert=source.convert, converted_sha256=file.sha256
    )
    return str(path)


def _read_frame(
    spec: DatasetSpec, subset: str | None, data_home: PathLike, download_if_missing: bool
) -> tuple[pd.DataFrame, pd.Series]:
    """Features and target as pandas objects, before missing-value handling."""
    if spec.sklearn_loader is not None:
        if subset is not None:
            raise ValueError(f"Data set {spec.name!r} has no subsets; got subset={subset!r}.")
        bunch = spec.sklearn_loader(as_frame=True)
        return bunch.data.astype("float64"), bunch.target
    path = _ensure_file(_cached_file(spec, subset), data_home, download_if_missing)
    frame = pd.read_csv(path)
    y = frame.pop(spec.target)
    if spec.target_transform is not None:
        y = spec.target_transform(y)
    non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        raise ValueError(f"Non-numeric feature columns in {path}: {non_numeric}.")
    return frame.astype("float64"), y


def _handle_missing(X: pd.DataFrame, y: pd.Series, missing: str) -> tuple[pd.DataFrame, pd.Series]:
    """Impute with the column's most frequent value, drop incomplete rows, or keep NaN."""
    if missing not in _MISSING_OPTIONS:
        raise ValueError(f"missing must be one of {_MISSING_OPTIONS}; got {missing!r}.")
    if missing == "keep" or not X.isna().to_numpy().any():
        return X, y
    if missing == "drop":
        complete = X.notna().all(axis=1)
        return X[complete].reset_index(drop=True), y[complete].reset_index(drop=True)
    # The most frequent value suits the categorical codes that carry the gaps (Heart: ca, thal);
    # ties go to the smallest value, so the result is deterministic.
    return X.fillna(X.mode(dropna=True).iloc[0]), y


def load_dataset(
    name: str,
    *,
    subset: str | None = None,
    data_home: PathLike = None,
    download_if_missing: bool = True,
    as_frame: bool = False,
    return_X_y: bool = True,
    missing: Missing = "impute",
) -> LoaderResult:
    """Load a registered benchmark data set by name.

    Parameters
    ----------
    name : str
        A key of ``robustkernel.datasets.DATASETS``, e.g. ``"boston"`` or ``"satimage"``.
    subset : str, default=None
        For data sets with several files (Satimage: ``"all"``, ``"train"``, ``"test"``); None
        selects the first (``"all"``).
    data_home : str or path-like, default=None
        Cache directory; None uses ``ROBUSTKERNEL_DATA``, else ``~/.cache/robustkernel`` (see
        :func:`robustkernel.datasets.get_data_home`). Ignored for scikit-learn data sets.
    download_if_missing : bool, default=True
        Download (and checksum-verify) the file into the cache when it is absent; if False, a
        missing file raises ``OSError``.
    as_frame : bool, default=False
        Return a pandas DataFrame (features) and Series (target) instead of NumPy arrays.
    return_X_y : bool, default=True
        Return ``(X, y)``; if False, return a :class:`sklearn.utils.Bunch` with ``data``,
        ``target``, ``frame`` (features and target together), ``feature_names``, ``task`` and
        ``DESCR``.
    missing : {"impute", "drop", "keep"}, default="impute"
        Missing feature values (only Heart disease has some): replace by the column's most
        frequent value over all rows (keeps every row, e.g. Heart 303 x 13 as in the papers),
        drop the incomplete rows, or keep them as NaN.

    Returns
    -------
    X, y : ndarray of shape (n_samples, n_features) and (n_samples,), or DataFrame and Series
        Features as float64; the target as float64 (regression) or its class labels.
    bunch : sklearn.utils.Bunch
        When ``return_X_y=False``.

    See Also
    --------
    get_data_home : The cache directory of the downloaded files.

    Examples
    --------
    Iris, Wine and Breast cancer come with scikit-learn and need no download:

    >>> from robustkernel.datasets import load_dataset
    >>> X, y = load_dataset("breast_cancer")
    >>> X.shape, y.shape
    ((569, 30), (569,))
    >>> bunch = load_dataset("breast_cancer", return_X_y=False)
    >>> bunch.task, bunch.feature_names[:2]
    ('binary', ['mean radius', 'mean texture'])

    The other data sets are downloaded once into the cache (checksums verified) and read from
    it afterwards; ``data_home`` chooses the folder:

    >>> X, y = load_dataset("boston", data_home="~/robustkernel_data")  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (506, 13)
    """
    spec = _spec(name)
    X, y = _handle_missing(*_read_frame(spec, subset, data_home, download_if_missing), missing)
    if spec.task == "regression":
        y = y.astype("float64")
    if return_X_y:
        return (X, y) if as_frame else (X.to_numpy(), y.to_numpy())
    frame = pd.concat([X, y], axis=1)
    data, target = (X, y) if as_frame else (X.to_numpy(), y.to_numpy())
    return Bunch(
        data=data,
        target=target,
        frame=frame if as_frame else None,
        feature_names=list(X.columns),
        target_name=y.name,
        task=spec.task,
        DESCR=spec.description,
    )


_F = TypeVar("_F", bound=Callable[..., LoaderResult])

_PARAMS_DOC = """
    Parameters
    ----------
    data_home : str or path-like, default=None
        Cache directory; None uses ``ROBUSTKERNEL_DATA``, else ``~/.cache/robustkernel``.
    download_if_missing : bool, default=True
        Download (and checksum-verify) the file into the cache when it is absent.
    as_frame : bool, default=False
        Return a pandas DataFrame and Series instead of NumPy arrays.
    return_X_y : bool, default=True
        Return ``(X, y)``; if False, a :class:`sklearn.utils.Bunch` (see :func:`load_dataset`).
{extra}
    Returns
    -------
    X, y : ndarray of shape ({n_samples}, {n_features}) and ({n_samples},), or DataFrame, Series
        Task: {task}. See :func:`load_dataset` for the Bunch returned when ``return_X_y=False``.
"""


def _documented(name: str, extra: str = "") -> Callable[[_F], _F]:
    """Give a thin loader the docstring built from its registry entry."""
    spec = DATASETS[name]

    def decorate(func: _F) -> _F:
        params = _PARAMS_DOC.format(
            extra=extra, n_samples=spec.n_samples, n_features=spec.n_features, task=spec.task
        )
        about = textwrap.fill(
            spec.description, 96, initial_indent="    ", subsequent_indent="    ",
            break_on_hyphens=False,
        )  # fmt: skip
        func.__doc__ = f"Load the ``{name}`` data set ({spec.task}).\n\n{about}\n{params}"
        return func

    return decorate


_SUBSET_DOC = """    subset : {"all", "train", "test"}, default="all"
        "all" = the standard training file (first 4435 rows) followed by the test file (2000
        rows); "train" / "test" = either file alone.
"""
_MISSING_DOC = """    missing : {"impute", "drop", "keep"}, default="impute"
        Most frequent value per column (303 rows), drop the 6 incomplete rows (297), or NaN.
"""


@_documented("boston")
def load_boston(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("boston", **locals())


@_documented("concrete")
def load_concrete(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("concrete", **locals())


@_documented("wine_quality_red")
def load_wine_quality_red(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("wine_quality_red", **locals())


@_documented("drug")
def load_drug(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("drug", **locals())


@_documented("heart", _MISSING_DOC)
def load_heart(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True, missing: Missing = "impute",
) -> LoaderResult:  # fmt: skip
    return load_dataset("heart", **locals())


@_documented("breast_cancer")
def load_breast_cancer(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("breast_cancer", **locals())


@_documented("iris")
def load_iris(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("iris", **locals())


@_documented("wine")
def load_wine(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("wine", **locals())


@_documented("glass")
def load_glass(
    *, data_home: PathLike = None, download_if_missing: bool = True, as_frame: bool = False,
    return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("glass", **locals())


@_documented("satimage", _SUBSET_DOC)
def load_satimage(
    *, subset: Literal["all", "train", "test"] = "all", data_home: PathLike = None,
    download_if_missing: bool = True, as_frame: bool = False, return_X_y: bool = True,
) -> LoaderResult:  # fmt: skip
    return load_dataset("satimage", **locals())
