"""The scorecard: every target of the automatic regression fit in one command, met or missed,
and a diff against a saved baseline.

This first part holds the planted grid (``harness.planted``: three truths x five attacks x eps
0.1-0.4, the clean cells, n = 200 and 1000, three seeds: 126 cells). Beside the defaults
(``SubquantileKernelRegressor()``): the oracle (KernelRidge + GridSearchCV fitted on the clean
rows), KernelRidge + GridSearchCV on every row (both ``make_pipeline(StandardScaler(),
KernelRidge(kernel="rbf"))``, 5 shuffled folds, alpha in {1e-4, ..., 1} x gamma in {0.01, ...,
1}), scikit-learn's HuberRegressor, RANSACRegressor and TheilSenRegressor with their defaults,
TERM (``robustkernel.baselines``), and R's ltsReg and lmrob on the linear truth (through
``Rscript``; left out with a note where it or robustbase is missing: Debian / Ubuntu
``apt-get install r-base-core r-cran-robustbase``). Scores: RMSE to the truth on 2000 clean test
rows, the flags' recall of the moved rows that lie more than 3 noise sd from the truth, their
precision, the share flagged.

The other parts are benchmark scripts of their own (``PARTS``), each run as its own process (with
its own cache where it has one) that writes its rows with ``--json``; ``--quick`` gives each its
smallest configuration; all but the cost run ``--jobs`` at a time, then the cost alone
(``TIMED_PARTS``). Their targets:

* real tables (``bench_real_tables.py``): median share flagged <= max(lmrob's + 1 point, 2%);
  tables above 5% flagged <= lmrob's count + 2; the defaults' CV RMSE over KernelRidge +
  GridSearchCV's <= 1.05 on the median table, <= 1.5 on every table from 100 rows on, <= 2
  below;
* classic sets (``bench_outliers.py``): mean recall >= 0.95, mean precision >= ltsReg's, within
  1.10x of the best CV RMSE on at least lmrob's count of sets;
* masking (``bench_masking.py``): precision >= ltsReg's, good leverage flagged <= ltsReg's;
* evidence (``bench_evidence.py``, 10 seeds): the share of clean rows with p < q within
  [q / 2, 3 q / 2] at q = 0.01 and 0.05 per noise, clean Gaussian rows flagged <= 1%, t(3)
  rows <= 2x lmrob's;
* intervals (``bench_intervals.py``, n = 1000, eps 0.2-0.4): per cell |coverage - nominal| <=
  the oracle's |error| + 0.02, width <= 1.15x the oracle's (1.25x at 0.4);
* links (``bench_link_defaults.py``): ``link="logistic"`` with 25% uniform targets within 1.15x
  its oracle (1.50x on the held-out problem).

* named problems (``bench_named_problems.py``): the SubQ papers' polynomial problem, clean and
  with 20% and 40% oblivious noise, the defaults within 1.10x of the oracle (median of 5
  splits); a 30% shift at one edge of a linear relation within 1.5x.

* cost (``bench_fit_time.py --scorecard``): the defaults' fit time over KernelRidge +
  GridSearchCV's (the 25 points above, scaled) on the same rows, <= 2 (and under a second) at
  400 rows, <= 1 at 1000 and 2000; never slower at n than at a larger n.

Not yet here: the 20,000-row check against 7f583f3 (time and test RMSE).

Every run is cached (``benchmarks/.cache/scorecard/``, one file per method, cell and seed, under
a fingerprint of the code it depends on: the library's source, less its command line, for the
library's methods), so a
rerun fits only what changed. Run on a quiet machine, one BLAS thread per process::

    python benchmarks/scorecard.py [--quick] [--jobs 2] [--no-write]
    python benchmarks/scorecard.py --save-baseline      # the diff's reference, committed
    PYTHONPATH=<checkout of an older commit>/src \\
        python benchmarks/scorecard.py --methods defaults --label 728dc9e

The last form runs the defaults of another commit (the ``--label`` names them
``defaults@728dc9e`` in the cache); the floor "every cell within 5% of the better of the
defaults at 728dc9e and at 7f583f3" reads those runs. ``--quick``: n = 200, seed 0, eps 0, 0.2
and 0.4 (33 cells, a few minutes).

It prints the targets (met / missed), the defaults' median ratio to the oracle per truth, attack
and eps, and the cells whose median moved by more than 5% against the baseline, and writes them
to ``benchmarks/results/scorecard.md`` (``--quick``: ``scorecard-quick.md``).
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import ast  # noqa: E402
import functools  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import sklearn  # noqa: E402
from harness import planted  # noqa: E402
from harness.named_problems import summary as named_summary  # noqa: E402
from harness.peers import issue_krr_search  # noqa: E402
from harness.planted import CLEAN, Cell, PlantedData, generate  # noqa: E402
from harness.report import RunClock, cpu_description, markdown_table  # noqa: E402
from harness.rscript import R_INSTALL, R_METHODS, r_version, run_robustbase_batch  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.linear_model import (  # noqa: E402
    HuberRegressor,
    RANSACRegressor,
    TheilSenRegressor,
)
from tqdm import tqdm  # noqa: E402

import robustkernel  # noqa: E402
from robustkernel import SubquantileKernelRegressor  # noqa: E402
from robustkernel._atomic import atomic_write  # noqa: E402
from robustkernel.baselines import BASELINES  # noqa: E402

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "scorecard"
RESULTS = HERE / "results"
BASELINE = HERE / "scorecard_baseline.json"
FLOORS = HERE / "scorecard_floors.json"  # the defaults of FLOOR_COMMITS, median RMSE per cell
PROTOCOL = 1  # bump when a generator, a method or a score below changes
SEEDS = (0, 1, 2)
QUICK = {"sizes": (200,), "epsilons": (0.2, 0.4), "seeds": (0,)}
MOVED = 0.05  # the diff shows cells whose median moved by more than this share
DEFAULTS, ORACLE = "defaults", "oracle"
FLOOR_COMMITS = ("728dc9e", "7f583f3")  # the defaults the planted cells must stay within 5% of
NOT_FITTED = ("commands", "cli.py", "__main__.py")  # the library's command line: not in a fit


@dataclass(frozen=True)
class Method:
    """A method of the grid: its estimator, the rows it is fitted on and the rows it flags."""

    make: Callable[[int], Any]
    flags: Callable[[Any], np.ndarray | None] = lambda model: None
    clean_rows_only: bool = False
    library: bool = False  # fingerprinted by the library's source (else by the protocol)


METHODS = {
    DEFAULTS: Method(
        lambda seed: SubquantileKernelRegressor(random_state=seed),
        lambda model: ~model.inlier_mask_,
        library=True,
    ),
    ORACLE: Method(issue_krr_search, clean_rows_only=True),
    "KernelRidge + GridSearchCV": Method(issue_krr_search),
    "HuberRegressor": Method(lambda seed: HuberRegressor(), lambda model: model.outliers_),
    "RANSACRegressor": Method(
        lambda seed: RANSACRegressor(random_state=seed), lambda model: ~model.inlier_mask_
    ),
    "TheilSenRegressor": Method(lambda seed: TheilSenRegressor(random_state=seed)),
    "TERM": Method(lambda seed: BASELINES["term"]("regression"), library=True),
}


# ----------------------------------------------------------------------------------------------
# Runs and their cache.


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _source_digest(folder: Path) -> str:
    """A digest of the code of the ``*.py`` files under ``folder``: their syntax trees without
    docstrings, so that an edit of the documentation or the comments keeps the cached runs; the
    command line (``NOT_FITTED``: no estimator imports it) left out."""
    digest = hashlib.sha256()
    for file in sorted(folder.rglob("*.py")):
        if file.relative_to(folder).parts[0] in NOT_FITTED:
            continue
        tree = ast.parse(file.read_bytes())
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
        digest.update(str(file.relative_to(folder)).encode() + ast.dump(tree).encode())
    return digest.hexdigest()


@functools.cache
def fingerprint(method: str) -> str:
    """What a method's runs depend on besides the cell and seed: the grid's generator and this
    protocol, scikit-learn's version, and the library's source for the library's methods."""
    parts: list[object] = [
        PROTOCOL,
        sklearn.__version__,
        (HERE / "harness" / "planted.py").read_text(),
    ]
    base = method.split("@")[0]
    if base in METHODS and METHODS[base].library:
        parts.append(_source_digest(Path(robustkernel.__file__).parent))
    return _digest(*parts)[:16]


def cache_file(method: str, cell: Cell, seed: int, print_: str) -> Path:
    name = f"{cell.truth}_{cell.attack}_{cell.eps:g}_{cell.n}_{seed}.json"
    return CACHE / method.replace(" ", "_").replace("+", "plus") / print_ / name


def score(data: PlantedData, prediction: np.ndarray | None, flags: np.ndarray | None) -> dict:
    """RMSE to the truth, and the flags' recall (of the far moved rows), precision, share."""
    nan = float("nan")
    row = {"rmse": nan, "recall": nan, "precision": nan, "flagged": nan}
    if prediction is not None:
        row["rmse"] = float(np.sqrt(np.mean((np.ravel(prediction) - data.f_test) ** 2)))
    if flags is not None:
        flags = np.asarray(flags, dtype=bool)
        row["flagged"] = float(flags.mean())
        if data.far.any():
            row["recall"] = float((flags & data.far).sum() / data.far.sum())
        if flags.any():
            row["precision"] = float((flags & data.bad).sum() / flags.sum())
    return row


def run_one(method: str, cell: Cell, seed: int) -> dict:
    """One method on one run (the library's methods under their name in ``METHODS``)."""
    spec = METHODS[method.split("@")[0]]
    data = generate(cell, seed)
    rows = ~data.bad if spec.clean_rows_only else np.ones(data.y.size, dtype=bool)
    wall, cpu = time.perf_counter(), time.process_time()
    error, prediction, flags = None, None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = spec.make(seed).fit(data.X[rows], data.y[rows])
            prediction, flags = model.predict(data.X_test), spec.flags(model)
    except Exception as exc:  # recorded: the grid goes on
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
    timing = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    return {
        "method": method,
        **cell.key(),
        "seed": seed,
        **score(data, prediction, flags),
        **timing,
        "error": error,
    }


def _cached_or_run(method: str, cell: Cell, seed: int, print_: str) -> dict:
    path = cache_file(method, cell, seed, print_)
    if path.exists():
        return json.loads(path.read_text())
    row = run_one(method, cell, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(row))
    return row


def run_r(cells: Sequence[Cell], seeds: Sequence[int]) -> tuple[list[dict], str]:
    """ltsReg and lmrob on the linear truth's runs, cached like the others, in one Rscript."""
    version, note = r_version()
    if version is None:
        return [], f"R's robustbase left out: {note} ({R_INSTALL})."
    print_ = _digest(PROTOCOL, version, (HERE / "harness" / "planted.py").read_text())[:16]
    rows, todo = [], {}
    for cell in cells:
        for seed in seeds:
            if cell.truth != "linear":
                continue
            paths = {m: cache_file(m, cell, seed, print_) for m in R_METHODS}
            if all(path.exists() for path in paths.values()):
                rows += [json.loads(path.read_text()) for path in paths.values()]
            else:
                todo[f"r{len(todo):05d}"] = (cell, seed, paths, generate(cell, seed))

    def done(name: str, fits: dict) -> None:
        cell, seed, paths, data = todo[name]
        for method, fit in fits.items():
            prediction = flags = None
            if fit.error is None and fit.coef.size == data.X.shape[1] + 1:
                prediction = fit.coef[0] + data.X_test @ fit.coef[1:]
                flags = np.zeros(data.y.size, dtype=bool)
                flags[fit.flagged] = True
            row = {
                "method": method,
                **cell.key(),
                "seed": seed,
                **score(data, prediction, flags),
                "wall": fit.wall,
                "cpu": fit.cpu,
                "error": fit.error,
            }
            paths[method].parent.mkdir(parents=True, exist_ok=True)
            atomic_write(paths[method], json.dumps(row))
            rows.append(row)

    if todo:
        tables = {name: (data.X, data.y) for name, (*_, data) in todo.items()}
        _, failure = run_robustbase_batch(tables, timeout=600.0, on_done=done, prefix="scorecard_")
        if failure:
            return rows, f"R: {version}; {failure} (the runs it did not finish are left out)."
    return rows, f"R: {version}."


def run_grid(
    methods: Sequence[str],
    cells: Sequence[Cell],
    seeds: Sequence[int],
    jobs: int,
    label: str | None,
) -> pd.DataFrame:
    """Every run of ``methods`` (cached or fitted), R's included where asked."""
    names = [f"{m}@{label}" if label else m for m in methods if m in METHODS]
    tasks = [
        (name, cell, seed, fingerprint(name)) for name in names for cell in cells for seed in seeds
    ]
    rows = Parallel(n_jobs=jobs, return_as="generator")(
        delayed(_cached_or_run)(*task) for task in tasks
    )
    frame = list(tqdm(rows, total=len(tasks), desc="scorecard runs"))
    return pd.DataFrame(frame)


# ----------------------------------------------------------------------------------------------
# Targets and tables.


def _cell_medians(runs: pd.DataFrame, method: str, column: str) -> pd.Series:
    keys = ["truth", "attack", "eps", "n"]
    chosen = runs[runs["method"] == method]
    return chosen.groupby(keys)[column].median()


def ratio_to_oracle(runs: pd.DataFrame, method: str = DEFAULTS) -> pd.DataFrame:
    """Per run: the method's RMSE over the oracle's on the same run."""
    keys = ["truth", "attack", "eps", "n", "seed"]
    mine = runs[runs["method"] == method].set_index(keys)
    oracle = runs[runs["method"] == ORACLE].set_index(keys)["rmse"]
    joined = mine.join(oracle.rename("oracle_rmse"), how="inner")
    joined["ratio"] = joined["rmse"] / joined["oracle_rmse"]
    return joined.reset_index()


@dataclass(frozen=True)
class Target:
    """One line of the scorecard: what is measured, the worst value, the bound, met or not."""

    name: str
    worst: float
    bound: str
    met: bool
    where: str = ""


def floor_medians(runs: pd.DataFrame, path: Path | None = None) -> dict[str, pd.Series]:
    """Per commit of ``FLOOR_COMMITS`` its defaults' median RMSE per cell: from the cached runs
    of ``defaults@<commit>`` where they are among ``runs``, else from the saved floors
    (``--save-floor``; ``path``, default ``FLOORS``)."""
    path = FLOORS if path is None else path
    saved = json.loads(path.read_text()) if path.exists() else {}
    floors = {}
    for commit in FLOOR_COMMITS:
        name = f"{DEFAULTS}@{commit}"
        if name in set(runs["method"]):
            floors[commit] = _cell_medians(runs, name, "rmse")
        elif commit in saved:
            cells = {tuple(key.split("/")): value for key, value in saved[commit].items()}
            index = pd.MultiIndex.from_tuples(
                [(t, a, float(e), int(n)) for t, a, e, n in cells],
                names=["truth", "attack", "eps", "n"],
            )
            floors[commit] = pd.Series(list(cells.values()), index=index)
    return floors


def save_floor(runs: pd.DataFrame, commit: str, method: str, path: Path | None = None) -> None:
    """Save ``method``'s median RMSE per cell as the floor of ``commit`` (a cache is not kept
    between checkouts; the floors file is committed)."""
    path = FLOORS if path is None else path
    saved = json.loads(path.read_text()) if path.exists() else {}
    medians = _cell_medians(runs, method, "rmse")
    saved[commit] = {f"{t}/{a}/{e:g}/{n}": float(v) for (t, a, e, n), v in medians.items()}
    path.write_text(json.dumps(saved, indent=1, sort_keys=True))


def planted_targets(runs: pd.DataFrame) -> list[Target]:
    """The planted grid's targets on the defaults' runs."""
    ratios = ratio_to_oracle(runs)
    targets = []
    attacked = ratios[ratios["attack"] != CLEAN]
    family = attacked.groupby(["truth", "attack", "eps"])
    medians = family["ratio"].median()
    for low, high, bound in ((0.0, 0.3, 1.10), (0.35, 0.45, 1.25)):
        part = medians[
            (medians.index.get_level_values("eps") > low)
            & (medians.index.get_level_values("eps") <= high)
        ]
        if part.empty:
            continue
        worst = float(part.max())
        where = ", ".join(f"{t}/{a}/{e:g}: {v:.2f}" for (t, a, e), v in part[part > bound].items())
        targets.append(
            Target(
                f"RMSE / oracle, median per truth x attack, eps in ({low:g}, {high:g}]",
                worst,
                f"<= {bound}",
                worst <= bound,
                where,
            )
        )
    recall = family["recall"].median()
    limit = np.where(recall.index.get_level_values("truth") == "linear", 0.4, 0.3)
    part = recall[recall.index.get_level_values("eps") <= limit]
    if not part.empty:
        worst = float(part.min())
        where = ", ".join(f"{t}/{a}/{e:g}: {v:.2f}" for (t, a, e), v in part[part < 0.95].items())
        targets.append(
            Target(
                "recall of far wrong rows, median per truth x attack x eps "
                "(linear eps <= 0.4, others <= 0.3)",
                worst,
                ">= 0.95",
                worst >= 0.95,
                where,
            )
        )
    clean = ratios[ratios["attack"] == CLEAN].groupby(["truth", "n"])
    if len(clean):
        flagged, ratio = clean["flagged"].median(), clean["ratio"].median()
        targets.append(
            Target(
                "eps 0: share flagged, median per truth x n",
                float(flagged.max()),
                "<= 0.01",
                bool(flagged.max() <= 0.01),
            )
        )
        targets.append(
            Target(
                "eps 0: RMSE / oracle, median per truth x n",
                float(ratio.max()),
                "<= 1.03",
                bool(ratio.max() <= 1.03),
            )
        )
    floors = floor_medians(runs)
    if len(floors) == len(FLOOR_COMMITS):
        best = pd.concat(list(floors.values()), axis=1).min(axis=1)
        ours = _cell_medians(runs, DEFAULTS, "rmse")
        excess = (ours / best).dropna()
        where = ", ".join(
            f"{t}/{a}/{e:g}/{n}: {v:.2f}" for (t, a, e, n), v in excess[excess > 1.05].items()
        )
        targets.append(
            Target(
                f"RMSE / better of the defaults at {' and '.join(FLOOR_COMMITS)}, every cell",
                float(excess.max()),
                "<= 1.05",
                bool(excess.max() <= 1.05),
                where,
            )
        )
    return targets


def family_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The defaults' median RMSE ratio to the oracle and recall per truth, attack and eps, with
    the best peer's ratio beside them."""
    ratios = ratio_to_oracle(runs)
    keys = ["truth", "attack", "eps"]
    table = ratios.groupby(keys).agg(
        ratio=("ratio", "median"), recall=("recall", "median"), flagged=("flagged", "median")
    )
    peers = [m for m in runs["method"].unique() if m not in (DEFAULTS, ORACLE) and "@" not in m]
    if peers:
        best = pd.concat(
            {m: ratio_to_oracle(runs, m).groupby(keys)["ratio"].median() for m in peers}, axis=1
        )
        table["best peer"] = best.idxmin(axis=1)
        table["its ratio"] = best.min(axis=1)
    return table.reset_index()


def baseline_medians(
    runs: pd.DataFrame, tables: pd.DataFrame | None = None, quick: bool = False
) -> dict[str, dict[str, float]]:
    """The defaults' median RMSE ratio and recall per cell, keyed by the cell's name, with each
    seed's (``"seeds"``: a diff of runs on other seeds compares the seeds in common); and per
    real table (:func:`real_table_frame`) its CV RMSE ratio and share flagged, keyed
    ``table/NAME``, or ``table-quick/NAME`` for ``--quick``'s 2 folds (a diff compares a table's
    figures of one protocol only: 2 folds against 5 moved cars' ratio by half)."""
    ratios = ratio_to_oracle(runs)

    def plain(value: object) -> float | None:
        return None if pd.isna(value) else float(value)

    medians = {}
    for (t, a, e, n), chosen in ratios.groupby(["truth", "attack", "eps", "n"]):
        medians[f"{t}/{a}/{e:g}/{n}"] = {
            "ratio": plain(chosen["ratio"].median()),
            "recall": plain(chosen["recall"].median()),
            "seeds": {
                str(seed): {"ratio": plain(ratio), "recall": plain(recall)}
                for seed, ratio, recall in zip(
                    chosen["seed"], chosen["ratio"], chosen["recall"], strict=True
                )
            },
        }
    if tables is not None and not tables.empty:
        for name, ratio, share in zip(
            tables["table"], tables["ratio"], tables["ours flagged"], strict=True
        ):
            key = f"table-quick/{name}" if quick else f"table/{name}"
            medians[key] = {"ratio": float(ratio), "flagged": float(share)}
    return medians


def _common_seeds(scores: dict, other: dict) -> dict | None:
    """A cell's scores, medians over the seeds it shares with ``other`` (None where they share
    none); its medians as saved where either lacks its seeds' values."""
    if "seeds" not in scores or "seeds" not in other:
        return scores
    common = sorted(set(scores["seeds"]) & set(other["seeds"]))
    if not common:
        return None
    medians = {}
    for name in ("ratio", "recall"):
        values = [scores["seeds"][seed][name] for seed in common]
        values = [value for value in values if value is not None]
        medians[name] = float(np.median(values)) if values else None
    return medians


def diff(now: dict, before: dict, moved: float = MOVED) -> pd.DataFrame:
    """The cells whose median ratio or recall moved by more than ``moved`` (relative), either
    way, between a baseline and now; where both hold their seeds' values, the medians over the
    seeds they have in common (``--quick`` runs seed 0 of a baseline of seeds 0-2)."""
    lines = []
    for cell in sorted(set(now) & set(before)):
        then = _common_seeds(before[cell], now[cell])
        current = _common_seeds(now[cell], before[cell])
        if then is None or current is None:
            continue
        for score_name in ("ratio", "recall", "flagged"):
            a, b = then.get(score_name), current.get(score_name)
            if a is None or b is None:
                continue
            change = (b - a) / abs(a) if a else (np.inf if b else 0.0)
            if abs(change) > moved:
                lines.append(
                    {
                        "cell": cell,
                        "score": score_name,
                        "baseline": a,
                        "now": b,
                        "change": f"{change:+.1%}",
                    }
                )
    return pd.DataFrame(lines, columns=["cell", "score", "baseline", "now", "change"])


@dataclass(frozen=True)
class Part:
    """A benchmark script whose figures the scorecard reads: run as its own process (with its own
    cache, where it has one) with ``--no-write --json FILE`` and these arguments."""

    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]

    def command(self, quick: bool) -> str:
        """The command line, as the report shows it."""
        return " ".join(
            ["python", f"benchmarks/{self.script}", *(self.quick if quick else self.full)]
        )


INTERVAL_CELLS = (
    "--data",
    "generated_hom",
    "generated_het",
    "--features",
    "5",
    "--eps",
    "0.2",
    "0.3",
    "0.4",
)
PARTS = {
    "real tables": Part("bench_real_tables.py", (), ("--quick",)),
    "classic sets": Part("bench_outliers.py", (), ()),
    "masking": Part(
        "bench_masking.py",
        ("--sizes", "50", "400", "--features", "2", "5", "20", "--seeds", "2"),
        ("--quick",),
    ),
    "evidence": Part(
        "bench_evidence.py", ("--rows", "1000", "--seeds", "10"), ("--rows", "400", "--seeds", "3")
    ),
    "intervals": Part(
        "bench_intervals.py",
        (
            *INTERVAL_CELLS,
            "--sizes",
            "1000",
            "--seeds",
            "3",
            "--test-rows",
            "1000",
            "--methods",
            "subq",
        ),
        (
            "--data",
            "generated_hom",
            "--features",
            "5",
            "--sizes",
            "200",
            "--eps",
            "0.2",
            "--attacks",
            "vertical",
            "--seeds",
            "1",
            "--test-rows",
            "1000",
            "--methods",
            "subq",
        ),
    ),
    "named problems": Part("bench_named_problems.py", ("--splits", "5"), ("--splits", "1")),
    "cost": Part(
        "bench_fit_time.py",
        ("--n", "400", "1000", "2000", "--repeats", "3", "--scorecard"),
        ("--n", "400", "--repeats", "1", "--scorecard"),
    ),
    "links": Part(
        "bench_link_defaults.py",
        ("--rows", "300", "--seeds", "5"),
        ("--rows", "300", "--seeds", "1"),
    ),
}


TIMED_PARTS = ("cost",)
"""Parts whose figures are times: run alone, after the others (which run ``--jobs`` at a time)."""


def run_parts(names: Sequence[str], quick: bool, jobs: int) -> dict[str, tuple[dict | None, str]]:
    """:func:`run_part` of every part of ``names``: those not in ``TIMED_PARTS`` ``jobs`` at a
    time (each its own process), then the timed ones alone, on a machine the others have left.
    The full scorecard's parts took 42 minutes one after the other."""
    untimed = [name for name in names if name not in TIMED_PARTS]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = pool.map(lambda name: run_part(name, quick), untimed)
        outputs = dict(zip(untimed, results, strict=True))
    for name in names:
        if name in TIMED_PARTS:
            outputs[name] = run_part(name, quick)
    return outputs


def run_part(name: str, quick: bool) -> tuple[dict | None, str]:
    """The JSON of one part's script, or None and why not; and the command that gave it."""
    part = PARTS[name]
    with tempfile.TemporaryDirectory(prefix="scorecard_") as folder:
        out = Path(folder) / "part.json"
        arguments = part.quick if quick else part.full
        command = [sys.executable, str(HERE / part.script), *arguments, "--no-write"]
        done = subprocess.run([*command, "--json", str(out)], capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"{name}: `{part.command(quick)}` failed ({done.returncode}): {tail}"
        return json.loads(out.read_text()), f"{name}: `{part.command(quick)}`"


def classic_set_targets(saved: dict) -> list[Target]:
    """The classic outlier sets (bench_outliers.py): the defaults' mean recall of the documented
    outliers >= 0.95 and mean precision >= ltsReg's, and within 1.10x of the best CV RMSE on at
    least as many sets as lmrob."""
    rows = pd.DataFrame(saved["rows"])
    if rows.empty:
        return []
    ours = rows[rows["defaults"]]
    lts = rows[rows["method"].str.startswith("robustbase ltsReg")]
    lmrob = rows[rows["method"].str.startswith("robustbase lmrob")]
    recall = float(ours["recall"].mean())
    precision = float(ours["precision"].fillna(0.0).mean())
    lts_precision = float(lts["precision"].fillna(0.0).mean()) if len(lts) else float("nan")
    within = int((ours["cv ratio to best"] <= 1.10).sum())
    lmrob_within = int((lmrob["cv ratio to best"] <= 1.10).sum()) if len(lmrob) else 0
    low = ours[ours["recall"] < 0.95]
    return [
        Target(
            "classic sets: the defaults' mean recall of the documented outliers",
            recall,
            ">= 0.95",
            recall >= 0.95,
            ", ".join(f"{d}: {r:.2f}" for d, r in zip(low["data"], low["recall"], strict=True)),
        ),
        Target(
            "classic sets: the defaults' mean precision",
            precision,
            f">= ltsReg's {lts_precision:.3f}",
            precision >= lts_precision,
        ),
        Target(
            "classic sets: sets within 1.10x of the best CV RMSE",
            float(within),
            f">= lmrob's {lmrob_within}",
            within >= lmrob_within,
        ),
    ]


def masking_targets(saved: dict) -> list[Target]:
    """The masking study (bench_masking.py): the defaults' recall (info: the planted grid holds
    the recall floor), mean precision >= ltsReg's and good leverage rows flagged <= ltsReg's, on
    the contaminated sets, per truth."""
    rows = pd.DataFrame(saved["rows"])
    rows = rows[rows["kind"] != "clean"] if len(rows) else rows
    targets = []
    for truth, group in rows.groupby("truth") if len(rows) else []:
        ours = group[group["method"] == "SubquantileKernelRegressor()"]
        lts = group[group["method"] == "ltsReg (R)"]
        if ours.empty or lts.empty:
            continue
        precision, lts_precision = (float(g["precision"].fillna(0.0).mean()) for g in (ours, lts))
        good, lts_good = (float(g["good_flagged"].mean()) for g in (ours, lts))
        targets += [
            Target(
                f"masking ({truth}): the defaults' median recall (info)",
                float(ours["recall"].median()),
                "-",
                True,
            ),
            Target(
                f"masking ({truth}): mean precision",
                precision,
                f">= ltsReg's {lts_precision:.3f}",
                precision >= lts_precision,
            ),
            Target(
                f"masking ({truth}): good leverage rows flagged, mean share",
                good,
                f"<= ltsReg's {lts_good:.3f}",
                good <= lts_good,
            ),
        ]
    return targets


def interval_targets(saved: dict) -> list[Target]:
    """The intervals (bench_intervals.py), per cell and nominal level (median over seeds, test
    sets of at least 1000 rows): |coverage - nominal| <= the oracle's |error| + 0.02, and width
    <= 1.15x the oracle's (1.25x at eps 0.4)."""
    rows = pd.DataFrame(saved["rows"])
    if rows.empty:
        return []
    rows = rows[(rows["method"] != "oracle") & (rows["n_test"] >= 1000) & (rows["error"] == "")]
    keys = ["data", "attack", "eps", "method", "coverage_nominal"]
    cells = rows.groupby(keys)[["coverage", "oracle_coverage", "width_ratio"]].median()
    nominal = cells.index.get_level_values("coverage_nominal")
    excess = (cells["coverage"] - nominal).abs() - (cells["oracle_coverage"] - nominal).abs()
    bound = np.where(cells.index.get_level_values("eps") >= 0.4, 1.25, 1.15)
    wide = cells[cells["width_ratio"] > bound]

    def names(frame: pd.Index) -> str:
        return ", ".join(f"{d}/{a}/{e:g}/{q:g}" for d, a, e, _, q in frame[:8])

    return [
        Target(
            "intervals: |coverage - nominal| less the oracle's, worst cell",
            float(excess.max()),
            "<= 0.02",
            bool(excess.max() <= 0.02),
            names(cells.index[excess > 0.02]),
        ),
        Target(
            "intervals: width / the oracle's, worst cell",
            float(cells["width_ratio"].max()),
            "<= 1.15 (1.25 at eps 0.4)",
            wide.empty,
            names(wide.index),
        ),
    ]


LINK_BOUNDS = {"sine": 1.15, "product": 1.50}  # product: the held-out problem


def link_targets(saved: dict) -> list[Target]:
    """link="logistic" with 25% uniform targets (bench_link_defaults.py): the defaults' RMSE over
    the oracle's, median over seeds, <= 1.15 (sine) and <= 1.50 (the held-out product)."""
    rows = pd.DataFrame(saved["rows"])
    if rows.empty:
        return []
    medians = rows.groupby("data")["defaults / oracle"].median()
    return [
        Target(
            f"links: {name}, defaults / oracle, median",
            float(value),
            f"<= {LINK_BOUNDS.get(name, 1.15)}",
            value <= LINK_BOUNDS.get(name, 1.15),
        )
        for name, value in medians.items()
    ]


def named_problem_targets(saved: dict) -> list[Target]:
    """The problems named by the issue (bench_named_problems.py), as its summary
    judges them: the defaults' RMSE over the oracle's, median over the splits, per problem and
    eps, <= 1.10 on the SubQ papers' polynomial problem (clean, 20% and 40% oblivious noise),
    <= 1.5 at a 30% shift at one edge of a linear relation."""
    if not saved["rows"]:
        return []
    return [
        Target(
            f"{line['problem']} at eps {line['eps']:g}: defaults / oracle, median",
            float(line["median defaults / oracle"]),
            line["target"],
            line["met"] == "met",
        )
        for line in named_summary(saved["rows"]).to_dict("records")
    ]


COST_REFERENCE = "KernelRidge + GridSearchCV (25 x 5 fits, scaled)"  # bench_fit_time.py's
COST_DEFAULTS = "SubquantileKernelRegressor()"
COST_BOUNDS = {400: 2.0}  # the fit over the grid search's time; 1.0 at the other sizes
COST_SMALL = (400, 1.0)  # at this size, also under this many seconds


def cost_targets(saved: dict) -> list[Target]:
    """The cost curve (bench_fit_time.py, regression rows): the defaults' median fit time over
    KernelRidge + GridSearchCV's (the 25 points, scaled) on the same rows, at most 2 at 400 rows
    (and under a second) and 1 at 1000 and 2000; and never slower at n than at a larger n."""
    rows = pd.DataFrame(saved["rows"])
    if rows.empty:
        return []
    rows = rows[rows["task"] == "regression"]
    times = rows.pivot_table(index="n", columns="method", values="fit s (median)")
    ratios = times[COST_DEFAULTS] / times[COST_REFERENCE]
    targets = []
    for n, ratio in ratios.items():
        bound = COST_BOUNDS.get(int(n), 1.0)
        met = ratio <= bound
        where = ""
        if int(n) == COST_SMALL[0]:
            seconds = float(times.loc[n, COST_DEFAULTS])
            met = met and seconds < COST_SMALL[1]
            where = f"{seconds:.2f} s"
        targets.append(
            Target(
                f"cost at {int(n)} rows: defaults / KernelRidge + GridSearchCV",
                float(ratio),
                f"<= {bound:g}" + (" and < 1 s" if int(n) == COST_SMALL[0] else ""),
                met,
                where,
            )
        )
    own = times[COST_DEFAULTS].sort_index()
    slower = [
        f"{int(n)} ({own[n]:.1f} s) > {int(m)} ({own[m]:.1f} s)"
        for n in own.index
        for m in own.index
        if m > n and own[n] > own[m]
    ]
    targets.append(
        Target(
            "cost: never slower at n than at a larger n",
            float(len(slower)),
            "0 pairs",
            not slower,
            "; ".join(slower),
        )
    )
    return targets


PART_TARGETS = {
    "classic sets": classic_set_targets,
    "masking": masking_targets,
    "evidence": lambda saved: evidence_targets(saved["rows"]),
    "intervals": interval_targets,
    "links": link_targets,
    "named problems": named_problem_targets,
    "cost": cost_targets,
}

EVIDENCE_LEVELS = (0.01, 0.05)


def evidence_targets(rows: Sequence[dict]) -> list[Target]:
    """The p-values' calibration on clean rows (share below q within [q / 2, 3 q / 2], median
    over seeds, per noise), the clean Gaussian rows flagged (<= 1%) and the Student-t(3) rows
    flagged (<= 2x lmrob's)."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return []
    medians = frame.groupby("noise").median(numeric_only=True)
    targets = []
    for q in EVIDENCE_LEVELS:
        share = medians[f"share p < {q}"]
        outside = share[(share < 0.5 * q) | (share > 1.5 * q)]
        worst = float(share.iloc[int(np.argmax(np.abs(share.to_numpy() - q)))])
        targets.append(
            Target(
                f"evidence: share of clean rows with p < {q}, median per noise",
                worst,
                f"in [{0.5 * q:g}, {1.5 * q:g}]",
                outside.empty,
                ", ".join(f"{k}: {v:.4f}" for k, v in outside.items()),
            )
        )
    if "gaussian" in medians.index:
        flagged = float(medians.loc["gaussian", "flagged"])
        targets.append(
            Target(
                "evidence: clean Gaussian rows flagged, median", flagged, "<= 0.01", flagged <= 0.01
            )
        )
    if "t3" in medians.index and pd.notna(medians.loc["t3", "lmrob flagged"]):
        flagged, lmrob = (float(medians.loc["t3", c]) for c in ("flagged", "lmrob flagged"))
        targets.append(
            Target(
                "evidence: clean t(3) rows flagged, median",
                flagged,
                f"<= 2 x lmrob's {lmrob:.4f}",
                flagged <= 2 * lmrob,
            )
        )
    return targets


def _share(result: dict, method: str) -> float:
    """A table's share flagged by ``method`` ("ours" or an R method), NaN without a result."""
    if method == "ours":
        value = None if result["ours"]["error"] else result["ours"]["flagged_share"]
    else:
        value = None if result["r"] is None else result["r"][method]["flagged_share"]
    return float("nan") if value is None else float(value)


def real_table_frame(results: Sequence[dict]) -> pd.DataFrame:
    """One row per table: n, the shares flagged and the CV RMSE ratio to KernelRidge."""
    columns = ["table", "n", "ours flagged", "lmrob flagged", "ltsReg flagged", "ratio"]
    rows = [
        [
            r["name"],
            r["n"],
            _share(r, "ours"),
            _share(r, "lmrob"),
            _share(r, "ltsReg"),
            r["ours"]["cv_rmse"] / r["krr"]["cv_rmse"],
        ]
        for r in results
    ]
    return pd.DataFrame(rows, columns=columns)


def real_table_targets(frame: pd.DataFrame) -> list[Target]:
    """The restated real-table targets on :func:`real_table_frame`."""
    if frame.empty:
        return []
    ours, lmrob, ratio = frame["ours flagged"], frame["lmrob flagged"], frame["ratio"]
    bound = max(float(lmrob.median()) + 0.01, 0.02) if lmrob.notna().any() else 0.02
    high = frame.loc[ours > 0.05, "table"]
    high_lmrob = int((lmrob > 0.05).sum())
    over = frame[~(ratio <= np.where(frame["n"] >= 100, 1.5, 2.0))]
    where = ", ".join(f"{t}: {v:.2f}" for t, v in zip(over["table"], over["ratio"], strict=True))
    return [
        Target(
            "real tables: median share flagged",
            float(ours.median()),
            f"<= max(lmrob's + 1 point, 2%) = {bound:.3f}",
            bool(ours.median() <= bound),
        ),
        Target(
            "real tables: tables above 5% flagged",
            float(high.size),
            f"<= lmrob's {high_lmrob} + 2",
            bool(high.size <= high_lmrob + 2),
            ", ".join(high),
        ),
        Target(
            "real tables: CV RMSE / KernelRidge + GridSearchCV, median",
            float(ratio.median()),
            "<= 1.05",
            bool(ratio.median() <= 1.05),
        ),
        Target(
            "real tables: CV RMSE / KernelRidge + GridSearchCV, every table",
            float(ratio.max()),
            "<= 1.5 (n >= 100), <= 2 (n < 100)",
            over.empty,
            where,
        ),
    ]


def report(
    runs: pd.DataFrame, tables: pd.DataFrame, parts: list[Target], note: str, quick: bool
) -> str:
    """The scorecard as Markdown."""
    targets = pd.DataFrame(
        [
            {
                "target": t.name,
                "worst": round(t.worst, 3),
                "bound": t.bound,
                "met": "met" if t.met else "missed",
                "where missed": t.where,
            }
            for t in [*planted_targets(runs), *real_table_targets(tables), *parts]
        ]
    )
    parts = ["# Scorecard" + (" (--quick)" if quick else ""), "", note, "", "## Targets", ""]
    parts += [markdown_table(targets), "", "## The defaults per truth, attack and eps", ""]
    parts += [markdown_table(family_table(runs).round(3)), ""]
    if not tables.empty:
        parts += ["## Real tables", "", markdown_table(tables.round(3)), ""]
    if BASELINE.exists():
        saved = json.loads(BASELINE.read_text())
        moved = diff(baseline_medians(runs, tables, quick), saved["cells"])
        parts += [f"## Moved by more than {MOVED:.0%} against the baseline ({saved['label']})", ""]
        parts += [markdown_table(moved) if len(moved) else "No cell moved.", ""]
    errors = runs[runs["error"].notna()]
    if len(errors):
        parts += [
            "## Errors",
            "",
            markdown_table(errors[["method", "truth", "attack", "eps", "n", "seed", "error"]]),
            "",
        ]
    return "\n".join(parts)


def cached_label_runs(name: str, cells: Sequence[Cell], seeds: Sequence[int]) -> pd.DataFrame:
    """The cached runs of ``name`` (e.g. ``defaults@728dc9e``, run with ``--label``) on these
    cells and seeds, from its most recent fingerprint's folder (empty where none)."""
    prints = sorted((CACHE / name).glob("*"), key=lambda folder: folder.stat().st_mtime)
    if not prints:
        return pd.DataFrame()
    files = [cache_file(name, c, s, prints[-1].name) for c in cells for s in seeds]
    return pd.DataFrame([json.loads(f.read_text()) for f in files if f.exists()])


def candidate_report(runs: pd.DataFrame, candidate: pd.DataFrame) -> str:
    """The planted targets of the defaults and of a candidate's cached runs (another version
    of the defaults, ``--label``) side by side, and the cells that moved by more than 5%."""
    if candidate.empty:
        return "No cached runs of the candidate: run it with --label first."
    mine = runs[runs["method"] != DEFAULTS]
    versions = {"defaults": runs, "candidate": pd.concat([mine, candidate.assign(method=DEFAULTS)])}
    targets = {name: planted_targets(frame) for name, frame in versions.items()}
    table = pd.DataFrame(
        {
            "target": [t.name for t in targets["defaults"]],
            "bound": [t.bound for t in targets["defaults"]],
            "defaults": [round(t.worst, 3) for t in targets["defaults"]],
            "candidate": [round(t.worst, 3) for t in targets["candidate"]],
        }
    )
    moved = diff(*(baseline_medians(versions[v]) for v in ("candidate", "defaults")))
    ratio = moved[moved["score"] == "ratio"]
    better = int((ratio["now"] < ratio["baseline"]).sum())
    lines = [
        markdown_table(table),
        f"Cells whose median ratio to the oracle moved by more than "
        f"{MOVED:.0%}: {better} better, {len(ratio) - better} worse.",
        "",
    ]
    return "\n".join([*lines, markdown_table(moved)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 200, seed 0, eps 0 / 0.2 / 0.4")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument(
        "--methods", nargs="+", default=[*METHODS, *R_METHODS], choices=[*METHODS, *R_METHODS]
    )
    parser.add_argument("--label", help="run the methods as '<method>@<label>' (another commit)")
    parser.add_argument(
        "--candidate", help="compare the cached runs of a label (e.g. defaults@cubic) with these"
    )
    parser.add_argument(
        "--save-floor",
        metavar="COMMIT=METHOD",
        help="save METHOD's cached runs (e.g. defaults@728dc9e) as the floor of COMMIT",
    )
    parser.add_argument("--save-baseline", action="store_true", help="save the diff's reference")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--no-parts", action="store_true", help="the planted grid alone")
    args = parser.parse_args(argv)
    clock = RunClock()
    if args.quick:
        cells = planted.cells(QUICK["sizes"], QUICK["epsilons"])
        seeds: Sequence[int] = QUICK["seeds"]
    else:
        cells, seeds = planted.cells(), SEEDS
    runs = run_grid(args.methods, cells, seeds, args.jobs, args.label)
    r_note = ""
    if not args.label and any(m in R_METHODS for m in args.methods):
        r_rows, r_note = run_r(cells, seeds)
        runs = pd.concat([runs, pd.DataFrame(r_rows)], ignore_index=True)
    if args.label:  # the other commit's runs are only cached: the scorecard reads them
        print(f"{len(runs)} runs of {', '.join(runs['method'].unique())} cached.")
        return 0
    # the other commits' defaults, where their runs are cached
    for commit in FLOOR_COMMITS:
        runs = pd.concat([runs, cached_label_runs(f"{DEFAULTS}@{commit}", cells, seeds)])
    if args.save_floor:
        commit, method = args.save_floor.split("=", 1)
        save_floor(runs, commit, method)
        return 0
    if args.candidate:
        print(candidate_report(runs, cached_label_runs(args.candidate, cells, seeds)))
        return 0
    tables, parts, notes = pd.DataFrame(), [], []
    names = [] if args.no_parts else list(PARTS)
    outputs = run_parts(names, args.quick, args.jobs)
    for name in names:
        saved, part_note = outputs[name]
        notes.append(part_note)
        if saved is not None and name == "real tables":
            tables = real_table_frame(saved["results"])
        elif saved is not None:
            parts += PART_TARGETS[name](saved)
    tables_note = "; ".join(notes) or "the other parts left out (--no-parts)"
    note = (
        f"Command: `python benchmarks/scorecard.py{' --quick' if args.quick else ''}` "
        f"({cpu_description()}, one BLAS thread per process, {args.jobs} processes). "
        f"{len(cells)} cells x {len(seeds)} seeds; {tables_note}. {clock.note()} {r_note}"
    )
    text = report(runs, tables, parts, note, args.quick)
    print(text)
    if args.save_baseline:
        label = f"{robustkernel.__version__}, {time.strftime('%Y-%m-%d')}"
        cells_now = baseline_medians(runs, tables, args.quick)
        BASELINE.write_text(json.dumps({"label": label, "cells": cells_now}, indent=1))
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / ("scorecard-quick.md" if args.quick else "scorecard.md")).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
