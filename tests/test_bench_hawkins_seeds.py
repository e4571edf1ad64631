"""benchmarks/bench_hawkins_seeds.py: its judgement of a fit's flags, against hand counts."""

from __future__ import annotations

import numpy as np

from conftest import hawkins_like, load_benchmark

bench = load_benchmark("bench_hawkins_seeds")


def test_a_fit_is_right_only_with_every_bad_row_flagged_and_every_good_row_kept():
    right = bench.judge("m", 0, np.r_[np.arange(10), 20], 75)
    assert right["bad flagged (of 10)"] == 10 and right["good kept (of 4)"] == 4
    assert right["clean flagged (of 61)"] == 1 and right["right"]
    one_missed = bench.judge("m", 0, np.arange(1, 10), 75)
    assert one_missed["bad flagged (of 10)"] == 9 and not one_missed["right"]
    good_flagged = bench.judge("m", 0, np.arange(11), 75)
    assert good_flagged["good kept (of 4)"] == 3 and not good_flagged["right"]


def test_the_generator_puts_the_bad_rows_off_the_plane_and_the_good_ones_on_it():
    X, y = hawkins_like(3)
    plane = X @ np.array([0.2, 0.1, -0.1])
    assert X.shape == (75, 3)
    assert np.all(np.abs(y[:10] - plane[:10]) > 5.0)  # y near 10, the plane near 2
    assert np.all(np.abs(y[10:14] - plane[10:14]) < 2.5)  # noise sd 0.5
    assert np.all(X[:14].min(axis=1) > 5.0) and np.all(X[14:].max(axis=1) <= 3.5)
