"""The objective and the papers' solvers, on a fixed model space.

In: a :class:`.objective.Problem` (the exact kernel matrix) or :class:`.objective.FeatureProblem`
(Nystroem / random Fourier features, :mod:`.features`) with its targets, loss, penalty and
trim, and a start. Out: coefficients, an intercept and the kept rows
(:class:`.solvers.SolverResult`): by the alternating solver (trimmed full refits,
:mod:`.refits`) or the gradient, momentum and Nesterov methods (:data:`.solvers.SOLVERS`), and
refine="biweight"'s M-step after them (:mod:`.refine`). Nothing here chooses a parameter.
"""
