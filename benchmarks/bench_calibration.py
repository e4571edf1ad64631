"""What ``predict_proba`` is calibrated to when training labels are flipped.

Each cell flips a fraction of the training labels (uniformly at random, ``corrupt(kind="flip")``
semantics: the other class), fits four classifiers on the same rows and scores their
probabilities on clean test labels:

* ``SubQ (defaults)``: ``SubquantileKernelClassifier()`` (epsilon, alpha, gamma "auto");
* ``SubQ (loss='hinge')``: the same with the hinge loss (an SVM per pair of classes, Platt's
  sigmoid fitted on out-of-fold outputs of the kept rows);
* ``eps = 0 fit``: ``SubquantileKernelClassifier(epsilon=0)`` (the ordinary kernel logistic
  regression, alpha and gamma still chosen on the training rows);
* ``SVC(probability=True)``: scikit-learn's default RBF support vector classifier with Platt
  scaling.

Scores: the expected calibration error (ECE: 10 equal-width bins of the predicted probability of
the predicted class, the bin-size-weighted mean |accuracy - confidence|), the log loss and the
accuracy on the clean test labels. Data: breast cancer (569 rows, 30 features, standardized on
the training rows) and two moons (600 rows, noise 0.2); 70% / 30% splits; 20% of the training
labels flipped. Medians over the seeds.

Writes ``benchmarks/results/calibration.md`` and the section "Calibration of predict_proba under
flipped labels" of BENCHMARKS.md.

    python benchmarks/bench_calibration.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from harness.report import cpu_description, markdown_table, replace_markdown_section
from sklearn.datasets import load_breast_cancer, make_moons
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from robustkernel import SubquantileKernelClassifier

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Calibration of predict_proba under flipped labels"
FLIPPED = 0.2
BINS = 10


def expected_calibration_error(y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> float:
    """Top-label ECE with ``BINS`` equal-width bins of the predicted class's probability."""
    confidence = proba.max(axis=1)
    correct = classes[proba.argmax(axis=1)] == y
    bins = np.minimum((confidence * BINS).astype(int), BINS - 1)
    return float(sum(
        np.mean(bins == b) * abs(correct[bins == b].mean() - confidence[bins == b].mean())
        for b in np.unique(bins)
    ))


def data(name: str, seed: int):
    if name == "breast cancer":
        X, y = load_breast_cancer(return_X_y=True)
    else:
        X, y = make_moons(n_samples=600, noise=0.2, random_state=seed)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=y
    )
    scaler = StandardScaler().fit(X_train)
    rng = np.random.default_rng(seed)
    flipped = rng.choice(y_train.size, int(FLIPPED * y_train.size), replace=False)
    y_noisy = y_train.copy()
    y_noisy[flipped] = 1 - y_noisy[flipped]
    return scaler.transform(X_train), y_noisy, scaler.transform(X_test), y_test


MODELS = {
    "SubQ (defaults)": lambda seed: SubquantileKernelClassifier(random_state=seed),
    "SubQ (loss='hinge')": lambda seed: SubquantileKernelClassifier(
        loss="hinge", random_state=seed
    ),
    "eps = 0 fit": lambda seed: SubquantileKernelClassifier(epsilon=0.0, random_state=seed),
    "SVC(probability=True)": lambda seed: SVC(probability=True, random_state=seed),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    rows = []
    for name in ("breast cancer", "two moons"):
        for seed in args.seeds:
            X, y, X_test, y_test = data(name, seed)
            for method, build in MODELS.items():
                model = build(seed)
                cpu, start = time.process_time(), time.perf_counter()
                model.fit(X, y)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                proba = model.predict_proba(X_test)
                rows.append({
                    "data": name, "method": method, "seed": seed,
                    "ECE": expected_calibration_error(y_test, proba, model.classes_),
                    "log loss": log_loss(y_test, proba, labels=model.classes_),
                    "accuracy": accuracy_score(y_test, model.classes_[proba.argmax(axis=1)]),
                    "fit s": wall, "CPU s": cpu,
                })
                print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    table = frame.groupby(["data", "method"], sort=False)[
        ["ECE", "log loss", "accuracy", "fit s", "CPU s"]
    ].median().reset_index().round(3)
    seeds = " ".join(map(str, args.seeds))
    body = (
        f"{HEADING}\n\n"
        f"Command: `OMP_NUM_THREADS=1 python benchmarks/bench_calibration.py --seeds {seeds}` "
        f"({cpu_description()}; load average {load:.2f} at the start, nothing else running). "
        f"{FLIPPED:.0%} of the training labels flipped; scores on clean test labels (30% "
        "splits), medians over the seeds. ECE: expected calibration error of the predicted "
        f"class's probability, {BINS} equal-width bins.\n\n"
        + markdown_table(table)
    )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "calibration.md").write_text(body)
    replace_markdown_section(ROOT / "BENCHMARKS.md", HEADING, body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
