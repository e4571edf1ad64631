"""What differs between the Subquantile regressor and classifier, in one object per task.

A :class:`Task` holds every loss-specific rule of a fit: how the targets are encoded, which
subset fitter minimizes the loss on kept rows, how rows are flagged and rejected, where the
automatic configuration starts and which grids it searches. The fit itself
(:mod:`.in_memory`, :mod:`.distributed`) is written once against this interface; the
estimator classes only name their task (``_task``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._kernel_model.estimator import EncodedTarget, encode_target
from .._kernel_model.losses import LINKS, HingeLoss, Link, LinkSquaredLoss, Loss
from ._automatic.auto_epsilon import (
    classification_flags,
    regression_flags,
    regression_honest_losses,
    regression_rejections,
    regression_start,
)
from ._automatic.hyperparameters import (
    ALPHAS,
    CLASSIFIER_ALPHAS,
    CLASSIFIER_GAMMA_FACTORS,
    CLASSIFIER_START_ALPHA,
    GAMMA_FACTORS,
    HINGE_ALPHAS,
    HINGE_GAMMA_FACTORS,
    START_ALPHA,
)
from ._solve.objective import Evaluation, FeatureProblem, Problem
from ._solve.refits import (
    FeatureRidgeSubsetFitter,
    LbfgsSubsetFitter,
    RidgeSubsetFitter,
    SvmSubsetFitter,
)

HINGE_LOSSES = ("hinge", "squared_hinge")
"""The classifier's losses of a support vector machine (scikit-learn's names)."""

RowRule = Callable[[Problem | FeatureProblem, Evaluation], np.ndarray]
"""``rule(problem, evaluation)``: a boolean (or per-row) array over the problem's rows."""


@dataclass(frozen=True)
class Task:
    """The loss-specific rules of a Subquantile fit.

    Attributes
    ----------
    classifier : bool
        Labels (classes, class floors, stratified random starts) or real targets.
    exact_fitter, feature_fitter : type
        Subset fitters of the exact kernel model and of the feature model.
    outlier_flags : RowRule or None
        epsilon="auto": the rows implausible under a fit (flagged, then refitted without);
        None for the classifier, whose epsilon="auto" is confident learning
        (``trimming.label_flags``).
    rejections : RowRule
        refine="reject": the kept rows it drops.
    auto_start : callable or None
        The starting trimmed fraction of epsilon="auto", from the encoded targets (None for the
        classifier).
    honest_losses : RowRule or None
        Honest per-row losses of the ordinary fit, where the selection's trimmed fits start;
        None: from its in-sample losses.
    refinements : frozenset of str
        The values of ``refine`` the task supports (besides None and "auto", which resolves
        to "reject" or None: :func:`._settings.resolve_refine`).
    keeps_every_class : bool
        Class floors: half of every class is always kept.
    alpha_grid, gamma_factors, start_alpha
        The grids of alpha / gamma "auto" and the alpha of their trimmed fits.
    reselects : bool
        With epsilon="auto" and a grid, choose alpha and gamma again at the estimated epsilon.
    """

    classifier: bool
    exact_fitter: type
    feature_fitter: type
    outlier_flags: RowRule | None
    rejections: RowRule
    auto_start: Callable[[np.ndarray], float] | None
    honest_losses: RowRule | None
    refinements: frozenset[str]
    keeps_every_class: bool
    alpha_grid: tuple[float, ...]
    gamma_factors: tuple[float, ...]
    start_alpha: float
    reselects: bool

    def grids(self, loss: Loss) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The alpha grid and the gamma factors of alpha / gamma "auto" for ``loss``."""
        if isinstance(loss, HingeLoss):
            return HINGE_ALPHAS, HINGE_GAMMA_FACTORS
        return self.alpha_grid, self.gamma_factors

    def encode(self, y: np.ndarray, params: Mapping[str, Any], estimator: str) -> EncodedTarget:
        """The encoded targets and their loss; through the link where ``params`` has one, the
        hinge losses where ``params`` names one (the classifier's ``loss``; "auto" and "log":
        the log loss, which the fit of loss="auto" compares with the hinge loss)."""
        target = encode_target(y, self.classifier, estimator)
        if params.get("loss") in HINGE_LOSSES:
            return replace(target, loss=HingeLoss.named(params["loss"]))
        link = link_of(params.get("link", "identity"))
        if link.name == "identity":
            return target
        loss = LinkSquaredLoss.for_targets(link, target.Y)
        return EncodedTarget(target.Y, loss, target.classes, target.single_output)

    def fitter(self, problem: Problem | FeatureProblem) -> type:
        """The subset fitter class of the problem's model space and loss (L-BFGS through a
        link: no closed form)."""
        if isinstance(problem.loss, LinkSquaredLoss):
            return LbfgsSubsetFitter
        if SvmSubsetFitter.fits(problem.loss):
            return SvmSubsetFitter
        return self.feature_fitter if isinstance(problem, FeatureProblem) else self.exact_fitter


def link_of(link: str | tuple[Callable, Callable]) -> Link:
    """The link object of the ``link`` parameter; a clear error for a malformed pair."""
    if isinstance(link, str) and link in LINKS:
        return LINKS[link]
    if (
        isinstance(link, tuple)
        and len(link) == 2
        and all(callable(part) for part in link)
    ):
        return Link("custom", *link)
    raise ValueError(
        "link must be 'identity', 'logistic', 'softplus' or a pair (omega, omega') of "
        f"callables, got {link!r}."
    )


REGRESSION = Task(
    classifier=False,
    exact_fitter=RidgeSubsetFitter,
    feature_fitter=FeatureRidgeSubsetFitter,
    outlier_flags=regression_flags,
    rejections=regression_rejections,
    auto_start=regression_start,
    honest_losses=regression_honest_losses,
    refinements=frozenset({"reject", "biweight"}),
    keeps_every_class=False,
    alpha_grid=ALPHAS,
    gamma_factors=GAMMA_FACTORS,
    start_alpha=START_ALPHA,
    reselects=True,
)
"""Kernel ridge regression (squared loss, or squared loss through a link)."""

CLASSIFICATION = Task(
    classifier=True,
    exact_fitter=LbfgsSubsetFitter,
    feature_fitter=LbfgsSubsetFitter,
    outlier_flags=None,
    rejections=classification_flags,
    auto_start=None,
    honest_losses=None,
    refinements=frozenset({"reject"}),
    keeps_every_class=True,
    alpha_grid=CLASSIFIER_ALPHAS,
    gamma_factors=CLASSIFIER_GAMMA_FACTORS,
    start_alpha=CLASSIFIER_START_ALPHA,
    reselects=False,
)
"""Kernel logistic (two classes) or softmax (more) regression."""
