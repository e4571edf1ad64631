"""What the in-memory routes pass between them: the fit of one stage, the candidate alphas and
gammas, the memory guard's signature."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.base import TransformerMixin

from ..._kernel_model.pairwise import PairwisePlatt
from .._solve.objective import FeatureProblem, Problem
from .._solve.refine import Refinement
from .._solve.solvers import SolverResult

Candidates = tuple[list[float], list[float | None]]
"""The alphas and the gammas a fit chooses from (one each where given)."""

MemoryCheck = Callable[..., None]
"""``check(n_samples, n_matrices=None)``: refuse an exact fit whose n x n matrices (the
estimator's count where None) do not fit in memory."""



@dataclass(frozen=True)
class Stage:
    """One fit at one epsilon (a fraction, or "auto"): what the routes of
    :func:`.in_memory.run` keep."""

    problem: Problem | FeatureProblem
    feature_map: TransformerMixin | None
    result: SolverResult
    refinement: Refinement | None
    best_start: int
    alpha: float
    gamma: float | None
    scores: np.ndarray | None
    epsilon: float  # the fraction of the rows (of their weight) trimmed
    # the hinge losses: Platt's sigmoids of the pairs (None: computed by ``_result``)
    calibration: PairwisePlatt | None = None
    # the label-noise route: the out-of-fold outputs of the chosen model, fold fits on the kept
    # rows (what loss="auto" compares)
    fold_outputs: np.ndarray | None = None
    # forward correction: T[true, given] of the loss every row was fitted with (the log loss's
    # label-noise route, flips into one class); None: the kept rows were fitted plainly
    transition: np.ndarray | None = None

    @property
    def kept(self) -> np.ndarray:
        """The rows of the final model (the biweight's rows of positive weight)."""
        if self.refinement is not None:
            return self.refinement.weights > 0
        return self.result.evaluation.mask

