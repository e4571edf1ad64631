"""How many rounds of confident-learning flags should the classifier's defaults run?

For every classification split of ``bench_robust.py`` (its data, attacks, eps and seeds),
``SubquantileKernelClassifier()`` is fitted five times on the same training rows:

- ``1 round`` / ``2 rounds`` / ``3 rounds``: the rounds of flags (each from fold models fitted
  without the previous round's flagged rows) run until the flags repeat, at most 1, 2 or 3
  times (``label_flags.ROUNDS``; the rule below switched off);
- ``stop where the flags grow``: at most 3 rounds, ending also where a round flags more rows
  than the one before (the rule before issue 72);
- ``defaults``: the library as it is: at most 3 rounds, and the rounds also end where a round
  flags more rows than the one before and drops some of its flags, whose flags are then dropped
  (``label_flags.rounds_end``).

Per split the test accuracy and the flagged share of every fit are written to
``--splits-csv``; printed (and written to BENCHMARKS.md) are per (class count, attack) the mean
test accuracy, the share of splits where the second round flagged more than the first, and
per fit the mean accuracy and the cells (median over seeds) within 2 points of the best of the
five. The rule is switched off by replacing a private function of the library (a diagnostic,
not an API). Run from ``benchmarks/``::

    ../.venv/bin/python bench_flag_rounds.py --seeds 0,1,2,3,4,5 --data-home ../../shared/datasets
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
from harness.attacks import make_split
from harness.data import CLASSIFICATION, load_data
from harness.race import add_split_arguments, parsed_splits
from harness.report import markdown_table, replace_markdown_section
from joblib import Parallel, delayed

SECTION = "## Label noise: rounds of flags (bench_flag_rounds.py)"
FITS = ("1 round", "2 rounds", "3 rounds", "stop where the flags grow", "defaults")
WITHIN = 0.02


def repeat_only(previous: np.ndarray | None, flagged: np.ndarray, weights: np.ndarray) -> bool:
    """The rounds' end before the rule: the first round flags nothing, or the flags repeat."""
    if previous is None:
        return not flagged.any()
    return bool(np.array_equal(flagged, previous))


def grow_stops(previous: np.ndarray | None, flagged: np.ndarray, weights: np.ndarray) -> bool:
    """The rule before issue 72: the rounds also end where a round flags more weight than the
    one before, whether or not it keeps the earlier flags."""
    if previous is None:
        return not flagged.any()
    return bool(np.array_equal(flagged, previous) or weights @ flagged > weights @ previous)


def one_split(data: str, attack: str, eps: float, seed: int, data_home: str | None) -> dict:
    """Test accuracy and flagged share of the five fits on one split."""
    from robustkernel import SubquantileKernelClassifier
    from robustkernel.trimming import label_flags

    cpu = time.process_time()
    X, y = load_data(CLASSIFICATION, data, data_home, None)
    split = make_split(X, y, CLASSIFICATION, attack, eps, seed)
    row = {"data": data, "attack": attack, "eps": eps, "seed": seed,
           "classes": int(np.unique(y).size)}
    rounds, rule = label_flags.ROUNDS, label_flags.rounds_end
    settings = {"1 round": (1, repeat_only), "2 rounds": (2, repeat_only),
                "3 rounds": (3, repeat_only), "stop where the flags grow": (rounds, grow_stops),
                "defaults": (rounds, rule)}
    try:
        for name, (limit, end) in settings.items():
            label_flags.ROUNDS, label_flags.rounds_end = limit, end
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = SubquantileKernelClassifier().fit(split.X_train, split.y_train)
            row[name] = float(model.score(split.X_test, split.y_test))
            row[f"flagged, {name}"] = float(1.0 - model.inlier_mask_.mean())
    finally:
        label_flags.ROUNDS, label_flags.rounds_end = rounds, rule
    row["cpu seconds"] = time.process_time() - cpu
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_split_arguments(parser, eps="0,0.1,0.2,0.3")
    parser.add_argument("--splits-csv", default="results/bench_flag_rounds_splits.csv")
    parser.add_argument("--output", default=str(Path(__file__).parents[1] / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    keys = parsed_splits(args)
    seeds = sorted({key[3] for key in keys})
    start, load = time.perf_counter(), os.getloadavg()
    rows = Parallel(n_jobs=args.n_jobs)(delayed(one_split)(*key, args.data_home) for key in keys)
    wall, after = time.perf_counter() - start, os.getloadavg()
    runs = pd.DataFrame(rows)
    cpu_seconds = float(runs["cpu seconds"].sum())
    Path(args.splits_csv).parent.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.splits_csv, index=False)
    runs["second round flagged more"] = runs["flagged, 2 rounds"] > runs["flagged, 1 round"]
    by_attack = runs.groupby(["classes", "attack"]).agg(
        splits=("seed", "size"),
        **{name: (name, "mean") for name in FITS},
        **{"second round flagged more (share)": ("second round flagged more", "mean")},
    ).reset_index().round(4)
    cells = runs.groupby(["data", "attack", "eps"])[list(FITS)].median()
    near = cells.ge(cells.max(axis=1) - WITHIN - 1e-12, axis=0).sum()
    summary = pd.DataFrame({
        "fit": list(FITS),
        "mean test accuracy": [round(float(runs[name].mean()), 4) for name in FITS],
        "mean flagged share": [round(float(runs[f"flagged, {name}"].mean()), 4) for name in FITS],
        f"cells within {WITHIN:g} of the best of the five": [
            f"{int(near[name])} / {len(cells)}" for name in FITS
        ],
    })
    command = (f"python benchmarks/bench_flag_rounds.py --seeds {args.seeds} --eps {args.eps} "
               "--data-home ../shared/datasets")
    body = "\n".join([
        SECTION,
        "",
        f"Command: `{command}`  ",
        f"Wall time {wall:.0f} s, CPU time {cpu_seconds:.0f} s (the splits' processes), "
        f"{args.n_jobs} jobs; load average before {load[0]:.2f}, after {after[0]:.2f}.  ",
        f"{len(runs)} splits of bench_robust.py's classification cells (seeds {seeds}), "
        "`SubquantileKernelClassifier()` fitted with at most 1, 2 or 3 rounds of flags "
        "(until the flags repeat) and as the library runs it (at most 3 rounds, and the rounds "
        "end where one flags more rows than the one before and drops some of its flags; its "
        "flags are dropped).",
        "",
        markdown_table(summary),
        "",
        "Per class count and attack (mean test accuracy over splits):",
        "",
        markdown_table(by_attack),
    ])
    print(body)
    replace_markdown_section(Path(args.output), SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
