"""The kernel model shared by the SubQ estimators and the baselines.

f(x) = sum_j w_j k(x_j, x) + b with scikit-learn's KernelRidge kernel conventions
(:mod:`.kernels`), the per-row losses of its targets (:mod:`.losses`) and the estimator plumbing
common to every kernel estimator of the library (:mod:`.estimator`).
"""
