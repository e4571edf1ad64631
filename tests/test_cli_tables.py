"""The command line on tables as people write them: R's ``write.csv`` and pandas' ``to_csv()``
(with their index column), dates, class-like targets, several problems at once; its start-up
time and the licences of its optional peers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli as run
from robustkernel.commands import _fit_run as fit_run
from robustkernel.commands import fit, reproduce
from robustkernel.commands._layout import decide_layout
from robustkernel.persistence import load_model

ROOT = Path(__file__).resolve().parents[1]


def test_every_cleanlab_requirement_is_apache_licensed():
    """cleanlab is AGPL-3.0 up to 2.6 and Apache-2.0 from 2.9: every extra asks for >= 2.9."""
    requirements = re.findall(r'"cleanlab([^"]*)"', (ROOT / "pyproject.toml").read_text())
    assert requirements, "pyproject.toml names cleanlab nowhere any more: update this test"
    floors = [re.fullmatch(r">=(\d+)\.(\d+)(?:\.\d+)?", spec) for spec in requirements]
    assert all(floors), f"every cleanlab requirement needs a >= floor: {requirements}"
    assert all((int(f[1]), int(f[2])) >= (2, 9) for f in floors), requirements


# --- tables as R and pandas write them ---------------------------------------------------------

N_ROWS = 60


def _frame(seed: int = 0, n: int = N_ROWS) -> pd.DataFrame:
    """Features a, b, c and y = sin(a) + b / 2 + noise, the first 5 targets far off."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["y"] = np.sin(frame["a"]) + frame["b"] / 2 + 0.05 * rng.normal(size=n)
    frame.loc[:4, "y"] += 5.0
    return frame


def write_r_csv(path: Path, frame: pd.DataFrame) -> Path:
    """``write.csv(frame, path)`` as R writes it: a first column of row names "1".."n" under
    the header ``""``, names and text quoted, missing values as NA."""

    def cell(value: object) -> str:
        if isinstance(value, str):
            return f'"{value}"'
        return "NA" if pd.isna(value) else repr(float(value))

    lines = [",".join(['""', *(f'"{name}"' for name in frame.columns)])]
    lines += [
        ",".join([f'"{number}"', *map(cell, row)])
        for number, row in enumerate(frame.itertuples(index=False), start=1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


WRITERS = {
    "R write.csv": write_r_csv,
    "pandas to_csv": lambda path, frame: frame.to_csv(path) or path,
    "pandas to_csv, named index": lambda path, frame: frame.rename_axis("id").to_csv(path) or path,
    "no index": lambda path, frame: frame.to_csv(path, index=False) or path,
}


def _fit(tmp_path: Path, csv: Path, capsys, *extra: str, target: str = "y") -> tuple[Path, str]:
    """Fit ``csv`` into tmp_path/fit (exit code 0 asserted); the folder and stderr."""
    out = tmp_path / "fit"
    argv = ["fit", str(csv), "--target", target, "--epsilon", "0.1", "--out", str(out)]
    code, _, stderr = run([*argv, *extra], capsys)
    assert code == 0, stderr
    return out, stderr


def _predict(model: Path, csv: Path, out: Path, capsys) -> np.ndarray:
    code, _, stderr = run(["predict", str(model), str(csv), "--out", str(out), "--quiet"], capsys)
    assert code == 0, stderr
    return pd.read_csv(out)["predicted"].to_numpy()


@pytest.mark.parametrize("layout", ["R write.csv", "pandas to_csv", "pandas to_csv, named index"])
def test_fit_leaves_out_the_index_column_and_predict_takes_any_layout(tmp_path, capsys, layout):
    """The index column is no feature: the fit equals the fit of the same table written
    without it, the report names it, and predict takes new rows written with or without one."""
    frame = _frame()
    csv = WRITERS[layout](tmp_path / "train.csv", frame)
    out, _ = _fit(tmp_path, csv, capsys, "--quiet")
    model = load_model(out / "model.skops")
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    index = {"R write.csv": "Unnamed: 0", "pandas to_csv": "Unnamed: 0"}.get(layout, "id")
    assert f"index column {index!r}" in (out / "report.md").read_text()
    columns = list(pd.read_csv(out / "outliers.csv").columns)
    assert columns.index(index) == columns.index("a") - 1  # kept in the file's columns

    plain = tmp_path / "plain"
    plain.mkdir()
    reference, _ = _fit(plain, WRITERS["no index"](plain / "train.csv", frame), capsys, "--quiet")
    new = _frame(seed=1)
    expected = load_model(reference / "model.skops").predict(new[["a", "b", "c"]])
    for name, write in WRITERS.items():
        written = write(tmp_path / "new.csv", new.drop(columns="y"))
        got = _predict(out / "model.skops", written, tmp_path / "predictions.csv", capsys)
        np.testing.assert_allclose(got, expected, rtol=1e-10, err_msg=name)


def test_index_column_none_fits_it_as_a_feature(tmp_path, capsys):
    csv = write_r_csv(tmp_path / "train.csv", _frame())
    out, _ = _fit(tmp_path, csv, capsys, "--index-column", "none", "--quiet")
    assert list(load_model(out / "model.skops").feature_names_in_) == ["Unnamed: 0", "a", "b", "c"]


def test_drop_columns_leaves_them_out_and_predict_needs_none_of_them(tmp_path, capsys):
    frame = _frame().assign(note=["ok", "late"] * (N_ROWS // 2), d=np.arange(N_ROWS) * 2.0)
    csv = write_r_csv(tmp_path / "train.csv", frame)
    out, _ = _fit(tmp_path, csv, capsys, "--drop-columns", "note", "c", "--drop-columns", "d")
    model = load_model(out / "model.skops")
    assert list(model.feature_names_in_) == ["a", "b"]
    assert "left out: 'note', 'c', 'd'" in (out / "report.md").read_text()
    new = _frame(seed=1)[["a", "b"]]
    written = write_r_csv(tmp_path / "new.csv", new)
    got = _predict(out / "model.skops", written, tmp_path / "p.csv", capsys)
    np.testing.assert_allclose(got, model.predict(new), rtol=1e-12)


@pytest.mark.parametrize(
    "spelling",
    [["note", "c", "d"], ["note,c,d"], ["note, c", "d"], ["note,c,", "d"]],
    ids=["spaces", "commas", "comma-and-space-repeated", "trailing-comma"],
)
def test_drop_columns_reads_spaces_commas_and_repeats_alike(spelling):
    frame = _frame().assign(note="ok", d=0.0)
    layout = decide_layout(frame, keep={"y"}, drop_columns=spelling)
    assert layout.dropped == ("note", "c", "d")


def test_drop_columns_keeps_a_column_whose_name_holds_a_comma_whole():
    frame = _frame().assign(**{"height, cm": 1.0, "height": 2.0, "cm": 3.0})
    assert decide_layout(frame, keep={"y"}, drop_columns=["height, cm"]).dropped == ("height, cm",)
    both = decide_layout(frame, keep={"y"}, drop_columns=["a,height, cm"]).dropped
    assert both == ("a", "height", "cm")  # not a column as a whole: split at its commas


def test_drop_columns_as_a_comma_list_on_the_command_line(tmp_path, capsys):
    frame = _frame().assign(note=["ok", "late"] * (N_ROWS // 2))
    csv = write_r_csv(tmp_path / "train.csv", frame)
    out, _ = _fit(tmp_path, csv, capsys, "--drop-columns", "note,c", "--quiet")
    assert list(load_model(out / "model.skops").feature_names_in_) == ["a", "b"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--drop-columns", "nope"], "--drop-columns: no column 'nope'"),
        (["--drop-columns", "a,nope"], "--drop-columns: no column 'nope'"),
        (["--drop-columns", "y"], "--drop-columns names 'y'"),
        (["--drop-columns", "a,y"], "--drop-columns names 'y'"),
    ],
)
def test_bad_drop_columns_exit_2_in_one_line(tmp_path, capsys, extra, message):
    csv = write_r_csv(tmp_path / "train.csv", _frame())
    argv = ["fit", str(csv), "--target", "y", "--out", str(tmp_path / "o"), *extra]
    code, _, stderr = run(argv, capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and message in stderr
    assert not (tmp_path / "o").exists()


# --- the seed -----------------------------------------------------------------------------------


def test_one_fit_command_gives_one_answer_and_random_state_changes_it(tmp_path, capsys):
    """Nystroem landmarks are drawn at random: seeded with 0 by default, two runs of one
    command write the same predictions; --random-state 1 draws other landmarks."""
    csv = WRITERS["no index"](tmp_path / "train.csv", _frame())
    argv = ["--kernel", "rbf", "--n-components", "15", "--quiet"]
    runs = []
    for name, seed in (("first", []), ("second", []), ("seed 1", ["--random-state", "1"])):
        folder = tmp_path / name
        folder.mkdir()
        out, _ = _fit(folder, csv, capsys, *argv, *seed)
        runs.append(pd.read_csv(out / "predictions.csv")["predicted"].to_numpy())
        assert load_model(out / "model.skops")[-1].random_state == (1 if seed else 0)
        assert f"| random_state | {1 if seed else 0} |" in (out / "report.md").read_text()
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], runs[2])


@pytest.mark.parametrize("seed", ["-1", "1.5", str(2**32)])
def test_a_bad_random_state_exits_2(tmp_path, capsys, seed):
    csv = WRITERS["no index"](tmp_path / "train.csv", _frame())
    argv = ["fit", str(csv), "--target", "y", "--out", str(tmp_path / "o"), "--random-state", seed]
    code, _, stderr = run(argv, capsys)
    assert code == 2 and "--random-state" in stderr and len(stderr.strip().splitlines()) == 1


# --- the target ---------------------------------------------------------------------------------


def test_a_text_target_without_task_is_told_to_pass_task_classification(tmp_path, capsys):
    frame = _frame().assign(y=lambda f: np.where(f["a"] > 0, "yes", "no"))
    csv = write_r_csv(tmp_path / "train.csv", frame)
    code, _, stderr = run(["fit", str(csv), "--target", "y", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "target column 'y' holds text" in stderr and "--task classification" in stderr
    assert "one-hot" not in stderr


@pytest.mark.parametrize("values", [(0, 1), (1, 2, 3)])
def test_a_class_like_target_of_a_regression_warns_and_names_task_classification(
    tmp_path, capsys, values
):
    frame = _frame()
    frame["y"] = np.asarray(values)[np.arange(N_ROWS) % len(values)]
    csv = write_r_csv(tmp_path / "train.csv", frame)
    out, stderr = _fit(tmp_path, csv, capsys)
    shown = ", ".join(map(str, values))
    warning = [line for line in stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and f"holds only the values {shown}" in warning[0]
    assert "--task classification" in warning[0]
    assert "--task classification" in (out / "report.md").read_text()


def test_a_continuous_target_does_not_warn(tmp_path, capsys):
    csv = write_r_csv(tmp_path / "train.csv", _frame())
    _, stderr = _fit(tmp_path, csv, capsys)
    assert stderr == ""


def test_precision_is_undefined_when_no_row_is_flagged(tmp_path, capsys):
    frame = _frame()
    frame["y"] = frame["a"]  # exact: nothing to flag at epsilon 0
    frame["audited"] = (np.arange(N_ROWS) < 3).astype(int)
    csv = write_r_csv(tmp_path / "train.csv", frame)
    out = tmp_path / "fit"
    argv = ["fit", str(csv), "--target", "y", "--epsilon", "0", "--known-outliers", "audited"]
    code, _, stderr = run([*argv, "--kernel", "linear", "--out", str(out), "--quiet"], capsys)
    assert code == 0, stderr
    assert not pd.read_csv(out / "outliers.csv")["flagged"].any()
    section = (out / "report.md").read_text().split("## Flags against the known outliers")[1]
    assert "| precision (flagged rows that are known) | undefined (no row flagged) |" in section
    assert "| recall (known rows that are flagged) | 0 |" in section


# --- dates --------------------------------------------------------------------------------------


def _dated(seed: int, start: str, n: int = N_ROWS) -> tuple[pd.DataFrame, pd.DatetimeIndex]:
    """Column a and an ISO date column ``when`` (some with times, in the 90 days from
    ``start``), and the moments written."""
    rng = np.random.default_rng(seed)
    moments = pd.Timestamp(start) + pd.to_timedelta(rng.integers(0, 90 * 24, n), unit="h")
    frame = pd.DataFrame({"a": rng.normal(size=n)})
    frame["when"] = [m.strftime("%Y-%m-%d" if m.hour == 0 else "%Y-%m-%dT%H:%M") for m in moments]
    return frame, moments


def test_iso_dates_are_fitted_as_days_since_the_first_date(tmp_path, capsys):
    frame, moments = _dated(0, "2024-01-01")
    first = moments.min()
    frame["y"] = frame["a"] + (moments - first) / pd.Timedelta(days=30)
    out, _ = _fit(tmp_path, write_r_csv(tmp_path / "train.csv", frame), capsys, "--quiet")
    model = load_model(out / "model.skops")
    assert list(model.feature_names_in_) == ["a", "when"]
    day = first.date().isoformat() if first == first.normalize() else first.isoformat()
    assert f"days since the first date, {day}" in (out / "report.md").read_text()
    # predict counts the new rows' days from the training table's first date, not theirs
    new, later = _dated(1, "2024-06-01")
    by_hand = pd.DataFrame({"a": new["a"], "when": (later - first) / pd.Timedelta(days=1)})
    written = write_r_csv(tmp_path / "new.csv", new)
    got = _predict(out / "model.skops", written, tmp_path / "p.csv", capsys)
    np.testing.assert_allclose(got, model.predict(by_hand), rtol=1e-12)


def test_predict_names_a_value_of_a_date_column_that_is_no_date(tmp_path, capsys):
    frame, _ = _dated(0, "2024-01-01")
    frame["y"] = frame["a"]
    out, _ = _fit(tmp_path, write_r_csv(tmp_path / "train.csv", frame), capsys, "--quiet")
    new = frame.drop(columns="y")
    new.loc[3, "when"] = "soon"
    argv = ["predict", str(out / "model.skops"), str(write_r_csv(tmp_path / "new.csv", new))]
    code, _, stderr = run([*argv, "--out", str(tmp_path / "p.csv")], capsys)
    assert code == 2 and "date column 'when' holds 'soon' (row 4)" in stderr


def test_dates_in_another_form_are_named_as_dates(tmp_path, capsys):
    frame, moments = _dated(0, "2024-01-01")
    frame["when"] = moments.strftime("%d/%m/%Y")
    frame["y"] = frame["a"]
    csv = write_r_csv(tmp_path / "train.csv", frame)
    code, _, stderr = run(["fit", str(csv), "--target", "y", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "'when' holds dates not written as ISO dates" in stderr and "YYYY-MM-DD" in stderr
    assert "--drop-columns when" in stderr and "one-hot" not in stderr


# --- every problem at once ----------------------------------------------------------------------


def _messy() -> pd.DataFrame:
    """A text column, a column of numbers with two '?', an infinite value and missing values
    in two columns, one of which ('sparse') costs 20 rows."""
    frame = _frame()
    frame["city"] = np.where(frame["c"] > 0, "Paris", "Rome")
    frame["score"] = frame["c"].round(3).astype(object)
    frame.loc[[3, 8], "score"] = "?"
    frame.loc[10, "b"] = np.inf
    frame.loc[[5, 7], "a"] = np.nan
    frame["sparse"] = frame["c"]
    frame.loc[20:39, "sparse"] = np.nan
    return frame


def test_every_problem_of_the_table_is_reported_at_once(tmp_path, capsys):
    frame = _messy()
    csv = write_r_csv(tmp_path / "messy.csv", frame)
    code, _, stderr = run(["fit", str(csv), "--target", "y", "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    (line,) = stderr.strip().splitlines()
    complete = int((~frame.isna().any(axis=1)).sum())
    without_sparse = int((~frame.drop(columns="sparse").isna().any(axis=1)).sum())
    expected = [
        "the table has 4 problems",
        "feature column 'city' holds text (e.g. 'Paris')",
        "--drop-columns city",
        "feature column 'score' holds numbers but text in 2 row(s) (e.g. '?', row 4)",
        "column 'b' holds an infinite value in 1 row(s) (first: row 11)",
        f"{N_ROWS - complete} row(s) have missing values",
        "'a' 2 (numbers; first: row 6)",
        "'sparse' 20 (numbers; first: row 21)",
        f"--drop-na would keep {complete} of {N_ROWS} rows",
        f"leaving out 'sparse' (--drop-columns sparse) would keep {without_sparse}",
    ]
    missing = [text for text in expected if text not in line]
    assert not missing, line


def test_drop_na_warns_about_a_column_that_costs_many_rows(tmp_path, capsys):
    frame = _messy().drop(columns=["city", "score"])
    frame.loc[10, "b"] = 0.0
    csv = write_r_csv(tmp_path / "messy.csv", frame)
    out, stderr = _fit(tmp_path, csv, capsys, "--drop-na")
    complete = int((~frame.isna().any(axis=1)).sum())
    assert len(pd.read_csv(out / "outliers.csv")) == complete
    assert f"--drop-na dropped {N_ROWS - complete} of {N_ROWS} rows" in stderr
    assert "--drop-columns sparse" in stderr


def test_too_few_rows_after_drop_na_names_the_costly_column(tmp_path, capsys):
    frame = _frame(n=14)
    frame["sparse"] = np.where(np.arange(14) < 10, np.nan, 1.0)
    csv = write_r_csv(tmp_path / "few.csv", frame)
    argv = ["fit", str(csv), "--target", "y", "--drop-na", "--out", str(tmp_path / "o")]
    code, _, stderr = run(argv, capsys)
    assert code == 2
    assert "too few rows: 4 usable after --drop-na" in stderr
    assert "leaving out 'sparse' (--drop-columns sparse) would keep 14" in stderr


# --- start-up -----------------------------------------------------------------------------------

SUBCOMMANDS = ("fit", "predict", "learn-metric", "demo", "reproduce")
HEAVY = ("sklearn", "pandas", "matplotlib", "scipy", "robustkernel.subquantile", "joblib")


@pytest.mark.parametrize(
    "argv",
    [["--help"], *([command, "--help"] for command in SUBCOMMANDS)],
    ids=" ".join,
)
def test_help_imports_no_estimator_pandas_or_matplotlib(argv):
    """``robustkernel --help`` answered in 5 s (3.5 s CPU) while it imported every estimator;
    the parsers import nothing heavy now (bench_cli_startup.py times it)."""
    script = (
        "import sys\n"
        "from robustkernel.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_package_imports_its_estimators_on_first_use():
    script = (
        "import sys, robustkernel\n"
        "assert 'sklearn' not in sys.modules, 'import robustkernel loaded scikit-learn'\n"
        "from robustkernel import *\n"
        "assert all(getattr(robustkernel, name) is not None for name in robustkernel.__all__)\n"
        "assert set(robustkernel.__all__) <= set(dir(robustkernel))\n"
        "assert SubquantileKernelRegressor.__module__.startswith('robustkernel.subquantile')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_parsers_choices_are_the_estimators():
    """The choices the light parsers write out agree with the code that defines them."""
    from robustkernel._kernel_model.kernels import KERNELS
    from robustkernel.reproduce._parallel import BACKENDS
    from robustkernel.subquantile import EXACT_ROWS, SOLVERS

    assert fit.KERNELS == tuple(sorted(set(KERNELS) - {"precomputed"}))
    assert fit.SOLVERS == tuple(SOLVERS)
    assert fit.EXACT_ROWS == EXACT_ROWS
    assert reproduce.BACKENDS == tuple(BACKENDS)


def test_the_report_gives_each_flag_its_evidence_in_target_units(tmp_path, capsys):
    """outliers.csv and the report carry the evidence of the no-argument regressor: the
    residual (y less the fitted value, in the target's units), a p-value, the robust z and
    "wrong y" / "unusual x"; the five shifted targets are flagged as wrong y."""
    frame = _frame()
    frame["y"] *= 1000.0  # target units: thousands
    out, _ = _fit(tmp_path, write_r_csv(tmp_path / "train.csv", frame), capsys, "--quiet")
    rows = pd.read_csv(out / "outliers.csv", keep_default_na=False)
    assert list(rows.columns[3:9]) == list(fit_run.EVIDENCE_REPORTED)
    np.testing.assert_allclose(rows["fitted"] + rows["residual"], frame["y"], rtol=1e-9)
    assert rows["flagged"][:5].all() and (rows["kind"][:5] == "wrong y").all()
    assert np.all(rows["residual"][:5] > 3000.0) and np.all(rows["pvalue"][:5] < 0.01)
    assert (rows["kind"][~rows["flagged"]] == "").all()
    report = (out / "report.md").read_text()
    assert "| kind | residual | fitted | robust_z | pvalue | x_distance |" in report
    assert "wrong y" in report and "unusual x" in report  # the rows' kinds, and how to read them


def test_the_report_gives_no_gamma_for_a_kernel_without_one(tmp_path, capsys):
    """A linear fit has no gamma: the report says so instead of "1 / n_features"."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(40, 2)), columns=["a", "b"])
    frame["y"] = frame["a"] - frame["b"] / 2 + 0.1 * rng.normal(size=40)
    out, _ = _fit(tmp_path, write_r_csv(tmp_path / "train.csv", frame), capsys, "--quiet")
    report = (out / "report.md").read_text()
    assert "| gamma (gamma_) | none (the linear kernel has no gamma) |" in report
    assert "1 / n_features" not in report


@pytest.mark.parametrize("factor", [1.0, 1000.0, 1.0 + 1e-9])
def test_a_table_with_ties_flags_the_rows_python_flags_in_any_units(tmp_path, capsys, factor):
    """Issue 63 (milk: 28 rows flagged by the estimator on X, 22 on X x 1000, 23 by the command
    line): the command line on the table in other units flags the rows that
    ``SubquantileKernelRegressor(random_state=0)`` flags on X."""
    from robustkernel import SubquantileKernelRegressor

    rng = np.random.default_rng(0)
    X = np.round(rng.choice(np.linspace(1.03, 3.71, 9), size=(86, 4)), 2)  # many ties
    y = X @ np.array([1.1, -2.3, 0.7, 0.4]) + 0.1 * rng.normal(size=86)
    y[:6] += 3.0
    expected = ~SubquantileKernelRegressor(random_state=0).fit(X, y).inlier_mask_
    table = pd.DataFrame(X * factor, columns=list("abcd")).assign(y=y)
    table.to_csv(tmp_path / "ties.csv", index=False)
    out = tmp_path / "fit"
    argv = ["fit", str(tmp_path / "ties.csv"), "--target", "y", "--out", str(out)]
    code, _, stderr = run(argv, capsys)
    assert code == 0, stderr
    flagged = pd.read_csv(out / "outliers.csv")["flagged"].to_numpy()
    np.testing.assert_array_equal(flagged, expected)
    assert expected[:6].all()
