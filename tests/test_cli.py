"""``robustkernel fit / predict / learn-metric`` end to end on small generated CSV files."""

from __future__ import annotations

import re
import subprocess
import sys

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.preprocessing import RobustScaler, StandardScaler

from conftest import run_cli as run
from robustkernel import MetricKernelRidge
from robustkernel.persistence import FORMAT, load_model

N_ROWS = 80
N_CORRUPTED = 8


def _features(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(N_ROWS, 3)), columns=["a", "b", "c"])


@pytest.fixture
def regression_csv(tmp_path):
    """Semicolon-separated; y = sin(a) + noise, the first rows' targets replaced."""
    frame = _features()
    rng = np.random.default_rng(1)
    frame["y"] = np.sin(frame["a"]) + 0.05 * rng.normal(size=N_ROWS)
    frame.loc[: N_CORRUPTED - 1, "y"] = rng.normal(6.0, 1.0, size=N_CORRUPTED)
    path = tmp_path / "regression.csv"
    frame.to_csv(path, sep=";", index=False)
    return path


@pytest.fixture
def classification_csv(tmp_path):
    """Comma-separated; text labels by the sign of a + b, the first rows' labels flipped."""
    frame = _features()
    positive = frame["a"] + frame["b"] > 0
    positive[:N_CORRUPTED] = ~positive[:N_CORRUPTED]
    frame["label"] = np.where(positive, "yes", "no")
    path = tmp_path / "classification.csv"
    frame.to_csv(path, index=False)
    return path


def test_fit_regression_writes_model_tables_and_report(tmp_path, regression_csv, capsys):
    out = tmp_path / "fit"
    code, stdout, _ = run(["fit", str(regression_csv), "--target", "y", "--out", str(out)], capsys)
    assert code == 0 and "epsilon_" in stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "fit.png",
        "intervals.png",
        "model.skops",
        "outliers.csv",
        "outliers.png",
        "predictions.csv",
        "report.md",
    ]
    data = pd.read_csv(regression_csv, sep=";")
    outliers = pd.read_csv(out / "outliers.csv")
    evidence = ["kind", "residual", "fitted", "robust_z", "pvalue", "x_distance"]
    expected = ["row", "outlier_score", "flagged", *evidence, "a", "b", "c", "y"]
    assert list(outliers.columns) == expected
    np.testing.assert_array_equal(outliers["row"], np.arange(1, N_ROWS + 1))
    np.testing.assert_allclose(outliers[["a", "b", "c", "y"]], data)
    assert outliers["flagged"][:N_CORRUPTED].all()

    model = load_model(out / "model.skops")
    subq = model[-1]
    assert outliers["flagged"].sum() == round(subq.epsilon_ * N_ROWS)
    # Independent check of the pipeline: robust scaling, then the Subquantile fit.
    scaled = RobustScaler().fit_transform(data[["a", "b", "c"]])
    predictions = pd.read_csv(out / "predictions.csv")
    np.testing.assert_allclose(predictions["predicted"], subq.predict(scaled))
    np.testing.assert_allclose(predictions["observed"], data["y"])
    residual = (predictions["predicted"] - data["y"])[~outliers["flagged"]]
    assert np.sqrt(np.mean(residual**2)) < 0.2

    report = (out / "report.md").read_text()
    assert "estimated epsilon" in report and "(outliers.png)" in report and "(fit.png)" in report
    assert (out / "outliers.png").read_bytes()[:4] == b"\x89PNG"


def test_fit_and_predict_classification(tmp_path, classification_csv, capsys):
    out = tmp_path / "fit"
    argv = ["fit", str(classification_csv), "--target", "label", "--task", "classification"]
    code, _, _ = run([*argv, "--epsilon", "0.1", "--out", str(out), "--quiet"], capsys)
    assert code == 0
    assert not (out / "fit.png").exists()
    new = _features(seed=2)
    new_csv = tmp_path / "new.csv"
    new.to_csv(new_csv, sep="\t", index=False)
    predictions_csv = tmp_path / "predictions.csv"
    code, _, stderr = run(
        ["predict", str(out / "model.skops"), str(new_csv), "--out", str(predictions_csv)], capsys
    )
    assert code == 0 and stderr == ""
    predictions = pd.read_csv(predictions_csv)
    model = load_model(out / "model.skops")
    np.testing.assert_array_equal(predictions["predicted"], model.predict(new))
    np.testing.assert_allclose(predictions[["probability_no", "probability_yes"]].sum(axis=1), 1)
    truth = np.where(new["a"] + new["b"] > 0, "yes", "no")
    assert (predictions["predicted"] == truth).mean() > 0.85


def test_quiet_prints_nothing(tmp_path, regression_csv, capsys):
    argv = ["fit", str(regression_csv), "--target", "y", "--epsilon", "0.1", "--quiet"]
    code, stdout, stderr = run([*argv, "--out", str(tmp_path / "out")], capsys)
    assert (code, stdout, stderr) == (0, "", "")


def test_learn_metric_finds_the_relevant_direction(tmp_path, capsys):
    frame = _features()
    frame["y"] = np.sin(2 * frame["b"])
    csv = tmp_path / "metric.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "metric"
    code, stdout, _ = run(["learn-metric", str(csv), "--target", "y", "--out", str(out)], capsys)
    assert code == 0
    components = pd.read_csv(out / "components.csv").set_index("feature")
    eigenvalues = pd.read_csv(out / "eigenvalues.csv")
    rank = int(eigenvalues["in_subspace"].sum())
    assert f"rank {rank} of 3" in stdout and components.shape == (3, rank)
    U = components.to_numpy()
    np.testing.assert_allclose(U.T @ U, np.eye(rank), atol=1e-10)
    assert abs(U[1, 0]) > 0.9  # the leading direction is feature b
    # transformed = standardized X @ U sqrt(D), recomputed from the written tables
    X = StandardScaler().fit_transform(frame[["a", "b", "c"]])
    expected = X @ (U * np.sqrt(eigenvalues["eigenvalue"].to_numpy()[:rank]))
    transformed = pd.read_csv(out / "transformed.csv")
    np.testing.assert_allclose(transformed.drop(columns="row"), expected, atol=1e-10)
    report = (out / "report.md").read_text()
    assert "Learned directions" in report
    kkt = re.search(r"KKT residual \(0 at a stationary point\) \| ([0-9.e+-]+)", report)
    assert kkt is not None and float(kkt.group(1)) <= 1e-6
    assert (out / "eigenvalues.png").read_bytes()[:4] == b"\x89PNG"


def _write(tmp_path, name: str, frame: pd.DataFrame) -> str:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


def _bad_tables(tmp_path) -> dict[str, tuple[str, list[str]]]:
    """Name -> (CSV path, extra arguments) of inputs that must be refused."""
    good = _features()
    good["y"] = good["a"]
    text = good.assign(c=["red", "blue"] * (N_ROWS // 2))
    missing = good.copy()
    missing.loc[5, "b"] = np.nan
    infinite = good.copy()
    infinite.loc[3, "a"] = np.inf
    return {
        "missing target column": (_write(tmp_path, "good.csv", good), ["--target", "nope"]),
        "non-numeric feature": (_write(tmp_path, "text.csv", text), ["--target", "y"]),
        "too few rows": (_write(tmp_path, "few.csv", good[:5]), ["--target", "y"]),
        "NaN without --drop-na": (_write(tmp_path, "nan.csv", missing), ["--target", "y"]),
        "infinite value": (_write(tmp_path, "inf.csv", infinite), ["--target", "y"]),
        "no such file": (str(tmp_path / "absent.csv"), ["--target", "y"]),
        "epsilon out of range": (str(tmp_path / "good.csv"), ["--target", "y", "--epsilon", "0.7"]),
        "missing --target": (str(tmp_path / "good.csv"), []),
        "single class": (
            str(tmp_path / "good.csv"),
            ["--target", "c", "--task", "classification"],
        ),
        "empty file": (_write(tmp_path, "empty.csv", pd.DataFrame()), ["--target", "y"]),
    }


BAD_CASES = [
    "missing target column",
    "non-numeric feature",
    "too few rows",
    "NaN without --drop-na",
    "infinite value",
    "no such file",
    "epsilon out of range",
    "missing --target",
    "single class",
    "empty file",
]


FIT_ONLY = ("epsilon out of range", "single class")


@pytest.mark.parametrize(
    ("command", "case"),
    [("fit", case) for case in BAD_CASES]
    + [("learn-metric", case) for case in BAD_CASES if case not in FIT_ONLY],
)
def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path, capsys, command, case):
    csv, extra = _bad_tables(tmp_path)[case]
    out = tmp_path / "out"
    before = set(tmp_path.iterdir())
    code, _, stderr = run([command, csv, *extra, "--out", str(out)], capsys)
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1 and "error" in stderr
    assert "Traceback" not in stderr
    assert not out.exists()
    assert set(tmp_path.iterdir()) == before  # no temporary folder left behind


def test_drop_na_drops_the_rows_and_keeps_row_numbers(tmp_path, capsys):
    frame = _features()
    frame["y"] = frame["a"]
    frame.loc[[4, 9], "b"] = np.nan
    csv = _write(tmp_path, "nan.csv", frame)
    out = tmp_path / "out"
    argv = ["fit", csv, "--target", "y", "--epsilon", "0.1", "--drop-na", "--quiet"]
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    rows = pd.read_csv(out / "outliers.csv")["row"]
    assert len(rows) == N_ROWS - 2 and not {5, 10} & set(rows)


def test_outliers_csv_keeps_a_file_column_named_like_ours(tmp_path, capsys):
    frame = _features()
    frame["row"] = np.arange(N_ROWS) * 10  # the file's own columns named like ours
    frame["flagged"] = 0.0
    frame["y"] = frame["a"]
    csv = _write(tmp_path, "named.csv", frame)
    out = tmp_path / "out"
    argv = ["fit", csv, "--target", "y", "--epsilon", "0.1", "--quiet", "--out", str(out)]
    assert run(argv, capsys)[0] == 0
    outliers = pd.read_csv(out / "outliers.csv")
    assert list(outliers.columns) == [
        "_row",
        "outlier_score",
        "_flagged",
        "kind",
        "residual",
        "fitted",
        "robust_z",
        "pvalue",
        "x_distance",
        "a",
        "b",
        "c",
        "row",
        "flagged",
        "y",
    ]
    np.testing.assert_array_equal(outliers["_row"], np.arange(1, N_ROWS + 1))
    np.testing.assert_array_equal(outliers["row"], frame["row"])
    assert outliers["_flagged"].sum() == round(0.1 * N_ROWS)
    report = (out / "report.md").read_text()
    most = outliers.nlargest(5, "outlier_score")["_row"]
    assert all(f"| {row} |" in report for row in most)


def test_existing_output_folder_is_not_overwritten(tmp_path, regression_csv, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, stderr = run(["fit", str(regression_csv), "--target", "y", "--out", str(out)], capsys)
    assert code == 2 and "already exists" in stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("case", ["missing feature column", "not a model file"])
def test_predict_bad_input_exits_2_and_writes_nothing(tmp_path, regression_csv, capsys, case):
    out = tmp_path / "fit"
    argv = ["fit", str(regression_csv), "--target", "y", "--epsilon", "0.1", "--quiet"]
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    model, data = out / "model.skops", regression_csv
    if case == "missing feature column":
        data = _write(tmp_path, "partial.csv", _features()[["a", "b"]])
    else:
        model = tmp_path / "model.skops"
        model.write_text("not a model")
    predictions = tmp_path / "predictions.csv"
    code, _, stderr = run(["predict", str(model), str(data), "--out", str(predictions)], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert not predictions.exists()


def test_console_script_exit_code(tmp_path):
    """The installed entry point: a real process, a real exit status, one line on stderr."""
    command = [sys.executable, "-m", "robustkernel.cli", "fit", str(tmp_path / "absent.csv")]
    result = subprocess.run(
        [*command, "--target", "y", "--out", str(tmp_path / "o")], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"robustkernel fit: error: no such file: {tmp_path / 'absent.csv'}"
    ]


def test_predict_warns_in_one_line_for_a_model_from_another_version(
    tmp_path, regression_csv, capsys
):
    out = tmp_path / "fit"
    argv = ["fit", str(regression_csv), "--target", "y", "--epsilon", "0.1", "--quiet"]
    assert run([*argv, "--out", str(out)], capsys)[0] == 0
    old = tmp_path / "old.joblib"
    joblib.dump(
        {"format": FORMAT, "version": "0.0.1", "model": load_model(out / "model.skops")}, old
    )
    predictions = tmp_path / "predictions.csv"
    code, _, stderr = run(
        ["predict", str(old), str(regression_csv), "--out", str(predictions), "--trust-pickle"],
        capsys,
    )
    assert code == 0 and predictions.exists()
    assert len(stderr.strip().splitlines()) == 1 and "warning" in stderr and "0.0.1" in stderr


def test_learn_metric_leaves_out_corrupted_rows(tmp_path, capsys):
    frame = _features()
    noise = 0.1 * np.random.default_rng(1).normal(size=len(frame))
    frame["y"] = np.sin(2 * frame["b"]) + noise
    corrupted = np.arange(0, len(frame), 7)  # every 7th row: a target far off the curve
    frame.loc[corrupted, "y"] += 4.0
    csv = tmp_path / "metric.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "metric"
    code, stdout, _ = run(["learn-metric", str(csv), "--target", "y", "--out", str(out)], capsys)
    assert code == 0 and "epsilon_ = " in stdout
    outliers = pd.read_csv(out / "outliers.csv")
    np.testing.assert_array_equal(np.flatnonzero(outliers["flagged"]), corrupted)
    assert abs(pd.read_csv(out / "components.csv")["component_1"][1]) > 0.9  # still feature b
    everything = tmp_path / "all"
    argv = ["learn-metric", str(csv), "--target", "y", "--epsilon", "0", "--out", str(everything)]
    assert run(argv, capsys)[0] == 0
    assert not pd.read_csv(everything / "outliers.csv")["flagged"].any()


def test_learn_metric_model_file_predicts_in_target_units(tmp_path, capsys):
    frame = _features()
    frame["y"] = 10.0 + 3.0 * np.sin(2 * frame["b"])
    csv = tmp_path / "metric.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "metric"
    assert run(["learn-metric", str(csv), "--target", "y", "--out", str(out)], capsys)[0] == 0
    predictions = tmp_path / "predictions.csv"
    code, _, _ = run(
        ["predict", str(out / "model.skops"), str(csv), "--out", str(predictions)], capsys
    )
    assert code == 0
    got = pd.read_csv(predictions)["predicted"].to_numpy()
    # The same fit by hand: standardize x and y, fit the metric model, undo the target scaling.
    X = StandardScaler().fit_transform(frame[["a", "b", "c"]])
    y_scaler = StandardScaler().fit(frame[["y"]])
    model = MetricKernelRidge(lam=0.1, epsilon="auto", random_state=0)
    model.fit(X, y_scaler.transform(frame[["y"]]).ravel())
    expected = y_scaler.inverse_transform(model.predict(X)[:, None]).ravel()
    np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_fit_regression_by_default_starts_from_a_high_breakdown_fit(tmp_path, capsys):
    """--kernel auto (the default): a far cluster with a wrong target (30% of the rows), which
    a fit on every row explains, is flagged; the report names the kernel chosen."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.uniform(-2, 2, size=(100, 2)), columns=["a", "b"])
    frame["y"] = 1.5 * frame["a"] - frame["b"] + 0.1 * rng.normal(size=100)
    frame.loc[:29, ["a", "b"]] = 6.0 + 0.01 * rng.normal(size=(30, 2))
    frame.loc[:29, "y"] = -8.0
    path = tmp_path / "cluster.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "fit"
    code, _, _ = run(["fit", str(path), "--target", "y", "--out", str(out), "--quiet"], capsys)
    assert code == 0
    flagged = pd.read_csv(out / "outliers.csv")["flagged"].to_numpy()
    assert flagged[:30].all() and not flagged[30:].any()
    assert load_model(out / "model.skops")[-1].kernel_ == "linear"
    report = (out / "report.md").read_text()
    assert "auto (chose linear)" in report and "high-breakdown start" in report


@pytest.mark.parametrize("extra", [["--kernel", "rbf"], ["--task", "classification"]])
def test_fit_uses_rbf_where_asked_or_for_classification(
    tmp_path, regression_csv, classification_csv, capsys, extra
):
    data, target = regression_csv, "y"
    if "classification" in extra:
        data, target = classification_csv, "label"
    out = tmp_path / "fit"
    argv = ["fit", str(data), "--target", target, "--epsilon", "0.1", "--out", str(out)]
    code, _, _ = run([*argv, *extra, "--quiet"], capsys)
    assert code == 0
    assert load_model(out / "model.skops")[-1].kernel == "rbf"
    assert "| kernel | rbf |" in (out / "report.md").read_text()


def test_a_regression_on_given_features_starts_from_a_high_breakdown_fit(
    tmp_path, regression_csv, capsys
):
    """--n-components: the features fit the model on every row, the high-breakdown start (on
    the exact model of a sample of rows) still chooses the kernel; the report names it."""
    out = tmp_path / "fit"
    argv = ["fit", str(regression_csv), "--target", "y", "--n-components", "20", "--out", str(out)]
    assert run([*argv, "--quiet"], capsys)[0] == 0
    model = load_model(out / "model.skops")[-1]
    assert model.kernel == "auto" and model.kernel_ in ("linear", "poly", "rbf")
    assert model.n_components_ == 20
    report = (out / "report.md").read_text()
    assert f"| kernel | auto (chose {model.kernel_}) |" in report
    assert "20 Nystroem features (--n-components)" in report
    assert pd.read_csv(out / "outliers.csv")["flagged"].to_numpy()[:N_CORRUPTED].all()


@pytest.mark.slow  # 16 s: the estimator's route is tested at 4500 rows in test_default_kernel
def test_a_table_beyond_4000_rows_is_fitted_on_features_from_the_high_breakdown_start(
    tmp_path, capsys
):
    rng = np.random.default_rng(0)
    n = 4001
    frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
    frame["y"] = np.sin(frame["a"]) + 0.1 * rng.normal(size=n)
    frame.loc[:99, "y"] += 10.0
    frame.to_csv(tmp_path / "big.csv", index=False)
    out = tmp_path / "fit"
    argv = ["fit", str(tmp_path / "big.csv"), "--target", "y", "--out", str(out)]
    assert run([*argv, "--quiet"], capsys)[0] == 0
    model = load_model(out / "model.skops")[-1]
    # ceil(5 sqrt(4001)) = 317 features; --kernel auto: the start on a sample of the rows
    assert model.kernel == "auto" and model.kernel_ in ("linear", "poly", "rbf")
    assert model.n_components_ == 317
    report = (out / "report.md").read_text()
    assert "317 Nystroem features (chosen for the rows)" in report
    assert f"| kernel | auto (chose {model.kernel_}) |" in report
    assert pd.read_csv(out / "outliers.csv")["flagged"].to_numpy()[:100].all()


def test_known_outliers_column_gives_precision_and_recall_and_is_no_feature(
    tmp_path, classification_csv, capsys
):
    """A 0/1 column marking the flipped rows: left out of the features (the model sees three),
    and the report's counts, precision and recall equal those computed from outliers.csv."""
    frame = pd.read_csv(classification_csv)
    frame["audited"] = (np.arange(N_ROWS) < N_CORRUPTED).astype(int)
    csv = _write(tmp_path, "audited.csv", frame)
    out = tmp_path / "fit"
    argv = ["fit", csv, "--target", "label", "--task", "classification", "--out", str(out)]
    code, _, _ = run([*argv, "--known-outliers", "audited", "--quiet"], capsys)
    assert code == 0
    assert load_model(out / "model.skops")[-1].n_features_in_ == 3
    flagged = pd.read_csv(out / "outliers.csv")["flagged"].to_numpy()
    known = np.arange(N_ROWS) < N_CORRUPTED
    hits = int(np.sum(flagged & known))
    report = (out / "report.md").read_text()
    section = report.split("## Flags against the known outliers")[1]
    assert f"| rows known to be wrong | {N_CORRUPTED} |" in section
    assert f"| rows flagged | {int(flagged.sum())} |" in section
    assert f"| flagged and known | {hits} |" in section
    assert f"| precision (flagged rows that are known) | {hits / flagged.sum():.4g} |" in section
    assert f"| recall (known rows that are flagged) | {hits / N_CORRUPTED:.4g} |" in section
    assert hits >= N_CORRUPTED // 2  # flips next to the boundary a + b = 0 may pass


@pytest.mark.parametrize(
    ("values", "extra", "message"),
    [
        (["maybe"] * N_ROWS, [], "must hold 0 / 1 or true / false, got 'maybe'"),
        ([2] * N_ROWS, [], "must hold 0 / 1 or true / false, got 2"),
        ([0] * (N_ROWS - 1) + [np.inf], [], "must hold 0 / 1 or true / false, got inf"),
        ([0] * N_ROWS, ["--known-outliers", "nope"], "column 'nope' not found"),
        ([0] * N_ROWS, ["--known-outliers", "label"], "another column than --target"),
    ],
)
def test_bad_known_outliers_column_exits_2(tmp_path, capsys, values, extra, message):
    frame = _features()
    frame["label"] = np.where(frame["a"] > 0, "yes", "no")
    frame["audited"] = values
    csv = _write(tmp_path, "bad.csv", frame)
    out = tmp_path / "fit"
    argv = ["fit", csv, "--target", "label", "--task", "classification", "--out", str(out)]
    code, _, stderr = run([*argv, *(extra or ["--known-outliers", "audited"])], capsys)
    assert code == 2 and message in stderr and not out.exists()
