"""Defaults at any size: what the automatic configuration costs as the rows grow.

Regression on 8 N(0, 1) features, f(x) = sin(2 x1) + x2 x3 + 0.5 x4^2, noise sd 0.3, 20% of the
training targets replaced by N(5, variance 4); 5000 clean test rows. Three parts:

* exact kernel, n in ``--exact-sizes``: ``SubquantileKernelRegressor()`` (no arguments) against
  one ``KernelRidge(kernel="rbf", alpha=1, gamma=1/8)`` fit on the same rows (the fit-time
  ratio) and against KernelRidge + 5-fold GridSearchCV over the defaults' grid (rbf at 7
  gammas, linear, polynomial of degree 2; 11 alphas each: 99 points, 495 fits), with the test
  RMSE of each;
* Nystroem features, n in ``--feature-sizes`` with m = ``--components`` features (one value,
  or one per size): ``SubquantileKernelRegressor(n_components=m)`` (kernel, epsilon, alpha,
  gamma "auto") and ``SubquantileKernelRegressor()`` (n_components="auto" too) against the
  configuration given (kernel "rbf", epsilon 0.2, alpha 0.01, gamma 1/8, refine=None) on the
  same features, and the test RMSE of the best point of a grid of given rbf configurations
  (gammas 1/32, 1/16, 1/8, 1/4 x alphas 1e-4, 1e-2, 1; the true epsilon 0.2; refine=None).
  ``--dtype float32`` fits the features in single precision;
* classification, n in ``--classifier-sizes``: ``SubquantileKernelClassifier()`` (no arguments)
  against one ``SVC()`` fit (the fit-time ratio), SVC + 5-fold GridSearchCV over C in (0.1, 1,
  10, 100) x gamma in (0.25, 0.5, 1, 2, 4) / n_features, and cleanlab's
  ``CleanLearning(SVC(probability=True))`` and CleanLearning around the grid-tuned SVC
  (``bench_robust.py``'s ``cleanlab_tuned``; skipped with a note where cleanlab is absent; the
  grid rows only up to ``--grid-max`` rows, the classifier alone above ``--peers-max``), the
  flagged share and the flags' precision / recall in the note, on scikit-learn's
  ``make_classification`` (8 features, 6 informative, ``--classes`` classes of two clusters
  each) with 20% of the training labels replaced by another class at random;
  accuracy on 5000 clean test rows, one row per ``--seeds`` seed.

Every fit runs with one BLAS thread; each time is the median of ``--repeats`` fits (the grid
once), with the process CPU time next to it; the load average is noted before and after.

    python benchmarks/bench_defaults_scale.py [--exact-sizes 1000 2000 4000]
        [--feature-sizes 20000] [--components 500] [--no-grid] [--classifier-sizes] [--classes 2]
        [--seeds 0] [--repeats 1] [--no-write]

prints the table and writes it into BENCHMARKS.md (section "Defaults at any size
(bench_defaults_scale.py)"). Run it alone: no other job on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd
from harness.data import flipped_classification_data
from harness.peers import EncodedLabels, TunedCleanLearning, flagged_rows
from harness.report import markdown_table
from harness.timing import timed, write_section
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.subquantile._automatic.hyperparameters import ALPHAS, GAMMA_FACTORS

SECTION = "## Defaults at any size (bench_defaults_scale.py)"
N_FEATURES = 8
GIVEN = {"epsilon": 0.2, "kernel": "rbf", "alpha": 0.01, "gamma": 1.0 / 8, "refine": None}
GRID_GAMMAS = (1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4)
GRID_ALPHAS = (1e-4, 1e-2, 1.0)
SVC_GRID = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [f / N_FEATURES for f in (0.25, 0.5, 1, 2, 4)]}


def regression_data(n_train: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """The problem of the module docstring: X, y (20% replaced), X_test, f(X_test)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + 5000, N_FEATURES))
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2
    y = f[:n_train] + 0.3 * rng.normal(size=n_train)
    bad = rng.choice(n_train, size=n_train // 5, replace=False)
    y[bad] = rng.normal(5.0, 2.0, size=bad.size)
    return X[:n_train], y, X[n_train:], f[n_train:]


def rmse(model: object, X: np.ndarray, f: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(model.predict(X)) - f) ** 2)))


def _row(
    size: str,
    method: str,
    wall: float,
    cpu: float,
    base: float,
    reference: str,
    error: float,
    note: str = "",
) -> dict:
    return {
        "rows": size,
        "method": method,
        "fit s (median)": round(wall, 3),
        "CPU s": round(cpu, 3),
        "fit-time ratio": round(wall / base, 2),
        "ratio to": reference,
        "test RMSE": round(error, 4),
        "chosen": note,
    }


def _chosen(model: SubquantileKernelRegressor | SubquantileKernelClassifier) -> str:
    # kernel="auto" (the regressor's default) reports its choice in kernel_, and may choose the
    # linear kernel, which has no gamma (gamma_ None).
    kernel = getattr(model, "kernel_", model.kernel)
    gamma = "-" if model.gamma_ is None else f"{model.gamma_:.3g}"
    return f"kernel {kernel}, eps {model.epsilon_:.3f}, alpha {model.alpha_:.3g}, gamma {gamma}"


def search_grid(X: np.ndarray) -> list[dict]:
    """The defaults' grid for KernelRidge + GridSearchCV: the rbf kernel at the 7 gamma factors
    times 1 / (n_features var(X)), the linear kernel and the polynomial of degree 2 (coef0 1),
    each at the 11 alphas times the mean of k(x, x) (99 points)."""
    scale = 1.0 / (X.shape[1] * X.var())
    level_linear = float(np.mean(np.sum(X * X, axis=1)))
    level_poly = float(np.mean((scale * np.sum(X * X, axis=1) + 1.0) ** 2))
    return [
        {"kernel": ["rbf"], "gamma": [f * scale for f in GAMMA_FACTORS], "alpha": list(ALPHAS)},
        {"kernel": ["linear"], "alpha": [a * level_linear for a in ALPHAS]},
        {
            "kernel": ["poly"],
            "degree": [2],
            "coef0": [1.0],
            "gamma": [scale],
            "alpha": [a * level_poly for a in ALPHAS],
        },
    ]


def exact_rows(n: int, repeats: int) -> list[dict]:
    """The defaults on the exact kernel against one KernelRidge fit and against KernelRidge
    + 5-fold GridSearchCV over the defaults' grid (:func:`search_grid`)."""
    X, y, X_test, f_test = regression_data(n)
    ridge = "KernelRidge(rbf, alpha=1, gamma=1/8)"
    wall_k, cpu_k, kr = timed(
        lambda: KernelRidge(kernel="rbf", alpha=1.0, gamma=1.0 / 8), X, y, repeats
    )
    wall_s, cpu_s, search = timed(
        lambda: GridSearchCV(KernelRidge(), search_grid(X), cv=5), X, y, repeats
    )
    wall_d, cpu_d, model = timed(SubquantileKernelRegressor, X, y, repeats)
    searched = "KernelRidge + 5-fold GridSearchCV (99 points)"
    best = search.best_params_
    return [
        {
            **_row(
                f"{n}, exact",
                "SubquantileKernelRegressor()",
                wall_d,
                cpu_d,
                wall_k,
                ridge,
                rmse(model, X_test, f_test),
                _chosen(model),
            ),
            "ratio to grid search": round(wall_d / wall_s, 2),
        },
        _row(f"{n}, exact", ridge, wall_k, cpu_k, wall_k, ridge, rmse(kr, X_test, f_test)),
        {
            **_row(
                f"{n}, exact",
                searched,
                wall_s,
                cpu_s,
                wall_k,
                ridge,
                rmse(search, X_test, f_test),
                ", ".join(
                    f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                    for key, value in best.items()
                ),
            ),
            "ratio to grid search": 1.0,
        },
    ]


def feature_rows(n: int, m: int, dtype: str, repeats: int, grid: bool = True) -> list[dict]:
    """The defaults on m Nystroem features against the configuration given, and (``grid``)
    the fit with no arguments and the best point of the grid of given configurations."""
    X, y, X_test, f_test = regression_data(n)
    common = {"n_components": m, "dtype": dtype, "random_state": 0}
    given = f"given (rbf, eps 0.2, alpha 0.01, gamma 1/8), m = {m}"
    wall_g, cpu_g, model_g = timed(
        lambda: SubquantileKernelRegressor(**GIVEN, **common), X, y, repeats
    )
    wall_d, cpu_d, model_d = timed(lambda: SubquantileKernelRegressor(**common), X, y, repeats)
    size = f"{n}, m = {m} ({dtype})"
    defaults = _row(
        size,
        f"SubquantileKernelRegressor(n_components={m})",
        wall_d,
        cpu_d,
        wall_g,
        given,
        rmse(model_d, X_test, f_test),
        _chosen(model_d),
    )
    given_row = _row(size, given, wall_g, cpu_g, wall_g, given, rmse(model_g, X_test, f_test))
    if not grid:
        return [defaults, given_row]
    wall_a, cpu_a, model_a = timed(
        lambda: SubquantileKernelRegressor(random_state=0), X, y, repeats
    )
    grid = []
    for gamma in GRID_GAMMAS:
        for alpha in GRID_ALPHAS:
            settings = {**GIVEN, "alpha": alpha, "gamma": gamma}
            wall, cpu, model = timed(
                lambda s=settings: SubquantileKernelRegressor(**s, **common), X, y, 1
            )
            grid.append((rmse(model, X_test, f_test), wall, cpu, gamma, alpha))
    best = min(grid)
    return [
        defaults,
        _row(
            size,
            "SubquantileKernelRegressor() (no arguments)",
            wall_a,
            cpu_a,
            wall_g,
            given,
            rmse(model_a, X_test, f_test),
            f"n_components_ {model_a.n_components_}; " + _chosen(model_a),
        ),
        given_row,
        _row(
            size,
            "best of the 4 x 3 grid of given configurations",
            best[1],
            best[2],
            wall_g,
            given,
            best[0],
            f"alpha {best[4]:.3g}, gamma {best[3]:.3g}; test RMSE range "
            f"{min(g[0] for g in grid):.3f}-{max(g[0] for g in grid):.3f}",
        ),
    ]


def _encoded(model: object) -> object:
    """cleanlab's CleanLearning as :func:`bench_robust.flagged_rows` reads it (wrapped as the
    harness wraps it); other models as they are."""
    if type(model).__name__ == "CleanLearning":
        wrapper = EncodedLabels(model)
        wrapper.estimator_ = model
        return wrapper
    return model


def classifier_rows(
    n: int,
    classes: int,
    seed: int,
    repeats: int,
    grid_max: int | None = None,
    peers_max: int | None = None,
) -> list[dict]:
    """The classifier with no arguments against SVC, SVC + GridSearchCV and cleanlab (around
    SVC and around the grid-tuned SVC); the note gives the share of the rows each flags and
    the precision / recall of the flags against the flipped rows. Above ``grid_max`` rows no
    grid search; above ``peers_max`` the classifier alone (time and accuracy, no ratio)."""
    X, y, X_test, y_test, flipped = flipped_classification_data(n, classes, seed, N_FEATURES)
    methods = {
        "SubquantileKernelClassifier()": lambda: SubquantileKernelClassifier(random_state=seed),
        "SVC()": SVC,
        "SVC + GridSearchCV (20 x 5 fits)": lambda: GridSearchCV(SVC(), SVC_GRID, cv=5),
    }
    if grid_max is not None and n > grid_max:
        del methods["SVC + GridSearchCV (20 x 5 fits)"]
    alone = peers_max is not None and n > peers_max
    if alone:
        methods = {"SubquantileKernelClassifier()": methods["SubquantileKernelClassifier()"]}
    notes = {}
    try:
        from cleanlab.classification import CleanLearning

        methods["cleanlab CleanLearning(SVC(probability=True))"] = lambda: CleanLearning(
            SVC(probability=True, random_state=seed),
            seed=seed,
            verbose=False,
            find_label_issues_kwargs={"n_jobs": 1},
        )
    except ImportError:
        notes["cleanlab"] = "cleanlab not installed: its row skipped"
    else:
        if alone:
            del methods["cleanlab CleanLearning(SVC(probability=True))"]
        elif grid_max is None or n <= grid_max:
            methods["cleanlab CleanLearning(SVC + GridSearchCV)"] = lambda: TunedCleanLearning(seed)
    results = {name: timed(make, X, y, repeats) for name, make in methods.items()}
    base = results["SVC()"][0] if "SVC()" in results else float("nan")
    size = f"{n}, {classes} classes, seed {seed}"
    rows = []
    for name, (wall, cpu, model) in results.items():
        accuracy = float(np.mean(model.predict(X_test) == y_test))
        note = ""
        if isinstance(model, SubquantileKernelClassifier):
            note = _chosen(model) + f"; n_components_ {model.n_components_}; loss_ {model.loss_}"
        flags = flagged_rows(_encoded(model))
        if flags is not None:
            hits = np.sum(flags & flipped)
            note += (
                f"{'; ' if note else ''}flagged {flags.mean():.3f} of the rows (flipped "
                f"{flipped.mean():.3f}), precision {hits / max(flags.sum(), 1):.3f}, "
                f"recall {hits / flipped.sum():.3f}"
            )
        row = _row(size, name, wall, cpu, base, "SVC()", 0.0, note)
        del row["test RMSE"]
        rows.append({**row, "test accuracy": round(accuracy, 4)})
    for note in notes.values():
        print(note)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exact-sizes", type=int, nargs="*", default=[1000, 2000, 4000])
    parser.add_argument("--feature-sizes", type=int, nargs="*", default=[20000])
    parser.add_argument("--components", type=int, nargs="*", default=[500])
    parser.add_argument(
        "--no-grid",
        action="store_true",
        help="feature sizes: the defaults and the given configuration only (for 1e6 rows)",
    )
    parser.add_argument("--classifier-sizes", type=int, nargs="*", default=[])
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument(
        "--grid-max",
        type=int,
        default=None,
        help="classifier sizes: no SVC + GridSearchCV (or cleanlab around it) above these rows",
    )
    parser.add_argument(
        "--peers-max",
        type=int,
        default=None,
        help="classifier sizes: the classifier alone (no SVC, no cleanlab) above these rows",
    )
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    args = parser.parse_args(argv)
    components = args.components
    if len(components) == 1:
        components = components * len(args.feature_sizes)
    if len(components) != len(args.feature_sizes):
        parser.error("--components takes one value, or one per --feature-sizes value")
    load_before = os.getloadavg()
    start = time.perf_counter()
    rows: list[dict] = []
    with threadpool_limits(1):
        for n in args.exact_sizes:
            rows += exact_rows(n, args.repeats)
            print(markdown_table(pd.DataFrame(rows[-3:]).fillna("")), flush=True)
        for n, m in zip(args.feature_sizes, components, strict=True):
            part = feature_rows(n, m, args.dtype, args.repeats, not args.no_grid)
            rows += part
            print(markdown_table(pd.DataFrame(part)), flush=True)
        for n in args.classifier_sizes:
            for seed in args.seeds:
                part = classifier_rows(
                    n, args.classes, seed, args.repeats, args.grid_max, args.peers_max
                )
                rows += part
                print(markdown_table(pd.DataFrame(part)), flush=True)
    write_section(
        SECTION,
        "bench_defaults_scale.py",
        sys.argv[1:] if argv is None else argv,
        load_before,
        start,
        " ".join(__doc__.split("\n\n")[1:4]),
        pd.DataFrame(rows).astype(object).fillna(""),  # regression rows have no accuracy, and so on
        args.no_write,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
