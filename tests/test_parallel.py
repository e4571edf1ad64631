"""The sweeps give the same results on local processes and on a Dask cluster."""

from __future__ import annotations

import pandas as pd
import pytest
from joblib import Parallel, delayed

from robustkernel.reproduce._parallel import parallel_backend
from robustkernel.reproduce.kl_claims import run_kl_claim

TINY = {"repetitions": 2, "lambdas": [0.5], "progress": False, "n": 30, "p": 6}


def _results(frame: pd.DataFrame) -> pd.DataFrame:
    """The computed columns of a run table (wall-clock times differ between runs)."""
    timing = [column for column in frame.columns if "second" in column or "time" in column]
    return frame.drop(columns=timing).sort_values(list(frame.columns[:3])).reset_index(drop=True)


@pytest.mark.slow  # a LocalCluster of processes: make test-slow
def test_dask_local_cluster_gives_the_local_results_table(tmp_path):
    pytest.importorskip("dask.distributed")
    from dask.distributed import LocalCluster

    local = run_kl_claim(1, n_jobs=1, out_dir=tmp_path / "local", max_iter=5, **TINY)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        with parallel_backend("dask", cluster.scheduler_address):
            remote = run_kl_claim(1, n_jobs=-1, out_dir=tmp_path / "dask", max_iter=5, **TINY)
    expected = _results(pd.read_csv(local["csv"]))
    got = _results(pd.read_csv(remote["csv"]))
    assert len(got) == len(expected) > 0
    pd.testing.assert_frame_equal(got, expected)


def test_threading_backend_runs_parallel_loops():
    with parallel_backend("threading"):
        assert Parallel(n_jobs=2)(delayed(pow)(v, 2) for v in range(4)) == [0, 1, 4, 9]


@pytest.mark.parametrize(
    ("backend", "scheduler", "message"),
    [("spark", None, "backend must be one of"), ("loky", "tcp://x:1", "only meaningful")],
)
def test_bad_backend_arguments_raise(backend, scheduler, message):
    with pytest.raises(ValueError, match=message):
        with parallel_backend(backend, scheduler):
            pass
