"""benchmarks/bench_named_problems.py: its data and its summary, against hand counts."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_benchmark

bench = load_benchmark("bench_named_problems")


@pytest.mark.parametrize("seed", [0, 3])
def test_the_edge_shift_moves_the_rows_of_largest_x1_and_leaves_a_linear_truth(seed):
    X, y, shifted, X_test, f_test = bench.edge_shift_data(seed)
    assert shifted.sum() == 120 and X.shape == (400, 2)
    assert X[shifted, 0].min() > X[~shifted, 0].max()  # one edge, no correct row beside it
    # the truth on the test rows is exactly linear through the origin
    beta, *_ = np.linalg.lstsq(X_test, f_test, rcond=None)
    np.testing.assert_allclose(X_test @ beta, f_test, atol=1e-9 * np.abs(f_test).max())
    # the shifted rows sit about 3 sd(y) above the plane, the others within the noise
    offset = y - X @ beta
    assert np.median(offset[shifted]) > 2.0 and abs(np.median(offset[~shifted])) < 0.2


def test_the_summary_takes_the_median_per_problem_and_eps_against_its_bound():
    rows = [
        {"problem": "polynomial", "eps": 0.2, "defaults / oracle": v} for v in (1.0, 1.3, 1.05)
    ]
    rows += [{"problem": "edge shift", "eps": 0.3, "defaults / oracle": v} for v in (2.0, 1.2, 1.4)]
    table = bench.summary(rows).set_index("problem")
    assert table.loc["polynomial", "median defaults / oracle"] == pytest.approx(1.05)
    assert table.loc["polynomial", "met"] == "met"
    assert table.loc["edge shift", "median defaults / oracle"] == pytest.approx(1.4)
    assert table.loc["edge shift", "met"] == "met" and table.loc["edge shift", "target"] == "<= 1.5"


def test_too_few_splits_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench.main(["--splits", "0", "--no-write"])
    assert "--splits" in capsys.readouterr().err
