"""The in-memory fit: rows held in memory, fitted at validated settings.

In: :class:`~robustkernel.subquantile._settings.FitSettings`, the task's rules
(:mod:`~robustkernel.subquantile._tasks`), the rows (or their kernel matrix) and the targets,
with optional row weights. Out: one :class:`~robustkernel.subquantile._result.FitResult`,
which the estimator alone turns into fitted attributes.

* :mod:`.weighted_fit`: the front (rows of weight 0 out, copies of rows as weights, the
  weighted subquantile around a fit without weights);
* :mod:`.in_memory`: which route a fit takes (:func:`.in_memory.run`);
* :mod:`.route_high_breakdown`, :mod:`.route_subsample`, :mod:`.route_label_noise`: the
  routes, plain functions of a fit;
* :mod:`.core`: :class:`.core.InMemoryFit`, the steps the routes share (the objective, the
  starts, the solver, epsilon="auto", refine, the result); its settings never change;
* :mod:`.stage`: what the routes pass between them.
"""
