"""The in-memory fit: which route a fit of rows in memory takes.

In: an :class:`.core.InMemoryFit` (validated settings, the task's rules, the rows and their
encoded targets). Out: its :class:`.._result.FitResult`. :func:`run` takes the first route that
applies, in this order:

* the high-breakdown start: kernel="auto" (:mod:`.route_high_breakdown`);
* the subsample route: alpha or gamma "auto" in a regression of more than ``SELECTION_ROWS``
  rows (squared loss, no weights, no device, no precomputed kernel; :mod:`.route_subsample`);
* the label-noise route: a classifier with epsilon="auto" (:mod:`.route_label_noise`);
* two passes: a regression with epsilon="auto" and alpha or gamma "auto", the second at the
  first's estimate of epsilon, from the rows it kept (:func:`two_passes`);
* one pass: every other fit, the solver at the given epsilon (or epsilon="auto" at a given
  alpha and gamma), refine after it (:meth:`.core.InMemoryFit.fit_at`).

:func:`.weighted_fit.fit_in_memory` adds row weights around it.
"""

from __future__ import annotations

from .._result import FitResult
from . import route_high_breakdown, route_label_noise, route_subsample
from .core import InMemoryFit
from .stage import Candidates


def run(fit: InMemoryFit) -> FitResult:
    """The fitted model of ``fit``, by the first route that applies (the module docstring)."""
    settings, task = fit.settings, fit.task
    candidates = fit.candidates()
    choices = len(candidates[0]) * len(candidates[1])
    if settings.kernel == "auto":
        return route_high_breakdown.fit_from_high_breakdown(fit)
    if choices > 1 and route_subsample.chooses_on_subsample(fit):
        return fit.result(route_subsample.fit_choosing_on_subsample(fit, candidates))
    if settings.is_auto("epsilon") and task.classifier:
        return fit.result(route_label_noise.label_noise_stage(fit, candidates))
    if settings.is_auto("epsilon") and task.reselects and choices > 1:
        return two_passes(fit, candidates)
    return fit.result(fit.fit_at(settings.epsilon, candidates, None))


def two_passes(fit: InMemoryFit, candidates: Candidates) -> FitResult:
    """The two-pass route: alpha and gamma chosen at the starting trim first estimate
    epsilon; then they are chosen again, and the model fitted, at that estimate (a 40% trim
    chooses for the hardest 60% of clean rows, e.g. a smoother kernel than the data need).
    The second choice's trimmed fits start from the rows the estimate kept: from the
    ordinary fit, a cluster of rows sharing a wrong target (zero loss once fitted) would be
    kept again, and clean rows trimmed in its place."""
    first = fit.fit_at("auto", candidates, None)
    epsilon, estimated = first.epsilon, first.kept
    del first  # its kernel matrix: the second fit builds its own
    return fit.result(fit.fit_at(epsilon, candidates, estimated))
