"""One run of the robustness race (a method fitted on one seed's contaminated training rows, scored
on the clean test rows) and the grid of runs, each cached one JSON file under a fingerprint of
the settings, the versions and the library's sources.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import time
import warnings
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import robustkernel
from robustkernel.reproduce._runs import cache_path, run_cached

from .attacks import ATTACKS, CLEAN, MULTICLASS_ONLY, make_split
from .data import CLASSIFICATION, DATA, load_data
from .peers import (
    METHODS,
    ORACLE,
    ORACLES,
    Context,
    flagged_rows,
)

PROTOCOL_VERSION = 1  # bump when an attack, a data set or a method definition changes
PACKAGE = Path(robustkernel.__file__).resolve().parent


# ----------------------------------------------------------------------------------------------
# One run.


def run_one(key: dict[str, Any], *, data_home: str | None, max_rows: int | None) -> dict:
    """Fit one method on one seed's contaminated training rows; score it on the test rows.

    Parameters
    ----------
    key : dict
        task, data, attack, eps, seed, method (``"oracle"``: the task's oracle on the
        uncorrupted training rows).
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap of every data set.

    Returns
    -------
    row : dict
        metric (test accuracy; NaN if the fit raised), seconds (fit wall time),
        cpu_seconds (process CPU time of the whole run), n_train, n_corrupted, error, and
        flag_precision / flag_recall: of the rows the method flags (:func:`flagged_rows`)
        against the corrupted ones (NaN for a method that flags none by design).
    """
    cpu_start = time.process_time()
    task = key["task"]
    X, y = load_data(task, key["data"], data_home, max_rows)
    split = make_split(X, y, task, key["attack"], key["eps"], key["seed"])
    X_fit, y_fit = split.X_train, split.y_train
    if key["method"] == ORACLE:
        X_fit, y_fit = X_fit[~split.corrupted], y_fit[~split.corrupted]
    context = Context(key["eps"], X_fit.shape[0], X_fit.shape[1], key["seed"])
    metric, seconds, error = float("nan"), float("nan"), ""
    precision, recall = float("nan"), float("nan")
    try:
        if key["method"] == ORACLE:
            model = ORACLES[task](context)
        else:
            model = METHODS[task][key["method"]].make(context)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model.fit(X_fit, y_fit)
            seconds = time.perf_counter() - start
            predicted = np.asarray(model.predict(split.X_test))
        metric = float(np.mean(predicted == split.y_test))
        if not np.isfinite(metric):
            error = "non-finite prediction"
        flagged = flagged_rows(model) if key["method"] != ORACLE else None
        if flagged is not None and flagged.shape == split.corrupted.shape:
            hits = int(np.sum(flagged & split.corrupted))
            precision = hits / flagged.sum() if flagged.any() else float("nan")
            recall = hits / split.corrupted.sum() if split.corrupted.any() else float("nan")
    except Exception as failure:  # a method that fails is a result, not a crash
        error = f"{type(failure).__name__}: {str(failure).splitlines()[0] if str(failure) else ''}"
    return {
        "metric": metric,
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu_start,
        "n_train": int(X_fit.shape[0]),
        "n_corrupted": int(split.corrupted.sum()),
        "error": error,
        "flag_precision": float(precision),
        "flag_recall": float(recall),
    }


# ----------------------------------------------------------------------------------------------
# Running the grid.


def _source_hash(paths: Sequence[Path]) -> str:
    """sha256 of the given files' bytes (sorted by path), first 16 hex digits.

    Parameters
    ----------
    paths : sequence of Path
        Files and folders (a folder stands for its ``*.py`` files, recursively).

    Returns
    -------
    digest : str
        Hex digest.
    """
    files = sorted(
        file for path in paths for file in (path.rglob("*.py") if path.is_dir() else [path])
    )
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(PACKAGE)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _version(distribution: str) -> str | None:
    """Installed version of ``distribution``, or None.

    Parameters
    ----------
    distribution : str
        Distribution name.

    Returns
    -------
    version : str or None
        The version.
    """
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def fingerprints(max_rows: int | None) -> dict[bool, str]:
    """The cache fingerprints: for scikit-learn-only methods (False) and robustkernel's (True).

    Parameters
    ----------
    max_rows : int or None
        Row cap (it changes the data).

    Returns
    -------
    fingerprints : dict
        ``{library: fingerprint}``.
    """
    settings = {
        "protocol": PROTOCOL_VERSION,
        "max_rows": max_rows,
        "versions": {
            name: _version(name)
            for name in ("numpy", "scipy", "scikit-learn", "cleanlab", "statsmodels")
        },
        "data": _source_hash(
            [PACKAGE / "corruption.py", PACKAGE / "_fractions.py", PACKAGE / "datasets"]
        ),
    }
    base = json.dumps(settings, sort_keys=True)
    return {False: base, True: base + "|package:" + _source_hash([PACKAGE])}


def cells(data: Sequence[str], attacks: Sequence[str], eps: Sequence[float]) -> list:
    """(data, attack, eps) of every cell: eps = 0 is one clean cell, attack "none".

    Parameters
    ----------
    data, attacks : sequence of str
        Data sets and attacks.
    eps : sequence of float
        Corrupted fractions.

    Returns
    -------
    cells : list of tuple
        ``(data, attack, eps)``.
    """
    out = []
    for name in data:
        for fraction in eps:
            if fraction == 0:
                out.append((name, CLEAN, 0.0))
            else:
                out.extend((name, attack, float(fraction)) for attack in attacks)
    return out


def classification_splits(
    seeds: Sequence[int], eps: Sequence[float], data_home: str | None
) -> list[tuple[str, str, float, int]]:
    """(data, attack, eps, seed) of every classification split of the race: its cells (the
    pair flips on data sets of three or more classes only), each with every seed.

    Parameters
    ----------
    seeds : sequence of int
        Seeds of the splits.
    eps : sequence of float
        Corrupted fractions (0: the clean cell).
    data_home : str or None
        Folder of the papers' CSV files.

    Returns
    -------
    keys : list of tuple
        ``(data, attack, eps, seed)``.
    """
    keys = []
    for data in DATA[CLASSIFICATION]:
        attacks = [
            a for a in ATTACKS[CLASSIFICATION]
            if a not in MULTICLASS_ONLY or _n_classes(CLASSIFICATION, data, data_home, None) > 2
        ]
        keys.extend((*cell, seed) for cell in cells([data], attacks, eps) for seed in seeds)
    return keys


def add_split_arguments(parser: argparse.ArgumentParser, eps: str) -> None:
    """The options of the per-split label-noise scripts: ``--seeds``, ``--eps`` (default
    ``eps``), ``--data-home``, ``--n-jobs``; :func:`parsed_splits` reads them."""
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--eps", default=eps, help="comma-separated corrupted fractions")
    parser.add_argument("--data-home", default=None, help="folder of the papers' CSV files")
    parser.add_argument("--n-jobs", type=int, default=2)


def parsed_splits(args: argparse.Namespace) -> list[tuple[str, str, float, int]]:
    """:func:`classification_splits` of the options :func:`add_split_arguments` added."""
    seeds = [int(s) for s in args.seeds.split(",")]
    fractions = [float(e) for e in args.eps.split(",")]
    return classification_splits(seeds, fractions, args.data_home)


def _n_classes(task: str, name: str, data_home: str | None, max_rows: int | None) -> int:
    """Number of distinct targets of a data set (classes, for classification).

    Parameters
    ----------
    task, name : str
        The data set.
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap.

    Returns
    -------
    n : int
        Distinct values of y.
    """
    return int(np.unique(load_data(task, name, data_home, max_rows)[1]).size)


def run_task(
    task: str,
    *,
    data: Sequence[str],
    attacks: Sequence[str],
    eps: Sequence[float],
    seeds: Sequence[int],
    methods: Sequence[str],
    data_home: str | None,
    max_rows: int | None,
    cache_dir: Path,
    n_jobs: int,
) -> pd.DataFrame:
    """Every run of a task (cached), the oracle's included.

    Parameters
    ----------
    task : {"classification"}
        The task.
    data, attacks : sequence of str
        Data sets and attacks.
    eps : sequence of float
        Corrupted fractions.
    seeds : sequence of int
        Seeds.
    methods : sequence of str
        Methods that can run here.
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap.
    cache_dir : Path
        Run cache folder.
    n_jobs : int
        Parallel runs.

    Returns
    -------
    frame : DataFrame
        One row per run: the key, metric, seconds, cpu_seconds, n_train, n_corrupted, error,
        and ``fresh`` (computed in this call, not read from the cache).
    """
    prints = fingerprints(max_rows)
    run = partial(run_one, data_home=data_home, max_rows=max_rows)
    frames = []
    for library in (False, True):
        names = [m for m in methods if METHODS[task][m].library == library]
        if not library:
            names = [ORACLE, *names]
        keys = [
            {"task": task, "data": d, "attack": a, "eps": e, "seed": s, "method": m}
            for d, a, e in cells(data, attacks, eps)
            if a not in MULTICLASS_ONLY or _n_classes(task, d, data_home, max_rows) > 2
            for s in seeds
            for m in names
        ]
        if not keys:
            continue
        fingerprint = prints[library]
        # the fingerprint holds the package's sources for its estimators' runs only
        fresh = [not cache_path(cache_dir, k, fingerprint, library=False).exists() for k in keys]
        label = f"{task} ({'robustkernel' if library else 'reference and peers'})"
        frame = run_cached(
            run,
            keys,
            cache_dir,
            fingerprint=fingerprint,
            n_jobs=n_jobs,
            description=label,
            library=False,
        )
        frame["fresh"] = fresh  # one row per key, in the order of the keys
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


