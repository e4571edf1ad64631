"""Record the fitted state of a fixed set of fits, and compare two recordings.

A refactoring of the library must leave every fitted result identical. This tool fits a fixed
list of estimators (every public estimator, with the settings that take different routes
through the fit) on generated data with fixed seeds, records what each fit left behind, and
compares two such recordings::

    python tools/fitted_state.py save before.pkl            # on the code before the change
    python tools/fitted_state.py save after.pkl             # ... and after it
    python tools/fitted_state.py compare before.pkl after.pkl [--tol 1e-12]

``save OUT.pkl [--only NAME ...]`` pickles a dict {fit name: state}, where the state holds every
public fitted attribute of the estimator (the names in ``vars(estimator)``, or served by
properties of its class, that end with "_" and do not start with "_") and "predict(X_test)",
plus "predict_proba(X_test)", "decision_function(X_test)" and "predict_interval(X_test)" (at
coverage 0.9) where the estimator has them; a fit
that raises records {"error": repr(exc)}. Values are stored as plain data (NumPy arrays and
Python builtins), so a recording can be loaded whatever the library's classes become. The fits
run on one thread (BLAS, OpenMP and PyTorch), so that two runs on one machine give the same
floating-point results (another machine or BLAS build may differ in the last bits: give compare
a larger ``--tol`` there); all 49 take about a minute. The fits that need PyTorch or Dask are
skipped, with a note, where those do not import.

``compare A.pkl B.pkl`` reports, for every fit and attribute, the keys present on one side
only, type, shape and dtype mismatches and, for floating-point values, a maximum absolute
difference relative to max(1, max |a|) above ``--tol`` (NaN equals NaN; bool, integer and
string values must be equal). It ends with "N fits, M attributes compared, K differences" and
exits with status 1 when K > 0, else 0.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import inspect
import pickle
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

PREDICTIONS = ("predict", "predict_proba", "decision_function", "predict_interval")
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # memory addresses in reprs differ between runs


# -- the data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    """Training rows, their targets and the rows the predictions are recorded on."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray


def _with_outliers(rng: np.random.RandomState, y: np.ndarray, fraction: float) -> np.ndarray:
    """y with ``fraction`` of its entries replaced by gross outliers, N(5, 2^2)."""
    bad = rng.choice(y.size, int(fraction * y.size), replace=False)
    y = y.copy()
    y[bad] = rng.normal(5.0, 2.0, size=bad.size)
    return y


def _flipped(rng: np.random.RandomState, y: np.ndarray, fraction: float) -> np.ndarray:
    """y with ``fraction`` of its labels moved to another class, drawn at random."""
    n_classes = int(y.max()) + 1
    flip = rng.choice(y.size, int(fraction * y.size), replace=False)
    y = y.copy()
    y[flip] = (y[flip] + rng.randint(1, n_classes, size=flip.size)) % n_classes
    return y


@cache
def sine(n: int = 160, n_features: int = 2, seed: int = 0) -> Data:
    """A sine regression with noise sd 0.1 and 15% of the targets gross outliers."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n + 50, n_features))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n + 50)
    return Data(X[:n], _with_outliers(rng, y[:n], 0.15), X[n:])


@cache
def blobs(n_classes: int, n: int = 160, seed: int = 1) -> Data:
    """Gaussian blobs (sd 1, centres 3 apart on a circle) with 15% (2 classes) or 20% (more) of
    the labels flipped."""
    rng = np.random.RandomState(seed)
    angles = 2 * np.pi * np.arange(n_classes) / n_classes
    centres = 3 / (2 * np.sin(np.pi / n_classes)) * np.c_[np.cos(angles), np.sin(angles)]
    labels = rng.randint(n_classes, size=n + 50)
    X = centres[labels] + rng.normal(size=(n + 50, 2))
    fraction = 0.15 if n_classes == 2 else 0.2
    return Data(X[:n], _flipped(rng, labels[:n], fraction), X[n:])


@cache
def index_model(classify: bool, n: int = 120, p: int = 5, seed: int = 2) -> Data:
    """A single-index model on N(0, I) rows in p dimensions: y = sin(2 x^T b) + noise with 15%
    gross outliers, or the labels 1[x^T b > 0] with 15% of them flipped."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n + 50, p))
    direction = np.ones(p) / np.sqrt(p)
    t = X @ direction
    if classify:
        return Data(X[:n], _flipped(rng, (t[:n] > 0).astype(int), 0.15), X[n:])
    y = np.sin(2 * t) + 0.1 * rng.normal(size=n + 50)
    return Data(X[:n], _with_outliers(rng, y[:n], 0.15), X[n:])


def integer_weights(n: int, seed: int = 3) -> np.ndarray:
    """Row weights 1, 2 or 3."""
    return np.random.RandomState(seed).randint(1, 4, size=n).astype(float)


# -- the fits -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One fit: an estimator, its data, and what it needs."""

    estimator: Callable[[], Any]
    data: Callable[[], Data]
    sample_weight: bool = False
    requires: str | None = None  # a module the fit needs: the fit is skipped without it
    dask_chunks: int | None = None  # fit on Dask arrays of this many rows per chunk
    clean_mask: bool = False  # pass OracleERM's clean_mask (every seventh row left out)


ALTERNATIVES = {"alpha": 0.1, "gamma": 0.5, "random_state": 0}
SUBSAMPLE_ROWS = 2100
"""Rows of the fit that chooses alpha and gamma on a subsample: just above ``SELECTION_ROWS``
(2000) of ``robustkernel.subquantile._fit.in_memory``."""


def cases() -> dict[str, Case]:
    """The fits, by name. The library is imported here only: ``compare`` runs without it."""
    from robustkernel import (
        MetricKernelLogisticRegression,
        MetricKernelRidge,
        MetricKernelRidgeCV,
        SubquantileClassifier,
        SubquantileKernelClassifier,
        SubquantileKernelRegressor,
        SubquantileMLPClassifier,
        SubquantileMLPRegressor,
        SubquantileRegressor,
    )
    from robustkernel.baselines import (
        CRRKernelRegressor,
        OracleERM,
        SeverKernelClassifier,
        SeverKernelRegressor,
        STIRKernelRegressor,
        TiltedKernelClassifier,
        TiltedKernelRegressor,
        TorrentGDKernelRegressor,
    )

    return {
        # SubquantileKernelRegressor
        "kr_defaults": Case(lambda: SubquantileKernelRegressor(random_state=0), sine),
        **{
            f"kr_eps0.2_{solver}": Case(
                lambda solver=solver: SubquantileKernelRegressor(
                    0.2, kernel="rbf", solver=solver, refine=None, **ALTERNATIVES
                ),
                sine,
            )
            for solver in ("alternating", "gd", "momentum", "nesterov")
        },
        "kr_eps_auto_rbf": Case(
            lambda: SubquantileKernelRegressor("auto", kernel="rbf", random_state=0), sine
        ),
        "kr_reject_eps0.1_rbf": Case(
            lambda: SubquantileKernelRegressor(0.1, kernel="rbf", refine="reject", **ALTERNATIVES),
            sine,
        ),
        "kr_biweight_eps0.1_rbf": Case(
            lambda: SubquantileKernelRegressor(
                0.1, kernel="rbf", refine="biweight", **ALTERNATIVES
            ),
            sine,
        ),
        "kr_nystroem_40": Case(
            lambda: SubquantileKernelRegressor(kernel="rbf", n_components=40, random_state=0), sine
        ),
        "kr_auto_kernel_nystroem_40": Case(
            lambda: SubquantileKernelRegressor(n_components=40, random_state=0), sine
        ),
        "kr_sample_weight": Case(
            lambda: SubquantileKernelRegressor(random_state=0), sine, sample_weight=True
        ),
        "kr_sample_weight_eps0.2_rbf": Case(
            lambda: SubquantileKernelRegressor(0.2, kernel="rbf", **ALTERNATIVES),
            sine,
            sample_weight=True,
        ),
        # SubquantileKernelClassifier
        "kc_defaults_2class": Case(
            lambda: SubquantileKernelClassifier(random_state=0), lambda: blobs(2)
        ),
        "kc_defaults_3class": Case(
            lambda: SubquantileKernelClassifier(random_state=0), lambda: blobs(3)
        ),
        "kc_eps_auto_given_alpha_gamma_2class": Case(
            lambda: SubquantileKernelClassifier("auto", **ALTERNATIVES), lambda: blobs(2)
        ),
        "kc_eps0.15_2class": Case(
            lambda: SubquantileKernelClassifier(0.15, random_state=0), lambda: blobs(2)
        ),
        "kc_eps0.2_3class": Case(
            lambda: SubquantileKernelClassifier(0.2, **ALTERNATIVES), lambda: blobs(3)
        ),
        "kc_hinge_eps0.15_2class": Case(
            lambda: SubquantileKernelClassifier(0.15, loss="hinge", **ALTERNATIVES),
            lambda: blobs(2),
        ),
        "kc_hinge_eps0.2_3class": Case(
            lambda: SubquantileKernelClassifier(0.2, loss="hinge", **ALTERNATIVES),
            lambda: blobs(3),
        ),
        # alpha / gamma "auto" chosen on a subsample (more than SELECTION_ROWS rows)
        "kr_subsample_route_nystroem_60": Case(
            lambda: SubquantileKernelRegressor(kernel="rbf", n_components=60, random_state=0),
            lambda: sine(SUBSAMPLE_ROWS, 3),
        ),
        "kr_defaults_subsample_route": Case(
            lambda: SubquantileKernelRegressor(random_state=0), lambda: sine(SUBSAMPLE_ROWS, 3)
        ),
        "kr_subsample_route_exact": Case(
            lambda: SubquantileKernelRegressor(kernel="rbf", random_state=0),
            lambda: sine(SUBSAMPLE_ROWS, 3),
        ),
        # meta-estimators
        "meta_reg_defaults": Case(lambda: SubquantileRegressor(random_state=0), sine),
        "meta_reg_ridge_eps0.2": Case(
            lambda: SubquantileRegressor(Ridge(alpha=1.0), epsilon=0.2, random_state=0), sine
        ),
        "meta_reg_ridge_eps_auto": Case(
            lambda: SubquantileRegressor(Ridge(alpha=1.0), epsilon="auto", random_state=0), sine
        ),
        "meta_clf_defaults_3class": Case(
            lambda: SubquantileClassifier(random_state=0), lambda: blobs(3)
        ),
        "meta_clf_logistic_eps0.15": Case(
            lambda: SubquantileClassifier(LogisticRegression(), epsilon=0.15, random_state=0),
            lambda: blobs(2),
        ),
        "meta_clf_logistic_eps_auto": Case(
            lambda: SubquantileClassifier(LogisticRegression(), epsilon="auto", random_state=0),
            lambda: blobs(2),
        ),
        # networks (PyTorch)
        "mlp_reg_eps0.15": Case(
            lambda: SubquantileMLPRegressor(0.15, hidden_units=8, max_iter=300, random_state=0),
            sine,
            requires="torch",
        ),
        "mlp_clf_eps0.2_3class": Case(
            lambda: SubquantileMLPClassifier(0.2, hidden_units=8, max_iter=300, random_state=0),
            lambda: blobs(3),
            requires="torch",
        ),
        # learned metric
        "metric_ridge_defaults": Case(MetricKernelRidge, lambda: index_model(False)),
        "metric_ridge_eps0.2": Case(
            lambda: MetricKernelRidge(epsilon=0.2, random_state=0), lambda: index_model(False)
        ),
        "metric_ridge_eps_auto": Case(
            lambda: MetricKernelRidge(epsilon="auto", random_state=0), lambda: index_model(False)
        ),
        "metric_ridge_cv_defaults": Case(
            lambda: MetricKernelRidgeCV(random_state=0), lambda: index_model(False)
        ),
        "metric_ridge_cv_small": Case(
            lambda: MetricKernelRidgeCV(lams=[0.3, 0.1], n_iter_no_change=1, random_state=0),
            lambda: index_model(False),
        ),
        "metric_logistic_defaults": Case(MetricKernelLogisticRegression, lambda: index_model(True)),
        "metric_ridge_cv_eps0.2": Case(
            lambda: MetricKernelRidgeCV(
                lams=[0.3, 0.1], n_iter_no_change=1, epsilon=0.2, random_state=0
            ),
            lambda: index_model(False),
        ),
        # the kernel baselines
        "crr_eps0.15": Case(lambda: CRRKernelRegressor(0.15, alpha=0.1, gamma=0.5), sine),
        "stir": Case(lambda: STIRKernelRegressor(alpha=0.1, gamma=0.5), sine),
        "torrent_gd_eps0.15": Case(
            lambda: TorrentGDKernelRegressor(0.15, alpha=0.1, gamma=0.5), sine
        ),
        "sever_reg_eps0.15": Case(lambda: SeverKernelRegressor(0.15, alpha=0.1, gamma=0.5), sine),
        "sever_clf_fraction0.05_2class": Case(
            lambda: SeverKernelClassifier(fraction=0.05, alpha=0.1, gamma=0.5), lambda: blobs(2)
        ),
        "term_reg": Case(lambda: TiltedKernelRegressor(alpha=0.1, gamma=0.5), sine),
        "term_clf_3class": Case(
            lambda: TiltedKernelClassifier(alpha=0.1, gamma=0.5), lambda: blobs(3)
        ),
        "oracle_reg_kernel_ridge": Case(
            lambda: OracleERM(KernelRidge(alpha=0.1, kernel="rbf", gamma=0.5)), sine,
            clean_mask=True,
        ),
        "oracle_clf_svc_3class": Case(
            lambda: OracleERM(SVC(probability=True, random_state=0)), lambda: blobs(3),
            clean_mask=True,
        ),
        # one fit as passes over the chunks of Dask arrays (the local synchronous scheduler)
        "dask_kr_papers_nystroem_40": Case(
            lambda: SubquantileKernelRegressor(
                0.2, kernel="rbf", n_components=40, refine=None, **ALTERNATIVES
            ),
            lambda: sine(400),
            requires="dask",
            dask_chunks=150,
        ),
        "dask_kr_reject_eps0.1_nystroem_40": Case(
            lambda: SubquantileKernelRegressor(
                0.1, kernel="rbf", n_components=40, refine="reject", **ALTERNATIVES
            ),
            lambda: sine(400),
            requires="dask",
            dask_chunks=150,
        ),
        "dask_kr_auto_nystroem_40": Case(
            lambda: SubquantileKernelRegressor(kernel="rbf", n_components=40, random_state=0),
            lambda: sine(400),
            requires="dask",
            dask_chunks=150,
        ),
    }


# -- the state ------------------------------------------------------------------------------------


def fitted_attributes(estimator: Any) -> dict[str, Any]:
    """The public fitted attributes of ``estimator`` (those in ``vars`` and those its class
    serves through properties, e.g. the Subquantile estimators' per-row attributes), as plain
    data."""
    names = set(vars(estimator)) | {
        name for name, member in inspect.getmembers(type(estimator))
        if isinstance(member, property) and hasattr(estimator, name)
    }
    return {
        name: plain(getattr(estimator, name))
        for name in sorted(names)
        if name.endswith("_") and not name.startswith("_")
    }


def plain(value: Any) -> Any:
    """``value`` as data that pickles and compares without the library: arrays and builtins."""
    if isinstance(value, np.ndarray | np.generic | str | int | float | complex | None):
        return value  # bool is an int
    if type(value).__module__.split(".")[0] == "dask" and hasattr(value, "compute"):
        return plain(value.compute())
    if isinstance(value, list | tuple):
        return type(value)(plain(item) for item in value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if hasattr(value, "get_params") and not isinstance(value, type):  # a nested estimator
        return {"type": type(value).__qualname__, **fitted_attributes(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "type": type(value).__qualname__,
            **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)},
        }
    # anything else (a callable kernel, a torch object, ...) is recorded by its repr, without
    # the memory addresses that differ between runs
    return ADDRESS.sub(" at 0x…", repr(value))


def fit_state(case: Case) -> dict[str, Any]:
    """Fit ``case`` and return its state (see the module docstring)."""
    data = case.data()
    X, y = data.X, data.y
    kwargs = {"sample_weight": integer_weights(y.size)} if case.sample_weight else {}
    if case.clean_mask:
        kwargs["clean_mask"] = np.arange(y.size) % 7 != 0
    context: Any = contextlib.nullcontext()
    if case.dask_chunks is not None:
        import dask
        import dask.array as da

        context = dask.config.set(scheduler="synchronous")
        X = da.from_array(X, chunks=(case.dask_chunks, X.shape[1]))
        y = da.from_array(y, chunks=case.dask_chunks)
    estimator = case.estimator()
    with warnings.catch_warnings(), context:
        warnings.simplefilter("ignore")  # convergence notes and the like: not fitted state
        estimator.fit(X, y, **kwargs)
        return record(estimator, data.X_test)


def record(estimator: Any, X_test: np.ndarray) -> dict[str, Any]:
    """The fitted attributes of ``estimator`` and its predictions on ``X_test``."""
    state = fitted_attributes(estimator)
    for method in PREDICTIONS:
        if hasattr(estimator, method):
            try:
                state[f"{method}(X_test)"] = plain(getattr(estimator, method)(X_test))
            except ValueError as exc:  # e.g. no intervals for a fit on Dask arrays
                state[f"{method}(X_test)"] = {"error": ADDRESS.sub(" at 0x…", repr(exc))}
    return state


def save(path: Path, names: list[str], table: dict[str, Case]) -> None:
    """Run the fits ``names`` of ``table`` on one thread and pickle {name: state} to ``path``."""
    states: dict[str, Any] = {}
    total = time.perf_counter()
    with threadpool_limits(limits=1):
        for name in names:
            case = table[name]
            if case.requires is not None and importlib.util.find_spec(case.requires) is None:
                print(f"{name:40s} skipped: {case.requires} does not import", flush=True)
                continue
            if case.requires == "torch":
                import torch

                torch.set_num_threads(1)
            start = time.perf_counter()
            try:
                states[name] = fit_state(case)
                note = ""
            except Exception as exc:  # recorded: a refactoring must not change it either
                states[name] = {"error": repr(exc)}
                note = f"  ERROR {exc!r}"
            print(f"{name:40s} {time.perf_counter() - start:7.2f} s{note}", flush=True)
    with path.open("wb") as file:
        pickle.dump(states, file, protocol=pickle.HIGHEST_PROTOCOL)
    print(f"{len(states)} fits saved to {path} in {time.perf_counter() - total:.1f} s")


# -- the comparison -------------------------------------------------------------------------------


def differences(a: Any, b: Any, where: str, tol: float) -> Iterator[str]:
    """A line for every difference between the recorded values ``a`` and ``b``."""
    if type(a) is not type(b):
        yield f"{where}: type {type(a).__name__} vs {type(b).__name__}"
    elif isinstance(a, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            if key not in b:
                yield f"{where}/{key}: only in A"
            elif key not in a:
                yield f"{where}/{key}: only in B"
            else:
                yield from differences(a[key], b[key], f"{where}/{key}", tol)
    elif isinstance(a, list | tuple):
        if len(a) != len(b):
            yield f"{where}: length {len(a)} vs {len(b)}"
        else:
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                yield from differences(x, y, f"{where}[{i}]", tol)
    elif isinstance(a, np.ndarray | np.generic | float | complex):
        yield from array_differences(np.asarray(a), np.asarray(b), where, tol)
    elif a != b:
        yield f"{where}: {a!r} vs {b!r}"


def array_differences(a: np.ndarray, b: np.ndarray, where: str, tol: float) -> Iterator[str]:
    """Shape and dtype mismatches; for floating-point values, the largest difference relative
    to max(1, max |a|) when above ``tol`` (NaN equals NaN, inf equals inf of its sign); other
    values must be equal."""
    if a.shape != b.shape:
        yield f"{where}: shape {a.shape} vs {b.shape}"
    elif a.dtype != b.dtype:
        yield f"{where}: dtype {a.dtype} vs {b.dtype}"
    elif a.dtype.kind not in "fc":
        if not np.array_equal(a, b):
            yield f"{where}: {int(np.count_nonzero(a != b))} of {a.size} values differ"
    elif not np.array_equal(a, b, equal_nan=True):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        finite = np.isfinite(a) & np.isfinite(b)
        if not np.all(same | finite):  # NaN against a number, or an infinity changed
            yield f"{where}: {int(np.count_nonzero(~same))} of {a.size} values differ (NaN or inf)"
            return
        gap = float(np.max(np.abs(np.where(same, 0, a - b))))
        magnitude = float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0))
        relative = gap / max(1.0, magnitude)
        if relative > tol:
            yield f"{where}: max |a - b| / max(1, max |a|) = {relative:.3g}"


def compare(path_a: Path, path_b: Path, tol: float) -> int:
    """Print the differences between two recordings and the summary line; the exit status."""
    with path_a.open("rb") as file:
        a = pickle.load(file)
    with path_b.open("rb") as file:
        b = pickle.load(file)
    n_fits = n_attributes = n_differences = 0
    for name in sorted(a.keys() | b.keys()):
        if name not in b or name not in a:
            print(f"{name}: only in {'A' if name in a else 'B'}")
            n_differences += 1
            continue
        n_fits += 1
        errors = a[name].get("error"), b[name].get("error")
        if errors != (None, None):  # a fit that raised: its error is its state
            if errors[0] != errors[1]:
                print(f"{name}: {errors[0] or 'fitted'} vs {errors[1] or 'fitted'}")
                n_differences += 1
            continue
        for key in sorted(a[name].keys() | b[name].keys()):
            if key not in b[name] or key not in a[name]:
                print(f"{name}/{key}: only in {'A' if key in a[name] else 'B'}")
                n_differences += 1
                continue
            n_attributes += 1
            for line in differences(a[name][key], b[name][key], f"{name}/{key}", tol):
                print(line)
                n_differences += 1
    print(f"{n_fits} fits, {n_attributes} attributes compared, {n_differences} differences")
    return 1 if n_differences else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    saving = commands.add_parser("save", help="run the fits and pickle their fitted state")
    saving.add_argument("out", type=Path, help="the pickle to write")
    saving.add_argument(
        "--only", nargs="+", metavar="NAME", help="run only these fits (default: all)"
    )
    comparing = commands.add_parser("compare", help="compare two recordings")
    comparing.add_argument("a", type=Path)
    comparing.add_argument("b", type=Path)
    comparing.add_argument(
        "--tol", type=float, default=1e-12, help="largest relative difference taken as equal"
    )
    args = parser.parse_args(argv)
    if args.command == "save":
        table = cases()
        unknown = sorted(set(args.only or ()) - table.keys())
        if unknown:
            parser.error(f"unknown fits {unknown}; the fits are {list(table)}")
        save(args.out, args.only or list(table), table)
        return 0
    return compare(args.a, args.b, args.tol)


if __name__ == "__main__":
    sys.exit(main())
