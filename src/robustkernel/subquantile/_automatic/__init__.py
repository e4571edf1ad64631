"""The automatic configuration's stages: what the defaults choose on the training rows.

In: the rows and targets of a fit (and the objective of :mod:`.._solve`). Out: a choice each:
the columns' units (:mod:`.feature_scaling`), the number of features
(:mod:`.components`), the kernel and the rows it keeps from a high-breakdown start
(:mod:`.high_breakdown`) and the rows its second stage gives back, with their evidence
(:mod:`.second_stage`), epsilon's flags (:mod:`.auto_epsilon`), alpha and gamma by honest
residuals (:mod:`.hyperparameters`, with the classifier's folds, :mod:`.folds`, and the
near-duplicate groups left out together, :mod:`.groups`). No fitted estimator is written here.
"""
