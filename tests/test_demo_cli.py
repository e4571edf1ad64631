"""The demo and the command line, end to end in a temporary folder."""

from __future__ import annotations

import numpy as np
import pytest

from robustkernel import SubquantileKernelRegressor
from robustkernel.cli import main
from robustkernel.commands.demo import DEFAULTS, DemoRun, over_splits, polynomial_runs


def test_demo_writes_table_and_figure(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--splits", "2"]) == 0
    table = (tmp_path / "demo_table.md").read_text()
    assert table.count("SubQ") == 5  # two problems x (papers' configuration, no arguments) + 1
    assert "Medians over 2 split(s)" in table
    assert (tmp_path / "demo.png").stat().st_size > 10_000
    assert "Oracle ERM" in capsys.readouterr().out


def test_demo_reports_the_median_over_the_splits():
    """Each method's row is the median of its runs on the splits drawn one by one, seeds from
    the first: a problem whose runs are known numbers of its seed, against the median by
    sorting."""
    seen = []

    def problem(seed):
        seen.append(seed)
        rng = np.random.default_rng(seed)
        runs = [
            DemoRun(
                "p",
                method,
                "RMSE",
                float(rng.uniform()),
                float(rng.uniform()),
                float(rng.uniform()),
                None if method == "Oracle ERM" else float(rng.uniform()),
            )
            for method in ("KRR (sklearn)", "SubQ", "Oracle ERM")
        ]
        return f"split {seed}", runs

    single = [problem(seed)[1] for seed in (3, 4, 5)]
    seen.clear()
    first, merged = over_splits(problem, 3, 3)
    assert seen == [3, 4, 5] and first == "split 3"
    for index, run in enumerate(merged):
        assert run.method == single[0][index].method
        assert run.value == sorted(runs[index].value for runs in single)[1]
        assert run.seconds == sorted(runs[index].seconds for runs in single)[1]
    assert merged[1].recall == sorted(runs[1].recall for runs in single)[1]
    assert merged[2].recall is None


def test_demo_refuses_no_splits(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--splits", "0"]) == 2
    assert "--splits" in capsys.readouterr().err


def test_demo_subq_beats_kernel_ridge_on_the_polynomial_problem():
    _, runs = polynomial_runs(0.4, random_state=1)
    rmse = {run.method: run.value for run in runs}
    assert rmse["SubQ"] <= 1.1 * rmse["Oracle ERM"]
    assert rmse["KRR (sklearn)"] > 10 * rmse["SubQ"]
    subq = next(run for run in runs if run.method == "SubQ")
    assert subq.recall >= 0.9


def test_demo_shows_the_regressor_with_no_arguments_beside_the_papers_configuration():
    """The defaults' row is the regressor with no arguments, fitted on the same contaminated
    rows and scored on the same test rows (an independent fit here)."""
    split, runs = polynomial_runs(0.2, random_state=2)
    row = next(run for run in runs if run.method == DEFAULTS)
    model = SubquantileKernelRegressor().fit(split.X_train, split.y_train)
    expected = np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2))
    assert abs(row.value - expected) <= 1e-9 * max(1.0, expected)
    assert row.model.get_params() == SubquantileKernelRegressor().get_params()


def test_cli_rejects_unknown_command(capsys):
    with pytest.raises(SystemExit) as error:
        main(["no-such-command"])
    assert error.value.code == 2


def test_reproduce_lists_tables(capsys):
    assert main(["reproduce", "--list"]) == 0
    names = capsys.readouterr().out.split()
    assert {f"kl-claim{k}" for k in range(1, 6)} <= set(names)


@pytest.mark.parametrize("argv", [["reproduce"], ["reproduce", "no-such-table"]])
def test_reproduce_rejects_missing_or_unknown_tables(argv, capsys):
    with pytest.raises(SystemExit) as error:
        main(argv)
    assert error.value.code == 2
    message = capsys.readouterr().err
    assert "TABLE" in message or "unknown table" in message


@pytest.mark.parametrize("argv", [["no-such-command"], ["demo", "--no-such-flag"], ["reproduce"]])
def test_usage_errors_are_one_line(argv, capsys):
    with pytest.raises(SystemExit) as error:
        main(argv)
    assert error.value.code == 2
    message = capsys.readouterr().err.strip()
    assert message.count("\n") == 0
    assert "error:" in message
