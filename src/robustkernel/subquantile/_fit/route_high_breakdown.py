"""The high-breakdown route of the in-memory fit (kernel="auto"): the kernel and the inliers from
the high-breakdown start (:func:`.high_breakdown.high_breakdown_start`), then the model on
those rows; above ``SELECTION_ROWS`` rows, or with features, the start runs on ``START_ROWS``
rows and the model on every row follows from it (the subsample route's pilot steps)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sklearn.utils import check_random_state

from ..._fractions import n_kept
from ..._progress import step, step_bar
from ...trimming import MAX_EPSILON, smallest
from .._automatic.high_breakdown import START_MATRICES, Start, high_breakdown_start
from .._automatic.second_stage import evidence_table
from .._result import FitResult
from .route_subsample import SELECTION_ROWS
from .stage import Stage

START_ROWS = 1000
"""kernel="auto" on more than ``SELECTION_ROWS`` rows (or with features): its high-breakdown
start runs on this many rows drawn at random (FAST-LTS's nested subsamples stop at 1500 rows;
the start's trimmed fits cost O(h^3) each, 41 of a 51 s fit at 3000 rows with 2000 rows)."""


class HighBreakdownRoute:
    """The high-breakdown route's steps, mixed into :class:`.in_memory.InMemoryFit` (they use
    its settings, rows and core steps)."""

    def _run_from_high_breakdown(self) -> FitResult:
        """kernel="auto": the kernel and the inliers from the high-breakdown start, then the
        model on those rows. On at most ``SELECTION_ROWS`` rows of the exact model, the start
        runs on every row (:meth:`_high_breakdown_stage`); on more rows, or with features
        (``n_components``), it runs on a sample and the model on every row follows from it
        (:meth:`_fit_from_sampled_start`)."""
        with step_bar("SubQ kernel='auto'", bool(self.settings.verbose)):
            if self.X.shape[0] > SELECTION_ROWS or self.settings.n_components is not None:
                stage, start = self._fit_from_sampled_start()
            else:
                stage, start = self._high_breakdown_stage()
        evidence = start.evidence if self.row_evidence is None else self.row_evidence
        if evidence is not None and evidence.kept.size == self.X.shape[0]:
            evidence = evidence_table(evidence, self.scale, ~stage.kept)
        else:
            evidence = None
        return replace(
            self._result(stage),
            kernel=start.kernel,
            degree=start.degree,
            coef0=start.kernel_settings.get("coef0"),
            evidence=evidence,
        )

    def _high_breakdown_stage(self) -> tuple[Stage, Start]:
        """The start on every row of the exact model
        (:func:`.high_breakdown.high_breakdown_start`): the kernel it chooses replaces "auto"
        in the settings, and the model is fitted on the rows it keeps (:meth:`_fit_on_rows`):
        its reweighting's rows where epsilon="auto", else the (1 - epsilon) n rows of smallest
        standardized residual (exactly: the refine rules trim no more)."""
        settings = self.settings
        gamma = self._gamma_scale()
        if not settings.is_auto("gamma") and settings.gamma is not None:
            gamma = float(settings.gamma)
        self.check_memory(self.X.shape[0], START_MATRICES)
        dense = self.X.toarray() if hasattr(self.X, "toarray") else np.asarray(self.X)
        start = high_breakdown_start(
            dense, self.Y, settings.fit_intercept, gamma, settings.random_state
        )
        self.settings = settings.replace(**start.kernel_settings)
        kept, epsilon = start.kept, None
        if not isinstance(settings.epsilon, str):
            epsilon = float(settings.epsilon)
        elif 1.0 - kept.mean() > MAX_EPSILON:
            epsilon = MAX_EPSILON
        if epsilon is not None:  # a given epsilon is the fraction trimmed, as in the papers
            kept = smallest(start.standardized, n_kept(kept.size, epsilon))
        step(f"{start.kernel} kernel: the model on {int(kept.sum())} kept rows")
        return self._fit_on_rows(kept, self._candidates()), start

    def _fit_from_sampled_start(self) -> tuple[Stage, Start]:
        """kernel="auto" at any size: the high-breakdown start on ``START_ROWS`` rows drawn at
        random (every row where there are fewer) on the exact model, which chooses the
        kernel, its inliers, alpha and gamma; then the model on every row, exact or on
        features, from that pilot (:meth:`_fit_from_pilot`: every row scored by its residual
        under the pilot, alpha and gamma confirmed on every row, the flags of every row from
        the honest residuals of the fit on the inliers, by the start's adaptive cutoff)."""
        if self.settings.n_components is None:
            self.check_memory(self.X.shape[0])  # before the start's work, not after it
        rng = check_random_state(self.settings.random_state)
        step(f"high-breakdown start on {min(START_ROWS, self.X.shape[0])} of the rows")
        subsample = self._subsample(rng, self.settings.replace(n_components=None), START_ROWS)
        pilot, start = subsample._high_breakdown_stage()
        self.settings = self.settings.replace(**start.kernel_settings)
        self.adaptive_cutoff = True
        step(f"{start.kernel} kernel: the model on every one of {self.X.shape[0]} rows")
        stage = self._fit_from_pilot(
            subsample, pilot, pilot.alpha, pilot.gamma, pilot.scores, self._candidates(), rng
        )
        return stage, start
