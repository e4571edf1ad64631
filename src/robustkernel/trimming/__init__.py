"""The trimming core: which rows a trimmed fit keeps, the rules that flag rows, the label-noise
flags, and the loops that refit until the kept rows repeat.

Every engine runs on it: the Subquantile estimators in memory and on Dask, the meta-estimators
that wrap any scikit-learn model, the networks and the learned metric's trimmed fit. Its modules:

* ``selection``: the subquantile of the losses (row weights, class floors) and :func:`smallest`;
* ``rules``: the round limit, the settled fraction, the chi^2 cutoffs and the robust scale;
* ``label_flags``: flipped labels by confident learning on out-of-fold probabilities;
* ``loops``: :func:`alternate` (refit until the kept rows repeat), :func:`flag_rounds` (flag,
  refit without the flags, until they repeat) and :func:`drop_implausible`.

The engines import these names from here; ``label_flags`` is read as a module, so that its
constants (``ROUNDS``) and rules stay one object wherever they are used.
"""

from . import label_flags
from .loops import Alternation, alternate, drop_implausible, flag_rounds
from .rules import (
    MAX_EPSILON,
    MAX_ROUNDS,
    REGRESSION_LEVEL,
    REGRESSION_START,
    REJECTION_LEVEL,
    SETTLED_FRACTION,
    beyond_scale,
    truncated_variance,
    weighted_median,
)
from .selection import ClassFloors, kept_weights, smallest, subquantile, weighted_subquantile

__all__ = [
    "MAX_EPSILON",
    "MAX_ROUNDS",
    "REGRESSION_LEVEL",
    "REGRESSION_START",
    "REJECTION_LEVEL",
    "SETTLED_FRACTION",
    "Alternation",
    "ClassFloors",
    "alternate",
    "beyond_scale",
    "drop_implausible",
    "flag_rounds",
    "kept_weights",
    "label_flags",
    "smallest",
    "subquantile",
    "truncated_variance",
    "weighted_median",
    "weighted_subquantile",
]
