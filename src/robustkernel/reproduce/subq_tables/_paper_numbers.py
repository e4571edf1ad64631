"""The numbers the Subquantile papers print for SubQ and its baselines, table by table.

``PAPER_NUMBERS[table][method]`` lists the paper's mean of each cell in the order the table's
spec enumerates them (:mod:`._specs`): eps = 0.1, 0.2, 0.3, 0.4 for the tables of 002, eps = 0.2,
0.4 for those of 000; 000 Table 3 gives label flips then feature+label flips. ``None`` marks a
cell the paper leaves empty. Labels: 000 is the ICML submission and 002 the September 2023 draft
of Rathnashyam and Gittens, "Subquantile Minimization for Kernel Learning in the Huber
eps-Contamination Model" (see :mod:`robustkernel.reproduce`).
"""

from __future__ import annotations

Numbers = tuple[float | None, ...]

PAPER_NUMBERS: dict[str, dict[str, Numbers]] = {
    # 002 Table 1: polynomial synthetic data, oblivious noise, test RMSE.
    "subq-002-t1-polynomial": {
        "krr": (0.460, 1.171, 0.950, 1.230),
        "sever": (0.071, 0.015, 0.056, 0.101),
        "subq": (0.010, 0.010, 0.010, 0.012),
    },
    # 002 Tables 2-3: Boston and Concrete, oblivious noise, test RMSE.
    "subq-002-t2-boston": {
        "krr": (0.544, 0.862, 0.865, 1.049),
        "term": (0.888, 0.891, 1.023, 0.931),
        "sever": (0.593, 0.573, 0.567, None),
        "subq": (0.427, 0.534, 0.510, 0.549),
    },
    "subq-002-t3-concrete": {
        "krr": (0.802, 0.929, 0.993, 0.775),
        "term": (0.874, 0.916, 0.840, 0.878),
        "sever": (0.532, 0.516, 0.526, 0.552),
        "subq": (0.468, 0.491, 0.555, 0.566),
    },
    # 000 Table 1: label noise, test RMSE.
    "subq-000-t1-concrete": {
        "krr": (1.355, 2.282),
        "term": (0.829, 0.928),
        "sever": (0.533, 0.592),
        "subq": (0.396, 0.442),
    },
    "subq-000-t1-wine-quality-red": {
        "krr": (1.437, 2.272),
        "term": (1.854, 1.069),
        "sever": (0.915, 0.841),
        "subq": (0.808, 0.827),
    },
    "subq-000-t1-boston": {
        "krr": (1.285, 2.266),
        "term": (0.879, 0.875),
        "sever": (0.526, 0.720),
        "subq": (0.446, 0.456),
    },
    "subq-000-t1-drug": {
        "krr": (1.478, 2.381),
        "sever": (1.172, 1.215),
        "subq": (1.074, None),
    },
    # 002 Tables 4-5: label flips, test accuracy.
    "subq-002-t4-heart": {
        "svm": (0.866, 0.826, 0.705, 0.625),
        "term": (0.833, 0.790, 0.751, 0.610),
        "sever": (0.803, 0.728, 0.702, 0.531),
        "subq": (0.869, 0.846, 0.734, 0.597),
    },
    "subq-002-t5-breast-cancer": {
        "svm": (0.963, 0.940, 0.912, 0.781),
        "term": (0.970, 0.937, 0.914, 0.747),
        "sever": (0.947, 0.918, 0.825, 0.725),
        "subq": (0.972, 0.956, 0.958, 0.681),
    },
    # 000 Table 3: linear kernel, label flips then feature+label flips, test accuracy.
    "subq-000-t3-heart": {
        "svm": (0.777, 0.639, 0.534, 0.538),
        "sever": (0.793, 0.695, 0.784, 0.816),
        "term": (0.741, 0.620, 0.803, 0.810),
        "subq": (0.803, 0.790, 0.833, 0.807),
    },
    "subq-000-t3-breast-cancer": {
        "svm": (0.926, 0.548, 0.649, 0.618),
        "sever": (0.904, 0.575, 0.956, 0.974),
        "term": (0.940, 0.763, 0.986, 0.986),
        "subq": (0.928, 0.916, 0.972, 0.963),
    },
    # 000 Table 4: multiclass, wrong-class labels, test accuracy.
    "subq-000-t4-iris": {"svm": (0.977, 0.757), "subq": (0.987, 0.820)},
    "subq-000-t4-glass": {"svm": (0.553, 0.435), "subq": (0.656, 0.598)},
    "subq-000-t4-wine": {"svm": (0.928, 0.678), "subq": (0.975, 0.867)},
    "subq-000-t4-satimage": {"svm": (0.882, 0.732), "subq": (0.899, 0.861)},
}
