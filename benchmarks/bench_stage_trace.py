"""Trace one planted cell through the automatic regression fit's stages.

For one cell of the scorecard's planted grid (``harness/planted.py``) and one seed, prints
after each stage of ``kernel="auto"``'s high-breakdown start how many of the wrong rows far
from the truth (more than 3 noise standard deviations), how many wrong rows in all, and how
many correct rows are flagged or kept: the family's LTS half, each reweighting, the second
stage (with its reference distribution) and the misfit rule; then the test RMSE to the
truth. It reads the stages by wrapping the functions of
``robustkernel.subquantile._automatic.high_breakdown`` that ``high_breakdown_start`` calls, so it
traces whatever library is on ``PYTHONPATH`` (a candidate's worktree, say)::

    python benchmarks/bench_stage_trace.py linear sign_flip 0.3 1000 --seed 0
    PYTHONPATH=<worktree>/src python benchmarks/bench_stage_trace.py linear sign_flip 0.3 1000

Prints only (a diagnosis, not a benchmark table); one fit, a few seconds to a minute.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from harness.planted import ATTACKS, TRUTHS, Cell, generate


def _counts(kept: np.ndarray, bad: np.ndarray, far: np.ndarray) -> str:
    return (
        f"far wrong kept {int((kept & far).sum()):4d} of {int(far.sum())}; "
        f"wrong kept {int((kept & bad).sum()):4d} of {int(bad.sum())}; "
        f"correct flagged {int((~kept & ~bad).sum()):3d}; kept {int(kept.sum())}"
    )


def trace(cell: Cell, seed: int, report: Callable[[str], None] = print) -> float:
    """Fit the defaults on ``cell``'s data of ``seed``, reporting each stage; returns the
    test RMSE to the truth."""
    from robustkernel import SubquantileKernelRegressor
    from robustkernel.subquantile._automatic import high_breakdown as stages

    data = generate(cell, seed)
    bad, far = np.asarray(data.bad, dtype=bool), np.asarray(data.far, dtype=bool)
    start, reweighted = stages.Family.start, stages.reweighted
    second_stage, release_misfit = stages.second_stage, stages.release_misfit

    def traced_start(family, *args, **kwargs):
        fit = start(family, *args, **kwargs)
        report(f"{family.name:>6} LTS half:    {_counts(fit.kept, bad, far)}")
        return fit

    def traced_reweighted(family, *args, **kwargs):
        kept, standardized = reweighted(family, *args, **kwargs)
        report(f"{family.name:>6} reweighted:  {_counts(kept, bad, far)}")
        return kept, standardized

    def traced_second_stage(*args, **kwargs):
        evidence = second_stage(*args, **kwargs)
        report(f"second stage:       {_counts(evidence.kept, bad, far)}; {evidence.reference}")
        return evidence

    def traced_release_misfit(*args, **kwargs):
        evidence = release_misfit(*args, **kwargs)
        report(f"misfit rule:        {_counts(evidence.kept, bad, far)}")
        return evidence

    stages.Family.start = traced_start
    stages.reweighted = traced_reweighted
    stages.second_stage = traced_second_stage
    stages.release_misfit = traced_release_misfit
    try:
        model = SubquantileKernelRegressor().fit(data.X, data.y)
    finally:
        stages.Family.start, stages.reweighted = start, reweighted
        stages.second_stage, stages.release_misfit = second_stage, release_misfit
    rmse = float(np.sqrt(np.mean((model.predict(data.X_test) - data.f_test) ** 2)))
    report(f"kernel {model.kernel_}; test RMSE to the truth {rmse:.4f}")
    return rmse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("truth", choices=list(TRUTHS))
    parser.add_argument("attack", choices=("none", *ATTACKS))
    parser.add_argument("eps", type=float)
    parser.add_argument("n", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    trace(Cell(args.truth, args.attack, args.eps, args.n), args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
