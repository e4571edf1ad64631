"""Where CleanLearning(SVC()) gains its points at 2000 rows: the flags' probabilities or the model?

On ``bench_defaults_scale.py``'s classification data (two classes of two clusters each, 8
features, 20% of the training labels flipped, 5000 clean test rows), per seed:

- **the flags of every probability source, by one rule.** Out-of-fold probabilities of the
  training rows from (a) ``SVC(probability=True)`` with its defaults through 5 stratified folds,
  the source of ``CleanLearning(SVC())``, and (b) the kernel logistic model of
  ``SubquantileKernelClassifier(epsilon=0)`` at each (gamma, alpha) of the defaults' grid
  (alphas 0.01, 0.1, 1; gammas 1/4, 1, 4 times scikit-learn's "scale", 1 / (n_features
  var(X))), on standardized columns as the defaults fit and on the raw columns as SVC() does,
  through 3 stratified folds, their logits temperature-scaled (``label_flags.tempered``).
  Each source's probabilities are read by the library's confident-learning rule
  (``label_flags.label_issues``); for source (a) the rule's flags are compared with cleanlab's
  ``find_label_issues`` on the same probabilities. Per source: the out-of-fold log loss, the
  flagged share, precision and recall against the flipped rows, and the test accuracy of
  ``SVC()`` fitted on the rows it keeps (a fixed model, so that the flags alone differ);
- **the defaults' own flags** (``SubquantileKernelClassifier().inlier_mask_``) read the same
  way;
- **the final model on the same rows**: ``SubquantileKernelClassifier(epsilon=0)`` (alpha and
  gamma chosen by out-of-fold error on those rows, no flags) and ``SVC()`` on the rows kept by
  the defaults' flags and by cleanlab's, next to the two methods' own test accuracy.

Prints the tables and writes them to BENCHMARKS.md (section "Label noise at 2000 rows: the flags'
probabilities and the final model (bench_flag_sources.py)"; not with ``--no-write``). Run alone
(one BLAS thread)::

    OMP_NUM_THREADS=1 python benchmarks/bench_flag_sources.py --seeds 0 1 2 3
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from harness.data import flipped_classification_data
from harness.report import markdown_table, replace_markdown_section
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.svm import SVC

from robustkernel.subquantile._automatic.hyperparameters import (
    CLASSIFIER_ALPHAS,
    CLASSIFIER_GAMMA_FACTORS,
)

SECTION = (
    "## Label noise at 2000 rows: the flags' probabilities and the final model "
    "(bench_flag_sources.py)"
)


def flag_quality(flagged: np.ndarray, flipped: np.ndarray) -> dict[str, float]:
    """Flagged share, precision and recall of ``flagged`` against the ``flipped`` rows."""
    hits = int(np.sum(flagged & flipped))
    return {
        "flagged": float(flagged.mean()),
        "precision": hits / max(int(flagged.sum()), 1),
        "recall": hits / int(flipped.sum()),
    }


def kernel_logistic_sources(
    X: np.ndarray, y: np.ndarray, folds: StratifiedKFold
) -> dict[str, np.ndarray]:
    """Tempered out-of-fold probabilities of the epsilon=0 kernel logistic model at every pair
    of the defaults' grid: on standardized columns (the defaults' units, ``feature_scale_``)
    with gamma in units of 1 / n_features, and on the raw columns with gamma in units of
    1 / (n_features var(X)), scikit-learn's "scale" (SVC's units)."""
    from robustkernel import SubquantileKernelClassifier
    from robustkernel.trimming import label_flags

    sources = {}
    for units, Z in (("standardized", X / X.std(axis=0)), ("raw", X)):
        scale = 1.0 / (Z.shape[1] * Z.var())
        for factor in CLASSIFIER_GAMMA_FACTORS:
            for alpha in CLASSIFIER_ALPHAS:
                model = SubquantileKernelClassifier(epsilon=0.0, alpha=alpha, gamma=factor * scale)
                F = cross_val_predict(model, Z, y, cv=folds, method="decision_function")
                name = f"kernel logistic, {units} columns, gamma {factor:g} x scale, "
                name += f"alpha {alpha:g}"
                sources[name] = label_flags.tempered(F.reshape(len(y), -1), y, np.ones(len(y)))
    return sources


def one_seed(seed: int, n: int) -> tuple[list[dict], list[dict]]:
    """The flag rows and the final-model rows of one seed."""
    from cleanlab.classification import CleanLearning
    from cleanlab.filter import find_label_issues

    from robustkernel import SubquantileKernelClassifier
    from robustkernel.trimming import label_flags

    X, y, X_test, y_test, flipped = flipped_classification_data(n, 2, seed)

    def svc_on(kept: np.ndarray) -> float:
        return float(SVC().fit(X[kept], y[kept]).score(X_test, y_test))

    def defaults_on(kept: np.ndarray) -> float:
        model = SubquantileKernelClassifier(epsilon=0.0).fit(X[kept], y[kept])
        return float(model.score(X_test, y_test))

    svc_P = cross_val_predict(
        SVC(probability=True), X, y, cv=StratifiedKFold(5, shuffle=True, random_state=seed),
        method="predict_proba",
    )
    cleanlab_flags = find_label_issues(y, svc_P)
    sources = {"SVC(probability=True), 5 folds (cleanlab's source)": svc_P}
    folds = StratifiedKFold(3, shuffle=True, random_state=seed)
    sources.update(kernel_logistic_sources(X, y, folds))
    flag_rows = []
    for name, P in sources.items():
        flagged = label_flags.label_issues(P, y)
        flag_rows.append({
            "seed": seed, "probabilities": name,
            "log loss": round(log_loss(y, P, labels=[0, 1]), 4),
            **{key: round(value, 3) for key, value in flag_quality(flagged, flipped).items()},
            "SVC() on the kept rows": svc_on(~flagged),
        })
    same_rule = bool(np.array_equal(label_flags.label_issues(svc_P, y), cleanlab_flags))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        defaults = SubquantileKernelClassifier().fit(X, y)
        cleanlab = CleanLearning(SVC(probability=True), seed=seed).fit(X, y)
    ours = ~defaults.inlier_mask_
    svc_on_ours = svc_on(~ours)
    flag_rows.append({
        "seed": seed, "probabilities": "SubquantileKernelClassifier() (its own flags)",
        "log loss": None,
        **{key: round(value, 3) for key, value in flag_quality(ours, flipped).items()},
        "SVC() on the kept rows": svc_on_ours,
    })
    cleanlab_kept = np.asarray(cleanlab.get_label_issues()["is_label_issue"]) == 0
    final_rows = [{
        "seed": seed,
        "cleanlab's rule flags the same rows": same_rule,
        "SubquantileKernelClassifier()": float(defaults.score(X_test, y_test)),
        "CleanLearning(SVC())": float(cleanlab.score(X_test, y_test)),
        "eps=0 fit on the defaults' kept rows": defaults_on(~ours),
        "SVC() on the defaults' kept rows": svc_on_ours,
        "eps=0 fit on cleanlab's kept rows": defaults_on(cleanlab_kept),
        "SVC() on cleanlab's kept rows": svc_on(cleanlab_kept),
    }]
    return flag_rows, final_rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--output", default=str(Path(__file__).parents[1] / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    load, start, cpu = os.getloadavg(), time.perf_counter(), time.process_time()
    flags, finals = [], []
    for seed in args.seeds:
        seed_flags, seed_finals = one_seed(seed, args.rows)
        flags += seed_flags
        finals += seed_finals
        print(f"seed {seed} done ({time.perf_counter() - start:.0f} s)", flush=True)
    wall, cpu, after = time.perf_counter() - start, time.process_time() - cpu, os.getloadavg()
    flags, finals = pd.DataFrame(flags), pd.DataFrame(finals)
    same_rule = finals.pop("cleanlab's rule flags the same rows")
    summary = flags.groupby("probabilities", sort=False)[
        ["log loss", "flagged", "precision", "recall", "SVC() on the kept rows"]
    ].mean().round(4).reset_index()
    finals_table = finals.round(4)
    finals_mean = finals.drop(columns="seed").mean().round(4)
    command = "OMP_NUM_THREADS=1 python benchmarks/bench_flag_sources.py --seeds " + " ".join(
        str(seed) for seed in args.seeds
    )
    body = "\n".join([
        SECTION,
        "",
        f"Command: `{command}`  ",
        f"{args.rows} training rows, 20% of the labels flipped, 5000 clean test rows; seeds "
        f"{args.seeds}. Wall time {wall:.0f} s, CPU time {cpu:.0f} s; load average before "
        f"{load[0]:.2f}, after {after[0]:.2f}.",
        "",
        "Flags of each probability source by the library's confident-learning rule, mean over "
        "the seeds (`SVC() on the kept rows`: test accuracy of SVC() fitted on the rows the "
        "flags keep):",
        "",
        markdown_table(summary),
        "",
        "The library's rule on SVC's probabilities flags exactly the rows that cleanlab's "
        f"`find_label_issues` flags on them on {int(same_rule.sum())} of {len(same_rule)} seeds.",
        "",
        "The final model on the same rows (test accuracy):",
        "",
        markdown_table(finals_table),
        "",
        "Means: " + ", ".join(f"{key} {value}" for key, value in finals_mean.items()) + ".",
    ])
    print(body)
    if not args.no_write:
        replace_markdown_section(Path(args.output), SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
