"""benchmarks/bench_intervals.py: its attacks and a one-cell run end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import load_benchmark


def test_the_attacks_corrupt_floor_eps_n_rows_as_documented():
    bench = load_benchmark("bench_intervals")
    rng = np.random.default_rng(0)
    X, y = bench.generated_rows("hom", 3, 101, rng)
    sd_y, sd_x, median_x = np.std(y), X.std(axis=0), np.median(X, axis=0)
    for attack in bench.ATTACKS:
        X_bad, y_bad, corrupted = bench.contaminate(X, y, attack, 0.2, seed=1)
        assert corrupted.sum() == 20, attack  # floor(0.2 x 101)
        assert np.array_equal(X_bad[~corrupted], X[~corrupted])
        assert np.array_equal(y_bad[~corrupted], y[~corrupted])
        shift = y_bad[corrupted] - y[corrupted]
        if attack == "vertical":
            assert np.all((np.abs(shift) >= 10 * sd_y) & (np.abs(shift) <= 20 * sd_y))
        elif attack == "shifted":
            np.testing.assert_allclose(shift, 3 * sd_y)
        else:
            assert np.all(np.abs(X_bad[corrupted] - (median_x + 5 * sd_x)) < 0.5 * sd_x)
            assert np.all(np.abs(y_bad[corrupted] - (np.median(y) - 5 * sd_y)) < 0.5 * sd_y)
    _, y_same, none = bench.contaminate(X, y, "none", 0.0, seed=1)
    assert not none.any() and np.array_equal(y_same, y)


def test_a_one_cell_run_reports_every_method(tmp_path):
    pytest.importorskip("mapie")
    bench = load_benchmark("bench_intervals")
    out, csv = tmp_path / "intervals.md", tmp_path / "runs.csv"
    status = bench.main(
        [
            "--data", "generated_hom", "--features", "1", "--sizes", "200", "--eps", "0",
            "--seeds", "1", "--test-rows", "400", "--n-jobs", "1", "--out", str(out),
            "--csv", str(csv), "--cache-dir", str(tmp_path / "cache"),
        ]
    )  # fmt: skip
    assert status == 0
    text = out.read_text()
    assert text.startswith(bench.SECTION)
    for method in ("subq", "mapie_split", "mapie_cv_plus", "cqr"):
        assert f"| {method} | " in text, method  # its summary row
    runs = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    assert set(runs["method"]) == {"subq", "mapie_split", "mapie_cv_plus", "cqr", "oracle"}
    assert (runs["error"].isna()).all(), runs["error"].dropna().tolist()
    assert runs["coverage"].between(0.0, 1.0).all()
    assert (runs["width"] > 0).all()
    assert len(runs) == 5 * len(bench.COVERAGES)
