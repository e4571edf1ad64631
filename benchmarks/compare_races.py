"""Compare versions of one method across ``bench_robust.py`` runs, against the same peers.

``bench_robust.py`` caches its peers' runs without the library's source hash, so a changed
library (a scratch worktree) can rerun only its own method into the same cache and write its own
``--csv``. This script reads the base run's CSV (peers, oracle and the method as it was) and each
variant's CSV (the method as changed), puts each version of the method in turn among the same
peers, and prints per version: the mean over cells of the median test accuracy over seeds, the
cells where it is best or within ``--within`` of the best (of the peers and that version), the
median and worst gap to the oracle (the oracle's median accuracy less the cell median), the
median flag precision / recall over runs, and the same counts for each peer; then, per variant,
its mean difference from the base version and the cells that moved by more than ``--show``.
Classification runs only (accuracy: higher is better)::

    python benchmarks/compare_races.py base.csv changed=variant.csv [--seeds 3,4,5]

A variant is ``name=path`` or ``name=path:method`` (the method's name in that CSV, by default the
same as ``--method``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pandas as pd
from harness.report import markdown_table

CELL = ["data", "attack", "eps"]
ORACLE = "oracle"


def versions(
    base: pd.DataFrame, variants: dict[str, pd.DataFrame], method: str
) -> tuple[pd.DataFrame, pd.Series, list[str]]:
    """Cell medians (cells x methods: the peers, then ``base`` and each variant under its name),
    the oracle's cell medians, and the peers' names."""
    peers = base[~base["method"].isin([method, ORACLE])]
    frames = [peers, base[base["method"] == method].assign(method="base")]
    frames += [frame.assign(method=name) for name, frame in variants.items()]
    runs = pd.concat(frames)
    medians = runs.groupby([*CELL, "method"])["metric"].median().unstack("method")
    oracle = base[base["method"] == ORACLE].groupby(CELL)["metric"].median()
    return medians, oracle, sorted(peers["method"].unique())


def summary(
    medians: pd.DataFrame,
    oracle: pd.Series,
    peers: list[str],
    version: str,
    flags: dict[str, tuple[float, float]],
    within: float,
) -> pd.DataFrame:
    """One row per method of the race of ``version`` against the peers."""
    contenders = [version, *peers]
    best = medians[contenders].max(axis=1)
    rows = []
    for name in contenders:
        gaps = oracle - medians[name]
        precision, recall = flags.get(name, (float("nan"), float("nan")))
        rows.append({
            "method": name,
            "mean accuracy": round(float(medians[name].mean()), 4),
            f"cells best or within {within:g}": int((medians[name] >= best - within - 1e-12).sum()),
            "median gap": round(float(gaps.median()), 4),
            "worst gap": round(float(gaps.max()), 3),
            "flag precision / recall": (
                "" if pd.isna(precision) else f"{precision:.2f} / {recall:.2f}"
            ),
        })
    return pd.DataFrame(rows)


def read(path: str, seeds: list[int] | None) -> pd.DataFrame:
    """A bench_robust.py CSV (classification rows), restricted to ``seeds``."""
    runs = pd.read_csv(path)
    runs = runs[runs["task"] == "classification"]
    return runs if seeds is None else runs[runs["seed"].isin(seeds)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="CSV of the base run (peers, oracle, the method)")
    parser.add_argument("variants", nargs="*", help="name=path[:method]")
    parser.add_argument("--method", default="subq_default")
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default: all)")
    parser.add_argument("--within", type=float, default=0.02)
    parser.add_argument("--show", type=float, default=0.015)
    args = parser.parse_args(argv)
    seeds = None if args.seeds is None else [int(seed) for seed in args.seeds.split(",")]
    base = read(args.base, seeds)
    variants = {}
    for spec in args.variants:
        name, _, location = spec.partition("=")
        path, _, method = location.partition(":")
        runs = read(path, seeds)
        variants[name] = runs[runs["method"] == (method or args.method)]
        if variants[name].empty:
            parser.error(f"variants: {path} has no runs of {method or args.method!r}")
    frames = {name: frame for name, frame in base.groupby("method")}
    frames.update(base=frames.get(args.method, base.iloc[:0]), **variants)
    flags = {
        name: (frame["flag_precision"].median(), frame["flag_recall"].median())
        for name, frame in frames.items()
    }
    medians, oracle, peers = versions(base, variants, args.method)
    print(f"{len(medians)} cells; seeds {sorted(int(seed) for seed in base['seed'].unique())}")
    for version in ["base", *variants]:
        print(f"\n{args.method} as {version}:\n")
        print(markdown_table(summary(medians, oracle, peers, version, flags, args.within)))
    for name in variants:
        difference = (medians[name] - medians["base"]).round(3)
        print(
            f"\n{name} - base: mean {difference.mean():+.4f}; cells higher "
            f"{int((difference > 0).sum())}, lower {int((difference < 0).sum())}; moved by more "
            f"than {args.show:g}:\n"
        )
        moved = difference[difference.abs() > args.show].rename("difference").reset_index()
        print(markdown_table(moved) if len(moved) else "(none)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
