"""benchmarks/bench_evidence.py: its data and a short run end to end."""

from __future__ import annotations

import numpy as np

from conftest import load_benchmark, run_benchmark


def test_the_noises_have_the_documented_spread():
    bench = load_benchmark("bench_evidence")
    for noise, check in [
        ("gaussian", lambda e, x: abs(np.std(e) - 1.0) < 0.03),
        ("t3", lambda e, x: abs(np.median(np.abs(e)) - 0.7649) < 0.04),  # t(3)'s median |e|
        # sd 0.3 + 0.7 (x1 + 2): about 0.45 at the left edge, 2.95 at the right one
        ("heteroscedastic", lambda e, x: np.std(e[x < -1.8]) < 0.6 < 2.5 < np.std(e[x > 1.8])),
    ]:
        X, y = bench.make_data(noise, 20_000, 0)
        e = y - X[:, 0] - 0.5 * X[:, 1]
        assert X.shape == (20_000, 2) and check(e, X[:, 0]), noise


def test_a_short_run_prints_the_summary(tmp_path):
    text = run_benchmark("bench_evidence", tmp_path / "B.md", "--rows", "150", "--seeds", "1")
    assert "## Calibration of the regressor's p-values (bench_evidence.py)" in text
    for noise in ("gaussian", "t3", "heteroscedastic"):
        assert f"| {noise} | " in text
