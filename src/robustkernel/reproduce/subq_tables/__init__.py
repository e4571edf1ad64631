"""Reproduction of the Subquantile tables: 000 Tables 1, 3, 4 and 002 Tables 1-5.

The labels 000 and 002 are two versions of Rathnashyam and Gittens, "Subquantile Minimization
for Kernel Learning in the Huber eps-Contamination Model" (:mod:`robustkernel.reproduce` lists
them). Protocol (000 Section 4, 002 Section 5): for each seed, an 80/20 train/test split, x (and
y for regression) standardized with the clean training statistics, a fraction eps of the
*training* rows corrupted (:func:`robustkernel.corruption.contaminated_split`), every method
fitted on the corrupted training rows, test RMSE (regression) or accuracy (classification) on
the clean test rows. Oracle ERM is the library's ERM (kernel ridge / logistic / softmax with an
unpenalized intercept) on the clean training rows.

Hyper-parameters and the mapping from the papers' lambda to our alpha: our objective is
sum_{i in S} l_i(f) + alpha ||f||_H^2 (sklearn's KernelRidge convention). 002 (Alg. 3)
descends along 2 sum_{i in S} k_i (k_i^T w - y_i) + lambda K w, the gradient of
sum_{i in S} (f(x_i) - y_i)^2 + (lambda / 2) ||f||_H^2, so **alpha = lambda / 2** (lambda = 2 in
Tables 2-3 gives alpha = 1; lambda = 1 in Table 1 gives alpha = 0.5). 000 states no ridge
lambda (it constrains ||f||_H <= R), nor do 002's classification tables. There alpha is chosen
on clean data, like any hyper-parameter the papers do not fix: for each seed,
5-fold cross-validation of the Oracle ERM learner on the clean (uncorrupted) training split
over ``ALPHA_GRID`` (:func:`clean_data_alpha`); the test rows are never seen. Every method
of a table shares the kernel and alpha (KRR is sklearn's KernelRidge, without intercept, as in
the papers; SVM/SVC is sklearn's with C = 1 / (2 alpha), the same balance of loss and penalty).
SubQ keeps 000's radius R. RBF gamma = 1 / n_features. SubQ uses the library's default
solver ("alternating", exact refits on the kept rows; the papers ran 1e4-1e6 gradient steps)
from the ERM fit (002 Alg. 3), except on 000 Table 1: there it starts, as 000 does, from
small random weights (Glorot, 000 Figure 1), and the row "SubQ (ERM start)" shows the ERM
start. (In classification a near-zero start makes every loss equal and the first subset
arbitrary, so 000 Tables 3-4 keep the ERM start.) "SubQ (10 starts)" adds 9 starts from fits
on random 20-row subsets (``n_init=10``, seed 0) and keeps the lowest objective (not run on
000 Table 4, where the radius-constrained multiclass refits make 10 starts cost about 90 s a
fit on Glass); TERM tilt -2 (regression) or -0.1 (classification), the authors' values, with
10,000 full-batch steps; SEVER 4 rounds removing eps/2 per round (regression; 16 rounds of
p = 0.02 in 002 Table 1), 4 rounds of p = 0.025 per class (classification).

Each table writes ``<out_dir>/<table>.csv`` (one row per method x corruption x eps x seed) and
``<out_dir>/<table>.md`` (mean (std) per cell with the paper's number in brackets, and the
per-cell checks of SubQ against Oracle ERM, the baselines and the paper); finished runs are
cached under ``<out_dir>/.cache/<table>/`` so that an interrupted table resumes.

Modules: :mod:`._paper_numbers` (the papers' numbers), :mod:`._specs` (one :class:`SubqTable`
per table), :mod:`._runner` (the runs and the outputs), :mod:`._report` (per-cell checks and the
criteria over all tables).
"""

from ._report import ORACLE_FACTOR, cell_summary, criteria_report, summarize_tables
from ._runner import (
    ALPHA_GRID,
    SUBQ_TABLES,
    clean_data_alpha,
    make_model,
    run_subq_table,
    table_data,
    table_split,
)
from ._specs import METHOD_NAMES, SUBQ_VARIANTS, TABLE_SPECS, SubqTable

__all__ = [
    "ALPHA_GRID",
    "METHOD_NAMES",
    "ORACLE_FACTOR",
    "SUBQ_TABLES",
    "SUBQ_VARIANTS",
    "TABLE_SPECS",
    "SubqTable",
    "cell_summary",
    "clean_data_alpha",
    "criteria_report",
    "make_model",
    "run_subq_table",
    "summarize_tables",
    "table_data",
    "table_split",
]
