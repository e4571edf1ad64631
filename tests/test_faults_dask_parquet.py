"""Hostile Parquet tables (``fit`` and ``predict``) and hostile Dask arrays (``fit(X, y)``).

Every case is fitted correctly or refused with one line that names the argument, the column or
the file (the command line: exit code 2 and nothing written); never a silent wrong answer and
never a raw NumPy / SciPy / pyarrow message. Classes of input:

* a Parquet folder whose files disagree: an extra or a missing column, a column of text in one
  file, the target missing from one file (every file's schema is read from its footer before
  any row); columns in another order are matched by name;
* damaged folders and files: a zero-byte or non-Parquet ``.parquet`` file (named), hidden
  (``.``) and private (``_``) files that Dask and pyarrow skip, files without the suffix, a
  file with zero rows, duplicate column names, a table with no feature column;
* values: a column with no value at all (with and without ``--drop-na``), an infinite target,
  nullable integer columns, a classification target with a class per row (refused as for CSV);
* ``predict`` on a Parquet file or folder (rows numbered across the files, predictions written
  as Parquet or CSV after the suffix of ``--out``);
* Dask arrays: NaN or infinity in one chunk of X or y (named, with the row and the chunk), a
  NumPy y (wrapped in X's chunks), mismatched chunks (fitted as matched ones), mismatched or
  unknown lengths, no rows or no columns, one row, object / string / complex dtypes, missing
  class labels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli as run
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.commands._parquet_fit import ParquetTable
from robustkernel.persistence import load_model

da = pytest.importorskip("dask.array", reason="Dask input needs the dask extra")
pa = pytest.importorskip("pyarrow", reason="Parquet input needs the dask extra")
pq = pytest.importorskip("pyarrow.parquet")

N_ROWS = 80
GIVEN = ["--epsilon", "0.1", "--alpha", "0.1", "--gamma", "0.5", "--n-components", "10"]


def frame(n: int = N_ROWS, seed: int = 0) -> pd.DataFrame:
    """Features a, b and a smooth target y."""
    rng = np.random.default_rng(seed)
    data = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
    data["y"] = np.sin(data["a"]) + 0.1 * rng.normal(size=n)
    return data


def folder(path: Path, *parts: pd.DataFrame | pa.Table) -> Path:
    """A folder of ``part-<i>.parquet`` files."""
    path.mkdir()
    for i, part in enumerate(parts):
        if isinstance(part, pd.DataFrame):
            part.to_parquet(path / f"part-{i}.parquet", index=False)
        else:
            pq.write_table(part, path / f"part-{i}.parquet")
    return path


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def fit(capsys, data: Path, out: Path, *extra: str) -> tuple[int, str]:
    """Exit code and stderr of ``fit DATA --target y`` with small given settings."""
    argv = ["fit", str(data), "--target", "y", "--out", str(out), "--quiet", *GIVEN, *extra]
    code, stdout, stderr = run(argv, capsys)
    assert stdout == ""
    return code, stderr


def refused(capsys, tmp_path: Path, data: Path, *extra: str, command: str = "fit") -> str:
    """Run ``fit`` on DATA, assert one error line, exit code 2 and nothing written."""
    before = tree(tmp_path)
    code, stderr = fit(capsys, data, tmp_path / "out", *extra)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith(f"robustkernel {command}: error: "), stderr
    assert tree(tmp_path) == before
    return lines[0]


# --- a folder whose files disagree --------------------------------------------------------


def _extra(data: pd.DataFrame) -> pd.DataFrame:
    return data.assign(c=1.0)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        # an extra column was silently dropped (only the first file's schema was read)
        (lambda f: f, _extra, ["part-1.parquet", "'c'", "part-0.parquet"]),
        # "could not broadcast input array from shape (100,2) into shape (100,3)"
        (_extra, lambda f: f, ["part-1.parquet", "'c'", "lacks"]),
        # "could not convert string to float: 'red'"
        (_extra, lambda f: f.assign(c="red"), ["'c'", "not numeric", "part-1.parquet"]),
        (lambda f: f, lambda f: f.drop(columns="y"), ["part-1.parquet", "'y'"]),
        # a regression target of text in one file
        (lambda f: f, lambda f: f.assign(y="high"), ["'y'", "not numeric", "part-1.parquet"]),
    ],
    ids=["extra column", "missing column", "text column", "target missing", "text target"],
)
def test_files_that_disagree_are_refused_by_file_and_column(
    tmp_path, capsys, first, second, expected
):
    data = folder(tmp_path / "data", first(frame(seed=0)), second(frame(seed=1)))
    line = refused(capsys, tmp_path, data)
    for word in expected:
        assert word in line, line


@pytest.mark.slow
def test_columns_are_matched_by_name_not_position(tmp_path, capsys):
    """Files whose columns come in another order give the fit of the same table."""
    parts = [frame(seed=0), frame(seed=1)]
    same = folder(tmp_path / "same", *parts)
    shuffled = folder(tmp_path / "shuffled", parts[0], parts[1][["y", "b", "a"]])
    for data in (same, shuffled):
        assert fit(capsys, data, tmp_path / f"{data.name}-out") == (0, "")
    expected, got = (
        pd.read_parquet(tmp_path / f"{name}-out" / "predictions.parquet")
        for name in ("same", "shuffled")
    )
    pd.testing.assert_frame_equal(got, expected)


# --- damaged folders and files ------------------------------------------------------------


@pytest.mark.parametrize(
    "content", [b"", b"a,b,y\n1,2,3\n", b"PAR1" + bytes(40)], ids=["zero bytes", "csv", "cut"]
)
def test_a_file_that_is_not_parquet_is_named(tmp_path, capsys, content):
    data = folder(tmp_path / "data", frame())
    (data / "part-1.parquet").write_bytes(content)
    line = refused(capsys, tmp_path, data)
    assert "part-1.parquet" in line and "Parquet" in line, line


def test_a_damaged_page_names_the_file(tmp_path, capsys):
    """The footer reads, a page does not: pyarrow's OSError ("Couldn't deserialize thrift")
    named no file."""
    data = folder(tmp_path / "data", frame(), frame(seed=1))
    damaged = bytearray((data / "part-1.parquet").read_bytes())
    damaged[4:200] = b"\xff" * 196
    (data / "part-1.parquet").write_bytes(bytes(damaged))
    line = refused(capsys, tmp_path, data)
    assert "row group 0 of" in line and "part-1.parquet" in line, line


def test_hidden_private_and_other_files_are_skipped(tmp_path, capsys):
    """As Dask and pyarrow do, names starting with ``.`` or ``_`` (a partial write, Spark's
    ``_SUCCESS``, ``_metadata``) and files without the suffix are not part of the table; a
    file with zero rows adds none."""
    data = folder(tmp_path / "data", frame(seed=0), frame(seed=1).iloc[:0])
    (data / ".part-2.parquet").write_bytes(b"half written")
    (data / "_temporary.parquet").write_bytes(b"")
    (data / "_SUCCESS").write_bytes(b"")
    (data / "notes.txt").write_text("the table of 2024\n")
    assert fit(capsys, data, tmp_path / "out") == (0, "")
    rows = pd.read_parquet(tmp_path / "out" / "outliers.parquet").row
    np.testing.assert_array_equal(rows, np.arange(1, N_ROWS + 1))


def test_empty_folders_and_tables_are_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert "is a folder" in refused(capsys, tmp_path, tmp_path / "empty")
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / ".part-0.parquet").write_bytes(b"")
    assert "no .parquet files" in refused(capsys, tmp_path, tmp_path / "hidden")
    zero = folder(tmp_path / "zero", frame().iloc[:0])
    assert "0 usable row(s)" in refused(capsys, tmp_path, zero)
    only_target = folder(tmp_path / "target", frame()[["y"]])
    assert "no feature column" in refused(capsys, tmp_path, only_target)


def test_duplicate_column_names_are_refused(tmp_path, capsys):
    """pyarrow writes a table with two columns ``a``; reading ``a`` by name took one of them
    (KeyError in the type check before)."""
    values = frame()
    table = pa.table([values.a, values.b, values.y], names=["a", "a", "y"])
    data = folder(tmp_path / "data", table)
    line = refused(capsys, tmp_path, data)
    assert "'a'" in line and "part-0.parquet" in line and "repeats" in line, line


# --- values -------------------------------------------------------------------------------


@pytest.mark.parametrize("drop_na", [False, True])
def test_a_column_without_values_is_named(tmp_path, capsys, drop_na):
    """All NaN: '--drop-na' used to drop every row ("0 usable row(s)"), and without it the
    message said to pass --drop-na, which cannot help; an all-None column ("null" type) was
    called not numeric."""
    nan = folder(tmp_path / "nan", frame().assign(c=np.nan))
    none = folder(tmp_path / "none", frame().assign(c=None))
    for data in (nan, none):
        line = refused(capsys, tmp_path, data, *(["--drop-na"] if drop_na else []))
        assert "'c'" in line and "no value" in line, line


def test_an_infinite_target_is_named(tmp_path, capsys):
    values = frame()
    values.loc[41, "y"] = -np.inf
    data = folder(tmp_path / "data", frame(seed=1), values)
    line = refused(capsys, tmp_path, data)
    assert "'y'" in line and "infinite" in line and f"row {N_ROWS + 42}" in line, line


def test_an_infinite_feature_is_named(tmp_path, capsys):
    values = frame()
    values.loc[3, "b"] = np.inf
    line = refused(capsys, tmp_path, folder(tmp_path / "data", values))
    assert "'b'" in line and "infinite" in line and "row 4" in line, line


def test_missing_values_name_the_first_row_and_column(tmp_path, capsys):
    values = frame()
    values.loc[[7, 9], "b"] = np.nan
    line = refused(capsys, tmp_path, folder(tmp_path / "data", frame(seed=1), values))
    assert "2 row(s)" in line and f"row {N_ROWS + 8}" in line and "'b'" in line, line


def test_nullable_integer_columns_fit(tmp_path, capsys):
    values = frame()
    values["c"] = pd.array([1, None, 3, 4] * (N_ROWS // 4), dtype="Int64")
    data = folder(tmp_path / "data", values)
    assert fit(capsys, data, tmp_path / "out", "--drop-na") == (0, "")
    rows = pd.read_parquet(tmp_path / "out" / "outliers.parquet").row
    assert len(rows) == N_ROWS * 3 // 4


def test_a_class_per_row_is_refused_as_for_csv(tmp_path, capsys):
    """A classification target with (almost) a class per row is an identifier: the CSV fit
    refuses it, the Parquet fit ran a softmax over 80 classes for a minute."""
    data = folder(tmp_path / "data", frame().assign(y=[f"id{i}" for i in range(N_ROWS)]))
    line = refused(capsys, tmp_path, data, "--task", "classification", "--epsilon", "auto")
    assert "'y'" in line and "identifier" in line, line
    one = folder(tmp_path / "one", frame().assign(y="same"))
    line = refused(capsys, tmp_path, one, "--task", "classification", "--epsilon", "auto")
    assert "single class" in line, line


def test_integer_labels_keep_their_type_when_a_file_has_nulls(tmp_path):
    """Integer labels with a missing one (a file without pandas' metadata, as Spark writes
    it) are read as floats; the labels' type came from the first row group (float64 here), it
    now comes from every file's schema."""
    values = frame()
    labels = pa.array([None if i == 5 else int(v > 0) for i, v in enumerate(values.a)])
    first = pa.table([pa.array(values.a), pa.array(values.b), labels], names=["a", "b", "y"])
    other = frame(seed=1)
    data = folder(tmp_path / "data", first, other.assign(y=(other.a > 0).astype(int)))
    table = ParquetTable(str(data), "y", classification=True, drop_na=True, random_state=0)
    y = table.y.compute()
    assert y.dtype == np.int64 and table.y.dtype == np.int64
    np.testing.assert_array_equal(y[:5], (values.a[:5] > 0).astype(int))
    assert len(y) == 2 * N_ROWS - 1


# --- predict on Parquet -------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    """The model of a small CSV fit (features a, b)."""
    work = tmp_path_factory.mktemp("model")
    frame().to_csv(work / "train.csv", index=False)
    argv = ["fit", str(work / "train.csv"), "--target", "y", "--epsilon", "0.1", "--quiet",
            "--out", str(work / "fit")]
    from robustkernel.cli import main

    assert main(argv) == 0
    return work / "fit" / "model.skops"


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_predict_reads_a_parquet_folder(tmp_path, capsys, model_file, suffix):
    """'predict' said "not UTF-8 text" for a Parquet file: it reads the files row group by row
    group (other columns ignored, in any order) and writes Parquet or CSV after --out."""
    parts = [frame(seed=1), frame(seed=2)[["b", "y", "a"]].assign(extra="x")]
    data = folder(tmp_path / "data", *parts)
    out = tmp_path / f"predictions{suffix}"
    code, stdout, stderr = run(
        ["predict", str(model_file), str(data), "--out", str(out), "--quiet"], capsys
    )
    assert (code, stdout, stderr) == (0, "", "")
    written = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
    rows = pd.concat(parts, ignore_index=True)
    np.testing.assert_array_equal(written.row, np.arange(1, 2 * N_ROWS + 1))
    np.testing.assert_allclose(written.predicted, load_model(model_file).predict(rows[["a", "b"]]))


def test_predict_writes_parquet_for_a_parquet_name_and_class_probabilities(tmp_path, capsys):
    """A classifier's labels and probabilities, from CSV or Parquet input alike."""
    train = frame().assign(y=lambda f: np.where(f.a > 0, "=up", "down"))
    train.to_csv(tmp_path / "train.csv", index=False)
    argv = ["fit", str(tmp_path / "train.csv"), "--target", "y", "--task", "classification",
            "--alpha", "0.1", "--gamma", "0.5", "--quiet", "--out", str(tmp_path / "fit")]
    assert run(argv, capsys)[0] == 0
    model = tmp_path / "fit" / "model.skops"
    rows = frame(seed=4)
    rows.to_csv(tmp_path / "rows.csv", index=False)
    data = folder(tmp_path / "rows", rows.iloc[:30], rows.iloc[30:])
    outputs = []
    for source in (tmp_path / "rows.csv", data):
        out = tmp_path / f"{source.stem}-predictions.parquet"
        argv = ["predict", str(model), str(source), "--out", str(out), "--quiet"]
        assert run(argv, capsys) == (0, "", "")
        outputs.append(pd.read_parquet(out))
    pd.testing.assert_frame_equal(outputs[0], outputs[1])
    fitted = load_model(model)
    assert outputs[0].predicted.tolist() == fitted.predict(rows[["a", "b"]]).tolist()
    assert {"probability_=up", "probability_down"} <= set(outputs[0].columns)


def test_predict_on_parquet_refuses_and_drops_like_csv(tmp_path, capsys, model_file):
    values = frame(seed=1)
    values.loc[4, "a"] = np.nan
    data = folder(tmp_path / "data", frame(seed=2), values)
    out = tmp_path / "p.parquet"
    argv = ["predict", str(model_file), str(data), "--out", str(out), "--quiet"]
    code, _, stderr = run(argv, capsys)
    assert code == 2 and f"row {N_ROWS + 5}" in stderr and "'a'" in stderr, stderr
    assert not out.exists()
    code, _, stderr = run([*argv, "--drop-na"], capsys)
    assert (code, stderr) == (0, "")
    rows = pd.read_parquet(out).row.to_numpy()
    np.testing.assert_array_equal(rows, np.delete(np.arange(1, 2 * N_ROWS + 1), N_ROWS + 4))

    other = frame(seed=1)
    for name, second, expected in [
        ("missing", other.drop(columns="b"), ["'b'", "part-1.parquet", "missing from"]),
        ("text", other.assign(b="red"), ["'b'", "part-1.parquet", "not numeric"]),
        ("infinite", other.assign(b=np.inf), ["'b'", f"row {N_ROWS + 1}", "infinite"]),
        ("no rows", other.iloc[:0], ["0 usable"]),
    ]:
        parts = [second] if name == "no rows" else [frame(seed=2), second]
        data = folder(tmp_path / name, *parts)
        argv = ["predict", str(model_file), str(data), "--out", str(tmp_path / "q.parquet")]
        code, _, stderr = run(argv, capsys)
        assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
        assert all(word in stderr for word in expected), stderr
        assert not (tmp_path / "q.parquet").exists()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# --- Dask arrays --------------------------------------------------------------------------


def dask_data(n: int = 120, chunks: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def regressor(**params) -> SubquantileKernelRegressor:
    return SubquantileKernelRegressor(
        **{"epsilon": 0.1, "alpha": 0.1, "gamma": 0.5, "n_components": 10, "random_state": 0,
           **params}
    )


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("auto", [False, True], ids=["given", "auto"])
def test_nonfinite_values_in_one_chunk_are_named(where, value, auto):
    """NaN in one chunk of y said "array must not contain infs or NaNs" (SciPy), or "Input y
    contains NaN" from the in-memory fit of the "auto" sample."""
    X, y = dask_data()
    (X if where == "X" else y)[(97, 1) if where == "X" else 97] = value
    estimator = SubquantileKernelRegressor(n_components=10) if auto else regressor()
    expected = rf"^{where} holds .*row 97\b.*chunk 3 of 3"
    with pytest.raises(ValueError, match=expected):
        estimator.fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40))


@pytest.mark.parametrize("kind", ["numpy", "list", "series"])
def test_a_numpy_y_is_taken_in_the_chunks_of_x(kind):
    """A Dask X with a NumPy y raised AttributeError ('numpy.ndarray' object has no attribute
    'rechunk'): y (n values) is wrapped in X's row chunks."""
    X, y = dask_data()
    expected = regressor().fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
    given = {"numpy": y, "list": y.tolist(), "series": pd.Series(y)}[kind]
    got = regressor().fit(da.from_array(X, chunks=40), given)
    np.testing.assert_array_equal(got.inlier_mask_, expected.inlier_mask_)
    np.testing.assert_allclose(got.predict(X), expected.predict(X), rtol=1e-10)


def test_chunks_of_y_unlike_those_of_x_give_the_same_fit():
    X, y = dask_data()
    expected = regressor().fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
    got = regressor().fit(da.from_array(X, chunks=(40, 1)), da.from_array(y, chunks=(70,)))
    np.testing.assert_array_equal(got.inlier_mask_, expected.inlier_mask_)
    np.testing.assert_allclose(got.predict(X), expected.predict(X), rtol=1e-10)


def test_one_row_fits_as_in_memory():
    X, y = dask_data(n=1, chunks=1)
    expected = regressor().fit(X, y)
    got = regressor().fit(da.from_array(X), da.from_array(y))
    np.testing.assert_array_equal(got.inlier_mask_, expected.inlier_mask_)
    np.testing.assert_allclose(got.predict(X), expected.predict(X), rtol=1e-10)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda X, y: (X, y[:-1]), r"X has 120 rows and y 119"),
        (lambda X, y: (X[:0], y[:0]), r"X has no rows"),
        (lambda X, y: (X[:, :0], y), r"X has no feature column"),
        (lambda X, y: (X[X[:, 0] > -3], y), r"X has unknown chunk sizes.*compute_chunk_sizes"),
        (lambda X, y: (X, y[y > -3]), r"y has unknown chunk sizes.*compute_chunk_sizes"),
        (lambda X, y: (X.astype(object), y), r"X has dtype object.*numeric"),
        (lambda X, y: (X.astype(str), y), r"X has dtype <U\d+.*numeric"),
        (lambda X, y: (X.astype(complex), y), r"X has dtype complex128.*numeric"),
        (lambda X, y: (X, y.astype(str)), r"y has dtype <U\d+.*numeric"),
    ],
    ids=["lengths", "no rows", "no columns", "unknown X rows", "unknown y rows", "object X",
         "string X", "complex X", "string y"],
)
def test_unusable_dask_arrays_are_refused_by_name(make, expected):
    """Object, string and complex X were converted silently (complex: imaginary part dropped,
    strings parsed); no rows or no columns gave sklearn's Nystroem message."""
    X, y = dask_data()
    X, y = make(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
    with pytest.raises(ValueError, match=expected):
        regressor().fit(X, y)


@pytest.mark.parametrize("labels", ["nan", "none"])
def test_missing_class_labels_are_refused(labels):
    X, y = dask_data()
    y = np.where(y > 0, "up", "down").astype(object) if labels == "none" else (y > 0) * 1.0
    y[61] = None if labels == "none" else np.nan
    classifier = SubquantileKernelClassifier(
        epsilon="auto", alpha=0.1, gamma=0.5, n_components=10
    )
    with pytest.raises(ValueError, match=r"^y holds .*row 61\b.*chunk 2 of 3"):
        classifier.fit(da.from_array(X, chunks=40), da.from_array(y, chunks=40))
