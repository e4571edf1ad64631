"""Subquantile minimization (SubQ): kernel models fitted on the rows they explain best.

The estimators are :class:`SubquantileKernelRegressor` and :class:`SubquantileKernelClassifier`;
``docs/architecture.md`` describes the modules of this engine and how a fit flows through them.

The other names below are the engine's face to the package's other units (not in ``__all__``:
a user's names are the two estimators): the peers in ``baselines`` solve on its
:class:`Problem` with its subset fitters and gradient method, the meta-estimators start from
its high-breakdown fit, calibrate with its regression of labels on scores and give
intervals with its :class:`IntervalRegressorMixin`, and the command
line reads its solver registry, its exact kernel's row limit and its Dask sample. Outside this
folder, nothing imports its private modules (``tests/test_architecture.py`` checks it).
"""

from ._automatic.components import EXACT_ROWS as EXACT_ROWS
from ._automatic.folds import regression_probabilities as regression_probabilities
from ._automatic.high_breakdown import high_breakdown_start as high_breakdown_start
from ._automatic.hyperparameters import robust_gamma as robust_gamma
from ._automatic.hyperparameters import takes_gamma as takes_gamma
from ._backends.distributed import sample_rows as sample_rows
from ._estimators.base import SOLVERS as SOLVERS
from ._estimators.classifier import SubquantileKernelClassifier
from ._estimators.regressor import SubquantileKernelRegressor
from ._intervals import IntervalRegressorMixin as IntervalRegressorMixin
from ._intervals import calibrate_intervals as calibrate_intervals
from ._intervals import internal_fits as internal_fits
from ._intervals import numeric_rows as numeric_rows
from ._solve.objective import Problem as Problem
from ._solve.refits import LbfgsSubsetFitter as LbfgsSubsetFitter
from ._solve.refits import RidgeSubsetFitter as RidgeSubsetFitter
from ._solve.solvers import gradient_method as gradient_method

__all__ = ["SubquantileKernelClassifier", "SubquantileKernelRegressor"]
