"""Which loss should ``loss="auto"`` keep? Rules on the out-of-fold evidence, per fit.

For every classification cell of ``bench_robust.py`` (its data, attacks, splits and seeds),
``SubquantileKernelClassifier(loss="log")`` and ``(loss="hinge")`` are fitted on the same
training rows. Each fit's label-noise stage is recorded as the fit saw it (the out-of-fold
outputs of its final (gamma, alpha), fold fits on its kept rows; the rows it kept) together
with its test accuracy and test probabilities. Rules that choose between the two fits from
that evidence alone are then scored against the test accuracy:

- ``log`` / ``hinge``: always one loss;
- ``auto (committed)``: the log loss for two classes, the hinge for more, unless the other's
  out-of-fold error on the rows both keep is lower by two paired standard errors (the
  library's ``loss="auto"``, its rule ``label_flags.clearly_fewer_errors``);
- ``... rows either keeps`` / ``... every row``: the same comparison on other rows;
- ``average of the two``: no choice; the mean of the two fits' test probabilities;
- ``fewer corrupted rows kept``: an oracle that knows which rows were corrupted;
- ``better test accuracy``: an oracle on the test rows (the bound of any choice).

Per rule: the mean regret (the better fit's test accuracy minus the rule's, per fit), the
share of fits more than 2 points behind the better one, and the cells whose median over seeds
is within 2 points of the better loss's median. With the run file of ``bench_robust.py``
(``results/bench_robust_classification.csv``) also the head-to-head count of bench_robust's
summary: cells where the rule is best or within 2 points against SVC + GridSearchCV, the two
cleanlab rows and the linear logistic regression (seeds found there only).

The stages are read by wrapping a private method of the library
(``route_label_noise._fit_label_noise``): a diagnostic, not an API. Run from
``benchmarks/``::

    ../.venv/bin/python bench_loss_choice.py --seeds 0,1,2 --data-home ../../shared/datasets
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from harness.attacks import make_split
from harness.data import CLASSIFICATION, load_data
from harness.diagnostics import fit_with_stage
from harness.race import classification_splits, fingerprints
from harness.report import markdown_table
from joblib import Parallel, delayed

from robustkernel.trimming.label_flags import clearly_fewer_errors

CACHE = Path(__file__).parent / ".cache" / "bench_loss_choice"
PEERS = ("svc_cv", "cleanlab", "cleanlab_tuned", "logreg")
WITHIN = 0.02




def record(data: str, attack: str, eps: float, seed: int, data_home: str | None) -> dict:
    """Both losses' fits on one split: per loss the kept rows, the out-of-fold predicted
    classes (None where the fit found no evidence about the labels), the test accuracy and
    the test probabilities."""
    X, y = load_data(CLASSIFICATION, data, data_home, None)
    split = make_split(X, y, CLASSIFICATION, attack, eps, seed)
    out = {"corrupted": split.corrupted, "n_classes": int(np.unique(y).size)}
    for loss in ("log", "hinge"):
        model, stage, labels, loss_object = fit_with_stage(split.X_train, split.y_train, loss=loss)
        outputs = stage.fold_outputs
        out[loss] = {
            "kept": stage.kept.copy(),
            "labels": labels,
            "oof": None if outputs is None else loss_object.predicted_classes(outputs),
            "accuracy": float(np.mean(model.predict(split.X_test) == split.y_test)),
            "proba": model.predict_proba(split.X_test),
            "test_labels": np.searchsorted(model.classes_, split.y_test),
        }
    return out


def cached_record(key: tuple, data_home: str | None, fingerprint: str) -> dict:
    """:func:`record`, read from or written to the cache (keyed by the package's sources)."""
    data, attack, eps, seed = key
    path = CACHE / fingerprint / f"{data}_{attack}_{eps}_{seed}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    result = record(*key, data_home)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(pickle.dumps(result))
    temporary.replace(path)
    return result


def by_class_count(rows: str) -> Callable[[dict], str]:
    """The committed rule's comparison on the rows both keep ("both"), either keeps
    ("either") or every row ("all")."""

    def choose(fit: dict) -> str:
        log, hinge = fit["log"], fit["hinge"]
        if hinge["oof"] is None or log["oof"] is None:
            return "hinge" if log["oof"] is None or hinge["oof"] is None else "log"
        where = {
            "both": log["kept"] & hinge["kept"],
            "either": log["kept"] | hinge["kept"],
            "all": np.ones_like(log["kept"]),
        }[rows]
        labels = log["labels"][where]
        default, other = ("hinge", "log") if fit["n_classes"] >= 3 else ("log", "hinge")
        wrong = {name: fit[name]["oof"][where] != labels for name in ("log", "hinge")}
        weights = np.ones(int(where.sum()))
        return other if clearly_fewer_errors(wrong[other], wrong[default], weights) else default

    return choose


def fewer_corrupted_kept(fit: dict) -> str:
    corrupted = fit["corrupted"]
    if fit["log"]["kept"].shape != corrupted.shape:  # duplicate rows merged: no oracle
        return by_class_count("both")(fit)
    counts = {name: int(np.sum(fit[name]["kept"] & corrupted)) for name in ("log", "hinge")}
    if counts["log"] == counts["hinge"]:
        return by_class_count("both")(fit)
    return min(counts, key=counts.get)


RULES: dict[str, Callable[[dict], str]] = {
    "log": lambda fit: "log",
    "hinge": lambda fit: "hinge",
    "auto (committed): rows both keep": by_class_count("both"),
    "the same on the rows either keeps": by_class_count("either"),
    "the same on every row": by_class_count("all"),
    "average of the two fits' probabilities": lambda fit: "average",
    "oracle: fewer corrupted rows kept": fewer_corrupted_kept,
    "oracle: better test accuracy": lambda fit: "best",
}


def accuracy(fit: dict, choice: str) -> float:
    if choice == "best":
        return max(fit["log"]["accuracy"], fit["hinge"]["accuracy"])
    if choice == "average":
        P = fit["log"]["proba"] + fit["hinge"]["proba"]
        return float(np.mean(np.argmax(P, axis=1) == fit["log"]["test_labels"]))
    return fit[choice]["accuracy"]


def scores(fits: dict, peers: pd.DataFrame | None) -> pd.DataFrame:
    """One row per rule: mean regret, fits > 2 points behind, cells within 2 points of the
    better loss's median, and (with ``peers``) the head-to-head count of each column."""
    rows = []
    cells = sorted({key[:3] for key in fits})
    for name, rule in RULES.items():
        regrets, within = [], 0
        present = [peer for peer in PEERS if peers is not None and peer in peers.columns]
        head = {"rule": 0, **dict.fromkeys(present, 0)} if peers is not None else None
        for cell in cells:
            seeds = [fit for key, fit in fits.items() if key[:3] == cell]
            chosen = [accuracy(fit, rule(fit)) for fit in seeds]
            better = [max(f["log"]["accuracy"], f["hinge"]["accuracy"]) for f in seeds]
            regrets += [b - c for b, c in zip(better, chosen, strict=True)]
            medians = [np.median([f[loss]["accuracy"] for f in seeds]) for loss in ("log", "hinge")]
            within += np.median(chosen) >= max(medians) - WITHIN - 1e-9
            if head is not None:
                values = {"rule": float(np.median(chosen))}
                values |= {peer: peers.loc[cell, peer] for peer in present}
                best = max(values.values())
                for column, value in values.items():
                    head[column] += value >= best - WITHIN - 1e-9
        row = {
            "rule": name,
            "mean regret": round(float(np.mean(regrets)), 4),
            "fits > 2 points behind": f"{np.mean(np.array(regrets) > WITHIN):.3f}",
            "cells within 2 points of the better loss": f"{within} / {len(cells)}",
        }
        if head is not None:
            row[f"head to head (rule; {', '.join(present)})"] = (
                f"{head['rule']}; " + ", ".join(str(head[peer]) for peer in present)
            )
        rows.append(row)
    return pd.DataFrame(rows)


def peer_medians(path: Path, seeds: Sequence[int]) -> pd.DataFrame | None:
    """Median test accuracy over ``seeds`` of each peer per cell, from bench_robust's runs."""
    if not path.exists():
        return None
    runs = pd.read_csv(path)
    runs = runs[runs["method"].isin(PEERS) & runs["seed"].isin(seeds)]
    if runs.empty or set(runs["seed"]) != set(seeds):
        return None
    return runs.pivot_table(
        index=["data", "attack", "eps"], columns="method", values="metric", aggfunc="median"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--data-home", default=None, help="folder of the papers' CSV files")
    parser.add_argument("--n-jobs", type=int, default=2)
    runs = Path(__file__).parent / "results" / "bench_robust_classification.csv"
    parser.add_argument(
        "--runs", default=str(runs), help="bench_robust.py's runs (the peers' accuracies)"
    )
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    keys = classification_splits(seeds, [0.0, 0.1, 0.2, 0.3], args.data_home)
    fingerprint = hashlib.sha256(fingerprints(None)[True].encode()).hexdigest()[:16]
    start, cpu = time.perf_counter(), time.process_time()
    load = os.getloadavg()
    results = Parallel(n_jobs=args.n_jobs)(
        delayed(cached_record)(key, args.data_home, fingerprint) for key in keys
    )
    fits = dict(zip(keys, results, strict=True))
    table = scores(fits, peer_medians(Path(args.runs), seeds))
    print(f"Seeds {seeds}; {len(keys)} splits x 2 losses; wall {time.perf_counter() - start:.0f} s "
          f"(this process's CPU {time.process_time() - cpu:.0f} s); load average before "
          f"{load[0]:.2f}, after {os.getloadavg()[0]:.2f}.\n")
    print(markdown_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
