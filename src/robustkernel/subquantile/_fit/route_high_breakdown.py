"""The high-breakdown route of the in-memory fit (kernel="auto"): the kernel and the inliers from
the high-breakdown start (:func:`.high_breakdown.high_breakdown_start`), then the model on
those rows; above ``SELECTION_ROWS`` rows, or with features, the start runs on ``START_ROWS``
rows and the model on every row follows from it (the subsample route's pilot steps)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sklearn.utils import check_random_state

from ..._fractions import n_kept, trimmed_fraction
from ..._progress import step, step_bar
from ...trimming import MAX_EPSILON, smallest
from .._automatic.high_breakdown import START_MATRICES, Start, high_breakdown_start
from .._automatic.second_stage import Evidence, evidence_table
from .._result import FitResult
from .core import InMemoryFit
from .route_subsample import SELECTION_ROWS, fit_from_pilot, subsample_of
from .stage import Stage

START_ROWS = 1000
"""kernel="auto" on more than ``SELECTION_ROWS`` rows (or with features): its high-breakdown
start runs on this many rows drawn at random (FAST-LTS's nested subsamples stop at 1500 rows;
the start's trimmed fits cost O(h^3) each, 41 of a 51 s fit at 3000 rows with 2000 rows)."""


def fit_from_high_breakdown(fit: InMemoryFit) -> FitResult:
    """kernel="auto": the kernel and the inliers from the high-breakdown start, then the
    model on those rows. On at most ``SELECTION_ROWS`` rows of the exact model, the start
    runs on every row (:func:`high_breakdown_stage`); on more rows, or with features
    (``n_components``), it runs on a sample and the model on every row follows from it
    (:func:`_fit_from_sampled_start`). The result is that of the fit at the kernel the start
    chose (its ``kernel``, ``degree`` and ``coef0``), with the rows' evidence."""
    with step_bar("SubQ kernel='auto'", bool(fit.settings.verbose)):
        if fit.X.shape[0] > SELECTION_ROWS or fit.settings.n_components is not None:
            stage, start, chosen, row_evidence = _fit_from_sampled_start(fit)
        else:
            (stage, start, chosen), row_evidence = high_breakdown_stage(fit), None
    evidence = start.evidence if row_evidence is None else row_evidence
    if evidence is not None and evidence.kept.size == fit.X.shape[0]:
        evidence = evidence_table(evidence, fit.scale, ~stage.kept)
    else:
        evidence = None
    return replace(chosen.result(stage), evidence=evidence)


def high_breakdown_stage(fit: InMemoryFit) -> tuple[Stage, Start, InMemoryFit]:
    """The start on every row of the exact model
    (:func:`.high_breakdown.high_breakdown_start`), and the model fitted on the rows it keeps
    (:meth:`.core.InMemoryFit.fit_on_rows`): its reweighting's rows where epsilon="auto",
    else the (1 - epsilon) n rows of smallest standardized residual (exactly: the refine
    rules trim no more). Returns the stage, the start, and the fit of these rows at the kernel
    the start chose (``fit`` is left as it is)."""
    settings = fit.settings
    gamma = fit.gamma_scale()
    if not settings.is_auto("gamma") and settings.gamma is not None:
        gamma = float(settings.gamma)
    fit.check_memory(fit.X.shape[0], START_MATRICES)
    dense = fit.X.toarray() if hasattr(fit.X, "toarray") else np.asarray(fit.X)
    start = high_breakdown_start(
        dense, fit.Y, settings.fit_intercept, gamma, settings.random_state
    )
    chosen = fit.replaced(settings=settings.replace(**start.kernel_settings))
    kept, epsilon = start.kept, None
    if not isinstance(settings.epsilon, str):
        epsilon = float(settings.epsilon)
    elif trimmed_fraction(kept) > MAX_EPSILON:
        epsilon = MAX_EPSILON
    if epsilon is not None:  # a given epsilon is the fraction trimmed, as in the papers
        kept = smallest(start.standardized, n_kept(kept.size, epsilon))
    step(f"{start.kernel} kernel: the model on {int(kept.sum())} kept rows")
    return chosen.fit_on_rows(kept, chosen.candidates()), start, chosen


def _fit_from_sampled_start(
    fit: InMemoryFit,
) -> tuple[Stage, Start, InMemoryFit, Evidence | None]:
    """kernel="auto" at any size: the high-breakdown start on ``START_ROWS`` rows drawn at
    random (every row where there are fewer) on the exact model, which chooses the
    kernel, its inliers, alpha and gamma; then the model on every row, exact or on
    features, from that pilot (:func:`.route_subsample.fit_from_pilot`: every row scored by
    its residual under the pilot, alpha and gamma confirmed on every row, the flags of every
    row from the honest residuals of the fit on the inliers, by the start's adaptive cutoff).
    Returns the stage, the start, the fit of every row at the chosen kernel, and the
    evidence of every row (None at a given epsilon)."""
    if fit.settings.n_components is None:
        fit.check_memory(fit.X.shape[0])  # before the start's work, not after it
    rng = check_random_state(fit.settings.random_state)
    step(f"high-breakdown start on {min(START_ROWS, fit.X.shape[0])} of the rows")
    subsample = subsample_of(fit, rng, fit.settings.replace(n_components=None), START_ROWS)
    pilot, start, subsample = high_breakdown_stage(subsample)
    chosen = fit.replaced(
        settings=fit.settings.replace(**start.kernel_settings), adaptive_cutoff=True
    )
    step(f"{start.kernel} kernel: the model on every one of {fit.X.shape[0]} rows")
    stage, evidence = fit_from_pilot(
        chosen, subsample, pilot, pilot.alpha, pilot.gamma, pilot.scores,
        chosen.candidates(), rng,
    )
    return stage, start, chosen, evidence
