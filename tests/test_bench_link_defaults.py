"""benchmarks/bench_link_defaults.py: its data and a short run end to end."""

from __future__ import annotations

import numpy as np

from conftest import load_benchmark, run_benchmark


def test_a_quarter_of_the_targets_are_uniform_noise_and_the_rest_follow_the_function():
    bench = load_benchmark("bench_link_defaults")
    for name in ("sine", "product"):
        X, y, bad, X_test, f_test = bench.make_data(name, 4000, 0)
        assert X.shape == (4000, 2) and bad.sum() == 1000 and X_test.shape == (2000, 2)
        assert np.all((y >= 0) & (y <= 1)) and np.all((f_test > 0) & (f_test < 1))
        truth = 1.0 / (1.0 + np.exp(-(2.0 * np.sin(X[:, 0]) + X[:, 1])))
        if name == "product":
            truth = 1.0 / (1.0 + np.exp(-(X[:, 0] * X[:, 1] + np.cos(2.0 * X[:, 1]))))
        clean_error = y[~bad] - truth[~bad]
        assert abs(np.std(clean_error) - 0.03) < 0.005  # the clip barely acts
        # the bad targets are uniform on (0, 1): mean 1/2, variance 1/12
        assert abs(y[bad].mean() - 0.5) < 0.03 and abs(y[bad].var() - 1 / 12) < 0.01


def test_a_short_run_prints_the_summary(tmp_path):
    text = run_benchmark("bench_link_defaults", tmp_path / "B.md", "--rows", "80", "--seeds", "1")
    assert "## The defaults with a link (bench_link_defaults.py)" in text
    assert "median defaults / oracle (target <= 1.15)" in text
