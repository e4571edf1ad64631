"""``robustkernel predict --coverage``: interval columns from the fitted model, refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli as run
from robustkernel.persistence import load_model


def _table(seed: int = 0, n: int = 160) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    frame["y"] = 2.0 * frame["a"] - frame["b"] + 0.3 * rng.normal(size=n)
    frame.loc[:15, "y"] += 25.0  # 16 gross errors
    return frame


@pytest.fixture
def fitted(tmp_path, capsys):
    path = tmp_path / "train.csv"
    _table().to_csv(path, index=False)
    out = tmp_path / "fit"
    argv = ["fit", str(path), "--target", "y", "--out", str(out), "--quiet"]
    assert run(argv, capsys)[0] == 0
    return out


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_predict_writes_the_models_intervals(tmp_path, fitted, capsys, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    new = _table(seed=1).drop(columns="y")
    data = tmp_path / f"new{suffix}"
    new.to_csv(data, index=False) if suffix == ".csv" else new.to_parquet(data)
    out = tmp_path / "predictions.csv"
    argv = ["predict", str(fitted / "model.skops"), str(data), "--out", str(out)]
    assert run([*argv, "--coverage", "0.8", "--quiet"], capsys)[0] == 0
    written = pd.read_csv(out)
    assert list(written.columns) == ["row", "predicted", "lower", "upper"]
    # the same bounds as the model's own, on its pipeline's scaled columns
    pipeline = load_model(fitted / "model.skops")
    expected = pipeline[-1].predict_interval(pipeline[:-1].transform(new[["a", "b"]]), 0.8)
    np.testing.assert_allclose(written[["lower", "upper"]].to_numpy(), expected)
    assert np.all(written["lower"] < written["predicted"])
    assert np.all(written["predicted"] < written["upper"])


def test_fit_report_plots_the_intervals(fitted):
    assert (fitted / "intervals.png").stat().st_size > 0
    assert "## Prediction intervals" in (fitted / "report.md").read_text()


@pytest.mark.parametrize("value", ["0", "1", "1.5", "nan", "abc", "-0.2"])
def test_predict_refuses_a_coverage_outside_0_1(tmp_path, fitted, capsys, value):
    data = tmp_path / "new.csv"
    _table(seed=2).to_csv(data, index=False)
    out = tmp_path / "predictions.csv"
    argv = ["predict", str(fitted / "model.skops"), str(data), "--out", str(out)]
    code, _, stderr = run([*argv, "--coverage", value], capsys)
    assert code == 2 and "--coverage" in stderr
    assert not out.exists()


def test_predict_coverage_with_a_classifier_exits_2_in_one_line(tmp_path, capsys):
    frame = _table(seed=3)
    frame["y"] = (frame["a"] > 0).astype(int)
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "fit"
    argv = ["fit", str(path), "--target", "y", "--task", "classification", "--out", str(out)]
    assert run([*argv, "--quiet"], capsys)[0] == 0
    predictions = tmp_path / "predictions.csv"
    argv = ["predict", str(out / "model.skops"), str(path), "--out", str(predictions)]
    code, _, stderr = run([*argv, "--coverage", "0.9"], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "intervals" in stderr and not predictions.exists()
