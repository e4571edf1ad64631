"""``robustkernel fit DATA.parquet``: a Parquet table fitted on Dask, row group by row group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import RobustScaler

from conftest import run_cli as run
from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.persistence import load_model

pytest.importorskip("pyarrow", reason="Parquet input needs the dask extra")
pytest.importorskip("dask.array", reason="Parquet input needs the dask extra")

N_ROWS = 3000


def table(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """y = sin(a) + b c + noise; a fifth of the targets replaced by N(5, 5) draws."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.uniform(-2, 2, size=(N_ROWS, 3)), columns=["a", "b", "c"])
    y = np.sin(frame.a) + frame.b * frame.c + 0.1 * rng.normal(size=N_ROWS)
    bad = rng.choice(N_ROWS, N_ROWS // 5, replace=False)
    y[bad] = rng.normal(5.0, 5.0, size=bad.size)
    frame["y"] = y
    return frame, bad


def write_folder(frame: pd.DataFrame, folder) -> None:
    """Two files, the first in row groups of 700 rows, with a non-range index stored."""
    folder.mkdir()
    frame = frame.set_axis(np.arange(len(frame)) * 3 + 7)
    frame.iloc[:2000].to_parquet(folder / "part-0.parquet", row_group_size=700)
    frame.iloc[2000:].to_parquet(folder / "part-1.parquet")


GIVEN = ["--epsilon", "0.2", "--alpha", "0.01", "--gamma", "0.5", "--n-components", "60"]


def test_parquet_fit_keeps_the_rows_the_in_memory_fit_keeps(tmp_path, capsys):
    """At a given kernel (the papers' rbf), epsilon, alpha and gamma the fit over row groups
    keeps exactly the rows that the same pipeline fitted in memory keeps (refine="reject"
    included), and the tables name the rows by their position in the files."""
    frame, bad = table()
    write_folder(frame, tmp_path / "data")
    out = tmp_path / "fit"
    code, stdout, _ = run(
        ["fit", str(tmp_path / "data"), "--target", "y", "--out", str(out), "--quiet", *GIVEN,
         "--kernel", "rbf"],
        capsys,
    )
    assert code == 0 and stdout == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "model.skops", "outliers.parquet", "outliers.png", "predictions.parquet", "report.md",
    ]
    memory = Pipeline([
        ("scale", RobustScaler()),
        ("model", SubquantileKernelRegressor(
            0.2, alpha=0.01, kernel="rbf", gamma=0.5, n_components=60, random_state=0
        )),
    ]).fit(frame[["a", "b", "c"]], frame.y)
    outliers = pd.read_parquet(out / "outliers.parquet")
    np.testing.assert_array_equal(outliers.row, np.arange(1, N_ROWS + 1))
    np.testing.assert_array_equal(~outliers.flagged, memory[-1].inlier_mask_)
    assert outliers.flagged.to_numpy()[bad].mean() > 0.9
    predictions = pd.read_parquet(out / "predictions.parquet")
    np.testing.assert_allclose(predictions.observed, frame.y)
    model = load_model(out / "model.skops")
    np.testing.assert_allclose(predictions.predicted, model.predict(frame[["a", "b", "c"]]))
    np.testing.assert_allclose(
        predictions.predicted, memory.predict(frame[["a", "b", "c"]]), rtol=1e-8, atol=1e-8
    )
    assert "fitted on Dask" in (out / "report.md").read_text()


def test_a_parquet_regression_starts_from_a_high_breakdown_fit(tmp_path, capsys):
    """--kernel auto (the default) for a regression of any size, Parquet included: the
    in-memory fit of a sample of rows chooses the kernel, and the report names it."""
    frame, bad = table()
    n = 300  # the start costs seconds per hundred rows (up to 1000 of them)
    frame, bad = frame.iloc[:n], bad[bad < n]
    frame.to_parquet(tmp_path / "table.parquet", index=False)
    out = tmp_path / "fit"
    code, _, _ = run(
        ["fit", str(tmp_path / "table.parquet"), "--target", "y", "--n-components", "60",
         "--out", str(out), "--quiet"],
        capsys,
    )
    assert code == 0
    model = load_model(out / "model.skops")[-1]
    assert model.kernel == "auto" and model.kernel_ in ("linear", "poly", "rbf")
    assert pd.read_parquet(out / "outliers.parquet").flagged.to_numpy()[bad].mean() > 0.9
    assert f"| kernel | auto (chose {model.kernel_}) |" in (out / "report.md").read_text()


@pytest.mark.slow  # 10 s; the Parquet regression stays in the default suite
def test_parquet_classification_with_the_defaults(tmp_path, capsys):
    """Text labels, epsilon / alpha / gamma "auto": most flipped labels are flagged."""
    frame, _ = table(seed=1)
    positive = frame.a + frame.b > 0
    flipped = np.random.default_rng(2).choice(N_ROWS, N_ROWS // 10, replace=False)
    positive[flipped] = ~positive[flipped]
    frame["y"] = np.where(positive, "yes", "no")
    frame.to_parquet(tmp_path / "labels.parquet", index=False)
    out = tmp_path / "fit"
    code, _, _ = run(
        ["fit", str(tmp_path / "labels.parquet"), "--target", "y", "--task", "classification",
         "--n-components", "60", "--out", str(out), "--quiet"],
        capsys,
    )
    assert code == 0
    outliers = pd.read_parquet(out / "outliers.parquet")
    assert outliers.flagged.to_numpy()[flipped].mean() > 0.6
    assert outliers.flagged.mean() < 0.2
    model = load_model(out / "model.skops")
    assert isinstance(model[-1], SubquantileKernelClassifier)
    truth = np.where(frame.a + frame.b > 0, "yes", "no")
    assert (model.predict(frame[["a", "b", "c"]]) == truth).mean() > 0.95


def test_missing_values_and_bad_columns_are_named(tmp_path, capsys):
    frame, _ = table()
    frame.loc[5, "a"] = np.nan
    frame.to_parquet(tmp_path / "na.parquet", index=False)
    out = tmp_path / "fit"
    base = ["--target", "y", "--out", str(out), "--quiet", *GIVEN]
    code, _, stderr = run(["fit", str(tmp_path / "na.parquet"), *base], capsys)
    assert code == 2 and "1 row(s) have missing values" in stderr and not out.exists()
    code, _, _ = run(["fit", str(tmp_path / "na.parquet"), *base, "--drop-na"], capsys)
    assert code == 0
    rows = pd.read_parquet(out / "outliers.parquet").row.to_numpy()
    np.testing.assert_array_equal(rows, np.delete(np.arange(1, N_ROWS + 1), 5))

    frame["d"] = "text"
    frame.to_parquet(tmp_path / "text.parquet", index=False)
    base[base.index(str(out))] = str(tmp_path / "text")
    code, _, stderr = run(["fit", str(tmp_path / "text.parquet"), *base], capsys)
    assert code == 2 and "'d' are not numeric" in stderr
    code, _, stderr = run(
        ["fit", str(tmp_path / "na.parquet"), "--target", "y", "--out", str(tmp_path / "o")],
        capsys,
    )
    assert code == 2 and "--drop-na" in stderr  # no --n-components needed: "auto"
    frame.drop(columns="d").to_csv(tmp_path / "table.csv", index=False)
    code, _, stderr = run(
        ["fit", str(tmp_path / "table.csv"), "--target", "y", "--out", str(tmp_path / "o"),
         "--scheduler", "tcp://127.0.0.1:1"],
        capsys,
    )
    assert code == 2 and "Parquet" in stderr
