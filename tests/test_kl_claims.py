"""Smoke tests of the learned-metric reproduction runner (tiny settings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from robustkernel.reproduce import kl_claims
from robustkernel.reproduce.kl_claims import CLAIMS, KL_TABLES, run_kl_claim, summary_table


def test_run_kl_claim_writes_csv_figures_and_table(tmp_path):
    paths = run_kl_claim(
        1,
        repetitions=2,
        lambdas=[0.2, 0.5],
        out_dir=tmp_path,
        progress=False,
        n=60,
        p=6,
        max_iter=30,
    )
    assert set(paths) == {"csv", "probability_png", "ranks_png", "table"}
    for path in paths.values():
        assert path.exists() and path.stat().st_size > 0
        assert path.parent == tmp_path
    frame = pd.read_csv(paths["csv"])
    n_settings = len(CLAIMS[1].settings)
    assert len(frame) == n_settings * 2 * 2  # settings x repetitions x lambdas
    assert set(frame["lam"]) == {0.2, 0.5}
    assert (frame["rank"] >= 0).all() and (frame["rank"] <= 6).all()
    # subspace error is ||P_hat - P_S*||_F: bounded by sqrt(rank + dim S*)
    assert (frame["subspace_error"] <= np.sqrt(frame["rank"] + frame["dim_S"]) + 1e-9).all()
    assert frame["test_rmse"].notna().all() and frame["krr_cv_test_rmse"].notna().all()
    # the second path, to a KKT residual of 1e-6, never ends above the paper's stop in J_n
    assert frame["rank_min"].between(0, 6).all()
    assert (frame["objective_min"] <= frame["objective"] * (1 + 1e-9)).all()
    assert paths["probability_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = paths["table"].read_text()
    assert "R = 2" in text and "| subspace error |" in text
    assert "mean rank at minimizer" in text


def test_summary_table_counts_rank_events():
    frame = pd.DataFrame(
        {
            "label": ["s"] * 4,
            "lam": [0.1, 0.1, 0.1, 0.1],
            "dim_S": [1, 1, 1, 1],
            "rank": [0, 1, 2, 1],
            "subspace_error": [1.0, 0.1, 1.2, 0.2],
            "test_rmse": [1.0, 1.0, 1.0, 1.0],
            "krr_cv_test_rmse": [2.0, 2.0, 2.0, 2.0],
            "converged": [True, True, False, True],
        }
    )
    row = summary_table(frame).iloc[0]
    assert row["P(rank <= dim S*)"] == "0.75"
    assert row["P(rank = dim S*)"] == "0.50"
    assert row["R"] == 4


def test_headline_table_counts_both_fits():
    frame = pd.DataFrame(
        {
            "label": ["s"] * 4,
            "lam": [0.1, 0.1, 0.2, 0.2],
            "repetition": [0, 1, 0, 1],
            "dim_S": [1, 1, 1, 1],
            "rank": [3, 1, 2, 1],
            "rank_min": [1, 1, 1, 0],
            "objective": [1.1, 1.0, 2.0, 2.0],
            "objective_min": [1.0, 1.0, 1.0, 2.0],
            "kkt_residual": [0.1, 0.2, 0.3, 0.4],
            "kkt_residual_min": [1e-7, 2e-6, 1e-7, 1e-7],
        }
    )
    row = kl_claims.headline_table(frame).iloc[0]
    assert row["R"] == 2 and row["lambdas"] == "0.1..0.2 (2)"
    assert row["P(rank <= dim S*), paper's stop"] == "0.50"
    assert row["P(rank <= dim S*), minimizer"] == "1.00"
    assert row["rank range, paper's stop"] == "1-3" and row["rank range, minimizer"] == "0-1"
    assert row["minimizer fits with KKT <= 1e-6"] == "0.75"
    assert row["median J_n, stop / minimizer"] == "1.05000"  # median of 1.1, 1, 2, 1


def test_registry_and_bad_claim(tmp_path):
    assert sorted(KL_TABLES) == [f"kl-claim{k}" for k in range(1, 6)]
    with pytest.raises(ValueError, match="claim"):
        run_kl_claim(6, out_dir=tmp_path)


@pytest.mark.slow
def test_rerun_resumes_from_cache_and_only_computes_new_repetitions(tmp_path, monkeypatch):
    options = {"lambdas": [0.3], "out_dir": tmp_path, "progress": False, "n": 40, "p": 5}
    first = pd.read_csv(run_kl_claim(4, repetitions=1, max_iter=5, **options)["csv"])
    assert len(list((tmp_path / ".cache" / "kl-claim4").glob("*.json"))) == 1
    calls = []
    original = kl_claims._run_one

    def counting(key, **inputs):
        calls.append(key["repetition"])
        return original(key, **inputs)

    monkeypatch.setattr(kl_claims, "_run_one", counting)
    again = pd.read_csv(run_kl_claim(4, repetitions=2, max_iter=5, **options)["csv"])
    assert calls == [1]  # repetition 0 came from the cache
    pd.testing.assert_frame_equal(again[again["repetition"] == 0], first)
    run_kl_claim(4, repetitions=1, max_iter=6, **options)  # other inputs: not a cache hit
    assert calls == [1, 0]
