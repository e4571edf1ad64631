"""Forward loss correction (Patrini et al. 2017) against flagging and refitting, measured.

For the label-noise cells of ``bench_robust.py`` (classification, eps 0.2 and 0.3 by
default), the defaults ``SubquantileKernelClassifier()`` are fitted; their (gamma, alpha),
out-of-fold probabilities (the softmax of the label-noise stage's out-of-fold logits) and kept
rows are then reused by four fits of one solver, kernel softmax regression on the exact rbf kernel
(f = K A + b, penalty alpha tr(A^T K A), L-BFGS), so that only the rows and the loss differ:

- ``every row``: the plain log loss on every row (no noise handling);
- ``kept rows``: the plain log loss on the rows the defaults keep (what the defaults fit; the
  check that the solver is the library's: equal test accuracy in most fits);
- ``forward, every row``: every row, the loss -log (T^T p)_y with T[true, given] from the
  calibrated confident joint of the out-of-fold probabilities (``label_flags.
  confident_joint``, columns normalized), instead of leaving the flagged rows out;
- ``forward, kept rows``: the kept rows with T estimated on them.

The defaults themselves correct every row where the estimated flips go mostly into one class
(three or more classes; ``noise_transition_`` set, ``label_flags.flips_into_one_class``):
their column is then the ``forward, every row`` fit's, up to the solver. Per split the CSV of
``--splits-csv`` also holds whether they did (``corrected``), the estimated flips' share of
the rows (``noise``) and the largest share of them in one given class (``concentration``): the
two numbers the rule reads.

Prints per cell the median test accuracy over seeds and a summary. Glass has duplicate rows,
which the fit merges (its kept rows are then of the distinct rows): its seeds are skipped.
The stages are read as in ``bench_loss_choice.py`` (a private method of the library wrapped:
a diagnostic, not an API). Run from ``benchmarks/``::

    ../.venv/bin/python bench_forward_correction.py --data-home ../../shared/datasets
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from harness.attacks import make_split
from harness.data import CLASSIFICATION, load_data
from harness.diagnostics import fit_with_stage
from harness.race import add_split_arguments, parsed_splits
from harness.report import markdown_table
from joblib import Parallel, delayed
from scipy.optimize import minimize
from scipy.special import softmax
from sklearn.metrics.pairwise import rbf_kernel

from robustkernel.trimming.label_flags import (
    confident_joint,
    flip_shares,
    transition_matrix,
)

VARIANTS = ("every row", "kept rows", "forward, every row", "forward, kept rows")


def softmax_fit(
    K: np.ndarray, labels: np.ndarray, alpha: float, T: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(A, b) minimizing sum_i -log (T^T softmax(K A + b)_i)_{y_i} + alpha tr(A^T K A) by
    L-BFGS (T = I: the plain log loss)."""
    n, C = K.shape[0], T.shape[0]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        A, b = theta[: n * C].reshape(n, C), theta[n * C :]
        KA = K @ A
        P = softmax(KA + b, axis=1)
        given = np.maximum((P @ T)[np.arange(n), labels], 1e-300)
        value = -np.log(given).sum() + alpha * np.sum(A * KA)
        dP = -T[:, labels].T / given[:, None]  # d/dp_ij of -log sum_j p_ij T[j, y_i]
        dF = P * (dP - np.sum(P * dP, axis=1, keepdims=True))
        return value, np.concatenate([(K @ dF + 2 * alpha * KA).ravel(), dF.sum(axis=0)])

    result = minimize(
        objective, np.zeros(n * C + C), jac=True, method="L-BFGS-B",
        options={"maxiter": 3000, "gtol": 1e-6},
    )
    return result.x[: n * C].reshape(n, C), result.x[n * C :]


def transition(P: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """T[true, given] of the calibrated confident joint of ``P`` (the library's)."""
    return transition_matrix(confident_joint(P, labels, np.ones(labels.size)))


def transition_shape(P: np.ndarray, labels: np.ndarray) -> dict:
    """The estimated flips' share of the rows and the largest share of them that lands in one
    given class (the library's ``flip_shares`` of the calibrated confident joint)."""
    noise, concentration = flip_shares(confident_joint(P, labels, np.ones(labels.size)))
    return {"noise": noise, "concentration": concentration}


def one_split(data: str, attack: str, eps: float, seed: int, data_home: str | None) -> dict:
    """Test accuracy of the defaults and of the four variants on one split (None where the
    fit merged duplicate rows or found no evidence about the labels)."""
    X, y = load_data(CLASSIFICATION, data, data_home, None)
    split = make_split(X, y, CLASSIFICATION, attack, eps, seed)
    model, stage, labels, _ = fit_with_stage(split.X_train, split.y_train)
    row = {"data": data, "attack": attack, "eps": eps, "seed": seed,
           "defaults": float(model.score(split.X_test, split.y_test)),
           "corrected": model.noise_transition_ is not None}
    outputs = stage.fold_outputs
    merged = stage.kept.shape != split.y_train.shape  # the fit ran on the distinct rows
    if merged or outputs is None or model.gamma_ is None:
        return row
    P = softmax(np.c_[np.zeros(len(outputs)), outputs] if outputs.shape[1] == 1 else outputs,
                axis=1)
    K = rbf_kernel(split.X_train, split.X_train, gamma=model.gamma_)
    K_test = rbf_kernel(split.X_test, split.X_train, gamma=model.gamma_)
    test_labels = np.searchsorted(model.classes_, split.y_test)
    every, kept = np.arange(labels.size), np.flatnonzero(stage.kept)
    identity = np.eye(P.shape[1])
    runs = {
        "every row": (every, identity),
        "kept rows": (kept, identity),
        "forward, every row": (every, transition(P, labels)),
        "forward, kept rows": (kept, transition(P[kept], labels[kept])),
    }
    row.update(transition_shape(P, labels))
    for name, (rows, T) in runs.items():
        A, b = softmax_fit(K[np.ix_(rows, rows)], labels[rows], model.alpha_, T)
        predicted = np.argmax(K_test[:, rows] @ A + b, axis=1)
        row[name] = float(np.mean(predicted == test_labels))
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_arguments(parser, eps="0.2,0.3")
    parser.add_argument("--splits-csv", default="results/bench_forward_correction_splits.csv",
                        help="where the per-split accuracies and transition shapes go")
    args = parser.parse_args(argv)
    keys = parsed_splits(args)
    seeds, fractions = sorted({key[3] for key in keys}), sorted({key[2] for key in keys})
    start, load = time.perf_counter(), os.getloadavg()
    rows = Parallel(n_jobs=args.n_jobs)(delayed(one_split)(*key, args.data_home) for key in keys)
    runs = pd.DataFrame(rows)
    runs.to_csv(args.splits_csv, index=False)
    runs = runs.dropna()
    cells = runs.groupby(["data", "attack", "eps"])[["defaults", *VARIANTS]].median()
    cells = cells[runs.groupby(["data", "attack", "eps"]).size() == len(seeds)].reset_index()
    print(f"Seeds {seeds}, eps {fractions}: {len(keys)} splits, {len(cells)} cells with every "
          f"seed; wall {time.perf_counter() - start:.0f} s; load average before {load[0]:.2f}, "
          f"after {os.getloadavg()[0]:.2f}.\n")
    print(markdown_table(cells.round(3)))
    gain = cells["forward, every row"] - cells["kept rows"]
    summary = pd.DataFrame({
        "variant": ["defaults", *VARIANTS],
        "mean accuracy": [round(float(cells[c].mean()), 4) for c in ["defaults", *VARIANTS]],
    })
    print("\n" + markdown_table(summary))
    print(f"\nforward, every row - kept rows: mean {gain.mean():+.4f}; better by more than 0.005 "
          f"in {(gain > 0.005).sum()} cells, worse in {(gain < -0.005).sum()}; by attack: "
          + ", ".join(f"{a} {g:+.3f}" for a, g in gain.groupby(cells["attack"]).mean().items()))
    print_rule(runs)
    return 0


def print_rule(runs: pd.DataFrame) -> None:
    """Where the defaults corrected (the library's rule), per cell: the splits it fired on and
    the defaults' test accuracy against the plain fit on the kept rows (what the defaults fit
    where the rule does not fire)."""
    runs = runs.assign(
        corrected=runs["corrected"].astype(bool), gain=runs["defaults"] - runs["kept rows"]
    )
    fired = runs[runs["corrected"]]
    table = fired.groupby(["data", "attack", "eps"]).agg(
        splits=("gain", "size"), mean_gain=("gain", "mean"),
        noise=("noise", "median"), concentration=("concentration", "median"),
    ).reset_index()
    print(f"\nThe rule fired on {len(fired)} of {len(runs)} splits; defaults - kept rows there: "
          f"mean {fired['gain'].mean():+.4f}, better by more than 0.005 in "
          f"{(fired['gain'] > 0.005).sum()}, worse in {(fired['gain'] < -0.005).sum()}.\n")
    print(markdown_table(table.round(3)))


if __name__ == "__main__":
    raise SystemExit(main())
