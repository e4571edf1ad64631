"""Run many independent experiment runs in parallel, caching each finished run on disk.

A run is a JSON-serializable ``key`` (a dict naming, e.g., method, corruption, eps and seed) and a
picklable function ``run(key)`` returning the run's result row (a dict), or several rows (a list
of dicts, e.g. one per point of a regularization path). Each finished result is written at once
to ``<cache_dir>/<slug>-<hash>.json`` (atomically), so an interrupted table resumes where it
stopped; the hash covers the key, a ``fingerprint`` of everything else that determines the
result (hyper-parameters) and the library's own source files, so neither a changed setting nor
changed code is ever served from the cache.

Parallelism is joblib's: processes on this machine ("loky") by default; any joblib backend
works, e.g. ``backend="dask"`` (or the call inside ``joblib.parallel_config(backend="dask")``)
with a ``distributed.Client`` connected to a scheduler. Each run limits BLAS to one thread so that
``n_jobs`` processes share the cores without oversubscription.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from .._atomic import atomic_write

Key = dict[str, Any]
Row = dict[str, Any]


@cache
def library_fingerprint() -> str:
    """sha256 of the robustkernel package's ``*.py`` files (relative paths and bytes)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*.py")):
        digest.update(file.relative_to(package).as_posix().encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def cache_path(cache_dir: Path, key: Key, fingerprint: str = "", library: bool = True) -> Path:
    """File holding the result of ``key``: a readable slug plus a hash of key, fingerprint and
    (where ``library``) :func:`library_fingerprint`. A caller whose fingerprint already names
    the sources a result depends on passes ``library=False``: a run of scikit-learn alone is
    then not recomputed after every edit of the package."""
    text = json.dumps(key, sort_keys=True) + fingerprint
    if library:
        text += library_fingerprint()
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    slug = "-".join(str(value).replace("/", "_") for value in key.values())
    return cache_dir / f"{slug}-{digest}.json"


def _single_threaded(run: Callable[[Key], Row | list[Row]], key: Key) -> Row | list[Row]:
    with threadpool_limits(limits=1):
        return run(key)


def run_cached(
    run: Callable[[Key], Row | list[Row]],
    keys: Sequence[Key],
    cache_dir: str | Path,
    *,
    fingerprint: str = "",
    n_jobs: int = 1,
    backend: str | None = None,
    progress: bool = True,
    description: str = "runs",
    library: bool = True,
) -> pd.DataFrame:
    """Result rows of ``run`` for every key, computing only the keys not cached yet.

    Parameters
    ----------
    run : callable
        ``run(key)`` returns a dict of JSON-serializable values, or a list of such dicts; it must
        be picklable (a module-level function or a ``functools.partial`` of one) for the process
        backends.
    keys : sequence of dict
        The runs, each a JSON-serializable dict.
    cache_dir : str or Path
        Folder of the per-run JSON files (created if needed).
    fingerprint : str, default=""
        Everything besides the key that determines a result (e.g. the table's settings).
    n_jobs : int, default=1
        Parallel jobs (joblib; -1 = all cores).
    backend : str, default=None
        joblib backend ("loky", "threading", "dask" with a connected dask client); None uses
        joblib's active one: "loky", unless the call runs inside ``joblib.parallel_config``.
    progress : bool, default=True
        Show a tqdm bar over all runs (cached ones count as done at once).
    description : str, default="runs"
        Label of the progress bar.
    library : bool, default=True
        Whether the package's sources enter every cache key (:func:`cache_path`); False where
        ``fingerprint`` already holds what the runs depend on.

    Returns
    -------
    frame : DataFrame
        The rows of every key, in the order of ``keys``: the key's fields, then the run's.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    library_hash = library_fingerprint() if library else ""  # hashed once, not per key
    paths = [cache_path(cache_dir, key, fingerprint + library_hash, library=False) for key in keys]
    results: list[Row | list[Row] | None] = [
        json.loads(path.read_text()) if path.exists() else None for path in paths
    ]
    todo = [index for index, rows in enumerate(results) if rows is None]
    with tqdm(total=len(keys), desc=description, disable=not progress) as bar:
        bar.update(len(keys) - len(todo))
        if todo:
            parallel = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator")
            outputs = parallel(delayed(_single_threaded)(run, keys[index]) for index in todo)
            for index, output in zip(todo, outputs, strict=True):
                rows = [{**keys[index], **row} for row in _as_list(output)]
                atomic_write(paths[index], json.dumps(rows))  # never a truncated cache entry
                results[index] = rows
                bar.update(1)
    return pd.DataFrame([row for rows in results for row in _as_list(rows)])


def _as_list(result: Row | list[Row]) -> list[Row]:
    """A run's rows: a single row (a dict, as cache files written before lists hold) as a list."""
    return result if isinstance(result, list) else [result]
