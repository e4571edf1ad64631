"""Label noise on scikit-learn's full digits: the classifier with no arguments against SVC tuned
by grid search and cleanlab's CleanLearning around that SVC.

Per seed: an 80/20 stratified split of the 1797 digits (standardized with the training rows'
statistics, as in ``bench_robust.py``), then ``--eps`` of the training labels replaced by another
class drawn at random (``robustkernel.corruption`` "wrong_class"); the test rows stay clean.
Methods: ``SubquantileKernelClassifier()``, and with ``loss="hinge"``; ``svc_cv`` (SVC,
stratified 5-fold GridSearchCV over C in (0.1, 1, 10, 100) x gamma in (0.25, ..., 4) /
n_features); ``cleanlab_tuned``
(CleanLearning around the SVC that ``svc_cv`` tunes on the noisy rows: the grid search, then
5-fold out-of-fold probabilities, the label issues and a refit). Each fit runs alone with one
BLAS thread; the table gives test accuracy, fit wall and CPU seconds, and the precision / recall
of the rows a method flags against the flipped rows, per seed and as medians.

    python benchmarks/bench_label_noise.py [--seeds 0 1 2] [--eps 0.2] [--no-write]

writes the tables to BENCHMARKS.md, section "Label noise on the full digits
(bench_label_noise.py)" (not with ``--no-write``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from harness.attacks import make_split
from harness.data import CLASSIFICATION
from harness.peers import Context, TunedCleanLearning, flagged_rows, svc_cv
from harness.report import markdown_table, replace_markdown_section
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits

from robustkernel import SubquantileKernelClassifier

OUT = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
SECTION = "## Label noise on the full digits (bench_label_noise.py)"
METHODS = {
    "SubquantileKernelClassifier()": lambda seed: SubquantileKernelClassifier(random_state=seed),
    "SubquantileKernelClassifier(loss='hinge')": lambda seed: SubquantileKernelClassifier(
        loss="hinge", random_state=seed
    ),
    "SVC + GridSearchCV": lambda seed: svc_cv(Context(0.0, 0, 64, seed)),
    "CleanLearning(SVC + GridSearchCV)": lambda seed: TunedCleanLearning(seed),
}


def run(seed: int, eps: float) -> list[dict]:
    """Every method on one seed's split; one row each."""
    X, y = load_digits(return_X_y=True)
    split = make_split(X.astype(float), y, CLASSIFICATION, "random_flip", eps, seed)
    rows = []
    for name, make in METHODS.items():
        model = make(seed)
        wall, cpu = time.perf_counter(), time.process_time()
        with threadpool_limits(1):
            model.fit(split.X_train, split.y_train)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        accuracy = float(np.mean(model.predict(split.X_test) == split.y_test))
        flagged = flagged_rows(model)
        precision = recall = float("nan")
        if flagged is not None and flagged.any():
            hits = np.sum(flagged & split.corrupted)
            precision, recall = hits / flagged.sum(), hits / split.corrupted.sum()
        rows.append(
            {
                "seed": seed,
                "method": name,
                "accuracy": accuracy,
                "fit s": wall,
                "CPU s": cpu,
                "flag precision": precision,
                "flag recall": recall,
            }
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the seeds, print and (unless --no-write) write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--eps", type=float, default=0.2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    frame = pd.DataFrame([row for seed in args.seeds for row in run(seed, args.eps)])
    load_after = os.getloadavg()
    medians = frame.groupby("method", sort=False)[
        ["accuracy", "fit s", "CPU s", "flag precision", "flag recall"]
    ].median()
    header = (
        f"Command: `python benchmarks/bench_label_noise.py --seeds "
        f"{' '.join(map(str, args.seeds))} --eps {args.eps}`\n"
        f"Full digits (1797 x 64, 10 classes), {args.eps:.0%} of the training labels replaced by "
        "another class at random; 360 clean test rows. One BLAS thread. Load average (1 min) "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after.\n"
    )
    text = (
        SECTION
        + "\n\n"
        + header
        + "\nPer seed:\n\n"
        + markdown_table(frame.round(4))
        + "\nMedians over seeds:\n\n"
        + markdown_table(medians.round(4).reset_index())
    )
    print(text)
    if not args.no_write:
        replace_markdown_section(OUT, SECTION, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
