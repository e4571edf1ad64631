"""Tests of the data set loaders, the cache / download mechanism and the synthetic generator."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.io import savemat
from sklearn.datasets import load_breast_cancer as sk_load_breast_cancer
from sklearn.utils import Bunch

from robustkernel import datasets as rkd
from robustkernel.datasets import (
    DATASETS,
    ChecksumError,
    _loaders,
    _registry,
    fetch_file,
    get_data_home,
    load_boston,
    load_dataset,
    load_heart,
    load_satimage,
    make_polynomial_regression,
    sha256_file,
)
from robustkernel.datasets._cache import sha256_bytes

# ---------------------------------------------------------------------------------------------
# The shared data folder (never copied into the repository).


def _manifest(shared: Path) -> dict[str, dict[str, object]]:
    """Rows, columns and sha256 per file, as written in MANIFEST.md."""
    text = (shared / "MANIFEST.md").read_text()
    table = re.findall(r"^\| (\S+\.csv) \| (\d+) \| (\d+) \|", text, flags=re.MULTILINE)
    sums = dict(re.findall(r"^## (\S+\.csv)\n\n(?:.*\n)*?- sha256: `([0-9a-f]{64})`", text,
                           flags=re.MULTILINE))  # fmt: skip
    return {
        name: {"rows": int(rows), "columns": int(cols), "sha256": sums[name]}
        for name, rows, cols in table
    }


FILES = [
    (name, subset, file)
    for name, spec in DATASETS.items()
    for subset, file in spec.files.items()
]  # fmt: skip
FILE_IDS = [f"{name}-{subset}" for name, subset, _ in FILES]


@pytest.mark.parametrize(("name", "subset", "file"), FILES, ids=FILE_IDS)
def test_registry_matches_manifest(shared, name, subset, file):
    entry = _manifest(shared)[file.filename]
    assert (file.n_rows, file.n_columns, file.sha256) == (
        entry["rows"], entry["columns"], entry["sha256"]
    )  # fmt: skip


@pytest.mark.parametrize(("name", "subset", "file"), FILES, ids=FILE_IDS)
def test_shared_file_checksum_and_parsed_shape(shared, name, subset, file):
    assert sha256_file(shared / file.filename) == file.sha256
    X, y = load_dataset(name, subset=subset, data_home=shared, download_if_missing=False)
    assert X.shape == (file.n_rows, file.n_columns - 1)
    assert y.shape == (file.n_rows,)
    assert X.dtype == np.float64
    assert np.isfinite(X).all()
    if subset == next(iter(DATASETS[name].files)):
        assert X.shape == (DATASETS[name].n_samples, DATASETS[name].n_features)


def test_env_var_is_the_default_data_home(shared, monkeypatch):
    monkeypatch.setenv("ROBUSTKERNEL_DATA", str(shared))
    X, y = load_boston(download_if_missing=False)
    assert X.shape == (506, 13)
    assert y[0] == 24.0


def test_heart_binary_target_and_missing_values(shared):
    X, y = load_heart(data_home=shared)
    assert X.shape == (303, 13)
    assert not np.isnan(X).any()
    assert sorted(np.unique(y)) == [0, 1]
    assert np.bincount(y).tolist() == [164, 139]  # num == 0: 164 rows, num in 1..4: 139
    X_keep, _ = load_heart(data_home=shared, missing="keep")
    assert np.isnan(X_keep).sum() == 6
    X_drop, y_drop = load_heart(data_home=shared, missing="drop")
    assert X_drop.shape == (297, 13) and y_drop.shape == (297,)
    # Imputation touches only the missing cells, with an observed value of that column.
    gaps = np.isnan(X_keep)
    np.testing.assert_array_equal(X[~gaps], X_keep[~gaps])
    for col in np.flatnonzero(gaps.any(axis=0)):
        assert set(X[gaps[:, col], col]) <= set(X_keep[~gaps[:, col], col])


def test_satimage_subsets_stack_to_all(shared):
    X_all, y_all = load_satimage(data_home=shared)
    X_tr, y_tr = load_satimage(subset="train", data_home=shared)
    X_te, y_te = load_satimage(subset="test", data_home=shared)
    np.testing.assert_array_equal(X_all, np.vstack([X_tr, X_te]))
    np.testing.assert_array_equal(y_all, np.concatenate([y_tr, y_te]))
    assert sorted(np.unique(y_all)) == [1, 2, 3, 4, 5, 7]


def test_shared_breast_cancer_csv_agrees_with_scikit_learn(shared):
    """breast_cancer.csv is not used by the loader (scikit-learn's copy is), but must agree."""
    frame = pd.read_csv(shared / "breast_cancer.csv")
    assert frame.shape == (569, 31)
    X_sk, y_sk = sk_load_breast_cancer(return_X_y=True)
    np.testing.assert_allclose(frame.iloc[:, :-1].to_numpy(), X_sk, rtol=1e-12)
    np.testing.assert_array_equal(frame["diagnosis"].map({"M": 0, "B": 1}).to_numpy(), y_sk)


# ---------------------------------------------------------------------------------------------
# The registry and the scikit-learn data sets (no files needed).


def test_registry_names_and_tasks():
    assert {name: spec.task for name, spec in DATASETS.items()} == {
        "boston": "regression",
        "concrete": "regression",
        "wine_quality_red": "regression",
        "drug": "regression",
        "heart": "binary",
        "breast_cancer": "binary",
        "iris": "multiclass",
        "wine": "multiclass",
        "glass": "multiclass",
        "satimage": "multiclass",
    }
    with pytest.raises(TypeError):
        DATASETS["new"] = DATASETS["iris"]  # read-only


@pytest.mark.parametrize("name", ["iris", "wine", "breast_cancer"])
def test_sklearn_bundled_data_sets(name, tmp_path):
    spec = DATASETS[name]
    X, y = load_dataset(name, data_home=tmp_path)  # data_home is ignored: no file is needed
    assert X.shape == (spec.n_samples, spec.n_features)
    n_classes = len(np.unique(y))
    assert (n_classes == 2) == (spec.task == "binary")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="no subsets"):
        load_dataset(name, subset="train")


def test_every_public_loader_is_a_thin_wrapper():
    for name in DATASETS:
        loader = getattr(rkd, f"load_{name}")
        assert f"``{name}``" in loader.__doc__
        assert "Parameters" in loader.__doc__


def test_unknown_name_and_subset():
    with pytest.raises(ValueError, match="Unknown data set 'nope'"):
        load_dataset("nope")
    with pytest.raises(ValueError, match="Unknown subset 'dev'"):
        load_dataset("satimage", subset="dev", download_if_missing=False)


# ---------------------------------------------------------------------------------------------
# Loaders on small files written by the tests.

_BOSTON_HEADER = ",".join(_registry.BOSTON_COLUMNS)
_BOSTON_ROWS = [
    "0.00632,18.00,2.310,0,0.5380,6.5750,65.20,4.0900,1,296.0,15.30,396.90,4.98,24.00",
    "0.02731,0.00,7.070,0,0.4690,6.4210,78.90,4.9671,2,242.0,17.80,396.90,9.14,21.60",
    "0.02729,0.00,7.070,0,0.4690,7.1850,61.10,4.9671,2,242.0,17.80,392.83,4.03,34.70",
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_loader_parses_a_small_cached_file(tmp_path):
    _write(tmp_path / "boston.csv", [_BOSTON_HEADER, *_BOSTON_ROWS])
    X, y = load_boston(data_home=tmp_path, download_if_missing=False)
    assert X.shape == (3, 13)
    np.testing.assert_array_equal(y, [24.0, 21.6, 34.7])
    assert X[1, 0] == 0.02731 and X[2, 11] == 392.83

    X_df, y_s = load_boston(data_home=tmp_path, as_frame=True)
    assert isinstance(X_df, pd.DataFrame) and isinstance(y_s, pd.Series)
    assert list(X_df.columns) == list(_registry.BOSTON_COLUMNS[:-1]) and y_s.name == "MEDV"

    bunch = load_boston(data_home=tmp_path, return_X_y=False, as_frame=True)
    assert isinstance(bunch, Bunch)
    assert bunch.task == "regression" and bunch.frame.shape == (3, 14)
    assert bunch.feature_names == list(_registry.BOSTON_COLUMNS[:-1])
    bunch = load_boston(data_home=tmp_path, return_X_y=False)
    assert isinstance(bunch.data, np.ndarray) and bunch.frame is None


def test_heart_parser_on_a_small_file(tmp_path):
    rows = [
        "63.0,1.0,1.0,145.0,233.0,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,0",
        "67.0,1.0,4.0,160.0,286.0,0.0,2.0,108.0,1.0,1.5,2.0,,3.0,2",
        "67.0,1.0,4.0,120.0,229.0,0.0,2.0,129.0,1.0,2.6,2.0,2.0,,1",
        "37.0,1.0,3.0,130.0,250.0,0.0,0.0,187.0,0.0,3.5,3.0,0.0,3.0,0",
        "41.0,0.0,2.0,130.0,204.0,0.0,2.0,172.0,0.0,1.4,1.0,0.0,3.0,0",
    ]
    _write(tmp_path / "heart.csv", [",".join(_registry.HEART_COLUMNS), *rows])
    X, y = load_heart(data_home=tmp_path)
    np.testing.assert_array_equal(y, [0, 1, 1, 0, 0])
    assert X[1, 11] == 0.0  # ca: most frequent observed value
    assert X[2, 12] == 3.0  # thal: most frequent observed value
    assert load_heart(data_home=tmp_path, missing="drop")[0].shape == (3, 13)
    with pytest.raises(ValueError, match="missing must be one of"):
        load_heart(data_home=tmp_path, missing="mean")


def test_non_numeric_feature_column_is_rejected(tmp_path):
    rows = [r.replace("0.00632", "abc") for r in _BOSTON_ROWS]
    _write(tmp_path / "boston.csv", [_BOSTON_HEADER, *rows])
    with pytest.raises(ValueError, match=r"Non-numeric feature columns.*CRIM"):
        load_boston(data_home=tmp_path)


def test_missing_file_without_download_raises(tmp_path):
    with pytest.raises(OSError, match="download_if_missing=False"):
        load_boston(data_home=tmp_path, download_if_missing=False)


def test_get_data_home_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBUSTKERNEL_DATA", str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"
    assert get_data_home() == tmp_path / "env"
    monkeypatch.delenv("ROBUSTKERNEL_DATA")
    assert get_data_home() == tmp_path / "xdg" / "robustkernel"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert get_data_home() == Path("~/.cache/robustkernel").expanduser()
    assert not (tmp_path / "env").exists()  # never created just by asking


# ---------------------------------------------------------------------------------------------
# Download + checksum, through file:// URLs.


def _remote(tmp_path: Path, content: bytes) -> str:
    source = tmp_path / "remote" / "raw.data"
    source.parent.mkdir(exist_ok=True)
    source.write_bytes(content)
    return source.as_uri()


def test_fetch_file_verifies_and_writes_atomically(tmp_path):
    content = b"1,2\n3,4\n"
    url = _remote(tmp_path, content)
    target = tmp_path / "cache" / "sub" / "file.csv"
    assert fetch_file(url, sha256_bytes(content), target) == target
    assert target.read_bytes() == content
    assert [p.name for p in target.parent.iterdir()] == ["file.csv"]  # no temporary left


def test_fetch_file_checksum_mismatch_writes_nothing(tmp_path):
    url = _remote(tmp_path, b"tampered\n")
    target = tmp_path / "cache" / "file.csv"
    with pytest.raises(ChecksumError, match="sha256 mismatch for download"):
        fetch_file(url, sha256_bytes(b"original\n"), target)
    assert not target.exists()
    assert not target.parent.exists() or list(target.parent.iterdir()) == []


def test_fetch_file_checks_the_converted_content(tmp_path):
    content = b"a\n"
    url = _remote(tmp_path, content)
    target = tmp_path / "file.csv"
    with pytest.raises(ChecksumError, match="converted from"):
        fetch_file(url, sha256_bytes(content), target, convert=bytes.upper,
                   converted_sha256=sha256_bytes(b"a\n"))  # fmt: skip
    assert not target.exists()
    fetch_file(url, sha256_bytes(content), target, convert=bytes.upper,
               converted_sha256=sha256_bytes(b"A\n"))  # fmt: skip
    assert target.read_bytes() == b"A\n"


def _fake_boston_spec(url: str, raw_sha: str, cached_sha: str) -> _registry.DatasetSpec:
    file = _registry.CachedFile(
        "boston.csv", cached_sha, 3, 14,
        _registry.RemoteSource(url, raw_sha, _registry._add_header(_registry.BOSTON_COLUMNS)),
    )  # fmt: skip
    return _registry.DatasetSpec(
        name="boston", task="regression", n_samples=3, n_features=13, description="test",
        target="MEDV", files={"all": file},
    )  # fmt: skip


def test_loader_downloads_converts_and_caches(tmp_path, monkeypatch):
    raw = ("\n".join(_BOSTON_ROWS) + "\n").encode()
    cached = (_BOSTON_HEADER + "\n").encode() + raw
    spec = _fake_boston_spec(_remote(tmp_path, raw), sha256_bytes(raw), sha256_bytes(cached))
    monkeypatch.setattr(_loaders, "DATASETS", {"boston": spec})
    cache = tmp_path / "cache"
    X, y = load_boston(data_home=cache)
    assert X.shape == (3, 13)
    np.testing.assert_array_equal(y, [24.0, 21.6, 34.7])
    assert (cache / "boston.csv").read_bytes() == cached
    # A second load reads the cache: the remote may disappear.
    (tmp_path / "remote" / "raw.data").unlink()
    np.testing.assert_array_equal(load_boston(data_home=cache)[1], y)


def test_loader_download_with_bad_checksum_raises(tmp_path, monkeypatch):
    raw = ("\n".join(_BOSTON_ROWS) + "\n").encode()
    spec = _fake_boston_spec(_remote(tmp_path, raw), "0" * 64, "0" * 64)
    monkeypatch.setattr(_loaders, "DATASETS", {"boston": spec})
    with pytest.raises(ChecksumError, match="expected 0000"):
        load_boston(data_home=tmp_path / "cache")
    assert not (tmp_path / "cache" / "boston.csv").exists()


# ---------------------------------------------------------------------------------------------
# Converters from the original formats, on small samples.


def test_convert_heart_from_the_original_format():
    raw = b"(age),(sex),...\n63.0,1.0,?,0\n"
    out = _registry._convert_heart(raw).decode()
    assert out == ",".join(_registry.HEART_COLUMNS) + "\n63.0,1.0,,0\n"


def test_convert_concrete_strips_blanks_and_carriage_returns():
    raw = b"A  (x),B\r\n540.0 ,28 ,79.99 \r\n"
    assert _registry._convert_concrete(raw) == b"A  (x),B\n540.0,28,79.99\n"


def test_convert_glass_drops_the_id_column():
    out = _registry._convert_glass(b"1,1.52101,13.64,1\n2,1.51761,13.89,1\n").decode()
    assert out.splitlines()[1:] == ["1.52101,13.64,1", "1.51761,13.89,1"]
    assert out.splitlines()[0] == ",".join(_registry.GLASS_COLUMNS)


def test_convert_drug_from_a_mat_file():
    buffer = io.BytesIO()
    savemat(buffer, {
        "X_train": np.array([[1, 0], [0, 1]], dtype=np.uint8),
        "y_train": np.array([[0.5], [-1.25]]),
        "X_test": np.array([[1, 1]], dtype=np.uint8),
        "y_test": np.array([[0.1]]),
    })  # fmt: skip
    out = _registry._convert_drug(buffer.getvalue())
    assert out == b"f0,f1,y\r\n1,0,0.5\r\n0,1,-1.25\r\n1,1,0.1\r\n"


def test_satimage_converter_slices_rows():
    raw = b"".join(f"{i},{i}\n".encode() for i in range(5))
    convert = _registry._add_header(["a", "b"], rows=slice(3, None))
    assert convert(raw) == b"a,b\n3,3\n4,4\n"


# ---------------------------------------------------------------------------------------------
# Synthetic polynomial regression.


def test_polynomial_shapes_and_determinism():
    X, y = make_polynomial_regression(200, random_state=3)
    assert X.shape == (200, 1) and y.shape == (200,)
    X2, y2 = make_polynomial_regression(200, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    _, y3 = make_polynomial_regression(200, random_state=4)
    assert not np.array_equal(y, y3)


@pytest.mark.parametrize("degree", [0, 1, 3, 5])
def test_polynomial_without_noise_is_an_exact_polynomial(degree):
    X, y = make_polynomial_regression(100, degree=degree, noise=0.0, random_state=0)
    coef = np.polynomial.polynomial.polyfit(X[:, 0], y, degree)
    np.testing.assert_allclose(np.polynomial.polynomial.polyval(X[:, 0], coef), y, atol=1e-9)
    if degree > 0:  # a degree-(d-1) fit must not be exact: the top coefficient is non-zero
        low = np.polynomial.polynomial.polyfit(X[:, 0], y, degree - 1)
        assert np.abs(np.polynomial.polynomial.polyval(X[:, 0], low) - y).max() > 1e-3


def test_polynomial_noise_is_a_standard_deviation():
    # Same seed: same x and coefficients, so the difference is the noise alone.
    X, y = make_polynomial_regression(20_000, noise=0.01, random_state=1)
    X0, y_clean = make_polynomial_regression(20_000, noise=0.0, random_state=1)
    np.testing.assert_array_equal(X, X0)
    assert 0.0097 < np.std(y - y_clean) < 0.0103
    assert abs(np.mean(y - y_clean)) < 3e-4


def test_polynomial_rejects_bad_parameters():
    with pytest.raises(ValueError, match="noise"):
        make_polynomial_regression(10, noise=-1.0)
    with pytest.raises(ValueError, match="n_samples"):
        make_polynomial_regression(0)
