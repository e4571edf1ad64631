"""The demo and the command line, end to end in a temporary folder."""

from __future__ import annotations

from functools import partial

import pytest

from robustkernel.cli import main
from robustkernel.commands.demo import over_splits, polynomial_runs


def test_demo_writes_table_and_figure(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--splits", "2"]) == 0
    table = (tmp_path / "demo_table.md").read_text()
    assert table.count("SubQ") == 3
    assert "Medians over 2 split(s)" in table
    assert (tmp_path / "demo.png").stat().st_size > 10_000
    assert "Oracle ERM" in capsys.readouterr().out


def test_demo_reports_the_median_over_the_splits():
    """Each method's row is the median of its runs on the splits drawn one by one."""
    single = [polynomial_runs(0.2, random_state=seed)[1] for seed in (3, 4, 5)]
    _, merged = over_splits(partial(polynomial_runs, 0.2), 3, 3)
    for index, run in enumerate(merged):
        values = sorted(runs[index].value for runs in single)
        assert run.method == single[0][index].method
        assert run.value == values[1]
    assert merged[1].recall == sorted(runs[1].recall for runs in single)[1]


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
